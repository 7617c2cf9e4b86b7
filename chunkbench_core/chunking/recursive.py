"""recursive: split on the coarsest separator that works, then merge up to a token budget.

Separator cascade (LLD 8.3, extended with Persian punctuation): before a markdown
heading line (``#``) -> blank line -> newline -> sentence punctuation
(``. ! ? ؟ ؛``) -> space -> token windows. A span longer than ``chunk_size``
tokens is cut at every match of the current separator (the separator stays with
the piece before it, so pieces tile the text); a piece still too long goes down
one level. Pieces are then merged greedily in order while the running total stays
within ``chunk_size``; with ``chunk_overlap`` the trailing pieces of a chunk (up to
that many tokens) start the next one. Chunks are trimmed of surrounding whitespace.
"""

from __future__ import annotations

import re

from .base import Chunker
from .tokens import TokenIndex

SEPARATORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("heading", re.compile(r"\n(?=#{1,6}[ \t])")),
    ("blank_line", re.compile(r"\n[ \t]*\n\s*")),
    ("newline", re.compile(r"\n")),
    ("sentence", re.compile(r"[.!?\u061f\u061b]+[\"'\u00bb)\]]*\s+")),
    ("space", re.compile(r"\s+")),
)


class RecursiveChunker(Chunker):
    name = "recursive"

    def _pieces(self, text: str, tokens: TokenIndex, start: int, end: int, level: int, out: list[tuple[int, int]]) -> None:
        if tokens.count(start, end) <= self.chunk_size:
            out.append((start, end))
            return
        if level == len(SEPARATORS):
            first = tokens.count(0, start)
            last = first + tokens.count(start, end)
            for window_start in range(first, last, self.chunk_size):
                window_end = min(window_start + self.chunk_size, last)
                out.append((max(start, tokens.char_offset(window_start)), min(end, tokens.char_offset(window_end))))
            return
        pattern = SEPARATORS[level][1]
        cuts = [m.end() for m in pattern.finditer(text, start, end) if start < m.end() < end]
        if not cuts:
            self._pieces(text, tokens, start, end, level + 1, out)
            return
        bounds = [start, *cuts, end]
        for piece_start, piece_end in zip(bounds, bounds[1:]):
            self._pieces(text, tokens, piece_start, piece_end, level + 1, out)

    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int]]:
        pieces: list[tuple[int, int]] = []
        if text:
            self._pieces(text, tokens, 0, len(text), 0, pieces)
        merged: list[tuple[int, int]] = []
        current: list[tuple[tuple[int, int], int]] = []
        current_tokens = 0
        for piece in pieces:
            size = tokens.count(*piece)
            if current and current_tokens + size > self.chunk_size:
                merged.append((current[0][0][0], current[-1][0][1]))
                kept: list[tuple[tuple[int, int], int]] = []
                kept_tokens = 0
                for previous in reversed(current):
                    if kept_tokens + previous[1] > self.chunk_overlap:
                        break
                    kept.insert(0, previous)
                    kept_tokens += previous[1]
                while kept and kept_tokens + size > self.chunk_size:
                    kept_tokens -= kept.pop(0)[1]
                current, current_tokens = kept, kept_tokens
            current.append((piece, size))
            current_tokens += size
        if current:
            merged.append((current[0][0][0], current[-1][0][1]))
        return [_trim(text, s, e) for s, e in merged]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
