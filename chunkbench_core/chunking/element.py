"""element: chunks cut where the kind of element changes (title, narrative text, table, list), merged up to a size.

Rule (element-type chunking, as done for financial reports: a parser labels each element, and chunks follow the
labels rather than a character count):

* the elements are the parsed document's own: a heading line is a **title**, and so is a paragraph of one
  short line that is not a sentence (at most 12 words, not ending like a sentence unless it has at most 4:
  a statement's title, its unit, the company's name above it); consecutive table rows of one table are a
  **table**, a paragraph whose lines start with list markers (``-``, ``*``, ``•``, ``1.``, ``a)``) a
  **list**, every other unit (paragraphs, question-and-answer pairs, captions) **narrative text**;
* a title always starts a new chunk, and the elements after it join it while the chunk stays within
  ``chunk_size`` cl100k tokens, so a chunk is one titled stretch of a section;
* a table never shares a chunk with text: it is a chunk of its own (with the title right above it, when the
  title heads nothing else), and a table over the size is cut between its rows; so are lists and text longer
  than the size (the split cascade every strategy uses);
* with a ``window`` every chunk longer than the corpus model's window is split to fit.

A chunk cut from a table is a ``table_row`` chunk; the others are paragraphs. ``chunk_overlap`` does not apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.tokens import TokenIndex

from .base import Chunker, Piece
from .cascade import recursive_spans
from .registry import Capabilities, register_strategy
from .window import fit_span_groups

ELEMENT_KINDS = ("title", "narrative", "table", "list")
TITLE_MAX_WORDS = 12
_HEADING_LINE = re.compile(r"^#{1,6}[ \t].*$", re.MULTILINE)
_LIST_LINE = re.compile(r"^\s*(?:[-*•\u2022\u25aa\u2013]|\d{1,3}[.)]|[a-zA-Z][.)])\s+\S")
_BLOCK_SEPARATOR = re.compile(r"\n[ \t]*\n\s*")


@dataclass
class Element:
    kind: str  # one of ELEMENT_KINDS
    start: int
    end: int


def _kind_of_paragraph(text: str) -> str:
    lines = [line for line in text.split("\n") if line.strip()]
    if lines and all(_LIST_LINE.match(line) for line in lines):
        return "list"
    words = text.split()
    if (
        len(lines) == 1
        and words
        and len(words) <= TITLE_MAX_WORDS
        and (len(words) <= 4 or not text.rstrip().endswith((".", "!", "?", ":", ";", "؟")))
    ):
        return "title"  # a short line that is not a sentence: a statement's title, its unit, a company name
    return "narrative"


def document_elements(document: ParsedDocument) -> list[Element]:
    """The elements of ``document`` in order (module rule); a document without units is read block by block."""
    text = document.markdown
    elements = [Element("title", m.start(), m.end()) for m in _HEADING_LINE.finditer(text)]
    if document.units:
        for unit in document.units:
            if unit.content_type == "table_row":
                elements.append(Element("table", unit.start, unit.end))
            else:
                kind = _kind_of_paragraph(unit.text) if unit.content_type == "paragraph" else "narrative"
                elements.append(Element(kind, unit.start, unit.end))
    else:
        bounds = [0, *(m.end() for m in _BLOCK_SEPARATOR.finditer(text)), len(text)]
        for a, b in zip(bounds, bounds[1:]):
            block = text[a:b].strip()
            if block and not _HEADING_LINE.fullmatch(block):
                start = a + text[a:b].index(block)
                elements.append(Element(_kind_of_paragraph(block), start, start + len(block)))
    elements.sort(key=lambda e: (e.start, e.end))
    merged: list[Element] = []
    for element in elements:
        last = merged[-1] if merged else None
        if last is not None and element.start < last.end:
            continue  # a heading the parser also kept as a unit
        if (
            last is not None
            and last.kind == element.kind == "table"
            and not text[last.end : element.start].strip()
            and "\n\n" not in text[last.end : element.start]
        ):
            last.end = element.end  # the rows of one table are one element
        else:
            merged.append(element)
    return merged


@register_strategy(
    "element",
    description="cuts where the kind of element changes (title, text, table, list) and "
    "merges the elements of a titled section up to a size",
    # measured like the estimate's other shapes (MiniLM's window, 192 tokens): 0.54 of the size on the
    # sample corpus, 0.66 on the financial reports
    shape={"fill": 0.6, "overlap_share": 0.0},
    capabilities=Capabilities(sweepable=True),
)
class ElementChunker(Chunker):
    size_driven = False

    def params(self) -> dict[str, Any]:
        out = super().params()
        out.pop("chunk_overlap")
        return {**out, "units": "elements (title, narrative, table, list)"}

    def pieces(self, document: ParsedDocument, tokens: TokenIndex) -> list[Piece]:
        text = document.markdown
        groups: list[tuple[str, list[Element]]] = []  # (kind of the chunk: table or text, its elements)
        for element in document_elements(document):
            kind = "table" if element.kind == "table" else "text"
            last = groups[-1] if groups else None
            titled_alone = last is not None and all(e.kind == "title" for e in last[1])
            if last is None or element.kind == "title" and not titled_alone:
                groups.append((kind, [element]))
            elif kind == "table" and titled_alone:
                groups[-1] = ("table", [*last[1], element])  # the title goes with the table it heads
            elif last[0] != kind or tokens.count(last[1][0].start, element.end) > self.chunk_size:
                groups.append((kind, [element]))
            else:
                last[1].append(element)
        spans: list[list[tuple[int, int]]] = []
        for _, members in groups:
            start, end = members[0].start, members[-1].end
            spans.append(
                recursive_spans(text, tokens, start, end, self.chunk_size)
                if tokens.count(start, end) > self.chunk_size
                else [(start, end)]
            )
        fitted = fit_span_groups(text, tokens, spans, self.window)
        return [
            Piece(s, e, content_type="table_row" if kind == "table" else "paragraph")
            for (kind, _), group in zip(groups, fitted)
            for s, e in group
        ]
