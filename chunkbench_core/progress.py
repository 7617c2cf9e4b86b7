"""Progress of long loops, the wall time of each stage, and a stop request the loops obey.

The loops over documents, texts to embed and questions report as they go through a :class:`Tracker`
("parsing: 1,200/2,000 documents, 14/s, 85 s elapsed, ETA 1 min"), at most every
:data:`REPORT_EVERY_S` seconds and always at the start and the end, so a person watching never waits
longer than that without a line while work is being done. Whoever runs them registers a sink with
:func:`add_sink`: ``chunkbench run`` prints to the terminal, an asset forwards to the Dagster run log.

:func:`scope` names what a loop belongs to ("fixed_size × all-minilm-l6-v2"): a tracker started inside
it puts that name before its own label, so the embedding loop deep in the embedder says which
configuration it embeds for without being told.

:class:`StageClock` adds up the wall time of named stages (parsing, chunking, embedding, ...) inside
:func:`timed` blocks, for the summary at the end of a run.

:func:`request_stop` is called when the user asks to stop (SIGTERM, Ctrl-C): the next
:func:`check_stop` raises :class:`StopRequested`, which no ``except Exception`` swallows, so the work
ends at the next item instead of finishing the run.

Nothing here is needed for the work itself: with no sink registered, reporting does nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

#: the longest a running loop goes without a progress line (seconds)
REPORT_EVERY_S = 10.0


class StopRequested(KeyboardInterrupt):
    """The user asked the run to stop (a signal); raised between items, never caught as a failure of one item."""


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _rate(per_second: float) -> str:
    if per_second >= 10:
        return f"{per_second:,.0f}/s"
    if per_second >= 1:
        return f"{per_second:.1f}/s"
    if per_second > 0:
        return f"{per_second * 60:.1f}/min"
    return "0/s"


def file_size(n: int) -> str:
    """``3 KB``, ``40.0 MB``: the size of a file in a progress line."""
    return f"{n / 1e6:.1f} MB" if n >= 1_000_000 else f"{max(1, round(n / 1000)):,} KB"


def characters(n: int) -> str:
    """``12,400 characters``, ``3.2 million characters``: the size of a document in a progress line."""
    return f"{n / 1e6:.1f} million characters" if n >= 1_000_000 else f"{n:,} characters"


@dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` ``unit`` of ``label`` (e.g. "embedding fixed_size × all-minilm-l6-v2", texts)."""

    label: str
    done: int
    total: int
    elapsed_s: float
    unit: str = ""
    #: the share of the work done when items differ in size (their bytes, their characters); None: by count
    share: float | None = None
    #: the item being done when one takes long (a 40 MB document), with how long it has taken so far
    current: str = ""

    @property
    def rate(self) -> float | None:
        """Items per second so far (None before the first item or the first tenth of a second)."""
        if self.done <= 0 or self.elapsed_s < 0.1:
            return None
        return self.done / self.elapsed_s

    @property
    def eta_s(self) -> float | None:
        if self.done <= 0 or self.total <= self.done:
            return None if self.done <= 0 else 0.0
        if self.share is not None:  # by size: one big document done is most of the work, not one of 2,001
            return self.elapsed_s / self.share * (1.0 - self.share) if self.share > 0 else None
        return self.elapsed_s / self.done * (self.total - self.done)

    def line(self) -> str:
        """``label: 500/1,000 texts, 17/s, 30 s elapsed, ETA 30 s``."""
        unit = f" {self.unit}" if self.unit else ""
        rate = self.rate
        speed = f", {_rate(rate)}" if rate is not None and self.done < self.total else ""
        eta = self.eta_s
        tail = f", ETA {_duration(eta)}" if eta is not None and self.done < self.total else ""
        now = f", still on {self.current}" if self.current else ""
        return (
            f"{self.label}: {self.done:,}/{self.total:,}{unit}{speed}, {_duration(self.elapsed_s)} elapsed{tail}{now}"
        )


Sink = Callable[[Progress], None]
_sinks: list[Sink] = []
_stop = threading.Event()
_stop_reason: list[str] = []
_scope: contextvars.ContextVar[str] = contextvars.ContextVar("chunkbench_progress_scope", default="")
_inner: contextvars.ContextVar[str | None] = contextvars.ContextVar("chunkbench_progress_inner", default=None)


def add_sink(sink: Sink) -> None:
    _sinks.append(sink)


def remove_sink(sink: Sink) -> None:
    if sink in _sinks:
        _sinks.remove(sink)


@contextlib.contextmanager
def sink(to: Sink) -> Iterator[None]:
    """Send progress to ``to`` inside the block."""
    add_sink(to)
    try:
        yield
    finally:
        remove_sink(to)


def listening() -> bool:
    """True when some sink is registered (a loop may skip preparing its labels otherwise)."""
    return bool(_sinks)


@contextlib.contextmanager
def scope(name: str) -> Iterator[None]:
    """Trackers started inside the block label their lines ``<label> <name>`` (the innermost scope wins)."""
    token = _scope.set(name)
    try:
        yield
    finally:
        _scope.reset(token)


def current_scope() -> str:
    return _scope.get()


@contextlib.contextmanager
def inner(prefix: str) -> Iterator[None]:
    """Trackers started inside the block belong to an outer loop that reports already (the boundary model's
    embedding of one document, inside chunking): their labels start with ``prefix``, and they print only when
    they run longer than the report interval (a short one says nothing; a long one still shows it moves)."""
    token = _inner.set(prefix)
    try:
        yield
    finally:
        _inner.reset(token)


class Tracker:
    """Reports ``done/total`` of one loop to the sinks: at the start, while it runs whenever the next step would
    come later than ``every_s`` seconds after the last line (so lines come at most that far apart as long as
    one step is shorter), and at the end. ``label`` is prefixed to the current :func:`scope`.

    ``weights`` (one per item, in the order the items are done: their size) make the ETA follow the share of
    the work done rather than the count: a corpus of one 40 MB file and 2,000 small ones is almost finished
    when the big one is."""

    def __init__(
        self,
        label: str,
        total: int,
        every_s: float | None = None,
        unit: str = "",
        announce: bool = True,
        weights: Sequence[float] | None = None,
        only_when_long: bool = False,
    ) -> None:
        """``only_when_long``: a step between stages that is quick on most corpora (checking the chunks,
        indexing them) says nothing unless it runs longer than the interval, then reports like any loop."""
        if weights is not None and len(weights) != total:
            raise ValueError(f"{label}: {len(weights)} weights for {total} items")
        where, prefix = current_scope(), _inner.get()
        label = f"{prefix} {label}" if prefix else label
        self.label = f"{label} {where}" if where else label
        # the interval read when the loop starts (None: :data:`REPORT_EVERY_S` as it is then)
        self.total, self.every_s, self.unit = total, REPORT_EVERY_S if every_s is None else every_s, unit
        self.quiet = prefix is not None or only_when_long  # only a long run of it reports (see :func:`inner`)
        self.started = time.monotonic()
        self._last = self.started
        self._previous_step = self.started
        self._step_s = 0.0  # the recent time between two steps: the next line comes before the interval is up
        self._done = 0
        self._current, self._current_since = "", self.started  # the item being done (see :meth:`heartbeat`)
        self._reported = -1  # the last ``done`` reported
        self._cumulative: list[float] | None = None  # the weight of the first n items, n = 0..total
        if weights is not None and sum(max(0.0, float(w)) for w in weights) > 0:
            self._cumulative = [0.0]
            for weight in weights:
                self._cumulative.append(self._cumulative[-1] + max(0.0, float(weight)))
        if announce and not self.quiet and _sinks and total > 0:
            self._reported = 0
            report(Progress(self.label, 0, total, 0.0, unit))

    def step(self, done: int) -> None:
        """``done`` items are finished (absolute, not an increment); checks for a stop request first."""
        check_stop()
        self._done = done
        if not _sinks or done == self._reported:
            return
        now = time.monotonic()
        between, self._previous_step = now - self._previous_step, now
        self._step_s = between if self._step_s == 0.0 else 0.7 * self._step_s + 0.3 * between
        final = done >= self.total and self.total > 0 and (not self.quiet or self._reported >= 0)
        # report now when waiting for the next step would pass the interval (slow steps: a line every step);
        # the next step is expected within the shorter of the last step and the recent mean (one long item
        # among short ones gives one line when it ends, not one per short item after it)
        if final or now - self._last + min(self._step_s, between) >= self.every_s:
            self._last = now
            self._reported = done
            report(Progress(self.label, done, self.total, now - self.started, self.unit, self._share(done)))

    def _share(self, done: int) -> float | None:
        if self._cumulative is None:
            return None
        return self._cumulative[min(max(done, 0), self.total)] / self._cumulative[-1]

    def advance(self, items: int = 1) -> None:
        self.step(self._done + items)

    def begin(self, item: str) -> None:
        """The next item is started: ``item`` names it in the lines :meth:`heartbeat` prints while it takes long."""
        self._current, self._current_since = item, time.monotonic()

    @contextlib.contextmanager
    def heartbeat(self) -> Iterator[None]:
        """Inside the block, a line at least every interval even while one item takes longer than that (one
        40 MB document among 2,000 small ones): it names the item (:meth:`begin`) and how long it
        has taken so far. Without a sink, or for a quiet inner tracker, it does nothing."""
        if not _sinks or self.quiet:
            yield
            return
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(max(0.05, self.every_s - (time.monotonic() - self._last))):
                now = time.monotonic()
                if now - self._last < self.every_s or not self._current or self._done >= self.total:
                    continue
                self._last = now
                current = f"{self._current} ({_duration(now - self._current_since)} so far)"
                report(
                    Progress(
                        self.label,
                        self._done,
                        self.total,
                        now - self.started,
                        self.unit,
                        self._share(self._done),
                        current,
                    )
                )

        thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def report(progress: Progress) -> None:
    for to in list(_sinks):
        try:
            to(progress)
        except Exception:  # noqa: BLE001 - a broken sink (a closed terminal) must not fail the work
            pass


# -- wall time per stage ---------------------------------------------------------------------------
class StageClock:
    """Wall seconds per stage, added up over :func:`timed` blocks (thread-safe)."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        with self._lock:
            self._seconds[stage] = self._seconds.get(stage, 0.0) + max(0.0, seconds)

    def seconds(self) -> dict[str, float]:
        with self._lock:
            return dict(self._seconds)

    def clear(self) -> None:
        with self._lock:
            self._seconds.clear()


_clocks: list[StageClock] = []


def add_clock(clock: StageClock) -> None:
    _clocks.append(clock)


def remove_clock(clock: StageClock) -> None:
    if clock in _clocks:
        _clocks.remove(clock)


def add_time(stage: str, seconds: float) -> None:
    """Add ``seconds`` to ``stage`` of every registered :class:`StageClock`."""
    for clock in list(_clocks):
        clock.add(stage, seconds)


@contextlib.contextmanager
def timed(stage: str) -> Iterator[None]:
    """Add the block's wall time to ``stage`` of every registered :class:`StageClock`."""
    started = time.perf_counter()
    try:
        yield
    finally:
        add_time(stage, time.perf_counter() - started)


# -- stopping --------------------------------------------------------------------------------------
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
