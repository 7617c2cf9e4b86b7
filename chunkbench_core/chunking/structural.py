"""structural: structure first, then chunk only the prose.

Rule (structural extraction before chunking: a table row or a question-and-answer pair is a unit
of meaning the parser already found, which a size-driven cut would split or merge with its
neighbours):

* ``table_row``, ``qa_pair`` and ``image_caption`` units of the parsed document are
  chunks as they are - never merged, and split only when longer than the corpus
  model's window (with no ``window`` given, longer than ``chunk_size`` cl100k tokens);
* consecutive ``paragraph`` units under the same heading path form a prose block,
  chunked by ``prose_chunker``: ``semantic`` (the default: sentences embedded
  once by the boundary model, cut at the ``percentile``-th percentile of adjacent
  distances pooled over the document's prose, at least ``min_chunk_size`` sentences,
  at most ``chunk_size`` tokens), ``fixed_size`` (token windows of
  ``chunk_size``/``chunk_overlap`` inside the block) or ``recursive``;
* table rows carry their table's title, section and column headers in their own text
  (the parser writes them so), so a row chunk is understood alone. ``table_chunks``
  chooses how rows become chunks: ``"row"`` (the default: a row is the unit a question about a
  table asks for) one chunk per row; ``"group"`` the consecutive rows of one table are packed,
  in order, into chunks of at most ``chunk_size`` tokens (never past the model's window) - each
  row in a group still repeats its headers, so a group cut anywhere keeps its meaning;
* every chunk keeps its unit's ``content_type`` and heading path; previous/next chunk
  ids link all chunks in document order (for neighbor expansion);
* with a ``window`` every chunk longer than the corpus model's window is split to fit.

Heading lines are not chunk text (they are in each chunk's heading path). A document
without units is one prose block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.tokens import TokenIndex

from .base import Chunker, Piece
from .boundaries import BoundaryEmbed, CutRule, SemanticCutOptions, require_embed
from .cascade import recursive_spans
from .fixed_size import window_spans
from .registry import Capabilities, register_strategy
from .semantic import SemanticCut, semantic_spans
from .window import ModelWindow, fit_span_groups


class StructuralOptions(SemanticCutOptions):
    prose_chunker: Literal["semantic", "fixed_size", "recursive"] = Field(
        "semantic", description="how prose under each heading is cut: 'semantic', 'fixed_size' or 'recursive'"
    )
    table_chunks: Literal["row", "group"] = Field(
        "row",
        description="how table rows become chunks: 'row' (each row alone, with its table's title and "
        "column headers) or 'group' (consecutive rows of one table packed into chunks of at most "
        "chunk_size tokens, each row keeping its headers)",
    )


@dataclass
class Block:
    """A structural unit (or a run of paragraph units under one heading) with its span."""

    content_type: str
    start: int
    end: int
    heading_path: list[str]


def structural_blocks(document: ParsedDocument) -> list[Block]:
    """The blocks of ``document`` in order (module rule): atomic units and prose blocks."""
    if not document.units:
        text = document.markdown
        start, end = 0, len(text)
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        return [Block("paragraph", start, end, [])] if start < end else []
    blocks: list[Block] = []
    for unit in document.units:
        last = blocks[-1] if blocks else None
        if (
            unit.content_type == "paragraph"
            and last is not None
            and last.content_type == "paragraph"
            and last.heading_path == list(unit.heading_path)
        ):
            last.end = unit.end
        else:
            blocks.append(Block(unit.content_type, unit.start, unit.end, list(unit.heading_path)))
    return blocks


# a boundary model with the default prose_chunker="semantic"
@register_strategy(
    "structural",
    # what the run estimate assumes of its chunks before a build is recorded
    shape={
        "fill": 0.6,
        "overlap_share": 0.0,
        "boundary_unit": "sentences",
        "boundary_unit_tokens": 20.0,
        "chunking_seconds_per_token": 4e-6,
    },
    options=StructuralOptions,
    capabilities=Capabilities(boundary_model=True),
    description="follows the document's own structure (headings, lists, tables)",
)
class StructuralChunker(Chunker):
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
        self.prose_chunker = prose_chunker = self.options.prose_chunker
        self.table_chunks = self.options.table_chunks
        self.embed = (
            require_embed(self.name, embed, "; or set prose_chunker='fixed_size'")
            if prose_chunker == "semantic"
            else embed
        )
        self.rule: CutRule = self.options.cut_rule()
        self.min_chunk_size = self.options.min_chunk_size

    def params(self) -> dict[str, Any]:
        out = {**super().params(), "prose_chunker": self.prose_chunker, "table_chunks": self.table_chunks}
        if self.prose_chunker == "semantic":
            out.pop("chunk_overlap")
            out.update(self.rule.params())
            out["min_chunk_size"] = self.min_chunk_size
        return out

    def _prose_spans(self, text: str, tokens: TokenIndex, prose: list[Block]) -> list[list[tuple[int, int]]]:
        segments = [(b.start, b.end) for b in prose]
        if self.prose_chunker == "semantic":
            assert self.embed is not None
            cut = SemanticCut(self.name, self.embed, self.rule, self.min_chunk_size, self.chunk_size)
            return semantic_spans(text, tokens, segments, cut)
        if self.prose_chunker == "fixed_size":
            return [window_spans(text, tokens, s, e, self.chunk_size, self.chunk_overlap) for s, e in segments]
        return [recursive_spans(text, tokens, s, e, self.chunk_size, self.chunk_overlap) for s, e in segments]

    def _group_rows(self, text: str, tokens: TokenIndex, blocks: list[Block]) -> list[Block]:
        """Consecutive rows of one table (one line apart, same heading path) packed into blocks of at
        most ``chunk_size`` tokens (and the window); a row is never cut here."""
        limit = self.chunk_size
        out: list[Block] = []
        for block in blocks:
            last = out[-1] if out else None
            if (
                block.content_type == "table_row"
                and last is not None
                and last.content_type == "table_row"
                and last.heading_path == block.heading_path
                and text[last.end : block.start] == "\n"
                and tokens.count(last.start, block.end) <= limit
                and (
                    self.window is None
                    or self.window.counts([text[last.start : block.end]])[0] <= self.window.max_tokens
                )
            ):
                last.end = block.end
            else:
                out.append(Block(block.content_type, block.start, block.end, list(block.heading_path)))
        return out

    def pieces(self, document: ParsedDocument, tokens: TokenIndex) -> list[Piece]:
        text = document.markdown
        blocks = structural_blocks(document)
        if self.table_chunks == "group":
            blocks = self._group_rows(text, tokens, blocks)
        prose = [b for b in blocks if b.content_type == "paragraph"]
        prose_spans = iter(self._prose_spans(text, tokens, prose))
        spans_per_block: list[list[tuple[int, int]]] = []
        for block in blocks:
            if block.content_type == "paragraph":
                spans_per_block.append(next(prose_spans))
            elif self.window is None and tokens.count(block.start, block.end) > self.chunk_size:
                spans_per_block.append(recursive_spans(text, tokens, block.start, block.end, self.chunk_size))
            else:
                spans_per_block.append([(block.start, block.end)])
        fitted = fit_span_groups(text, tokens, spans_per_block, self.window)
        return [
            Piece(s, e, content_type=block.content_type, heading_path=block.heading_path)
            for block, spans in zip(blocks, fitted)
            for s, e in spans
        ]
