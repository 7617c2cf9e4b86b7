"""How the fault tests damage a file: pure helpers (no dagster), used by tests/core and tests/pipelines."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path
from typing import Callable, TypeVar

World = TypeVar("World")


def truncate(path: Path, keep: float = 0.5) -> None:
    """Cut the file to the fraction ``keep`` of its size."""
    os.truncate(path, int(path.stat().st_size * keep))


def garble(path: Path, start: float = 0.3, end: float = 0.7, count: int = 64) -> None:
    """Overwrite ``count`` runs of 16 random bytes between the fractions ``start`` and ``end`` of the file."""
    rnd = random.Random(7)
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        for _ in range(count):
            handle.seek(rnd.randrange(int(size * start), max(int(size * start) + 1, int(size * end) - 16)))
            handle.write(bytes(rnd.randrange(256) for _ in range(16)))


def garble_sqlite_pages(path: Path, at_least: int = 0) -> None:
    """Damage every page after the first (the header stays valid: SQLite opens it, then reads garbage); writes
    at least ``at_least`` bytes (a small file grows garbage pages)."""
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.seek(4096)
        handle.write(bytes(random.Random(3).randrange(256) for _ in range(max(size - 4096, at_least))))


def checkpoint(path: Path) -> None:
    """Move an SQLite file's WAL into the file (as a closed database is), so the damage hits what is read."""
    con = sqlite3.connect(str(path))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def damage(action: Callable[[Path], None], locate: Callable[[World], Path]) -> Callable[[World], Path]:
    """A case: find the file in a world (``locate``), damage it (``action``), return its path."""

    def apply(world: World) -> Path:
        path = locate(world)
        action(path)
        return path

    return apply
