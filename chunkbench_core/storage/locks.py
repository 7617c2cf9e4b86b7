"""One process at a time: a file lock for work that must happen once (creating or migrating the Dagster
instance, the results folder, the caches).

:func:`setup_lock` takes an exclusive ``flock`` on a lock file in the folder being set up. Another process
that asks for it waits, and says so once it has waited a moment ("waiting for another chunkbench process to
finish setting up <folder> ..."). The kernel releases the lock when its holder exits, however it exits
(a crash, ``kill -9``), so a dead process never leaves a stale lock behind and nothing has to be cleaned up.

Within one process the lock is re-entrant for the thread that holds it (setting up the Dagster instance may
set up the results folder under it), and other threads of the process wait like other processes do.
The lock file stays in the folder (it is empty; deleting it while nobody waits is harmless).
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from chunkbench_core.errors import ChunkbenchError

log = logging.getLogger("chunkbench")

LOCK_FILE = ".chunkbench-setup.lock"
NOTIFY_AFTER_SECONDS = 2.0
_POLL_FIRST = 0.01
_POLL_MAX = 0.2


class LockTimeoutError(ChunkbenchError):
    """Another process held the lock for longer than the caller was willing to wait."""


class _Held:
    """The lock of one path in this process: which thread holds it, how often, through which descriptor."""

    def __init__(self) -> None:
        self.guard = threading.Lock()  # serializes the threads of this process
        self.owner: int | None = None
        self.depth = 0
        self.fd: int | None = None


_held: dict[str, _Held] = {}
_held_guard = threading.Lock()


def _entry(path: Path) -> _Held:
    with _held_guard:
        return _held.setdefault(str(path), _Held())


def waiting_message(folder: str | Path, what: str | None = None) -> str:
    """The line a waiting process shows."""
    thing = f" ({what})" if what else ""
    return f"waiting for another chunkbench process to finish setting up {folder}{thing} ..."


def _acquire(
    try_once: Callable[[], bool], deadline: float | None, notify: Callable[[], None], notify_after: float
) -> bool:
    """Poll ``try_once`` with backoff; call ``notify`` once after ``notify_after`` seconds. False on timeout."""
    started = time.monotonic()
    delay = _POLL_FIRST
    notified = False
    while True:
        if try_once():
            return True
        now = time.monotonic()
        if not notified and now - started >= notify_after:
            notify()
            notified = True
        if deadline is not None and now >= deadline:
            return False
        time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - now)))
        delay = min(delay * 2, _POLL_MAX)


@contextmanager
def setup_lock(
    folder: str | Path,
    what: str | None = None,
    *,
    notify: Callable[[str], None] | None = None,
    notify_after: float = NOTIFY_AFTER_SECONDS,
    timeout: float | None = None,
    lock_name: str = LOCK_FILE,
) -> Iterator[Path]:
    """Hold the setup lock of ``folder`` (created when missing) for the body of the ``with``.

    ``what`` names what is being set up in the waiting message; ``notify`` receives that message once the
    caller has waited ``notify_after`` seconds (default: a warning on the ``chunkbench`` logger, which the
    CLI prints). ``timeout``: seconds to wait at most (None: as long as it takes), then LockTimeoutError.
    Yields the lock file's path.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = (folder / lock_name).resolve()
    entry = _entry(path)
    me = threading.get_ident()
    message = waiting_message(folder, what)
    tell = notify or (lambda text: log.warning("%s", text))
    told = [False]

    def say() -> None:
        if not told[0]:
            told[0] = True
            tell(message)

    deadline = None if timeout is None else time.monotonic() + timeout
    if entry.owner == me:  # re-entered by the thread that holds it
        entry.depth += 1
        try:
            yield path
        finally:
            entry.depth -= 1
        return
    if not _acquire(lambda: entry.guard.acquire(blocking=False), deadline, say, notify_after):
        raise LockTimeoutError(
            f"{folder}: another thread of this process kept setting it up for more than {timeout:g} s"
        )
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        entry.guard.release()
        raise
    try:

        def try_flock() -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return False
                raise

        if not _acquire(try_flock, deadline, say, notify_after):
            raise LockTimeoutError(
                f"{folder}: another chunkbench process kept setting it up for more than "
                f"{timeout:g} s (its lock file: {path}); is a chunkbench process stuck?"
            )
        entry.owner, entry.depth, entry.fd = me, 1, fd
        try:
            yield path
        finally:
            entry.owner, entry.depth, entry.fd = None, 0, None
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
        entry.guard.release()
