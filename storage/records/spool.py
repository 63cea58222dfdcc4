"""A durable local spool for turns the transcript database could not take.

When the database is locked past its budget, read-only, full or unreachable, the turn's
record is appended here (one JSON object per line, flushed and fsynced before the user is
told anything), and replayed into the database once it is writable again. Each entry carries
the turn's uid, so a replay interrupted after the database committed never records a turn
twice. Several processes may share one spool: every read and write holds an advisory lock.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any


class SpoolError(OSError):
    """The spool itself could not be written: the turn is not recorded anywhere."""


@dataclass(frozen=True)
class ReplayResult:
    replayed: int  # entries now in the database
    remaining: int  # entries still waiting (the database refused them)
    error: str = ""  # why the replay stopped early, if it did


class TurnSpool:
    """Append-only, fsynced JSON-lines file of unrecorded turns."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _locked(self, mode: str) -> Iterator[IO[str]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, mode, encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield fh
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def append(self, entry: dict[str, Any]) -> None:
        """Write one entry durably (flush + fsync) or raise SpoolError."""
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        try:
            new = not self.path.exists()
            with self._locked("a") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            if new:  # the file's directory entry must survive a crash too
                dir_fd = os.open(self.path.parent, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
        except OSError as exc:
            raise SpoolError(f"could not write the turn spool {self.path}: {exc}") from exc

    def pending(self) -> int:
        """Entries waiting for the database (0 when there is no spool file)."""
        try:
            if self.path.stat().st_size == 0:
                return 0
        except FileNotFoundError:
            return 0
        with self._locked("r") as fh:
            return sum(1 for line in fh if line.strip())

    def has_pending(self) -> bool:
        """Cheap check used on every turn: a non-empty spool file exists."""
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False

    def replay(self, write: Callable[[dict[str, Any]], None]) -> ReplayResult:
        """Hand every entry to `write` in spool order; keep those it raised on.

        `write` must be idempotent by the entry's uid: the spool is rewritten only after a
        pass, so a crash mid-pass replays entries the database already holds.
        """
        if not self.has_pending():
            return ReplayResult(0, 0)
        with self._locked("r+") as fh:
            lines = [line for line in fh.read().splitlines() if line.strip()]
            kept: list[str] = []
            replayed, error = 0, ""
            for i, line in enumerate(lines):
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    kept.append(line)  # never drop what cannot be read; an operator can look at it
                    continue
                try:
                    write(entry)
                    replayed += 1
                except Exception as exc:  # the database is still not writable: stop, keep the rest
                    error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                    kept.extend(lines[i:])
                    break
            if replayed:
                fh.seek(0)
                fh.write("".join(line + "\n" for line in kept))
                fh.truncate()
                fh.flush()
                os.fsync(fh.fileno())
            return ReplayResult(replayed, len(kept), error)
