"""Boundary embeddings, cut rules and grouping shared by the embedding-driven strategies.

Semantic strategies receive embeddings from the BOUNDARY model (never the corpus model, so the
cuts of a strategy are the same whichever model later embeds the chunks) and cut where adjacent
units are dissimilar. Here the boundary model is just a callable
``embed(texts) -> array (len(texts), dim)``: the pipeline binds it to the boundary
model (and its cache), tests bind it to a fake. When the embeddings are missing or do not
match the units, chunking fails hard with ChunkingError: a fixed-count fallback would
silently compare another strategy under this one's name.

Cut rules:

* ``percentile`` (the default) - cut where the adjacent distance 1 - cosine is above the
  Nth percentile of all adjacent distances of the document (default N = 95): the cuts adapt to
  how alike the document's sentences are overall, where an absolute threshold does not. A model's
  similarities run higher in one language than another (multilingual-e5's adjacent Persian sentences
  are all above 0.83, its English ones spread from 0.76), so only a rule relative to the document cuts
  every language alike;
* ``absolute`` - cut between units i and i+1 when cosine(u_i, u_i+1) < threshold
  (the boundary model's registry default, e.g. 0.3 cloud / 0.6 nomic, or its
  per-model override; 0.3 when none is given).

Grouping (``min_chunk_size``): a semantic cut is taken only when the
group so far and the rest of its segment both have at least ``min_units`` units; a
size cut (the next unit would take the group over ``max_tokens`` cl100k tokens) is
always taken.

:class:`SemanticCutOptions` declares these settings once for every strategy that cuts by them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional, Sequence

import numpy as np
from pydantic import Field

from chunkbench_core.errors import ChunkingError
from chunkbench_core.tokens import TokenIndex

from .registry import StrategyOptions

BoundaryEmbed = Callable[[list[str]], Any]
ThresholdMode = Literal["absolute", "percentile"]
THRESHOLD_MODES: tuple[str, ...] = ("absolute", "percentile")
FALLBACK_THRESHOLD = 0.3  # the threshold when none is given (no boundary model's threshold in force)
DEFAULT_PERCENTILE = 95.0
DEFAULT_MIN_CHUNK_SIZE = 3


class SemanticCutOptions(StrategyOptions):
    """How a semantic strategy cuts (module docstring)."""

    # percentile by default: an absolute threshold is a fact about one model on one language (multilingual-e5's
    # 0.82 cuts 45% of English sentence pairs and none of Persian ones, whose similarities all run above 0.83)
    threshold_mode: Literal["absolute", "percentile"] = Field(
        "percentile",
        description="semantic cut rule: 'percentile' (cut at the document's own largest distances "
        "between adjacent sentences, in any language) or 'absolute' (cut where adjacent "
        "similarity < threshold, the boundary model's threshold in force)",
    )
    threshold: Optional[float] = Field(
        None,
        ge=-1.0,
        le=1.0,
        json_schema_extra={"rule": "a cosine similarity in [-1, 1]"},
        description="absolute mode: the boundary model's similarity threshold for this run (default: the threshold "
        "in force for the boundary model, `chunkbench thresholds`); given without threshold_mode, it "
        "chooses absolute mode",
    )
    percentile: float = Field(
        DEFAULT_PERCENTILE,
        gt=0.0,
        lt=100.0,
        json_schema_extra={"rule": "in (0, 100)"},
        description="percentile mode: distances above this percentile are cuts",
    )
    min_chunk_size: int = Field(
        DEFAULT_MIN_CHUNK_SIZE,
        ge=1,
        json_schema_extra={"label": "min_chunk_size (sentences per semantic group)"},
        description="at least this many sentences (paragraphs for semantic_parent_child) per semantic group",
    )

    def cut_rule(self) -> "CutRule":
        """The rule; a threshold given without a mode means the absolute rule (it is what the threshold is for)."""
        mode = self.threshold_mode
        if self.threshold is not None and "threshold_mode" not in self.model_fields_set:
            mode = "absolute"
        return CutRule(mode, FALLBACK_THRESHOLD if self.threshold is None else self.threshold, self.percentile)


def require_embed(strategy: str, embed: BoundaryEmbed | None, hint: str = "") -> BoundaryEmbed:
    """The boundary-embedding callable, or a ChunkingError saying how to provide one."""
    if embed is None:
        raise ChunkingError(
            f"{strategy} needs boundary embeddings: pass embed=<callable texts -> array> bound to the boundary "
            f"model (there is no fallback without them){hint}"
        )
    if not callable(embed):
        raise ChunkingError(f"{strategy}: embed must be a callable texts -> array, got {type(embed).__name__}")
    return embed


def embed_units(strategy: str, embed: BoundaryEmbed, texts: list[str]) -> np.ndarray:
    """Embed ``texts`` in ONE call and return L2-normalised float32 rows, or fail hard.

    Fails with ChunkingError when the call raises, or returns anything but a finite
    2-D array with one row per text.
    """
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    try:
        raw = embed(texts)
    except ChunkingError:
        raise
    except Exception as exc:
        raise ChunkingError(
            f"{strategy}: boundary embedding of {len(texts)} units failed: {type(exc).__name__}: {exc}"
        ) from exc
    if raw is None:
        raise ChunkingError(f"{strategy}: boundary embedding returned nothing for {len(texts)} units")
    try:
        vectors = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ChunkingError(f"{strategy}: boundary embeddings are not a numeric array: {exc}") from exc
    if vectors.ndim != 2 or vectors.shape[0] != len(texts) or vectors.shape[1] == 0:
        raise ChunkingError(
            f"{strategy}: boundary embeddings have shape {vectors.shape}, expected ({len(texts)}, dim): "
            "one vector per unit"
        )
    if not np.isfinite(vectors).all():
        raise ChunkingError(f"{strategy}: boundary embeddings contain NaN or infinite values")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def adjacent_similarities(vectors: np.ndarray) -> np.ndarray:
    """cosine(v_i, v_i+1) for normalised rows."""
    if len(vectors) < 2:
        return np.zeros(0, dtype=np.float32)
    return np.einsum("ij,ij->i", vectors[:-1], vectors[1:])


@dataclass(frozen=True)
class CutRule:
    """Where semantic cuts go (module rule); validated when built."""

    mode: str = "absolute"
    threshold: float = FALLBACK_THRESHOLD
    percentile: float = DEFAULT_PERCENTILE

    def __post_init__(self) -> None:
        if self.mode not in THRESHOLD_MODES:
            raise ChunkingError(f"threshold_mode must be one of {', '.join(THRESHOLD_MODES)}, got {self.mode!r}")
        if (
            isinstance(self.threshold, bool)
            or not isinstance(self.threshold, (int, float))
            or not -1.0 <= self.threshold <= 1.0
        ):
            raise ChunkingError(f"threshold must be a cosine similarity in [-1, 1], got {self.threshold!r}")
        if (
            isinstance(self.percentile, bool)
            or not isinstance(self.percentile, (int, float))
            or not 0.0 < self.percentile < 100.0
        ):
            raise ChunkingError(f"percentile must be in (0, 100), got {self.percentile!r}")

    def params(self) -> dict[str, Any]:
        if self.mode == "absolute":
            return {"threshold_mode": "absolute", "threshold": float(self.threshold)}
        return {"threshold_mode": "percentile", "percentile": float(self.percentile)}

    def cut_masks(self, similarities: Sequence[np.ndarray]) -> list[np.ndarray]:
        """For each segment's adjacent similarities, where to cut (percentile pooled over all segments)."""
        if self.mode == "absolute":
            return [np.asarray(s) < self.threshold for s in similarities]
        pooled = np.concatenate([np.asarray(s, dtype=np.float64) for s in similarities] or [np.zeros(0)])
        if pooled.size == 0:
            return [np.zeros(len(s), dtype=bool) for s in similarities]
        limit = float(np.percentile(1.0 - pooled, self.percentile))
        return [(1.0 - np.asarray(s, dtype=np.float64)) > limit for s in similarities]


def validate_min_units(min_chunk_size: int) -> int:
    if isinstance(min_chunk_size, bool) or not isinstance(min_chunk_size, int) or min_chunk_size < 1:
        raise ChunkingError(
            f"min_chunk_size (sentences per semantic group) must be an integer >= 1, got {min_chunk_size!r}"
        )
    return min_chunk_size


def unit_token_counts(tokens: TokenIndex, units: list[tuple[int, int]]) -> list[int]:
    """cl100k tokens of each unit including the whitespace before it (so group sums are exact bounds)."""
    out = []
    previous_end: int | None = None
    for start, end in units:
        out.append(tokens.count(start if previous_end is None else previous_end, end))
        previous_end = end
    return out


def group_units(unit_tokens: list[int], cuts: np.ndarray, min_units: int, max_tokens: int) -> list[tuple[int, int]]:
    """Index ranges ``[i, j)`` of consecutive units forming each group (module rule)."""
    n = len(unit_tokens)
    if n == 0:
        return []
    groups: list[tuple[int, int]] = []
    first, size = 0, unit_tokens[0]
    for i in range(1, n):
        if size + unit_tokens[i] > max_tokens or (cuts[i - 1] and i - first >= min_units and n - i >= min_units):
            groups.append((first, i))
            first, size = i, 0
        size += unit_tokens[i]
    groups.append((first, n))
    return groups
