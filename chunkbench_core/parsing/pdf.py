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
   (text fragments separated by wide gaps) are a table; a one-cell line whose
   cell sits under a later column continues it (a merged cell printed once).
   Cells are assigned to columns by position and each row becomes one line of
   sequential plain text - a ``table_row`` unit, labelled when the first row is
   provably a header (:mod:`chunkbench_core.parsing.tables`).
5. **Markdown**: headings as ``#``/``##`` lines; lines of one paragraph are
   joined with spaces (a word hyphenated at a line end is rejoined). A
   paragraph ends at a vertical gap clearly larger than the line spacing, a
   change of font size or weight, a heading, a line that starts with a
   question/answer marker or an enumerator, or after a line that ends a
   sentence well short of the text width; across a page break, where the last
   line ends a sentence. Paragraph runs go through Q&A detection as in DOCX.
6. **Images** drawn on pages are counted once each (``stats['images']``) and
   captioned when ``ParseOptions.caption_source`` is set, as for DOCX.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import statistics
import unicodedata
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.builder import MarkdownBuilder, clean_inline
from chunkbench_core.parsing.docx import Heading, Image, Para, TableRows, emit_events
from chunkbench_core.parsing.images import ImageReporter
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.parsing.options import ParseOptions
from chunkbench_core.parsing.persian import ZWNJ, is_rtl_text, normalize_persian, order_rtl_tokens
from chunkbench_core.parsing.qa import ANSWER_MARK, ENUMERATOR, QUESTION_MARK
from chunkbench_core.parsing.tables import GridCell, flatten_table

HEADING_SIZE_RATIO = 1.15
PARAGRAPH_GAP_RATIO = 1.45
CELL_GAP_EMS = 2.0
AVG_CHAR_WIDTH_EMS = 0.5
MAX_HEADING_CHARS = 150
MAX_SHORT_LINE_CHARS = 80
SHORT_LINE_FRACTION = 0.2
_SENTENCE_END = (".", "!", "?", "\u061f", ":", "\u061b")

_END_PUNCT = tuple(".,;:!?،؛؟")
_PAGE_NUMBER = re.compile(
    r"^\s*(?:page|صفحه)?\s*[\d\u06f0-\u06f9]+(?:\s*(?:of|/|از)\s*[\d\u06f0-\u06f9]+)?\s*$", re.IGNORECASE
)
_EN_CHAPTER = re.compile(r"^(?:chapter|part)\s+[\w.]+", re.IGNORECASE)
_EN_SECTION = re.compile(r"^section\s+[\d.]+", re.IGNORECASE)
_EN_ARTICLE = re.compile(r"^article\s+[\w.]+", re.IGNORECASE)
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)+)\.?\s+\S")
_FA_CHAPTER = re.compile(r"^(?:فصل|بخش)\s+\S+")
_FA_SECTION = re.compile(r"^(?:مبحث|گفتار)\s+\S+")
_FA_ARTICLE = re.compile(r"^ماده\s+[\d\u06f0-\u06f9]+")


# Latin ligatures (U+FB00-U+FB06) that PDF text extraction returns for "fi", "fl", ...
_LATIN_LIGATURES = {cp: unicodedata.normalize("NFKC", chr(cp)) for cp in range(0xFB00, 0xFB07)}


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
    x0: float = 0.0  # left edge
    x1: float = 0.0  # estimated right edge


def _est_width(frag: Fragment) -> float:
    return AVG_CHAR_WIDTH_EMS * frag.size * len(frag.text.strip())


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
    logger.setLevel(logging.CRITICAL)  # pypdf reports repairs of damaged files as errors: not ours to print
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
            if type(exc).__name__ == "DependencyError":
                raise DocumentProcessingError(
                    str(path),
                    f"encrypted PDF: decrypting it needs the 'cryptography' package ({exc}); pip install cryptography",
                ) from None
            raise DocumentProcessingError(
                str(path),
                f"encrypted PDF: cannot decrypt it ({type(exc).__name__}: {exc}); remove the encryption first",
            ) from None
        if not result:
            raise DocumentProcessingError(str(path), "encrypted PDF: a password is required to open it")
    try:
        pages = len(reader.pages)
    except Exception as exc:
        raise DocumentProcessingError(
            str(path), f"corrupt PDF: cannot read its pages ({type(exc).__name__}: {exc})"
        ) from None
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
        text = text.translate(_LATIN_LIGATURES)
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
                est_end = last.x + _est_width(last)
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
        x0 = min(f.x for f in group)
        x1 = max(f.x + _est_width(f) for f in group)
        lines.append(Line(page_no, y, size, bold, text, cells, rtl, gap, None, x0, x1))
    return lines


_PUNCT_ONLY = re.compile(r"^[.!?\u061f:;\u061b\u060c,]+$")
_ENUM_TOKEN = re.compile(r"^[\d\u06f0-\u06f9\u0660-\u0669]{1,3}\s*[\-\u2013.)]$")


def fix_rtl_edges(tokens: list[str]) -> list[str]:
    """Undo two effects of a left-to-right paragraph direction on a Persian line: sentence
    punctuation printed at the far right comes first when the line is read right to left, and an
    enumerator ("1-") printed at the far left comes last. Both are moved back."""
    tokens = list(tokens)
    moved = 0
    while len(tokens) > 1 and _PUNCT_ONLY.match(tokens[0]) and moved < 3:
        tokens.append(tokens.pop(0))
        moved += 1
    if len(tokens) > 1 and _ENUM_TOKEN.match(tokens[-1]):
        tokens.insert(0, tokens.pop())
    return tokens


def _merge_cell(frags: list[Fragment], rtl: bool) -> Fragment:
    """One cell from fragments listed left to right; on a right-to-left line they are
    read right to left, except runs of left-to-right fragments (see order_rtl_tokens)."""
    texts = [clean_inline(f.text) for f in frags]
    texts = [t for t in texts if t]
    if rtl:
        texts = fix_rtl_edges(order_rtl_tokens(texts))
    first = frags[0]
    return Fragment(
        first.x,
        first.y,
        max(f.size for f in frags),
        all(f.bold for f in frags),
        _join_tokens(texts),
    )


def _join_tokens(texts: list[str]) -> str:
    """Tokens joined with spaces, except that sentence punctuation sticks to the word before it."""
    out = ""
    for text in texts:
        if out and not _PUNCT_ONLY.match(text):
            out += " "
        out += text
    return out


def _norm_key(text: str) -> str:
    """Comparison key for outline titles and lines: normalised, no spaces or ZWNJ, case-folded."""
    return "".join(normalize_persian(text).replace(ZWNJ, " ").split()).casefold()


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
            if at_edge and (
                _norm_key(line.text) in repeated or (_PAGE_NUMBER.match(line.text) and (j == 0 or j == len(lines) - 1))
            ):
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
        {
            _round_size(line.size)
            for line in lines
            if line.size >= body * HEADING_SIZE_RATIO and len(line.text) <= MAX_HEADING_CHARS
        },
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
    for prev, line in zip(lines, lines[1:], strict=False):
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


@dataclass
class PageImage:
    page: int
    blob: bytes | None
    name: str


def _text_frame(lines: list[Line]) -> tuple[float, float] | None:
    """Left and right edge of the text of the document (from lines of some length); pages of
    one document share their margins, so a page with only short lines is judged correctly."""
    long_lines = [line for line in lines if len(line.text) >= 20]
    if not long_lines:
        return None
    return min(line.x0 for line in long_lines), max(line.x1 for line in long_lines)


def _ends_paragraph(prev: Line, frame: tuple[float, float] | None) -> bool:
    """A line that stops well short of the text frame and ends a sentence ends its paragraph."""
    if not prev.text.endswith(_SENTENCE_END) or frame is None:
        return False
    left, right = frame
    width = right - left
    if width <= 0:
        return False
    return prev.x1 < right - SHORT_LINE_FRACTION * width or prev.x0 > left + SHORT_LINE_FRACTION * width


def _starts_item(text: str) -> bool:
    return bool(QUESTION_MARK.match(text) or ANSWER_MARK.match(text) or ENUMERATOR.match(text))


def _join_lines(parts: list[str]) -> str:
    """Lines of one paragraph joined with spaces; a word hyphenated at a line end is rejoined
    (the hyphen is kept: "fixed-" + "size" -> "fixed-size")."""
    out = ""
    for part in parts:
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and part[:1].islower():
            out += part
        else:
            out = f"{out} {part}" if out else part
    return out


def _continues_table(line: Line, column_starts: list[float]) -> bool:
    """A one-cell line inside a table run: its cell sits under a column other than the first
    (a row whose other cells are empty, or a merged cell printed once)."""
    if len(line.cells) != 1 or len(column_starts) < 2:
        return False
    tol = line.size
    x = line.cells[0].x
    first = column_starts[0]
    return any(abs(x - s) <= tol for s in column_starts if abs(s - first) > tol)


def build_events(
    lines: list[Line], spacing: dict[float, float], images: list[PageImage] | None = None
) -> list[Heading | Para | TableRows | Image]:
    """Lines -> headings, paragraphs (joined lines), flattened tables and images, in order."""
    events: list[Heading | Para | TableRows | Image] = []
    pending = list(images or [])
    frame = _text_frame(lines)
    para: list[str] = []
    i = 0

    def emit_images(before_page: int | None) -> None:
        while pending and (before_page is None or pending[0].page < before_page):
            img = pending.pop(0)
            events.append(Image(img.blob, img.name))

    def flush(next_page: int | None) -> None:
        if para:
            events.append(Para(_join_lines(para)))
            para.clear()
        emit_images(next_page)

    while i < len(lines):
        line = lines[i]
        if line.heading_level is not None:
            flush(line.page)
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
            starts: list[float] = []
            while j < len(lines) and lines[j].heading_level is None and lines[j].page == line.page:
                candidate = lines[j]
                if len(candidate.cells) < 2 and not (j > i and _continues_table(candidate, starts)):
                    break
                for cell in candidate.cells:
                    if not any(abs(cell.x - s) <= candidate.size for s in starts):
                        starts.append(cell.x)
                starts.sort()
                j += 1
            if j - i >= 2:
                flush(line.page)
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
            if prev.page != line.page:
                # across a page break: a finished sentence ends the paragraph
                new_para = prev.text.endswith(_SENTENCE_END) or _starts_item(line.text)
            else:
                new_para = (
                    abs(prev.size - line.size) > 0.5
                    or prev.bold != line.bold
                    or line.gap_before > PARAGRAPH_GAP_RATIO * _spacing_for(spacing, line)
                    or _starts_item(line.text)
                    or _ends_paragraph(prev, frame)
                )
            if new_para:
                flush(line.page)
        para.append(line.text)
        i += 1
    flush(None)
    return events


def page_images(page: Any, page_no: int, want_bytes: bool, seen: set[Any]) -> list[PageImage]:
    """Images of a page's resources not seen on an earlier page (bytes only when captioning).

    Resources can be shared between pages, so images are told apart by their object
    number (or, when captioning, by their bytes) and each is reported once.
    """
    found: list[PageImage] = []
    if want_bytes:
        try:
            for img in page.images:
                key = hashlib.sha1(img.data).hexdigest()
                if key not in seen:
                    seen.add(key)
                    found.append(PageImage(page_no, img.data, f"page {page_no} {img.name}"))
            return found
        except Exception:
            found = []
    try:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is None:
            return found
        xobjects = xobjects.get_object()
        for name in xobjects:
            raw = xobjects.raw_get(name)
            obj = xobjects[name].get_object()
            if obj.get("/Subtype") != "/Image":
                continue
            obj_key: tuple[Any, ...] = (
                ("obj", getattr(raw, "idnum", None), getattr(raw, "generation", None))
                if hasattr(raw, "idnum")
                else ("page", page_no, name)
            )
            if obj_key not in seen:
                seen.add(obj_key)
                found.append(PageImage(page_no, None, f"page {page_no} {name}"))
    except Exception:
        return found
    return found


def parse_pdf(path: Path, options: ParseOptions) -> ParsedDocument:
    """Parse a PDF (see module docstring)."""
    warnings: list[str] = []
    with _quiet_pypdf():
        reader = open_pdf(path)
        pages: list[list[Line]] = []
        per_page_chars: list[int] = []
        images: list[PageImage] = []
        seen_images: set[Any] = set()
        failed_pages = 0
        for number, page in enumerate(reader.pages, start=1):
            try:
                frags = page_fragments(page)
            except Exception as exc:
                failed_pages += 1
                warnings.append(f"page {number}: text extraction failed ({type(exc).__name__})")
                frags = []
            images.extend(page_images(page, number, options.caption_source is not None, seen_images))
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
    events = build_events(lines, spacing, images)
    builder = MarkdownBuilder(options.persian_digits)
    reporter = ImageReporter(options)
    emit_events(list(events), builder, reporter)
    warnings.extend(reporter.warnings())
    stats = builder.stats()
    stats.update(reporter.stats())
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
