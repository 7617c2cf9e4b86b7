"""PDF with a text layer: markdown + DocumentTree (LLD section 7.1, pdf_parser.py).

Steps, as in LLD 7.1:

1. **Text-layer gate.** Non-blank characters are counted per page; a PDF with
   fewer than ``pdf_min_total_chars`` in total or a median below
   ``pdf_min_median_chars_per_page`` is a scanned PDF and is rejected with a
   :class:`DocumentProcessingError` that says so (run OCR first). Encrypted
   PDFs that do not open with an empty password and PDFs with no page are
   rejected too.
2. **Text extraction** with pypdf, keeping every text fragment's position,
   font size and font name. Fragments are grouped into lines; a right-to-left
   line (Persian) is put in reading order by placing its fragments right to left
   (``pdf_rtl_order="auto"``), which undoes the reversed word order of printed
   Persian PDFs; presentation forms are folded by the Persian normalisation
   (environment-facts "Persian text"). Lines repeated on most pages (running
   headers/footers) and bare page numbers at the top or bottom of a page are
   dropped.
3. **Heading reconstruction**, first rule that applies:
   a. the PDF outline (bookmarks): lines whose text equals an outline title are
      headings at the outline depth;
   b. otherwise font size and weight: lines clearly larger than the body text
      (>= 1.15 x the most common size) are headings, the largest size level 1,
      the next level 2, ...; a short, fully bold, standalone line of body size is
      a heading one level below those;
   c. and, in either case b, text heuristics for standalone short lines:
      English "Chapter/Part N" and Persian "فصل/بخش ..." (one level below the
      font levels), "Section N", numbered "2.1 Title", Persian "مبحث/گفتار ..."
      and legal articles "Article N" / "ماده N" (two levels below; article nodes).
4. **Table flattening.** Two or more consecutive lines made of several cells
   (text fragments separated by wide gaps) are a table; cells are assigned to
   columns by position and each row becomes one line of sequential plain text -
   a ``table_row`` unit, labelled when the first row is provably a header
   (:mod:`chunkbench_core.parsing.tables`).
5. **Markdown**: headings as ``#``/``##`` lines; lines of one paragraph are
   joined with spaces (a paragraph ends at a vertical gap clearly larger than
   the line spacing, a change of font size, or a heading); paragraph runs go
   through Q&A detection as in DOCX.
"""

from __future__ import annotations

import logging
import math
import re
import statistics
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.builder import MarkdownBuilder, clean_inline
from chunkbench_core.parsing.docx import Heading, Para, TableRows, emit_events
from chunkbench_core.parsing.images import ImageReporter
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.parsing.options import ParseOptions
from chunkbench_core.parsing.persian import is_rtl_text, normalize_persian, order_rtl_tokens
from chunkbench_core.parsing.tables import GridCell, flatten_table

HEADING_SIZE_RATIO = 1.15
PARAGRAPH_GAP_RATIO = 1.45
CELL_GAP_EMS = 2.0
AVG_CHAR_WIDTH_EMS = 0.5
MAX_HEADING_CHARS = 150
MAX_SHORT_LINE_CHARS = 80

_END_PUNCT = tuple(".,;:!?،؛؟")
_PAGE_NUMBER = re.compile(r"^\s*(?:page|صفحه)?\s*[\d\u06f0-\u06f9]+(?:\s*(?:of|/|از)\s*[\d\u06f0-\u06f9]+)?\s*$", re.IGNORECASE)
_EN_CHAPTER = re.compile(r"^(?:chapter|part)\s+[\w.]+", re.IGNORECASE)
_EN_SECTION = re.compile(r"^section\s+[\d.]+", re.IGNORECASE)
_EN_ARTICLE = re.compile(r"^article\s+[\w.]+", re.IGNORECASE)
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)+)\.?\s+\S")
_FA_CHAPTER = re.compile(r"^(?:فصل|بخش)\s+\S+")
_FA_SECTION = re.compile(r"^(?:مبحث|گفتار)\s+\S+")
_FA_ARTICLE = re.compile(r"^ماده\s+[\d\u06f0-\u06f9]+")


@dataclass
class Fragment:
    x: float
    y: float
    size: float
    bold: bool
    text: str


@dataclass
class Line:
    page: int
    y: float
    size: float
    bold: bool
    text: str
    cells: list[Fragment] = field(default_factory=list)
    rtl: bool = False
    gap_before: float = 0.0  # vertical distance from the previous line on the page (0 for the first)
    heading_level: int | None = None


def _mult(m: list[float], n: list[float]) -> list[float]:
    return [
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    ]


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    logger = logging.getLogger("pypdf")
    old = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(old)


def open_pdf(path: Path) -> Any:
    """Open with pypdf; encrypted, unreadable and page-less PDFs raise DocumentProcessingError."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(str(path), strict=False)
    except Exception as exc:
        raise DocumentProcessingError(str(path), f"corrupt or unreadable PDF ({type(exc).__name__}: {exc})") from None
    try:
        encrypted = reader.is_encrypted
    except Exception as exc:
        raise DocumentProcessingError(str(path), f"corrupt or unreadable PDF ({type(exc).__name__}: {exc})") from None
    if encrypted:
        try:
            result = reader.decrypt("")
        except Exception as exc:
            raise DocumentProcessingError(
                str(path), f"encrypted PDF: cannot decrypt it ({type(exc).__name__}: {exc}); remove the encryption first"
            ) from None
        if not result:
            raise DocumentProcessingError(str(path), "encrypted PDF: a password is required to open it")
    try:
        pages = len(reader.pages)
    except Exception as exc:
        raise DocumentProcessingError(str(path), f"corrupt PDF: cannot read its pages ({type(exc).__name__}: {exc})") from None
    if pages == 0:
        raise DocumentProcessingError(str(path), "PDF has no pages (0-page PDF)")
    return reader


def page_fragments(page: Any) -> list[Fragment]:
    """Text fragments of one page with position, effective font size and boldness."""
    frags: list[Fragment] = []

    def visitor(text: str, cm: Any, tm: Any, font_dict: Any, font_size: Any) -> None:
        if not text or not text.strip():
            return
        try:
            m = _mult([float(v) for v in tm], [float(v) for v in cm])
            scale = math.hypot(m[2], m[3]) or math.hypot(m[0], m[1]) or 1.0
            size = float(font_size or 0) * scale or 10.0
        except Exception:
            m = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
            size = 10.0
        font = ""
        try:
            if font_dict is not None:
                font = str(font_dict.get("/BaseFont", "") or "")
        except Exception:
            font = ""
        lowered = font.lower()
        bold = any(k in lowered for k in ("bold", "black", "heavy", "semibold", "demi"))
        for piece in text.split("\n"):
            if piece.strip():
                frags.append(Fragment(m[4], m[5], size, bold, piece))

    page.extract_text(visitor_text=visitor)
    return frags


def _line_text(cells: list[Fragment], rtl: bool, rtl_order: str) -> str:
    texts = [clean_inline(c.text) for c in cells]
    texts = [t for t in texts if t]
    if rtl and rtl_order == "visual":
        words = " ".join(texts).split()
        return " ".join(order_rtl_tokens(words))
    return " ".join(texts)


def group_lines(frags: list[Fragment], page_no: int, options: ParseOptions) -> list[Line]:
    """Fragments in stream order -> lines (same baseline), with cells split at wide gaps."""
    raw: list[list[Fragment]] = []
    for frag in frags:
        if raw:
            cur = raw[-1]
            ref = cur[0]
            if abs(frag.y - ref.y) <= 0.5 * max(frag.size, ref.size, 1.0):
                cur.append(frag)
                continue
        raw.append([frag])
    lines: list[Line] = []
    prev_y: float | None = None
    for group in raw:
        joined = " ".join(f.text for f in group)
        rtl = is_rtl_text(joined)
        if options.pdf_rtl_order == "logical":
            ordered = list(group)
        else:
            ordered = sorted(group, key=lambda f: f.x)
        # merge fragments into cells: a gap wider than CELL_GAP_EMS ems starts a new cell
        groups: list[list[Fragment]] = []
        for frag in ordered:
            if groups and options.pdf_rtl_order != "logical":
                last = groups[-1][-1]
                est_end = last.x + AVG_CHAR_WIDTH_EMS * last.size * len(last.text.strip())
                if frag.x - est_end <= CELL_GAP_EMS * max(last.size, frag.size):
                    groups[-1].append(frag)
                    continue
            groups.append([frag])
        cells = [_merge_cell(g, rtl and options.pdf_rtl_order == "auto") for g in groups]
        if rtl and options.pdf_rtl_order == "auto":
            cells = list(reversed(cells))
        size = max((f.size for f in group), default=10.0)
        bold = all(f.bold for f in group)
        y = group[0].y
        text = _line_text(cells, rtl, options.pdf_rtl_order)
        if not text:
            continue
        gap = 0.0 if prev_y is None else abs(prev_y - y)
        prev_y = y
        lines.append(Line(page_no, y, size, bold, text, cells, rtl, gap))
    return lines


def _merge_cell(frags: list[Fragment], rtl: bool) -> Fragment:
    """One cell from fragments listed left to right; on a right-to-left line they are
    read right to left, except runs of left-to-right fragments (see order_rtl_tokens)."""
    texts = [clean_inline(f.text) for f in frags]
    texts = [t for t in texts if t]
    if rtl:
        texts = order_rtl_tokens(texts)
    first = frags[0]
    return Fragment(
        first.x,
        first.y,
        max(f.size for f in frags),
        all(f.bold for f in frags),
        " ".join(texts),
    )


def _norm_key(text: str) -> str:
    return clean_inline(normalize_persian(text)).casefold()


def outline_titles(reader: Any) -> dict[str, int]:
    """Outline (bookmark) titles -> depth (1-based)."""
    titles: dict[str, int] = {}

    def visit(items: Any, depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                visit(item, depth + 1)
                continue
            try:
                title = str(item.title or "")
            except Exception:
                title = ""
            key = _norm_key(title)
            if key and key not in titles:
                titles[key] = min(depth, 6)

    try:
        visit(reader.outline, 1)
    except Exception:
        return {}
    return titles


def _drop_running_lines(pages: list[list[Line]]) -> int:
    """Remove running headers/footers and page numbers; returns how many lines were dropped."""
    dropped = 0
    if len(pages) >= 3:
        counts: Counter[str] = Counter()
        for lines in pages:
            edge = {_norm_key(line.text) for line in (lines[:2] + lines[-2:])}
            counts.update(edge)
        repeated = {k for k, n in counts.items() if n >= max(3, len(pages) // 2 + 1)}
    else:
        repeated = set()
    for i, lines in enumerate(pages):
        keep: list[Line] = []
        for j, line in enumerate(lines):
            at_edge = j < 2 or j >= len(lines) - 2
            if at_edge and (_norm_key(line.text) in repeated or (_PAGE_NUMBER.match(line.text) and (j == 0 or j == len(lines) - 1))):
                dropped += 1
                continue
            keep.append(line)
        pages[i] = keep
    return dropped


def text_layer_gate(path: Path, per_page_chars: list[int], options: ParseOptions) -> None:
    """LLD 7.1 step 1: reject scanned PDFs."""
    total = sum(per_page_chars)
    median = statistics.median(per_page_chars) if per_page_chars else 0
    if total < options.pdf_min_total_chars or median < options.pdf_min_median_chars_per_page:
        raise DocumentProcessingError(
            str(path),
            "no usable text layer (scanned PDF?): "
            f"{total} characters in {len(per_page_chars)} page(s), median {median:g} per page; "
            f"needs at least {options.pdf_min_total_chars} in total and a median of "
            f"{options.pdf_min_median_chars_per_page} per page "
            "(run OCR first, or lower pdf_min_total_chars / pdf_min_median_chars_per_page)",
        )


def _heuristic_kind(text: str) -> tuple[int, bool] | None:
    """(relative level 1 or 2, is_article) for text-pattern headings, else None."""
    if _EN_CHAPTER.match(text) or _FA_CHAPTER.match(text):
        return 1, False
    if _EN_ARTICLE.match(text) or _FA_ARTICLE.match(text):
        return 2, True
    if _EN_SECTION.match(text) or _FA_SECTION.match(text):
        return 2, False
    m = _NUMBERED.match(text)
    if m:
        return min(m.group(1).count(".") + 1, 4), False
    return None


def _round_size(size: float) -> float:
    return round(size * 2) / 2


def assign_headings(lines: list[Line], titles: dict[str, int], spacing: dict[float, float]) -> None:
    """LLD 7.1 step 2: outline first, then font size/weight and text heuristics."""
    if titles:
        matched = False
        for line in lines:
            level = titles.get(_norm_key(line.text))
            if level is not None:
                line.heading_level = level
                matched = True
        if matched:
            return
    weights: Counter[float] = Counter()
    for line in lines:
        weights[_round_size(line.size)] += len(line.text)
    if not weights:
        return
    body = weights.most_common(1)[0][0]
    big_sizes = sorted(
        {_round_size(line.size) for line in lines if line.size >= body * HEADING_SIZE_RATIO and len(line.text) <= MAX_HEADING_CHARS},
        reverse=True,
    )[:5]
    font_levels = {size: i + 1 for i, size in enumerate(big_sizes)}
    below = len(big_sizes)
    for i, line in enumerate(lines):
        size = _round_size(line.size)
        if size in font_levels and len(line.text) <= MAX_HEADING_CHARS and len(line.cells) == 1:
            line.heading_level = font_levels[size]
            continue
        if len(line.text) > MAX_SHORT_LINE_CHARS or len(line.cells) != 1 or line.text.endswith(_END_PUNCT):
            continue
        if not _standalone(lines, i, spacing):
            continue
        kind = _heuristic_kind(line.text)
        if kind is not None:
            line.heading_level = min(6, below + kind[0])
        elif line.bold and size <= body:
            line.heading_level = min(6, below + 1)


def _standalone(lines: list[Line], i: int, spacing: dict[float, float]) -> bool:
    """The line is a paragraph of its own: a gap (or a font change / page edge) before and after."""
    line = lines[i]

    def separated(a: Line, b: Line) -> bool:
        if a.page != b.page or abs(a.size - b.size) > 0.5 or a.bold != b.bold:
            return True
        return b.gap_before > PARAGRAPH_GAP_RATIO * _spacing_for(spacing, a)

    before = i == 0 or separated(lines[i - 1], line)
    after = i + 1 >= len(lines) or separated(line, lines[i + 1])
    return before and after


def line_spacing(lines: list[Line]) -> dict[float, float]:
    """Usual distance between consecutive lines of one paragraph, per font size.

    The lower quartile of the gaps between consecutive same-size lines of a page:
    gaps between paragraphs are larger, so they sit in the upper part.
    """
    gaps: dict[float, list[float]] = {}
    for prev, line in zip(lines, lines[1:]):
        if prev.page == line.page and abs(prev.size - line.size) <= 0.5 and line.gap_before > 0:
            gaps.setdefault(_round_size(line.size), []).append(line.gap_before)
    out: dict[float, float] = {}
    for size, vals in gaps.items():
        vals.sort()
        out[size] = vals[(len(vals) - 1) // 4]
    return out


def _spacing_for(spacing: dict[float, float], line: Line) -> float:
    return spacing.get(_round_size(line.size), line.size * 1.2)


def _table_rows(block: list[Line]) -> list[list[GridCell]]:
    """Assign the cells of a run of tabular lines to columns by x position."""
    starts: list[float] = []
    tol = max(line.size for line in block)
    for line in block:
        for cell in line.cells:
            if not any(abs(cell.x - s) <= tol for s in starts):
                starts.append(cell.x)
    rtl = sum(1 for line in block if line.rtl) > len(block) / 2
    starts.sort(reverse=rtl)
    rows: list[list[GridCell]] = []
    for r, line in enumerate(block):
        row = [GridCell("", ("pdf", r, c)) for c in range(len(starts))]
        for cell in line.cells:
            col = min(range(len(starts)), key=lambda k: abs(starts[k] - cell.x))
            text = clean_inline(cell.text)
            if row[col].text:
                text = row[col].text + " " + text
            row[col] = GridCell(text, ("pdf", r, col))
        rows.append(row)
    return rows


def build_events(lines: list[Line], spacing: dict[float, float]) -> list[Heading | Para | TableRows]:
    """Lines -> headings, paragraphs (joined lines) and flattened tables, in order."""
    events: list[Heading | Para | TableRows] = []
    para: list[str] = []
    i = 0

    def flush() -> None:
        if para:
            events.append(Para(" ".join(para)))
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.heading_level is not None:
            flush()
            text = line.text
            # a heading wrapped over two lines of the same size and level
            while (
                i + 1 < len(lines)
                and lines[i + 1].heading_level == line.heading_level
                and lines[i + 1].page == line.page
                and abs(lines[i + 1].size - line.size) <= 0.5
                and lines[i + 1].gap_before <= PARAGRAPH_GAP_RATIO * max(line.size * 1.25, _spacing_for(spacing, line))
            ):
                i += 1
                text += " " + lines[i].text
            events.append(Heading(line.heading_level, text))
            i += 1
            continue
        if len(line.cells) >= 2:
            j = i
            while j < len(lines) and len(lines[j].cells) >= 2 and lines[j].heading_level is None:
                j += 1
            if j - i >= 2:
                flush()
                flat = flatten_table(_table_rows(lines[i:j]))
                block = TableRows()
                for item in flat.items:
                    if item.kind == "title":
                        if block.rows:
                            events.append(block)
                            block = TableRows()
                        events.append(Para(item.text))
                    else:
                        block.rows.append(item.text)
                if block.rows:
                    events.append(block)
                i = j
                continue
        if para:
            prev = lines[i - 1]
            new_para = (
                prev.page != line.page
                and prev.text.endswith((".", "!", "?", "؟", ":"))
            ) or (
                prev.page == line.page
                and (
                    abs(prev.size - line.size) > 0.5
                    or line.gap_before > PARAGRAPH_GAP_RATIO * _spacing_for(spacing, line)
                )
            )
            if new_para:
                flush()
        para.append(line.text)
        i += 1
    flush()
    return events


def parse_pdf(path: Path, options: ParseOptions) -> ParsedDocument:
    """Parse a PDF (see module docstring)."""
    warnings: list[str] = []
    with _quiet_pypdf():
        reader = open_pdf(path)
        pages: list[list[Line]] = []
        per_page_chars: list[int] = []
        failed_pages = 0
        for number, page in enumerate(reader.pages, start=1):
            try:
                frags = page_fragments(page)
            except Exception as exc:
                failed_pages += 1
                warnings.append(f"page {number}: text extraction failed ({type(exc).__name__})")
                frags = []
            per_page_chars.append(sum(len("".join(f.text.split())) for f in frags))
            pages.append(group_lines(frags, number, options))
        text_layer_gate(path, per_page_chars, options)
        titles = outline_titles(reader)
    dropped = _drop_running_lines(pages)
    lines = [line for page_lines in pages for line in page_lines]
    for line in lines:
        line.text = normalize_persian(line.text, options.persian_digits)
    spacing = line_spacing(lines)
    assign_headings(lines, titles, spacing)
    events = build_events(lines, spacing)
    builder = MarkdownBuilder(options.persian_digits)
    emit_events(list(events), builder, ImageReporter(options))
    stats = builder.stats()
    stats.update(
        {
            "pages": len(pages),
            "pdf_text_chars": sum(per_page_chars),
            "pdf_dropped_lines": dropped,
            "pdf_failed_pages": failed_pages,
            "headings_from_outline": int(bool(titles)),
        }
    )
    return ParsedDocument(
        document=path.name,
        markdown=builder.markdown,
        tree=builder.root,
        units=builder.units,
        parser="pdf",
        warnings=warnings,
        stats=stats,
    )
