"""recursive: split on the coarsest separator that works, then merge up to a token budget.

The rule is the split cascade of :mod:`.cascade` (headings -> blank lines -> lines ->
sentences, Latin and Persian punctuation -> spaces -> token windows), applied to the
whole document with the chunker's size and overlap.
"""

from __future__ import annotations

from chunkbench_core.tokens import TokenIndex

from .base import Chunker
from .cascade import SEPARATORS, recursive_spans
from .registry import Capabilities, register_strategy

__all__ = ["SEPARATORS", "RecursiveChunker", "recursive_spans"]


@register_strategy(
    "recursive",
    # what the run estimate assumes of its chunks before a build is recorded
    shape={"fill": 0.85, "overlap_share": 0.5},
    description="splits at headings, then paragraphs, lines and sentences, and merges pieces up to a target size",
    capabilities=Capabilities(sweepable=True, covers_text=True, sized_by_chunk_size=True),
)
class RecursiveChunker(Chunker):
    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int]]:
        if not text:
            return []
        return recursive_spans(text, tokens, 0, len(text), self.chunk_size, self.chunk_overlap)
