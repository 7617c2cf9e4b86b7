"""cluster_semantic: the ClusterSemanticChunker idea of the Chroma report, implemented here.

Source: Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval" (Chroma,
2024) describe it as: split the text into small pieces of about 50 tokens, embed
them, and choose chunk boundaries by dynamic programming so that the total
within-chunk similarity is as large as possible, subject to a maximum chunk size.
It led that report on precision. This module is our own implementation of that
description:

1. Pieces: the recursive rule at ``piece_size`` (default 50, or ``chunk_size`` if smaller)
   cl100k tokens, no overlap.
2. Every piece is embedded ONCE with the boundary model (one call).
3. Similarities are centred by the document's mean pairwise cosine mu (computed in
   O(n d) as (|sum v|^2 - n) / (n (n - 1)) for unit vectors), so joining pieces that
   are more alike than two random pieces of the document gains, and less alike loses.
4. A chunk made of pieces j..i scores sum over pairs j <= a < b <= i of (cos(a, b) - mu);
   a single piece scores 0. Dynamic programming over the end piece finds the
   partition of the document with the highest total score in which every chunk has at
   most ``chunk_size`` tokens (ties go to the longer chunk, deterministic).
5. With a ``window``, a chunk longer than the corpus model's window is split to fit.

``chunk_overlap`` does not apply. Missing or mismatched boundary embeddings raise
ChunkingError (no fallback).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from pydantic import Field

from chunkbench_core.errors import ChunkingError
from chunkbench_core.tokens import TokenIndex

from .base import Chunker
from .boundaries import BoundaryEmbed, embed_units, require_embed, unit_token_counts
from .cascade import recursive_spans
from .registry import Capabilities, StrategyOptions, register_strategy
from .window import ModelWindow, fit_spans

DEFAULT_PIECE_SIZE = 50


class ClusterOptions(StrategyOptions):
    piece_size: Optional[int] = Field(
        None,
        ge=1,
        description=f"size in cl100k tokens of the small pieces chunks are assembled from (default "
        f"{DEFAULT_PIECE_SIZE}, or chunk_size if smaller)",
    )


def best_partition(vectors: np.ndarray, piece_tokens: list[int], max_tokens: int) -> list[tuple[int, int]]:
    """Index ranges ``[j, i+1)`` of the highest-scoring partition of the pieces (module rule, steps 3-4)."""
    n = len(piece_tokens)
    if n == 0:
        return []
    vectors = np.asarray(vectors, dtype=np.float64)
    total = vectors.sum(axis=0)
    mu = float((total @ total - np.einsum("ij,ij->", vectors, vectors)) / (n * (n - 1))) if n > 1 else 0.0
    cumulative = np.concatenate([[0], np.cumsum(piece_tokens)])
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    back = np.zeros(n + 1, dtype=np.int64)
    row_sums = np.zeros(n, dtype=np.float64)  # row_sums[a] = sum_{a < b <= i} (cos(a, b) - mu)
    for i in range(n):
        first = int(np.searchsorted(cumulative, cumulative[i + 1] - max_tokens, side="left"))
        first = min(first, i)
        if first < i:
            row_sums[first:i] += vectors[first:i] @ vectors[i] - mu
        window = row_sums[first : i + 1]
        scores = np.cumsum(window[::-1])[::-1]  # scores[k] = score of the chunk (first + k) .. i
        candidates = best[first : i + 1] + scores
        k = int(np.argmax(candidates))
        best[i + 1] = candidates[k]
        back[i + 1] = first + k
    ranges: list[tuple[int, int]] = []
    end = n
    while end > 0:
        start = int(back[end])
        ranges.append((start, end))
        end = start
    return ranges[::-1]


@register_strategy(
    "cluster_semantic",
    # what the run estimate assumes of its chunks before a build is recorded
    shape={
        "fill": 0.65,
        "overlap_share": 0.0,
        "boundary_unit": "pieces",
        "boundary_unit_tokens": 38.0,
        "chunking_seconds_per_token": 6e-6,
    },
    options=ClusterOptions,
    capabilities=Capabilities(boundary_model=True, sized_by_chunk_size=True),
    description="clusters sentences by meaning into chunks of bounded size",
)
class ClusterSemanticChunker(Chunker):
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
        piece_size = self.options.piece_size
        if piece_size is None:
            piece_size = min(DEFAULT_PIECE_SIZE, chunk_size)
        if isinstance(piece_size, bool) or not isinstance(piece_size, int) or not 1 <= piece_size <= chunk_size:
            raise ChunkingError(
                f"piece_size must be an integer between 1 and chunk_size ({chunk_size}), got {piece_size!r}"
            )
        self.piece_size = piece_size

    def params(self) -> dict[str, Any]:
        out = super().params()
        out.pop("chunk_overlap")
        return {**out, "piece_size": self.piece_size, "objective": "max within-chunk centred cosine (DP)"}

    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int]]:
        if not text.strip():
            return []
        pieces = recursive_spans(text, tokens, 0, len(text), self.piece_size)
        vectors = embed_units(self.name, self.embed, [text[s:e] for s, e in pieces])
        ranges = best_partition(vectors, unit_token_counts(tokens, pieces), self.chunk_size)
        spans = [(pieces[j][0], pieces[i - 1][1]) for j, i in ranges]
        return fit_spans(text, tokens, spans, self.window)
