"""A real PostgreSQL server for the tests, started on 127.0.0.1 and stopped by the test session.

It uses the server binaries of Debian's `postgresql` package (scripts/test.sh installs it when
it runs as root, as CI does). PostgreSQL refuses to run as root, so as root the server runs as
the `postgres` user the package creates. Each test gets a database of its own.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg

from tests.ports import free_port


def server_binaries() -> Path | None:
    """The directory holding initdb and pg_ctl, newest major version first; None if none is installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]), reverse=True)
    if found:
        return Path(found[0]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).resolve().parent if on_path else None


class PostgresServer:
    """initdb + pg_ctl start in a temporary directory; `url(name)` gives a fresh database."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="groundbot-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._databases = 0
        self._as: list[str] = []
        if os.geteuid() == 0:  # the server will not run as root
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")

    def start(self) -> PostgresServer:
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "-E", "UTF8", "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-o", options, "-l",
                  str(self.root / "server.log"), "-w", "-t", "120", "start")
        return self

    def url(self, prefix: str = "t") -> str:
        """A new, empty database on the server, as a SQLAlchemy URL."""
        self._databases += 1
        name = f"{prefix}_{self._databases}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
