"""page: one chunk per page of a paged document.

Rule: a PDF's pages are its chunks (``ParsedDocument.page_starts``: where each page starts in the markdown),
each trimmed of surrounding whitespace; a page with no text gives none. A page is split only when it is over
the token ceiling: the corpus model's window when there is one (counted with the model's own tokenizer),
else ``chunk_size`` cl100k tokens; the split follows the cascade every strategy uses (headings, blank lines,
lines, sentences). Documents without pages (Word, Markdown, text, spreadsheets) are cut into sections
instead: from one heading line to the next, under the same ceiling. ``chunk_overlap`` does not apply.

Page-level chunks are what a reader cites ("page 12 of the filing"), and a statement usually fills a page,
so its title, its column headers and its figures travel together.
"""

from __future__ import annotations

import re
from typing import Any

from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.tokens import TokenIndex

from .base import Chunker, Piece
from .cascade import recursive_spans
from .registry import Capabilities, register_strategy
from .sentences import trimmed_span
from .window import fit_span_groups

_HEADING_LINE = re.compile(r"^#{1,6}[ \t]", re.MULTILINE)


def page_ranges(document: ParsedDocument) -> list[tuple[int, int]]:
    """Each page's trimmed span (pages without text left out); ``[]`` for a document without pages."""
    starts = list(document.page_starts)
    bounds = [*starts, len(document.markdown)]
    spans = [trimmed_span(document.markdown, a, b) for a, b in zip(bounds, bounds[1:])]
    return [s for s in spans if s is not None]


def section_ranges(text: str) -> list[tuple[int, int]]:
    """Spans from one heading line to the next (the text before the first heading is a section too)."""
    cuts = sorted({0, *(m.start() for m in _HEADING_LINE.finditer(text)), len(text)})
    spans = [trimmed_span(text, a, b) for a, b in zip(cuts, cuts[1:])]
    return [s for s in spans if s is not None]


@register_strategy(
    "page",
    description="makes each page of a PDF one chunk (sections of other documents), "
    "splitting a page only when it is over the model's window",
    # measured like the estimate's other shapes (MiniLM's window, 192 tokens): pages split to the window run
    # full, sections without pages about half
    shape={"fill": 0.8, "overlap_share": 0.0},
    capabilities=Capabilities(covers_text=True),
)
class PageChunker(Chunker):
    size_driven = False

    def params(self) -> dict[str, Any]:
        out = super().params()
        out.pop("chunk_overlap")
        return {
            **out,
            "units": "pages (sections without pages)",
            "ceiling": "model window" if self.window is not None else "chunk_size",
        }

    def pieces(self, document: ParsedDocument, tokens: TokenIndex) -> list[Piece]:
        text = document.markdown
        ranges = page_ranges(document) if document.page_starts else section_ranges(text)
        if self.window is not None:
            groups = fit_span_groups(text, tokens, [[span] for span in ranges], self.window)
        else:
            groups = [
                recursive_spans(text, tokens, s, e, self.chunk_size)
                if tokens.count(s, e) > self.chunk_size
                else [(s, e)]
                for s, e in ranges
            ]
        return [Piece(s, e) for group in groups for s, e in group]
