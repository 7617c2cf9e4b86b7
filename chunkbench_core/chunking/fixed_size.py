"""fixed_size: a sliding window of ``chunk_size`` cl100k tokens (LLD 8.3).

Windows start every ``chunk_size - chunk_overlap`` tokens; the last window ends at
the end of the text. Each window's span runs from the character where its first
token starts to the character where the token after its last one starts, so with
no overlap the windows tile the text exactly.
"""

from __future__ import annotations

from .base import Chunker
from .tokens import TokenIndex


class FixedSizeChunker(Chunker):
    name = "fixed_size"

    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int, int]]:
        step = self.chunk_size - self.chunk_overlap
        spans: list[tuple[int, int, int]] = []
        n = tokens.n_tokens
        first = 0
        while first < n:
            last = min(first + self.chunk_size, n)
            spans.append((tokens.char_offset(first), tokens.char_offset(last), last - first))
            if last == n:
                break
            first += step
        return spans
