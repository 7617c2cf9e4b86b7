"""fixed_size: a sliding window of ``chunk_size`` cl100k tokens.

Windows start every ``chunk_size - chunk_overlap`` tokens; the last window ends at
the end of the text. Each window's span runs from the character where its first
token starts to the character where the token after its last one starts, so with
no overlap the windows tile the text exactly.
"""

from __future__ import annotations

from chunkbench_core.tokens import TokenIndex

from .base import Chunker
from .registry import Capabilities, register_strategy


@register_strategy(
    "fixed_size",
    # what the run estimate assumes of its chunks before a build is recorded
    shape={"fill": 1.0},
    description="cuts the text into windows of a fixed number of tokens, ignoring its structure",
    capabilities=Capabilities(sweepable=True, neighbor_expansion=True, covers_text=True, sized_by_chunk_size=True),
)
class FixedSizeChunker(Chunker):
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


def window_spans(
    text: str, tokens: TokenIndex, start: int, end: int, chunk_size: int, chunk_overlap: int
) -> list[tuple[int, int]]:
    """The fixed_size rule applied to ``text[start:end]`` only (used for prose blocks), trimmed.

    The first window starts at ``start`` and the last ends at ``end`` even when a
    token straddles the block edge, so the windows cover the whole block.
    """
    first = tokens.position(start)
    last = first + tokens.count(start, end)
    step = chunk_size - chunk_overlap
    out: list[tuple[int, int]] = []
    position = first
    while True:
        stop = min(position + chunk_size, last)
        a = start if position == first else tokens.char_offset(position)
        b = end if stop == last else tokens.char_offset(stop)
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
        if stop == last:
            return out
        position += step
