"""What a parser hands to the chunkers: markdown text, a document tree and structural units."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from chunkbench_core.parsing.pages import page_span

ContentType = Literal["paragraph", "table_row", "qa_pair", "image_caption"]
CONTENT_TYPES: tuple[str, ...] = ("paragraph", "table_row", "qa_pair", "image_caption")
NodeType = Literal["document", "section", "article", "paragraph"]


@dataclass
class TreeNode:
    """One node of a DocumentTree."""

    node_type: NodeType
    text: str = ""
    heading: str | None = None
    heading_level: int | None = None
    children: list["TreeNode"] = field(default_factory=list)
    # Added for structure-aware chunkers: the span of the node in ParsedDocument.markdown
    # (a heading line for section/article nodes, the unit for paragraph nodes) and,
    # for paragraph nodes, the content type of the unit they hold.
    content_type: str | None = None
    start: int | None = None
    end: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "node_type": self.node_type,
            "text": self.text,
            "heading": self.heading,
            "heading_level": self.heading_level,
            "children": [c.to_dict() for c in self.children],
            "content_type": self.content_type,
            "start": self.start,
            "end": self.end,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TreeNode":
        return cls(
            node_type=data["node_type"],
            text=data.get("text", ""),
            heading=data.get("heading"),
            heading_level=data.get("heading_level"),
            children=[cls.from_dict(c) for c in data.get("children", [])],
            content_type=data.get("content_type"),
            start=data.get("start"),
            end=data.get("end"),
        )


@dataclass
class Unit:
    """A structural unit in document order; ``markdown[start:end] == text`` always holds."""

    content_type: ContentType
    text: str
    start: int
    end: int
    heading_path: list[str] = field(default_factory=list)


ExplanationKind = Literal["heading", "table", "qa_pair"]


@dataclass
class Explanation:
    """Which rule made one heading, table header/title or Q&A pair (``chunkbench parse --explain``).

    ``start``/``end`` are the span in ``markdown`` of the heading line, the table's rows or the pair;
    ``text`` is what the rule decided (the heading, the header labels and title, the question);
    ``rule`` says which rule, in words a user can map to a setting.
    """

    kind: str
    text: str
    rule: str
    start: int
    end: int


@dataclass
class ParsedDocument:
    """The result of parse(path).

    ``markdown`` is the text every chunker sees and every chunk offset refers to.
    ``units`` lists structural units in document order with spans into ``markdown``.
    ``warnings`` carries things a user should know that did not stop parsing
    (e.g. images counted but not captioned). ``explain`` says which rule made each
    heading, table header and title, and Q&A pair (:func:`chunkbench_core.parsing.explain.explain_text`).
    ``page_starts`` gives, for a paged document (PDF), the ``markdown`` offset at which each page starts
    (page 1 first); it is empty for documents without pages (DOCX, Markdown, text, spreadsheets).
    ``metadata`` is what the file says about itself (a PDF's or Word file's title, author, subject, keywords);
    ``context`` the document's header parts (:mod:`chunkbench_core.parsing.context`: name, form, period, header).
    """

    document: str
    markdown: str
    tree: TreeNode
    units: list[Unit]
    parser: str
    warnings: list[str] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    explain: list[Explanation] = field(default_factory=list)
    page_starts: list[int] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)

    def page_span(self, start: int, end: int) -> tuple[int, int] | None:
        """First and last 1-based page of ``markdown[start:end]``; None when the document has no pages."""
        return page_span(self.page_starts, start, end)

    def to_dict(self) -> dict[str, Any]:
        return {
            "document": self.document,
            "markdown": self.markdown,
            "tree": self.tree.to_dict(),
            "units": [asdict(u) for u in self.units],
            "parser": self.parser,
            "warnings": list(self.warnings),
            "stats": dict(self.stats),
            "explain": [asdict(e) for e in self.explain],
            "page_starts": list(self.page_starts),
            "metadata": dict(self.metadata),
            "context": dict(self.context),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ParsedDocument":
        return cls(
            document=data["document"],
            markdown=data["markdown"],
            tree=TreeNode.from_dict(data["tree"]),
            units=[Unit(**u) for u in data["units"]],
            parser=data.get("parser", ""),
            warnings=list(data.get("warnings", [])),
            stats=dict(data.get("stats", {})),
            explain=[Explanation(**e) for e in data.get("explain", [])],
            page_starts=[int(o) for o in data.get("page_starts", [])],
            metadata={str(k): str(v) for k, v in (data.get("metadata") or {}).items()},
            context=dict(data.get("context") or {}),
        )
