"""semantic_parent_child: semantic parents made of paragraphs, small children inside them.

Rule: the units are blank-line paragraphs of the markdown (a heading-only paragraph
joins the one it introduces). Every paragraph is embedded ONCE with the boundary
model (one call) and adjacent paragraphs are grouped by the cut rule of
:mod:`.boundaries` (``percentile`` by default, or ``absolute``), at least
``min_chunk_size`` paragraphs per parent, closed before ``parent_chunk_size``
cl100k tokens (default 4 x ``chunk_size``). Each parent is cut into children by the
recursive rule at ``chunk_size``/``chunk_overlap``; with a ``window`` children
longer than the corpus model's window are split to fit.

Output: each parent (``role="parent"``, context only: never embedded or searched)
is followed by its children (``role="child"``, ``parent_id`` = the parent's id).
Retrieval returns children and the answer context carries their parents (small chunks find the
evidence precisely, the parent gives the LLM the section around it).
Missing or mismatched boundary embeddings raise ChunkingError (no fallback).
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field

from chunkbench_core.errors import ChunkingError
from chunkbench_core.parsing.models import ParsedDocument

from chunkbench_core.tokens import TokenIndex

from .base import Chunker, Piece
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
from .sentences import section_paragraph_spans
from .window import ModelWindow, fit_span_groups

PARENT_SIZE_FACTOR = 4


class ParentChildOptions(SemanticCutOptions):
    parent_chunk_size: Optional[int] = Field(
        None, ge=1, description=f"parent size in cl100k tokens (default {PARENT_SIZE_FACTOR} x chunk_size)"
    )


@register_strategy(
    "semantic_parent_child",
    # what the run estimate assumes of its chunks before a build is recorded
    shape={
        "fill": 0.78,
        "overlap_share": 0.2,
        "boundary_unit": "paragraphs",
        "boundary_unit_tokens": 55.0,
        "chunking_seconds_per_token": 4e-6,
    },
    options=ParentChildOptions,
    capabilities=Capabilities(boundary_model=True, parent_context=True),
    description="retrieves small semantic chunks and hands the model their larger parent section",
)
class SemanticParentChildChunker(Chunker):
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
        parent_chunk_size = self.options.parent_chunk_size
        parent = PARENT_SIZE_FACTOR * chunk_size if parent_chunk_size is None else parent_chunk_size
        if isinstance(parent, bool) or not isinstance(parent, int) or parent < chunk_size:
            raise ChunkingError(
                f"parent_chunk_size must be an integer >= chunk_size ({chunk_size}), got {parent_chunk_size!r}"
            )
        self.parent_chunk_size = parent

    def params(self) -> dict[str, Any]:
        return {
            **super().params(),
            **self.rule.params(),
            "min_chunk_size": self.min_chunk_size,
            "parent_chunk_size": self.parent_chunk_size,
            "units": "paragraphs",
            "children": "recursive",
        }

    def pieces(self, document: ParsedDocument, tokens: TokenIndex) -> list[Piece]:
        text = document.markdown
        paragraphs = section_paragraph_spans(text)
        if not paragraphs:
            return []
        vectors = embed_units(self.name, self.embed, [text[s:e] for s, e in paragraphs])
        cuts = self.rule.cut_masks([adjacent_similarities(vectors)])[0]
        groups = group_units(unit_token_counts(tokens, paragraphs), cuts, self.min_chunk_size, self.parent_chunk_size)
        parents: list[tuple[int, int]] = []
        for i, j in groups:
            start, end = paragraphs[i][0], paragraphs[j - 1][1]
            if tokens.count(start, end) > self.parent_chunk_size:
                parents.extend(recursive_spans(text, tokens, start, end, self.parent_chunk_size))
            else:
                parents.append((start, end))
        children = fit_span_groups(
            text,
            tokens,
            [recursive_spans(text, tokens, start, end, self.chunk_size, self.chunk_overlap) for start, end in parents],
            self.window,
        )
        pieces: list[Piece] = []
        for (parent_start, parent_end), kids in zip(parents, children):
            parent_position = len(pieces)
            pieces.append(Piece(parent_start, parent_end, role="parent"))
            pieces.extend(Piece(s, e, role="child", parent=parent_position) for s, e in kids)
        return pieces
