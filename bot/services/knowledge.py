"""The knowledge base as admins change it: ingests one at a time per process, chat re-ingests
only inside the allowed folders, and reviewed answers saved as FAQ entries."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path

import yaml

from bot.scopes import ScopeMap
from core.ports import Embedder, PathNotAllowed
from storage.index.chunk_index import LanceChunkIndex
from storage.ingestion.ingest import IngestSummary, Progress, ingest
from storage.settings import ChunkSettings


class KnowledgeBase:
    """Ingest into the index with the configured chunking; `kb_paths` is the default, and chat
    may name paths inside `kb_paths` or `reingest_roots` only; with knowledge scopes, a chat's
    re-ingest reads its scope's paths only, and every document is written with its scopes."""

    def __init__(self, index: LanceChunkIndex, embedder: Embedder, chunking: ChunkSettings, *,
                 kb_paths: Sequence[str | Path], reingest_roots: Sequence[str | Path], reviewed_dir: Path,
                 scopes: ScopeMap | None = None) -> None:
        self.index = index
        self.embedder = embedder
        self.chunking = chunking
        self.kb_paths = [Path(p) for p in kb_paths]
        self.roots = [Path(r) for r in (*kb_paths, *reingest_roots)]
        self.reviewed_dir = reviewed_dir
        self.scopes = scopes or ScopeMap()
        self.lock = threading.Lock()  # one ingest or sync at a time in this process

    def ingest(self, paths: Sequence[str | Path] | None = None, progress: Progress | None = None,
               only: Sequence[Path] | None = None) -> IngestSummary:
        """Ingest `paths` (default: kb_paths; of them, the files under `only`); one ingest at a
        time per process."""
        chosen = [Path(p) for p in (paths or self.kb_paths)]
        scopes_of = self.scopes.scopes_of if self.scopes.enabled else None
        with self.lock:
            return ingest(chosen, self.index, self.embedder, self.chunking, progress, scopes_of, only)

    def ensure_ingested(self, progress: Progress | None = None) -> IngestSummary | None:
        """Ingest kb_paths when the index is empty (first run); else do nothing."""
        if self.index.count() > 0:
            return None
        return self.ingest(progress=progress)

    def reingest(self, paths: Sequence[str] | None = None, progress: Progress | None = None,
                 scope: str | None = None) -> IngestSummary:
        """A re-ingest asked for from chat: kb_paths, or the given paths if all are allowed; in a
        knowledge scope's chat, the scope's paths, or given paths inside them."""
        if scope is not None:
            own = self.scopes.paths(scope)
            wanted = self.allowed(paths, own) if paths else [p.resolve() for p in own]
            return self.ingest(self._roots_of(wanted), progress, only=wanted)
        return self.ingest(self.allowed(paths) if paths else None, progress)

    def _roots_of(self, wanted: Sequence[Path]) -> list[Path]:
        """The ingest roots that hold these paths: the kb_paths entry around each (so its
        documents keep the ids a full ingest gives them), else the path itself (saved answers)."""
        roots: list[Path] = []
        for p in wanted:
            around = [k.resolve() for k in self.kb_paths if p.is_relative_to(k.resolve())]
            root = around[0] if around else p
            if root not in roots and root.exists():
                roots.append(root)
        return roots

    def allowed(self, paths: Sequence[str], within: Sequence[Path] | None = None) -> list[Path]:
        """The resolved paths, if every one lies inside an allowed root; else PathNotAllowed.

        A chat account must not make the bot read arbitrary files (/etc/..., ../ escapes, a
        symlink in the KB pointing out of it), so each path is resolved with symlinks followed
        and checked against the roots before anything is read; one bad path refuses them all.
        The resolved paths, not the names given, are what gets ingested. Outside the roots, a
        missing path gets the same answer as an existing one: chat does not learn what exists
        elsewhere on the machine.
        """
        roots = [r.resolve() for r in (self.roots if within is None else within)]
        where = ", ".join(str(r) for r in roots) or "(none configured)"

        def inside(p: Path | None) -> bool:
            return p is not None and any(p.is_relative_to(root) for root in roots)

        chosen: list[Path] = []
        for raw in paths:
            given = Path(raw)
            try:
                resolved = given.resolve(strict=True)
            except (OSError, RuntimeError) as exc:  # missing, a symlink loop, an unreadable folder
                try:
                    loose: Path | None = given.resolve()
                except (OSError, RuntimeError):
                    loose = None
                if not inside(loose):
                    raise PathNotAllowed(_outside(raw, where)) from None
                if isinstance(exc, FileNotFoundError):
                    raise PathNotAllowed(f"{raw} does not exist; nothing was ingested.") from None
                raise PathNotAllowed(f"{raw} cannot be read ({type(exc).__name__}); nothing was ingested.") from None
            if not inside(resolved):
                raise PathNotAllowed(_outside(raw, where))
            chosen.append(resolved)
        return chosen

    def save_faq(self, question: str, answer: str, reviewer: str, scope: str | None = None) -> IngestSummary:
        """Add a reviewed question/answer pair through the normal incremental ingest: one FAQ
        file per reviewer under reviewed_dir (the file's title names the reviewer, and is what
        the answer cites); an answer given in a knowledge scope goes to reviewed_dir/<scope>/,
        which belongs to that scope only."""
        folder = self.reviewed_dir / scope if scope and scope in self.scopes.scopes else self.reviewed_dir
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"reviewed-by-{re.sub(r'[^A-Za-z0-9]+', '-', reviewer).strip('-')}.yaml"
        with self.lock:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
            pairs = list((data or {}).get("faq") or [])
            pairs.append({"question": question, "answer": answer})
            path.write_text(yaml.safe_dump({"faq": pairs}, allow_unicode=True, sort_keys=False), encoding="utf-8")
        return self.ingest([folder])


def _outside(raw: str, where: str) -> str:
    return (f"{raw} is outside the folders admins may re-ingest from chat ({where}); nothing was "
            "ingested. The operator can allow more in config.toml, [paths] reingest_roots.")
