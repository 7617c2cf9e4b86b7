"""The split cascade every strategy uses to cut text that is too long (pure span functions, no Chunker).

Separator cascade (the usual recursive splitter's, extended with Persian punctuation): before a markdown
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

from chunkbench_core.tokens import TokenIndex

SEPARATORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("heading", re.compile(r"\n(?=#{1,6}[ \t])")),
    ("blank_line", re.compile(r"\n[ \t]*\n\s*")),
    ("newline", re.compile(r"\n")),
    ("sentence", re.compile(r"[.!?\u061f\u061b]+[\"'\u00bb)\]]*\s+")),
    ("space", re.compile(r"\s+")),
)


def _pieces(
    text: str, tokens: TokenIndex, start: int, end: int, level: int, size: int, out: list[tuple[int, int]]
) -> None:
    if tokens.count(start, end) <= size:
        out.append((start, end))
        return
    if level == len(SEPARATORS):
        first = tokens.count(0, start)
        last = first + tokens.count(start, end)
        for window_start in range(first, last, size):
            window_end = min(window_start + size, last)
            out.append((max(start, tokens.char_offset(window_start)), min(end, tokens.char_offset(window_end))))
        return
    pattern = SEPARATORS[level][1]
    cuts = [m.end() for m in pattern.finditer(text, start, end) if start < m.end() < end]
    if not cuts:
        _pieces(text, tokens, start, end, level + 1, size, out)
        return
    bounds = [start, *cuts, end]
    for piece_start, piece_end in zip(bounds, bounds[1:]):
        _pieces(text, tokens, piece_start, piece_end, level + 1, size, out)


def recursive_spans(
    text: str, tokens: TokenIndex, start: int, end: int, chunk_size: int, chunk_overlap: int = 0
) -> list[tuple[int, int]]:
    """The recursive rule applied to ``text[start:end]``: trimmed spans of at most ``chunk_size`` tokens.

    Also used by the other strategies to split a unit or group that is too long
    (``chunk_overlap=0``), so every split in chunkbench follows the same cascade.
    """
    pieces: list[tuple[int, int]] = []
    if start < end:
        _pieces(text, tokens, start, end, 0, chunk_size, pieces)
    merged: list[tuple[int, int]] = []
    current: list[tuple[tuple[int, int], int]] = []
    current_tokens = 0
    for piece in pieces:
        size = tokens.count(*piece)
        if current and current_tokens + size > chunk_size:
            merged.append((current[0][0][0], current[-1][0][1]))
            kept: list[tuple[tuple[int, int], int]] = []
            kept_tokens = 0
            for previous in reversed(current):
                if kept_tokens + previous[1] > chunk_overlap:
                    break
                kept.insert(0, previous)
                kept_tokens += previous[1]
            while kept and kept_tokens + size > chunk_size:
                kept_tokens -= kept.pop(0)[1]
            current, current_tokens = kept, kept_tokens
        current.append((piece, size))
        current_tokens += size
    if current:
        merged.append((current[0][0][0], current[-1][0][1]))
    out = []
    for s, e in merged:
        s, e = _trim(text, s, e)
        if s < e:
            out.append((s, e))
    return out


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
