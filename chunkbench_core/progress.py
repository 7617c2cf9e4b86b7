"""Progress of long loops, and a stop request they obey.

The loops over documents and questions call :func:`report` as they go (what, done, total) and
:func:`check_stop` between items. Whoever runs them (``chunkbench run``) registers a sink with
:func:`add_sink` to print "questions 1,200/10,000, 35 s elapsed, ETA 4 min", and calls
:func:`request_stop` when the user asks to stop (SIGTERM, Ctrl-C): the next :func:`check_stop`
raises :class:`StopRequested`, which no ``except Exception`` swallows, so the work ends at the next
item instead of finishing the run.

Nothing here is needed for the work itself: with no sink registered, :func:`report` does nothing.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable


class StopRequested(KeyboardInterrupt):
    """The user asked the run to stop (a signal); raised between items, never caught as a failure of one item."""


@dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` items of ``label`` (e.g. "questions, fixed_size x all-minilm-l6-v2")."""

    label: str
    done: int
    total: int
    elapsed_s: float

    @property
    def eta_s(self) -> float | None:
        if self.done <= 0 or self.total <= self.done:
            return None if self.done <= 0 else 0.0
        return self.elapsed_s / self.done * (self.total - self.done)

    def line(self) -> str:
        eta = self.eta_s
        tail = f", ETA {_duration(eta)}" if eta is not None and self.done < self.total else ""
        return f"{self.label}: {self.done:,}/{self.total:,}, {_duration(self.elapsed_s)} elapsed{tail}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


Sink = Callable[[Progress], None]
_sinks: list[Sink] = []
_stop = threading.Event()
_stop_reason: list[str] = []


def add_sink(sink: Sink) -> None:
    _sinks.append(sink)


def remove_sink(sink: Sink) -> None:
    if sink in _sinks:
        _sinks.remove(sink)


class Tracker:
    """Reports ``done/total`` of one loop to the sinks, at most every ``every_s`` seconds (and at the end)."""

    def __init__(self, label: str, total: int, every_s: float = 5.0) -> None:
        self.label, self.total, self.every_s = label, total, every_s
        self.started = time.monotonic()
        self._last = 0.0

    def step(self, done: int) -> None:
        check_stop()
        if not _sinks:
            return
        now = time.monotonic()
        if done >= self.total or now - self._last >= self.every_s:
            self._last = now
            report(Progress(self.label, done, self.total, now - self.started))


def report(progress: Progress) -> None:
    for sink in list(_sinks):
        sink(progress)


def request_stop(reason: str) -> None:
    """Ask every loop to stop at its next item (thread-safe; called from a signal handler)."""
    _stop_reason.append(reason)
    _stop.set()


def clear_stop() -> None:
    _stop.clear()
    _stop_reason.clear()


def stop_requested() -> bool:
    return _stop.is_set()


def check_stop() -> None:
    """Raise :class:`StopRequested` when a stop was requested."""
    if _stop.is_set():
        raise StopRequested(f"stopped: {_stop_reason[-1] if _stop_reason else 'stop requested'}")
