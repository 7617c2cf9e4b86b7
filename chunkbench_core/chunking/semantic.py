"""semantic: sentences grouped where the boundary model sees them as related (LLD 8.3, ADR-0004).

Rule: split the markdown into sentences (:mod:`.sentences`, Farsi-aware, with the
LLD fallback chain), embed every sentence ONCE with the boundary model (one call;
the callable batches), and cut between adjacent sentences by the cut rule of
:mod:`.boundaries` (``absolute`` threshold - LLD, the default here - or ADR-0004's
``percentile``), keeping at least ``min_chunk_size`` sentences per group (LLD
``semantic_min_chunk_size``, default 3). A group is also closed before it would
exceed ``chunk_size`` cl100k tokens (the pipeline's size knob, shrunk to the corpus
model's window; the Chroma report's size-capped semantic chunkers do the same), a
single sentence longer than that is cut by the recursive cascade, and with a
``window`` every group longer than the corpus model's window is split to fit.
``chunk_overlap`` does not apply. Missing or mismatched boundary embeddings raise
ChunkingError (no fallback).
"""

from __future__ import annotations

from typing import Any

from .base import Chunker
from .boundaries import (
    DEFAULT_MIN_CHUNK_SIZE,
    DEFAULT_PERCENTILE,
    LLD_FALLBACK_THRESHOLD,
    BoundaryEmbed,
    CutRule,
    adjacent_similarities,
    embed_units,
    group_units,
    require_embed,
    unit_token_counts,
    validate_min_units,
)
from .cascade import recursive_spans
from .sentences import sentence_spans
from chunkbench_core.tokens import TokenIndex
from .window import ModelWindow, fit_spans


def semantic_spans(strategy: str, text: str, tokens: TokenIndex, segments: list[tuple[int, int]],
                   embed: BoundaryEmbed, rule: CutRule, min_units: int, max_tokens: int) -> list[list[tuple[int, int]]]:
    """The semantic groups of each segment of ``text`` as spans (module rule).

    The sentences of all segments are embedded in one call; cuts never cross a
    segment boundary, and a percentile is taken over the distances of all segments.
    """
    units_per_segment = [sentence_spans(text, start, end) for start, end in segments]
    flat = [text[a:b] for units in units_per_segment for a, b in units]
    vectors = embed_units(strategy, embed, flat)
    similarities = []
    offset = 0
    for units in units_per_segment:
        similarities.append(adjacent_similarities(vectors[offset:offset + len(units)]))
        offset += len(units)
    out: list[list[tuple[int, int]]] = []
    for units, cuts in zip(units_per_segment, rule.cut_masks(similarities)):
        spans: list[tuple[int, int]] = []
        for i, j in group_units(unit_token_counts(tokens, units), cuts, min_units, max_tokens):
            start, end = units[i][0], units[j - 1][1]
            if j - i == 1 and tokens.count(start, end) > max_tokens:
                spans.extend(recursive_spans(text, tokens, start, end, max_tokens))
            else:
                spans.append((start, end))
        out.append(spans)
    return out


class SemanticChunker(Chunker):
    name = "semantic"
    needs_boundary_embeddings = True
    size_driven = False

    def __init__(self, chunk_size: int = 512, chunk_overlap: int = 50, *, embed: BoundaryEmbed | None = None,
                 threshold_mode: str = "absolute", threshold: float | None = None,
                 percentile: float = DEFAULT_PERCENTILE, min_chunk_size: int = DEFAULT_MIN_CHUNK_SIZE,
                 window: ModelWindow | None = None) -> None:
        super().__init__(chunk_size, chunk_overlap, window=window)
        self.embed = require_embed(self.name, embed)
        self.rule = CutRule(threshold_mode, LLD_FALLBACK_THRESHOLD if threshold is None else threshold, percentile)
        self.min_chunk_size = validate_min_units(min_chunk_size)

    def params(self) -> dict[str, Any]:
        out = super().params()
        out.pop("chunk_overlap")
        return {**out, **self.rule.params(), "min_chunk_size": self.min_chunk_size, "units": "sentences"}

    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int]]:
        if not text.strip():
            return []
        spans = semantic_spans(self.name, text, tokens, [(0, len(text))], self.embed, self.rule,
                               self.min_chunk_size, self.chunk_size)[0]
        return fit_spans(text, tokens, spans, self.window)

