"""Farsi-aware sentence and paragraph splitting, as character spans.

Rule (``sentence_spans``), tried in order on a text; the first level that yields at
least two units is used (a fallback chain: text without sentence punctuation, such as a list or
a table, still splits into units):

1. ``punctuation`` - a sentence ends after ``.``, ``!``, ``?``, the Persian/Arabic
   question mark ``؟`` or ``…`` (any run of them, plus closing quotes or brackets)
   when whitespace follows. A markdown heading line and a blank line always end a
   unit too. Not a sentence end: a Latin lower-case letter next (``e.g. this``),
   a known abbreviation (``Dr.``, ``e.g.``, ``Fig.`` ...), a single-letter initial
   (``P. falciparum``), or a digit on both sides (``37.5`` has no space anyway).
   Persian has no letter case, so ``؟``/``.`` followed by a space always ends a
   sentence. The Arabic semicolon ``؛`` joins clauses, like ``;``, and does not.
2. ``lines`` - non-empty lines.
3. ``paragraphs`` - blank-line separated blocks.
4. ``single`` - the whole (trimmed) text as one unit.

Every span is trimmed of surrounding whitespace, spans are in order and do not
overlap, and together they contain every non-whitespace character of the text:
a chunk that runs from the first to the last span of a group therefore covers the
group exactly.
"""

from __future__ import annotations

import re

SENTENCE_LEVELS: tuple[str, ...] = ("punctuation", "lines", "paragraphs", "single")

_END = re.compile(r"[.!?\u061f\u2026]+[\"'\u00bb\u201d\u2019)\]]*(?=\s)")
_BLANK = re.compile(r"\n[ \t]*\n\s*")
_LINE = re.compile(r"[^\n]+")
_HEADING_LINE = re.compile(r"^#{1,6}[ \t][^\n]*$", re.MULTILINE)
_WORD_BEFORE = re.compile(r"(\S+)$")
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st vs etc e.g i.e fig figs no nos vol pp inc ltd co corp dept approx est al cf ca".split()
)


def trimmed_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``[start, end)`` without the whitespace at either end; None when nothing but whitespace is left."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _split_at(text: str, start: int, end: int, cuts: list[int]) -> list[tuple[int, int]]:
    out = []
    for a, b in zip([start, *cuts], [*cuts, end]):
        span = trimmed_span(text, a, b)
        if span is not None:
            out.append(span)
    return out


def _is_sentence_end(text: str, punct_start: int, end_of_match: int, limit: int) -> bool:
    following = end_of_match
    while following < limit and text[following].isspace():
        following += 1
    if following >= limit:
        return True
    nxt = text[following]
    if nxt.isascii() and nxt.islower():
        return False
    if text[punct_start] != ".":
        return True
    word = _WORD_BEFORE.search(text, max(0, punct_start - 24), punct_start)
    if word is None:
        return True
    before = word.group(1).lstrip("(\"'\u00ab[").lower()
    if before in ABBREVIATIONS:
        return False
    return not (len(before) == 1 and before.isalpha() and before.isascii())


def _hard_breaks(text: str, start: int, end: int) -> list[int]:
    """Blank lines and both ends of markdown heading lines: always unit boundaries."""
    cuts = {m.end() for m in _BLANK.finditer(text, start, end)}
    for m in _HEADING_LINE.finditer(text, start, end):
        cuts.add(m.start())
        cuts.add(m.end())
    return sorted(c for c in cuts if start < c < end)


def _punctuation(text: str, start: int, end: int) -> list[tuple[int, int]]:
    cuts = _hard_breaks(text, start, end)
    for m in _END.finditer(text, start, end):
        if _is_sentence_end(text, m.start(), m.end(), end):
            cuts.append(m.end())
    return _split_at(text, start, end, sorted(set(cuts)))


def _lines(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out = []
    for m in _LINE.finditer(text, start, end):
        span = trimmed_span(text, m.start(), m.end())
        if span is not None:
            out.append(span)
    return out


def paragraph_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Blank-line separated blocks of ``text[start:end]``, trimmed, in order."""
    end = len(text) if end is None else end
    return _split_at(text, start, end, [m.end() for m in _BLANK.finditer(text, start, end) if start < m.end() < end])


def sentence_spans_with_level(text: str, start: int = 0, end: int | None = None) -> tuple[list[tuple[int, int]], str]:
    """The sentence spans of ``text[start:end]`` and the fallback level that produced them."""
    end = len(text) if end is None else end
    for level, split in (("punctuation", _punctuation), ("lines", _lines), ("paragraphs", paragraph_spans)):
        spans = split(text, start, end)
        if len(spans) >= 2:
            return spans, level
    single = trimmed_span(text, start, end)
    return ([single] if single else []), "single"


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Sentence spans of ``text[start:end]`` (see the module rule)."""
    return sentence_spans_with_level(text, start, end)[0]


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as strings (convenience for callers without offsets)."""
    return [text[s:e] for s, e in sentence_spans(text)]


def section_paragraph_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Blank-line paragraphs in which a heading-only paragraph is joined to the one after it.

    The unit of ``semantic_parent_child``: a heading belongs to the text it introduces.
    """
    blocks = paragraph_spans(text, start, end)
    out: list[tuple[int, int]] = []
    pending: int | None = None
    for s, e in blocks:
        is_heading = _HEADING_LINE.fullmatch(text, s, e) is not None
        if pending is None:
            pending = s
        if is_heading:
            continue
        out.append((pending, e))
        pending = None
    if pending is not None:
        if out and blocks:
            out[-1] = (out[-1][0], blocks[-1][1])
        elif blocks:
            out.append((pending, blocks[-1][1]))
    return out
