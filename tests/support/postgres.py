"""A private PostgreSQL server on 127.0.0.1 for tests (Debian's postgresql package)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.conftest import require_tool


# a throwaway server: nothing it writes has to survive a power cut, so nothing waits for the disk
THROWAWAY = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """Its data lives in a fresh folder under the system temp dir (readable by the postgres user).

    ``url`` is the database ``database`` (created at start); :meth:`create_database` adds others.
    Trust authentication on 127.0.0.1 only: a password in a URL is accepted and ignored.
    """

    def __init__(self, database: str = "dagster") -> None:
        root = Path(tempfile.mkdtemp(prefix="chunkbench-pg-"))
        os.chmod(root, 0o755)
        self.root = root
        binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        require_tool(bool(binaries), "PostgreSQL server (apt-get install postgresql)")
        self.bin = Path(binaries[-1]).parent
        self.data = root / "pgdata"
        self.sockets = root / "pgsock"
        self.data.mkdir(parents=True)
        self.sockets.mkdir()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            require_tool(shutil.which("runuser") is not None, "runuser (util-linux)")
            for path in (root, self.data, self.sockets):
                shutil.chown(path, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self._run("initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres", "--encoding=UTF8")
        self._start()
        try:
            self.url = self.create_database(database)
        except BaseException:
            self.stop()
            raise

    def create_database(self, name: str) -> str:
        """A new empty database; its URL."""
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def _start(self) -> None:
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-w",
            "-l",
            str(self.root / "postgres.log"),
            "-o",
            f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 {THROWAWAY}",
            "start",
        )

    def restart(self, pause_seconds: float = 0.0) -> None:
        """Stop the server (every session ends), wait, start it again on the same port with the same data."""
        self._run("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop")
        time.sleep(pause_seconds)
        self._start()

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self.as_user, str(self.bin / tool), *args], check=True, capture_output=True, timeout=120)

    def stop(self) -> None:
        subprocess.run(
            [*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(self.root, ignore_errors=True)
