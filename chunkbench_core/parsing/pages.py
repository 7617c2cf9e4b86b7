"""Where each page of a paged document (PDF) starts in the parsed markdown, and the pages of a span.

The markdown is rebuilt from the pages' lines (paragraphs joined across page breaks, tables flattened into
header-value rows, running headers dropped), so a page's start is found after the fact: the first line of the
page that can be read again in the markdown, searched forward from the previous page's start. Page numbers are
1-based, as PDF viewers show them. A page with no text that survived parsing starts where the next one does, so
no offset is ever attributed to it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

# the shortest probe worth searching: shorter line starts ("7", "$", "Item") match too early by chance
_MIN_PROBE = 6
_MAX_PROBE = 40
# lines of a page tried, in order, before the page is given up as not found
_LINES_TRIED = 12
# how far before the found line a shorter line of the same page (a heading) may stand
_NEAR = 160
# how far past the previous line of a page its next line may be found (a table row rewritten as header-value
# pairs is several times longer than the row as printed)
_GAP = 600
# how many occurrences of a page's first line are tried before the next line is tried instead
_OCCURRENCES = 8
_WS = re.compile(r"\s+")
_HEADING_MARK = re.compile(r"[#\\ ]*")


def _probe(text: str) -> str:
    """The searchable start of a line: whitespace folded, at most ``_MAX_PROBE`` characters."""
    return _WS.sub(" ", text).strip()[:_MAX_PROBE]


def _line_start(markdown: str, position: int) -> int:
    """Move ``position`` back over a heading mark ("## ") or an escape to the start of its line."""
    line_start = markdown.rfind("\n", 0, position) + 1
    if _HEADING_MARK.fullmatch(markdown[line_start:position]):
        return line_start
    return position


def _near(markdown: str, probe: str, after: int) -> int:
    """Where ``probe`` stands within ``_GAP`` characters after ``after``; -1 when it does not."""
    return markdown.find(probe, after, after + _GAP + len(probe))


def _anchor(markdown: str, probes: list[str], cursor: int) -> tuple[int, int] | None:
    """The first line of a page found again at or after ``cursor``: (line index, position), or None.

    An occurrence counts only when one of the next lines of the page follows it closely, so a line that repeats
    further on (a statement's title, a table-of-contents entry) is not taken for this page's start.
    """
    long = [(i, p) for i, p in enumerate(probes[:_LINES_TRIED]) if len(p) >= _MIN_PROBE]
    for k, (index, probe) in enumerate(long):
        following = [p for _, p in long[k + 1 : k + 4]]
        position = markdown.find(probe, cursor)
        tries = 0
        while position >= 0 and tries < _OCCURRENCES:
            end = position + len(probe)
            if not following or any(_near(markdown, p, end) >= 0 for p in following):
                return index, position
            position = markdown.find(probe, position + 1)
            tries += 1
    return None


def locate_page_starts(markdown: str, pages: Sequence[Sequence[str]]) -> list[int]:
    """The markdown offset at which each page starts (one entry per page, non-decreasing, first 0).

    ``pages`` holds each page's line texts in reading order, normalised as the markdown was (for a table row,
    its first cell: the row is rewritten as header-value pairs, but its first cell stays as it was).
    Pages are read in order: a page's first line is searched after the previous page's last line found, and
    each later line of the page close after the one before, so the search never runs ahead of the text.
    """
    found: list[int | None] = []
    cursor = 0
    for lines in pages:
        probes = [_probe(line) for line in lines]
        anchor = _anchor(markdown, probes, cursor)
        if anchor is None:
            found.append(None)
            continue
        index, position = anchor
        cursor = position + len(probes[index])
        # shorter lines above it on the same page (a heading "Item 2") start the page when they stand close
        for earlier in reversed(probes[:index]):
            if len(earlier) < 3:
                continue
            before = markdown.rfind(earlier, max(0, position - _NEAR), position)
            if before >= 0 and (not found or found[-1] is None or before > found[-1]):
                position = before
        found.append(_line_start(markdown, position))
        for probe in probes[index + 1 :]:
            if len(probe) < 3:
                continue
            after = _near(markdown, probe, cursor)
            if after >= 0:
                cursor = after + len(probe)
    # a page not found (no text kept, or none readable again) starts where the next found page starts
    starts: list[int] = []
    following = len(markdown)
    for value in reversed(found):
        if value is not None:
            following = value
        starts.append(following)
    starts.reverse()
    if starts:
        starts[0] = 0
    for i in range(1, len(starts)):
        starts[i] = max(starts[i], starts[i - 1])
    return starts


def page_of(page_starts: Sequence[int], offset: int) -> int | None:
    """The 1-based page holding markdown ``offset``; None for a document without pages."""
    if not page_starts:
        return None
    return max(1, bisect.bisect_right(page_starts, offset))


def page_span(page_starts: Sequence[int], start: int, end: int) -> tuple[int, int] | None:
    """First and last 1-based page of the span ``[start, end)``; None for a document without pages."""
    if not page_starts:
        return None
    first = page_of(page_starts, start)
    last = page_of(page_starts, max(start, end - 1))
    assert first is not None and last is not None
    return first, last
