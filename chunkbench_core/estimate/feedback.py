"""Estimate against actual: what a run took, stage by stage, and the corrections the next estimate uses.

A run keeps its estimate (``RunEstimate.to_dict``); when it ends, the actual seconds of each stage
are compared with it. A measured time often spans several estimated stages (a collection's build
time holds its chunking, its index writes and, when an LLM writes contexts, those calls), so an
actual is a :class:`StageActual` naming the stages it covers.

For every engine and group of stages, the observed ratio ``actual / uncorrected estimate`` moves
the stored correction part of the way (a damped running correction, geometric so that 2x too slow
and 2x too fast weigh the same):

    correction ← correction^(1 − d) · observed^d,   d = ``damping`` (0.5)

bounded to ``[1/4, 4]`` (:data:`BOUNDS`) so one odd run (a busy machine, a cold disk) cannot throw
the next estimate far off. Stages too short to time well (under :data:`MIN_SECONDS` both ways)
teach nothing. The next :func:`~chunkbench_core.estimate.predict.estimate_run` multiplies each
stage by its correction.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chunkbench_core.labels import configuration_label

from .calibration import CalibrationStore, now_text
from .errors import EstimateError
from .predict import PARSING_KEY, PARTITION_STAGES, RunEstimate, duration

#: the smallest and largest correction kept
BOUNDS = (0.25, 4.0)
DAMPING = 0.5
#: stages shorter than this, estimated and actual, are not learnt from (timer noise, a busy second)
MIN_SECONDS = 2.0
#: comparisons kept in the calibration file (the latest)
KEEP_COMPARISONS = 50


@dataclass(frozen=True)
class StageActual:
    """Measured seconds of one partition's stages (``corpus_model``/``strategy``), or of parsing (both None)."""

    corpus_model: str | None
    strategy: str | None
    stages: tuple[str, ...]
    seconds: float

    def __post_init__(self) -> None:
        if not self.stages:
            raise EstimateError("an actual time must name the stage(s) it covers")
        unknown = [s for s in self.stages if s not in (*PARTITION_STAGES, "parsing")]
        if unknown:
            raise EstimateError(
                f"unknown stage(s) {', '.join(unknown)}; stages: {', '.join((*PARTITION_STAGES, 'parsing'))}"
            )
        if not isinstance(self.seconds, (int, float)) or not math.isfinite(self.seconds) or self.seconds < 0:
            raise EstimateError(f"seconds must be a finite number >= 0, got {self.seconds!r}")


@dataclass(frozen=True)
class PartitionTimes:
    """What a partition's build and experiment record (seconds). ``index_seconds``: the collection's build
    (``index_costs.index_seconds``); ``embedding_seconds`` and ``boundary_seconds``: its ``embedding_usage``
    seconds of the ``chunks`` and ``boundary`` stages, inside the build; ``context_seconds``: the LLM contexts'
    time when measured apart (else it counts in the build); ``retrieval_seconds``: the experiment;
    ``step_seconds``: the whole partition's wall time, whose rest is the overhead."""

    index_seconds: float
    embedding_seconds: float
    boundary_seconds: float = 0.0
    context_seconds: float | None = None
    retrieval_seconds: float | None = None
    step_seconds: float | None = None


def partition_actuals(corpus_model: str, strategy: str, times: PartitionTimes) -> list[StageActual]:
    """The actual stages of one partition from what its build and experiment recorded (:class:`PartitionTimes`)."""
    index_seconds, embedding_seconds, boundary_seconds = (
        times.index_seconds,
        times.embedding_seconds,
        times.boundary_seconds,
    )
    context_seconds, retrieval_seconds, step_seconds = (
        times.context_seconds,
        times.retrieval_seconds,
        times.step_seconds,
    )
    out = [StageActual(corpus_model, strategy, ("embedding",), embedding_seconds)]
    rest = index_seconds - embedding_seconds
    if boundary_seconds:
        out.append(StageActual(corpus_model, strategy, ("boundary",), boundary_seconds))
        rest -= boundary_seconds
    build: tuple[str, ...] = ("chunking", "indexing")
    if context_seconds is None:
        build = ("chunking", "context", "indexing")
    else:
        out.append(StageActual(corpus_model, strategy, ("context",), context_seconds))
        rest -= context_seconds
    out.append(StageActual(corpus_model, strategy, build, max(0.0, rest)))
    if retrieval_seconds is not None:
        out.append(StageActual(corpus_model, strategy, ("retrieval",), retrieval_seconds))
    if step_seconds is not None:
        known = index_seconds + (retrieval_seconds or 0.0)
        out.append(StageActual(corpus_model, strategy, ("overhead",), max(0.0, step_seconds - known)))
    return out


@dataclass(frozen=True)
class StageComparison:
    corpus_model: str | None
    strategy: str | None
    stages: tuple[str, ...]
    key: str  # the engine key id (or ``parsing``) whose correction it teaches
    estimated: float  # corrected, as printed before the run
    raw: float  # uncorrected
    actual: float

    @property
    def ratio(self) -> float:
        return self.actual / self.estimated if self.estimated > 0 else math.inf


@dataclass(frozen=True)
class RunComparison:
    stages: tuple[StageComparison, ...]
    estimated_total: float
    actual_total: float | None = None
    created_at: str = field(default_factory=now_text)

    def per_partition(self) -> dict[tuple[str, str], tuple[float, float]]:
        """{(corpus model, strategy): (estimated, actual)} over the stages measured."""
        out: dict[tuple[str, str], tuple[float, float]] = {}
        for s in self.stages:
            if s.corpus_model is None or s.strategy is None:
                continue
            e, a = out.get((s.corpus_model, s.strategy), (0.0, 0.0))
            out[(s.corpus_model, s.strategy)] = (e + s.estimated, a + s.actual)
        return out

    def text(self) -> str:
        """A few lines: the total, then each partition, "estimated X, took Y (ratio Z)"."""
        lines = []
        if self.actual_total is not None:
            lines.append("run: " + comparison_text(self.estimated_total, self.actual_total))
        for (model, strategy), (estimated, actual) in sorted(self.per_partition().items()):
            lines.append(f"  {strategy} × {model}: {comparison_text(estimated, actual)}")
        parsing = [s for s in self.stages if s.stages == ("parsing",)]
        if parsing:
            lines.append("  parsing: " + comparison_text(parsing[0].estimated, parsing[0].actual))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "created_at": self.created_at,
            "estimated_total": self.estimated_total,
            "actual_total": self.actual_total,
            "partitions": [
                {"corpus_model": m, "strategy": s, "estimated": e, "actual": a}
                for (m, s), (e, a) in sorted(self.per_partition().items())
            ],
        }


def comparison_text(estimated: float, actual: float) -> str:
    """``estimated 12 min, took 15 min (ratio 1.25)``: ratio = actual / estimated."""
    ratio = f"{actual / estimated:.2f}" if estimated > 0 else "n/a"
    return f"estimated {duration(estimated)}, took {duration(actual)} (ratio {ratio})"


def compare_run(
    estimate: RunEstimate, actuals: Sequence[StageActual], actual_total: float | None = None
) -> RunComparison:
    """Each actual against the estimated seconds of the stages it covers (a partition the estimate does not
    hold is an error naming it)."""
    partitions = {(p.corpus_model, p.strategy): p for p in estimate.partitions}
    boundary_key = estimate.keys.get(estimate.boundary_model) if estimate.boundary_model else None
    out = []
    for actual in actuals:
        if actual.stages == ("parsing",):
            out.append(
                StageComparison(
                    None,
                    None,
                    actual.stages,
                    PARSING_KEY,
                    estimate.parsing_seconds,
                    estimate.raw_parsing_seconds,
                    actual.seconds,
                )
            )
            continue
        part = partitions.get((actual.corpus_model, actual.strategy))  # type: ignore[arg-type]  # a partition's stage: both names are set
        if part is None:
            raise EstimateError(
                f"the estimate holds no partition {configuration_label(actual.strategy, actual.corpus_model)}: "
                "compare a run with the estimate made for it"
            )
        key = estimate.keys.get(part.corpus_model, part.corpus_model)
        if actual.stages == ("boundary",) and boundary_key:
            key = boundary_key
        out.append(
            StageComparison(
                part.corpus_model,
                part.strategy,
                actual.stages,
                key,
                sum(part.seconds.get(s, 0.0) for s in actual.stages),
                sum(part.raw_seconds.get(s, 0.0) for s in actual.stages),
                actual.seconds,
            )
        )
    return RunComparison(tuple(out), estimate.total, actual_total)


def updated_correction(
    old: float,
    raw_estimate: float,
    actual: float,
    damping: float = DAMPING,
    bounds: tuple[float, float] = BOUNDS,
    min_seconds: float = MIN_SECONDS,
) -> float:
    """The correction after one observation (module rule): ``old^(1-d) · (actual/raw)^d``, within ``bounds``;
    unchanged when both times are under ``min_seconds``, or when nothing was estimated (a stage estimated at 0,
    e.g. parsing with every parse stored, has nothing a factor could correct)."""
    low, high = bounds
    if not 0 < damping <= 1:
        raise EstimateError(f"damping must be in (0, 1], got {damping!r}")
    if not 0 < low <= 1 <= high:
        raise EstimateError(f"bounds must hold 1 and be positive, got {bounds!r}")
    old = min(high, max(low, old if math.isfinite(old) and old > 0 else 1.0))
    if raw_estimate <= 0 or (raw_estimate < min_seconds and actual < min_seconds):
        return old  # nothing was estimated to correct, or too short to time well
    observed = min(high, max(low, actual / raw_estimate))
    return min(high, max(low, old ** (1 - damping) * observed**damping))


def learn(
    store: CalibrationStore,
    comparison: RunComparison,
    damping: float = DAMPING,
    bounds: tuple[float, float] = BOUNDS,
    min_seconds: float = MIN_SECONDS,
) -> dict[str, dict[str, float]]:
    """Move the stored corrections by this run (summed per engine key and group of stages) and keep the
    comparison; returns {key: {stage: new correction}}."""
    totals: dict[tuple[str, tuple[str, ...]], list[float]] = {}
    for s in comparison.stages:
        entry = totals.setdefault((s.key, s.stages), [0.0, 0.0])
        entry[0] += s.raw
        entry[1] += s.actual

    def change(data: dict[str, Any]) -> dict[str, dict[str, float]]:
        changed: dict[str, dict[str, float]] = {}
        for (key, stages), (raw, actual) in totals.items():
            entries = data["corrections"].setdefault(key, {})
            for stage in stages:
                old = float((entries.get(stage) or {}).get("ratio", 1.0))
                new = updated_correction(old, raw, actual, damping, bounds, min_seconds)
                runs = int((entries.get(stage) or {}).get("runs", 0)) + 1
                entries[stage] = {"ratio": new, "runs": runs, "updated_at": comparison.created_at}
                changed.setdefault(key, {})[stage] = new
        data["comparisons"] = (data.get("comparisons") or [])[-(KEEP_COMPARISONS - 1) :] + [comparison.to_dict()]
        return changed

    return store.update(change)


def last_comparisons(store: CalibrationStore) -> list[Mapping[str, Any]]:
    """The comparisons kept in the calibration file, oldest first."""
    return list(store.read().get("comparisons") or [])
