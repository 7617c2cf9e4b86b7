"""Index time that means something: what building a collection takes when nothing is cached.

A build's measured seconds depend on the embedding cache: a rebuild whose texts are all cached takes
seconds where the first build took minutes, so comparing configurations on measured index time
favours whichever was built last. The index time the frontier and the views use is the build's
time *uncached*:

- ``measured``: nothing was served from a cache (every text embedded, every context written): the
  measured seconds are that time;
- ``derived``: some texts (or contexts) came from a cache: the measured seconds plus what embedding
  them would have taken, at the engine's calibrated rate (:class:`~.calibration.EngineRate`) for
  their tokens, or, without a rate, at the per-text time the build itself showed on the texts it
  did embed; contexts at the LLM's seconds per call;
- ``unknown``: texts were cached and no rate can say what they would have cost (a remote model
  never calibrated and nothing embedded in this build): the measured seconds, a lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from .calibration import EngineRate
from .errors import EstimateError

IndexTimeSource = Literal["measured", "derived", "unknown"]


@dataclass(frozen=True)
class EmbeddingPass:
    """One embedding pass of a build (the corpus model's chunks, or the boundary model's units).

    ``texts``: texts embedded or looked up; ``cached``: served from the cache; ``tokens``: cl100k tokens of
    all the texts (the cached ones get their share); ``seconds``: the pass's measured time (its
    ``embedding_usage`` seconds), used when no rate is given; ``rate``: the engine's calibrated rate.
    """

    texts: int
    cached: int
    tokens: float = 0.0
    seconds: float = 0.0
    rate: EngineRate | None = None

    def __post_init__(self) -> None:
        for name in ("texts", "cached"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise EstimateError(f"{name} must be an integer >= 0, got {value!r}")
        if self.cached > self.texts:
            raise EstimateError(f"cached ({self.cached}) cannot exceed texts ({self.texts})")
        for name in ("tokens", "seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise EstimateError(f"{name} must be a finite number >= 0, got {value!r}")

    def cached_seconds(self) -> float | None:
        """What embedding the cached texts would have taken, or None when nothing can say."""
        if not self.cached:
            return 0.0
        cached_tokens = self.tokens * self.cached / self.texts if self.texts else 0.0
        if self.rate is not None:
            return self.rate.seconds(self.cached, cached_tokens)
        embedded = self.texts - self.cached
        if embedded > 0 and self.seconds > 0:
            return self.seconds / embedded * self.cached
        return None


@dataclass(frozen=True)
class UncachedIndexTime:
    """``index_seconds_uncached`` and how it was obtained (the views show ``index_time_source``)."""

    seconds: float
    source: IndexTimeSource
    measured_seconds: float
    added_seconds: float  # what the cached work would have taken (0 when measured)
    cached_texts: int
    cached_contexts: int = 0

    def as_row(self) -> dict[str, object]:
        """Columns for ``index_costs``."""
        return {
            "index_seconds_uncached": self.seconds,
            "index_time_source": self.source,
            "index_seconds_cached_part": self.added_seconds,
            "cached_texts": self.cached_texts,
            "cached_contexts": self.cached_contexts,
        }


def uncached_index_seconds(
    measured_seconds: float,
    passes: list[EmbeddingPass] | tuple[EmbeddingPass, ...],
    cached_contexts: int = 0,
    seconds_per_context: float | None = None,
) -> UncachedIndexTime:
    """The build's index time with nothing cached (module rule).

    ``measured_seconds``: the build as timed (``index_seconds``); ``passes``: its embedding passes;
    ``cached_contexts``: contextual_retrieval's contexts served from the context cache, and
    ``seconds_per_context`` an LLM call's time (None: unknown).
    """
    if (
        isinstance(measured_seconds, bool)
        or not isinstance(measured_seconds, (int, float))
        or not math.isfinite(measured_seconds)
        or measured_seconds < 0
    ):
        raise EstimateError(f"measured_seconds must be a finite number >= 0, got {measured_seconds!r}")
    if isinstance(cached_contexts, bool) or not isinstance(cached_contexts, int) or cached_contexts < 0:
        raise EstimateError(f"cached_contexts must be an integer >= 0, got {cached_contexts!r}")
    cached_texts = sum(p.cached for p in passes)
    if not cached_texts and not cached_contexts:
        return UncachedIndexTime(float(measured_seconds), "measured", float(measured_seconds), 0.0, 0, 0)
    added, known = 0.0, True
    for p in passes:
        seconds = p.cached_seconds()
        if seconds is None:
            known = False
        else:
            added += seconds
    if cached_contexts:
        if seconds_per_context is None or not math.isfinite(seconds_per_context) or seconds_per_context < 0:
            known = False
        else:
            added += cached_contexts * seconds_per_context
    if not known:
        return UncachedIndexTime(
            float(measured_seconds), "unknown", float(measured_seconds), 0.0, cached_texts, cached_contexts
        )
    return UncachedIndexTime(
        measured_seconds + added, "derived", float(measured_seconds), added, cached_texts, cached_contexts
    )
