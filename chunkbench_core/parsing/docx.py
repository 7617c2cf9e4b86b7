"""DOCX: structural units from a Word document, in reading order.

Rules:

1. The body is walked in document order (``w:body`` children, content controls
   ``w:sdt`` opened), so tables keep their place between paragraphs.
2. Headings come from paragraph styles only: "Heading N" (or a style based on
   one, or a paragraph/style outline level) gives level N; "Title" gives level 1.
   No heading is inferred from text: bold or short lines are too often not headings.
3. A table is *page layout* when a cell holds a nested table or a cell's text is
   longer than one chunk (``ParseOptions.chunk_token_limit`` cl100k tokens). Its
   cells are then read as prose, in row order, each distinct cell once; nested
   tables inside them are handled again by these rules (recursion).
4. Any other table is data: one ``table_row`` unit per row, labelled with its
   column headers (a provable header row, or a multi-row period header), in front
   of it the table's title and its section row; title rows and blank separator
   rows are not rows (see :mod:`chunkbench_core.parsing.tables`, "rows that keep
   their meaning"). The title is the table's title row, else up to three short
   caption paragraphs right above the table, else the heading right above it.
   Merged cells: a vertically merged cell's text is repeated on each row it covers.
5. Runs of body paragraphs go through Q&A detection
   (:mod:`chunkbench_core.parsing.qa`): pairs become ``qa_pair`` units, other
   paragraphs ``paragraph`` units (one per Word paragraph).
6. Each embedded image (``a:blip`` / VML ``v:imagedata``) becomes an
   ``image_caption`` unit when ``ParseOptions.caption_source`` is set; otherwise
   it is counted in ``stats['images']`` and reported in ``warnings``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.builder import MarkdownBuilder, clean_inline
from chunkbench_core.parsing.heuristics import ParserHeuristics, TableHeuristics, compiled
from chunkbench_core.parsing.images import ImageReporter
from chunkbench_core.parsing.models import Explanation, ParsedDocument
from chunkbench_core.parsing.options import ParseOptions
from chunkbench_core.parsing.qa import pair_paragraphs
from chunkbench_core.parsing.tables import FlatTable, GridCell, flatten_table, table_units
from chunkbench_core.parsing.tokens import exceeds_tokens

W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
V_NS = "urn:schemas-microsoft-com:vml"


def _w(tag: str) -> str:
    return f"{{{W_NS}}}{tag}"


W_P, W_TBL, W_TR, W_TC, W_SDT, W_SDT_CONTENT = _w("p"), _w("tbl"), _w("tr"), _w("tc"), _w("sdt"), _w("sdtContent")
W_T, W_TAB, W_BR, W_CR, W_R = _w("t"), _w("tab"), _w("br"), _w("cr"), _w("r")
W_VAL = _w("val")
A_BLIP = f"{{{A_NS}}}blip"
V_IMAGEDATA = f"{{{V_NS}}}imagedata"
R_EMBED = f"{{{R_NS}}}embed"
R_ID = f"{{{R_NS}}}id"
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)


# -- events produced by the walk --------------------------------------------------------
@dataclass
class Heading:
    level: int
    text: str
    rule: str = ""


@dataclass
class Para:
    text: str


@dataclass
class Image:
    blob: bytes | None
    name: str


@dataclass
class TableRows:
    """A data table, flattened (:func:`chunkbench_core.parsing.tables.flatten_table`)."""

    table: FlatTable = field(default_factory=lambda: FlatTable(header=None))
    continued: bool = False  # it continues the previous table (a PDF table split over two pages)


Event = Heading | Para | Image | TableRows


# -- paragraph helpers --------------------------------------------------------------------
def paragraph_text(p: Any) -> str:
    """Visible text of a ``w:p``: runs (also inside hyperlinks/fields), tabs and breaks."""
    parts: list[str] = []
    for el in p.iter(W_T, W_TAB, W_BR, W_CR):
        if el.tag == W_T:
            parts.append(el.text or "")
        elif el.tag == W_TAB:
            parts.append("\t")
        else:
            parts.append("\n")
    return "".join(parts)


class _Styles:
    """Heading level of a paragraph style id, following ``basedOn`` and outline levels."""

    def __init__(self, document: Any) -> None:
        self._levels: dict[str, int | None] = {}
        self._styles: dict[str, Any] = {}
        try:
            styles_el = document.styles.element
        except Exception:
            return
        for st in styles_el.findall(_w("style")):
            sid = st.get(_w("styleId"))
            if sid:
                self._styles[sid] = st

    def name(self, style_id: str | None) -> str:
        st = self._styles.get(style_id or "")
        name_el = st.find(_w("name")) if st is not None else None
        return ((name_el.get(W_VAL) if name_el is not None else None) or style_id or "").strip()

    def level(self, style_id: str | None, depth: int = 0) -> int | None:
        if not style_id or depth > 10:
            return None
        if style_id in self._levels:
            return self._levels[style_id]
        st = self._styles.get(style_id)
        result: int | None = None
        if st is not None:
            name_el = st.find(_w("name"))
            name = (name_el.get(W_VAL) if name_el is not None else "") or ""
            m = _HEADING_STYLE.match(name.strip())
            if m:
                result = int(m.group(1))
            elif name.strip().lower() == "title":
                result = 1
            else:
                outline = st.find(f"{_w('pPr')}/{_w('outlineLvl')}")
                if outline is not None and (outline.get(W_VAL) or "").isdigit() and int(outline.get(W_VAL)) < 9:
                    result = int(outline.get(W_VAL)) + 1
                else:
                    based = st.find(_w("basedOn"))
                    if based is not None:
                        result = self.level(based.get(W_VAL), depth + 1)
        else:
            m = _HEADING_STYLE.match(re.sub(r"(?<=[a-zA-Z])(?=\d)", " ", style_id))
            result = int(m.group(1)) if m else None
        self._levels[style_id] = result
        return result


def heading_level(p: Any, styles: _Styles) -> tuple[int, str] | None:
    """(level, rule) of a heading paragraph: its outline level, or its style (see module docstring)."""
    ppr = p.find(_w("pPr"))
    if ppr is None:
        return None
    outline = ppr.find(_w("outlineLvl"))
    if outline is not None and (outline.get(W_VAL) or "").isdigit() and int(outline.get(W_VAL)) < 9:
        return int(outline.get(W_VAL)) + 1, "Word paragraph outline level"
    pstyle = ppr.find(_w("pStyle"))
    if pstyle is None:
        return None
    style_id = pstyle.get(W_VAL)
    level = styles.level(style_id)
    return (level, f"Word paragraph style {styles.name(style_id)!r}") if level else None


# -- walker -----------------------------------------------------------------------------------
class _Walker:
    def __init__(self, document: Any, options: ParseOptions) -> None:
        self.document = document
        self.options = options
        self.styles = _Styles(document)
        self.events: list[Event] = []
        self.tables = 0
        self.layout_tables = 0
        try:
            self._parts = document.part.related_parts
        except Exception:
            self._parts = {}

    def blocks(self, container: Any) -> Iterator[Any]:
        for child in container.iterchildren():
            if child.tag in (W_P, W_TBL):
                yield child
            elif child.tag == W_SDT:
                content = child.find(W_SDT_CONTENT)
                if content is not None:
                    yield from self.blocks(content)

    def walk(self, container: Any) -> None:
        for el in self.blocks(container):
            if el.tag == W_P:
                self.paragraph(el)
            else:
                self.table(el)

    def paragraph(self, p: Any) -> None:
        text = paragraph_text(p)
        found = heading_level(p, self.styles)
        if text.strip():
            self.events.append(Heading(found[0], text, found[1]) if found else Para(text))
        self.images(p)

    # -- tables --
    def grid(self, tbl: Any) -> list[list[tuple[Any, int]]]:
        """Rows of (tc element, row index of its origin); vMerge continuations point to the cell above."""
        rows: list[list[tuple[Any, int]]] = []
        above: dict[int, tuple[Any, int]] = {}
        for r_index, tr in enumerate(tbl.findall(W_TR)):
            row: list[tuple[Any, int]] = []
            col = 0
            trpr = tr.find(_w("trPr"))
            if trpr is not None:
                before = trpr.find(_w("gridBefore"))
                if before is not None and (before.get(W_VAL) or "").isdigit():
                    col = min(int(before.get(W_VAL)), 64)
                    row.extend((None, r_index) for _ in range(col))
            for tc in tr.findall(W_TC):
                tcpr = tc.find(_w("tcPr"))
                span = 1
                cont = False
                if tcpr is not None:
                    gs = tcpr.find(_w("gridSpan"))
                    if gs is not None and (gs.get(W_VAL) or "").isdigit():
                        span = max(1, min(int(gs.get(W_VAL)), 64))
                    vm = tcpr.find(_w("vMerge"))
                    if vm is not None and (vm.get(W_VAL) in (None, "continue")):
                        cont = True
                origin = above.get(col) if cont else None
                cell = origin if origin is not None else (tc, r_index)
                for _ in range(span):
                    row.append(cell)
                    above[col] = cell
                    col += 1
            rows.append(row)
        return rows

    def cell_text(self, tc: Any) -> str:
        return "\n".join(paragraph_text(p) for p in tc.iter(W_P))

    def is_layout(self, tbl: Any, cells: list[Any]) -> bool:
        for tc in cells:
            if tc.find(f".//{W_TBL}") is not None:
                return True
        limit = self.options.chunk_token_limit
        return any(exceeds_tokens(self.cell_text(tc), limit) for tc in cells)

    def table(self, tbl: Any) -> None:
        self.tables += 1
        grid = self.grid(tbl)
        distinct: list[Any] = []
        seen: set[int] = set()
        for row in grid:
            for tc, _ in row:
                if tc is not None and id(tc) not in seen:
                    seen.add(id(tc))
                    distinct.append(tc)
        if self.is_layout(tbl, distinct):
            self.layout_tables += 1
            for tc in distinct:
                self.walk(tc)
            return
        texts: dict[int, str] = {}
        raw_rows: list[list[GridCell]] = []
        for r_index, row in enumerate(grid):
            cells: list[GridCell] = []
            for c_index, (tc, _origin_row) in enumerate(row):
                if tc is None:
                    cells.append(GridCell("", ("empty", r_index, c_index)))
                    continue
                key = id(tc)
                if key not in texts:
                    texts[key] = self.cell_text(tc)
                cells.append(GridCell(texts[key], key))
            raw_rows.append(cells)
        self.events.append(TableRows(flatten_table(raw_rows, self.options.heuristics.tables, context=True)))
        for tc in distinct:  # images inside data cells follow the table
            for p in tc.iter(W_P):
                self.images(p)

    def images(self, p: Any) -> None:
        for el in p.iter(A_BLIP, V_IMAGEDATA):
            rid = el.get(R_EMBED) if el.tag == A_BLIP else el.get(R_ID)
            part = self._parts.get(rid) if rid else None
            blob = None
            name = rid or "image"
            if part is not None:
                try:
                    blob = part.blob
                    name = str(getattr(part, "partname", name))
                except Exception:
                    blob = None
            self.events.append(Image(blob, name))


_SENTENCE_INSIDE = re.compile(r"[.!?\u061f]\s+\S")
_ABBREVIATION = re.compile(r"(?:^|\s)(?:[A-Z][A-Za-z]{0,4}\.)+$")  # "Inc.", "Corp.", "S.A.", "U.S."


def is_title_line(text: str) -> bool:
    """A title rather than a sentence: no closing sentence mark, or one closing an abbreviation ("Inc.")."""
    text = clean_inline(text)
    return not text.endswith((".", "!", "?", "\u061f")) or bool(_ABBREVIATION.search(text))


def is_caption(text: str, tables: TableHeuristics) -> bool:
    """A short title line, or a short paragraph starting like a caption ("Table 3. Sales by region.")."""
    text = clean_inline(text)
    if not 0 < len(text) <= tables.caption_max_chars:
        return False
    if compiled(tables.caption_pattern).match(text):
        return True
    return is_title_line(text) and not _SENTENCE_INSIDE.search(text)


def table_caption(run: list[str], heading: str | None, tables: TableHeuristics) -> tuple[str | None, str]:
    """(caption, where it came from) for a table following the paragraphs ``run``.

    Up to ``caption_lines`` caption paragraphs right above the table ("ACME Robotics, Inc." over
    "STATEMENTS OF OPERATIONS" over "(In thousands)"); else the heading right above the table.
    """
    lines: list[str] = []
    for text in reversed(run):
        if len(lines) >= tables.caption_lines or not is_caption(text, tables):
            break
        lines.insert(0, clean_inline(text).rstrip(":\uff1a").strip())
    lines = [line for line in lines if line]
    if lines:
        return " ".join(lines), "the caption above the table"
    if not run and heading:
        return clean_inline(heading), "the heading above the table"
    return None, ""


def _emit_table(table: FlatTable, caption: str | None, source: str, builder: MarkdownBuilder) -> str | None:
    """Write the table's rows; returns the title they carry."""
    title, units = table_units(table, caption)
    builder.end_table()
    start = end = None
    for kind, text in units:
        if kind == "table_row":
            unit = builder.add_unit("table_row", text, inline=True)
        else:
            builder.end_table()
            unit = builder.add_unit("paragraph", text)
            builder.end_table()
        if unit is not None and kind == "table_row":
            start = unit.start if start is None else start
            end = unit.end
    builder.end_table()
    if start is None or end is None:
        return title
    labels = [label for label in (table.header or []) if label]
    what = f"header: {' | '.join(labels)}" if labels else "no header"
    rule = table.header_rule
    if title:
        what += f"; title: {title}"
        how = "the table's title row" if table.titles else source
        rule += f"; title from {how}"
    builder.explain.append(Explanation("table", what, rule, start, end))
    return title


def emit_events(
    events: list[Event], builder: MarkdownBuilder, images: ImageReporter, heuristics: ParserHeuristics | None = None
) -> None:
    """Write walk events into the builder; consecutive paragraphs go through Q&A pairing; a table's
    rows get its title from the caption or heading right above it (see module docstring)."""
    heuristics = heuristics or ParserHeuristics()
    run: list[str] = []
    heading: str | None = None  # the heading right above the current run of paragraphs
    last_title: str | None = None  # the title of the last table, for a table that continues it

    def flush() -> None:
        for item in pair_paragraphs(run, heuristics.qa):
            if item.answer is None:
                builder.add_unit("paragraph", item.question)
            else:
                builder.add_qa(item.question, item.answer, item.rule)
        run.clear()

    for ev in events:
        if isinstance(ev, Para):
            run.append(builder.normalize(ev.text))
            continue
        if isinstance(ev, TableRows):
            caption, source = table_caption(run, heading, heuristics.tables)
            if ev.continued and last_title and not ev.table.titles and (caption is None or not run):
                caption, source = last_title, "the table it continues on the page before"
            flush()
            last_title = _emit_table(ev.table, caption and builder.normalize(caption), source, builder)
            heading = None
            continue
        flush()
        heading = None
        if isinstance(ev, Heading):
            if builder.heading(ev.text, ev.level, ev.rule or None):
                heading = builder.normalize(ev.text)
        elif isinstance(ev, Image):
            images.handle(ev.blob, ev.name, builder)
    flush()


def open_docx(path: Path) -> Any:
    import docx  # python-docx

    try:
        return docx.Document(str(path))
    except DocumentProcessingError:
        raise
    except Exception as exc:
        raise DocumentProcessingError(
            str(path), f"cannot open as a Word .docx document ({type(exc).__name__}: {exc})"
        ) from None


def parse_docx(
    path: Path, options: ParseOptions, *, display_name: str | None = None, parser: str = "docx"
) -> ParsedDocument:
    """Parse a .docx file (see module docstring)."""
    document = open_docx(path)
    walker = _Walker(document, options)
    try:
        body = document.element.body
    except Exception as exc:
        raise DocumentProcessingError(str(path), f"Word document has no body ({exc})") from None
    walker.walk(body)
    builder = MarkdownBuilder(options.persian_digits)
    images = ImageReporter(options)
    emit_events(walker.events, builder, images, options.heuristics)
    stats = images.stats()
    stats.update(builder.stats())
    stats["tables"] = walker.tables
    stats["layout_tables"] = walker.layout_tables
    return ParsedDocument(
        document=display_name or path.name,
        markdown=builder.markdown,
        tree=builder.root,
        units=builder.units,
        parser=parser,
        warnings=images.warnings(),
        stats=stats,
        explain=builder.explain,
        metadata=_core_properties(document),
    )


def _core_properties(document: Any) -> dict[str, str]:
    """The Word file's title, author, subject and keywords (those set)."""
    try:
        props = document.core_properties
        items = {"title": props.title, "author": props.author, "subject": props.subject, "keywords": props.keywords}
    except Exception:  # damaged core properties: the header is told from the text instead
        return {}
    return {
        key: " ".join(str(value).split()) for key, value in items.items() if isinstance(value, str) and value.strip()
    }
