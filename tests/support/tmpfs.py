"""A real small tmpfs for the full-disk tests (mounting needs root: skipped on a laptop, a failure in CI)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def tmpfs(folder: Path, megabytes: int) -> Iterator[Path]:
    """``folder`` (created) with a tmpfs of ``megabytes`` mounted on it; unmounted afterwards."""
    from tests.conftest import require_tool

    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(folder)], capture_output=True, text=True
    )
    require_tool(mounted.returncode == 0, f"mounting a tmpfs (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def resize(disk: Path, megabytes: int) -> None:
    """Grow or shrink a mounted tmpfs (what freeing space looks like to a process)."""
    subprocess.run(["mount", "-o", f"remount,size={megabytes}m", str(disk)], check=True)


def fill(disk: Path, leave: int, name: str = "filler") -> Path:
    """A file taking all the free space of ``disk`` but ``leave`` bytes."""
    stats = os.statvfs(disk)
    filler = disk / name
    with open(filler, "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, max(0, stats.f_bavail * stats.f_frsize - leave))
    return filler
