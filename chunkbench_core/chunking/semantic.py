"""semantic: sentences grouped where the boundary model sees them as related.

Rule: split the markdown into sentences (:mod:`.sentences`, Farsi-aware, with its
fallback chain), embed every sentence ONCE with the boundary model (one call;
the callable batches), and cut between adjacent sentences by the cut rule of
:mod:`.boundaries` (``percentile``, the default: the document's own largest distances, or an ``absolute`` threshold),
keeping at least ``min_chunk_size`` sentences per group (default 3). A group is also closed before it would
exceed ``chunk_size`` cl100k tokens (the pipeline's size knob, shrunk to the corpus
model's window; the Chroma report's size-capped semantic chunkers do the same), a
single sentence longer than that is cut by the recursive cascade, and with a
``window`` every group longer than the corpus model's window is split to fit.
``chunk_overlap`` does not apply. Missing or mismatched boundary embeddings raise
ChunkingError (no fallback).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chunkbench_core.tokens import TokenIndex

from .base import Chunker
from .boundaries import (
    BoundaryEmbed,
    CutRule,
    SemanticCutOptions,
    adjacent_similarities,
    embed_units,
    group_units,
    require_embed,
    unit_token_counts,
)
from .cascade import recursive_spans
from .registry import Capabilities, register_strategy
from .sentences import sentence_spans
from .window import ModelWindow, fit_spans


@dataclass(frozen=True)
class SemanticCut:
    """How a chunker cuts by meaning: its strategy's name (named in an embedding failure), the boundary model's
    ``embed``, where cuts go (``rule``), and the fewest sentences and most tokens of a group."""

    strategy: str
    embed: BoundaryEmbed
    rule: CutRule
    min_units: int
    max_tokens: int


def semantic_spans(
    text: str, tokens: TokenIndex, segments: list[tuple[int, int]], cut: SemanticCut
) -> list[list[tuple[int, int]]]:
    """The semantic groups of each segment of ``text`` as spans (module rule).

    The sentences of all segments are embedded in one call; cuts never cross a
    segment boundary, and a percentile is taken over the distances of all segments.
    """
    strategy, embed, rule, min_units, max_tokens = cut.strategy, cut.embed, cut.rule, cut.min_units, cut.max_tokens
    units_per_segment = [sentence_spans(text, start, end) for start, end in segments]
    flat = [text[a:b] for units in units_per_segment for a, b in units]
    vectors = embed_units(strategy, embed, flat)
    similarities = []
    offset = 0
    for units in units_per_segment:
        similarities.append(adjacent_similarities(vectors[offset : offset + len(units)]))
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


@register_strategy(
    "semantic",
    # what the run estimate assumes of its chunks before a build is recorded
    shape={
        "fill": 0.8,
        "overlap_share": 0.0,
        "boundary_unit": "sentences",
        "boundary_unit_tokens": 20.0,
        "chunking_seconds_per_token": 4e-6,
    },
    options=SemanticCutOptions,
    capabilities=Capabilities(boundary_model=True),
    description="groups consecutive sentences while their meaning stays similar (a boundary embedding model decides)",
)
class SemanticChunker(Chunker):
    size_driven = False

    def __init__(
        self,
        chunk_size: int = 512,
        chunk_overlap: int = 50,
        *,
        embed: BoundaryEmbed | None = None,
        window: ModelWindow | None = None,
        **options: Any,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, window=window, **options)
        self.embed = require_embed(self.name, embed)
        self.rule: CutRule = self.options.cut_rule()
        self.min_chunk_size = self.options.min_chunk_size

    def params(self) -> dict[str, Any]:
        out = super().params()
        out.pop("chunk_overlap")
        return {**out, **self.rule.params(), "min_chunk_size": self.min_chunk_size, "units": "sentences"}

    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int]]:
        if not text.strip():
            return []
        cut = SemanticCut(self.name, self.embed, self.rule, self.min_chunk_size, self.chunk_size)
        spans = semantic_spans(text, tokens, [(0, len(text))], cut)[0]
        return fit_spans(text, tokens, spans, self.window)
