"""Builds ``markdown``, ``units`` and the DocumentTree together, so spans are exact by construction.

Markdown conventions (the same for every format that is rendered, i.e. all but .md/.txt,
whose text is kept as it is):

* a heading is one line ``#`` * level + space + heading text (as markdown writes it, so the
  heading-aware chunkers read it);
* blocks (headings, paragraphs, Q&A pairs, image captions, tables) are separated by
  one blank line;
* the rows of one table are consecutive lines, one ``table_row`` unit per line,
  rendered ``Header: value | Header2: value2`` when the table has a proven header
  row and ``value | value2`` otherwise (see :mod:`chunkbench_core.parsing.tables`);
* a Q&A pair is the question text, a newline, then the answer text;
* an image caption is the caption text as one block.

Every piece of text goes through the Persian normalisation before it is placed,
so ``markdown[u.start:u.end] == u.text`` holds for every unit.

Tree: the root is a ``document`` node; each heading opens a ``section``
node (or an ``article`` node for legal "Article N" / "ماده N" headings) nested
under the nearest open heading of a lower level; each unit is a ``paragraph``
leaf under the innermost open section, carrying the unit's text, content type
and span.
"""

from __future__ import annotations

import re

from chunkbench_core.parsing.models import ContentType, Explanation, NodeType, TreeNode, Unit
from chunkbench_core.parsing.persian import normalize_persian

_WS_RUN = re.compile(r"[ \t\r\f\v\u00a0]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")
_ARTICLE_HEADING = re.compile(r"^\s*(article|ماده)\s+[\w\u06f0-\u06f9]+", re.IGNORECASE)


def clean_inline(text: str) -> str:
    """One line: every run of whitespace (newlines included) becomes a single space."""
    return _WS_RUN.sub(" ", text.replace("\n", " ").replace("\r", " ").replace("\v", " ")).strip()


def clean_block(text: str) -> str:
    """A block: whitespace runs inside lines collapse, blank lines collapse, ends are trimmed."""
    lines = [_WS_RUN.sub(" ", line).strip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    joined = "\n".join(line for line in lines if line)
    return joined


def heading_node_type(text: str) -> NodeType:
    """ "Article 5" / "ماده ۵" headings become ``article`` nodes, others ``section``."""
    return "article" if _ARTICLE_HEADING.match(text) else "section"


class MarkdownBuilder:
    """Appends headings and units; keeps offsets, heading path and tree in step."""

    def __init__(self, digits: str = "ascii") -> None:
        self._digits = digits
        self._parts: list[str] = []
        self._length = 0
        self._last_kind = ""
        self.units: list[Unit] = []
        self.explain: list[Explanation] = []
        self.root = TreeNode(node_type="document")
        self._stack: list[tuple[int, TreeNode]] = [(0, self.root)]

    # -- helpers -----------------------------------------------------------------
    def normalize(self, text: str) -> str:
        return normalize_persian(text, self._digits)

    def _append(self, text: str, kind: str) -> tuple[int, int]:
        if self._length:
            sep = "\n" if (kind == "table_row" and self._last_kind == "table_row") else "\n\n"
            self._parts.append(sep)
            self._length += len(sep)
        start = self._length
        self._parts.append(text)
        self._length += len(text)
        self._last_kind = kind
        return start, self._length

    @property
    def heading_path(self) -> list[str]:
        return [node.heading or "" for _, node in self._stack[1:]]

    @staticmethod
    def _escape_leading_hash(text: str) -> str:
        # A unit line starting with "#" would read as a heading to a markdown chunker.
        return "\\" + text if text.startswith("#") else text

    # -- public API ----------------------------------------------------------------
    def heading(self, text: str, level: int, rule: str | None = None) -> bool:
        """Add a heading line; returns False (and adds nothing) for an empty heading.

        ``rule`` (which rule made it a heading) is recorded for ``--explain``."""
        text = clean_inline(self.normalize(text))
        if not text:
            return False
        level = max(1, min(6, int(level)))
        start, end = self._append("#" * level + " " + text, "heading")
        while len(self._stack) > 1 and self._stack[-1][0] >= level:
            self._stack.pop()
        node = TreeNode(
            node_type=heading_node_type(text),
            heading=text,
            heading_level=level,
            start=start,
            end=end,
        )
        self._stack[-1][1].children.append(node)
        self._stack.append((level, node))
        if rule:
            self.explain.append(Explanation("heading", text, f"level {level}: {rule}", start, end))
        return True

    def end_table(self) -> None:
        """The next table row starts a new block (a blank line) even if it follows a row."""
        if self._last_kind == "table_row":
            self._last_kind = "table_end"

    def add_unit(self, content_type: ContentType, text: str, *, inline: bool = False) -> Unit | None:
        """Add one unit (``inline``: collapse to one line, as for table rows). Empty text adds nothing."""
        text = self.normalize(text)
        text = clean_inline(text) if inline else clean_block(text)
        if not text:
            return None
        text = self._escape_leading_hash(text)
        if not inline:
            text = "\n".join(self._escape_leading_hash(line) for line in text.split("\n"))
        start, end = self._append(text, content_type)
        unit = Unit(content_type=content_type, text=text, start=start, end=end, heading_path=self.heading_path)
        self.units.append(unit)
        self._stack[-1][1].children.append(
            TreeNode(node_type="paragraph", text=text, content_type=content_type, start=start, end=end)
        )
        return unit

    def add_qa(self, question: str, answer: str, rule: str | None = None) -> Unit | None:
        """A Q&A pair: question block text, newline, answer block text (``rule``: why, for ``--explain``)."""
        q = clean_block(self.normalize(question))
        a = clean_block(self.normalize(answer))
        if not q or not a:
            return self.add_unit("paragraph", q or a)
        unit = self.add_unit("qa_pair", q + "\n" + a)
        if unit is not None and rule:
            self.explain.append(Explanation("qa_pair", q.split("\n")[0], rule, unit.start, unit.end))
        return unit

    @property
    def markdown(self) -> str:
        return "".join(self._parts)

    def stats(self) -> dict[str, int]:
        """Characters of markdown and the number of units of each content type."""
        counts: dict[str, int] = {"characters": self._length}
        for ct in ("paragraph", "table_row", "qa_pair", "image_caption"):
            counts[ct] = 0
        for unit in self.units:
            counts[unit.content_type] += 1
        return counts
