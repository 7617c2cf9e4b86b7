"""PDF with a text layer: markdown + DocumentTree.

Steps:

0. **Limits.** pypdf's safety limits (elements of one array, entries of one
   dictionary, tokens of one content stream, bytes of one stream) are scaled to
   the memory the parse may use (:func:`pypdf_limits`), so big tagged PDFs parse
   and the memory limit is the guard; a limit still reached is reported as that
   limit, with how to raise it, never as a corrupt file.
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
   (environment-facts "Persian text"). Lines repeated at the same place on most
   pages (running headers/footers, their page numbers masked) and bare page
   numbers at the top or bottom of a page are dropped (``_drop_running_lines``).
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
   (text fragments separated by wide gaps; a currency sign printed apart joins
   the value after it) are a table; a one-cell line whose cell sits under a
   later column continues it (a merged cell printed once), and so does one at
   the first column followed by a row (a section row, "Operating expenses:");
   one-cell lines right above it over its value columns are period headers.
   Cells are assigned to the columns of the fullest rows by position, a cell
   reaching over several columns covering them all (:func:`table_runs`,
   ``_table_grid``), and each row becomes one line - a ``table_row`` unit with
   its column headers, section and the table's title
   (:mod:`chunkbench_core.parsing.tables`, "rows that keep their meaning").
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

import bisect
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
from chunkbench_core.parsing.heuristics import ParserHeuristics, PDFHeuristics, QAHeuristics, compiled
from chunkbench_core.parsing.images import ImageReporter
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.parsing.options import DEFAULT_MEMORY_BYTES, ParseOptions
from chunkbench_core.parsing.pages import locate_page_starts
from chunkbench_core.parsing.persian import ZWNJ, is_rtl_text, normalize_persian, order_rtl_tokens
from chunkbench_core.parsing.qa import starts_item
from chunkbench_core.parsing.tables import CURRENCY_SIGNS, GridCell, flatten_table

PARAGRAPH_GAP_RATIO = 1.45
AVG_CHAR_WIDTH_EMS = 0.5
SHORT_LINE_FRACTION = 0.2
EDGE_LINES = 3  # lines at the top and at the bottom of a page that may be running headers/footers

_SENTENCE_END = (".", "!", "?", "\u061f", ":", "\u061b")

_END_PUNCT = tuple(".,;:!?،؛؟")
_PAGE_NUMBER = re.compile(
    r"^\s*(?:page|صفحه)?\s*[\d\u06f0-\u06f9]+(?:\s*(?:of|/|از)\s*[\d\u06f0-\u06f9]+)?\s*$", re.IGNORECASE
)


# Latin ligatures (U+FB00-U+FB06) that PDF text extraction returns for "fi", "fl", ...
_LATIN_LIGATURES = {cp: unicodedata.normalize("NFKC", chr(cp)) for cp in range(0xFB00, 0xFB07)}


@dataclass
class Fragment:
    x: float
    y: float
    size: float
    bold: bool
    text: str
    x1: float = 0.0  # estimated right edge (0: not yet estimated)

    @property
    def right(self) -> float:
        return self.x1 or self.x + _est_width(self)


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
    heading_rule: str = ""  # which rule made the line a heading (for --explain)


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


# -- the PDF reader's safety limits, scaled to the parse memory limit --------------------------------
#: Memory one element of a PDF array takes once pypdf has read it: about 110 bytes for an object
#: reference and 66 for a number (measured with tracemalloc on arrays of 500,000 elements), rounded up.
ELEMENT_BYTES = 128
#: One array, dictionary or content stream may use up to this share of the parse memory limit.
MEMORY_SHARE = 4

#: pypdf setting -> (what it counts, the share of the element budget it gets: 1 = all of it)
_ELEMENT_LIMITS: dict[str, tuple[str, float]] = {
    "array_maximum_element_count": ("elements in one array", 1.0),
    "dictionary_maximum_element_count": ("entries in one dictionary", 0.5),
    "stream_parsing_work_maximum_count": ("tokens in one content stream", 1.0),
    "page_tree_maximum_page_entries": ("page dictionary entries in the page tree", 1.0),
    "page_tree_maximum_entries": ("entries in the page tree", 0.25),
    "outline_maximum_entries": ("outline entries", 0.25),
    "named_destinations_maximum_entries": ("named destinations", 0.25),
    "form_fields_maximum_entries": ("form fields", 0.25),
    "xmp_maximum_element_count": ("elements in the XMP metadata", 0.25),
}
#: pypdf settings in bytes: one decompressed stream may use the same share of the memory limit
_BYTE_LIMITS: dict[str, str] = {
    "maximum_declared_stream_length": "bytes declared for one stream",
    "array_based_stream_maximum_output_length": "bytes in one stream made of an array of streams",
    "zlib_maximum_output_length": "bytes in one decompressed (Flate) stream",
    "lzw_maximum_output_length": "bytes in one decompressed (LZW) stream",
    "run_length_maximum_output_length": "bytes in one decompressed (run-length) stream",
    "brotli_maximum_output_length": "bytes in one decompressed (Brotli) stream",
}
#: words of pypdf's error messages -> the setting whose limit was reached
_LIMIT_MESSAGES: tuple[tuple[str, str], ...] = (
    ("array element count", "array_maximum_element_count"),
    ("dictionary entries", "dictionary_maximum_element_count"),
    ("number of tokens", "stream_parsing_work_maximum_count"),
    ("page tree page entry", "page_tree_maximum_page_entries"),
    ("page tree entry", "page_tree_maximum_entries"),
    ("outline entry", "outline_maximum_entries"),
    ("named destination entry", "named_destinations_maximum_entries"),
    ("number of fields", "form_fields_maximum_entries"),
    ("xmp metadata exceeds", "xmp_maximum_element_count"),
    ("declared size", "maximum_declared_stream_length"),
    ("decompressing", "zlib_maximum_output_length"),
)


def parse_memory_bytes(options: ParseOptions) -> int:
    """The memory one parse may use: ``options.memory_limit_bytes`` (the parse worker sets it to its limit), else
    the worker's default limit."""
    if options.memory_limit_bytes is not None:
        return options.memory_limit_bytes
    return DEFAULT_MEMORY_BYTES


def pypdf_limits(memory_bytes: int) -> dict[str, int]:
    """pypdf's element and size limits for a parse allowed ``memory_bytes`` of memory.

    pypdf refuses arrays over 100,000 elements by default, which tagged PDFs (a structure tree's /K
    array, a page's /Annots) exceed. Here one array, dictionary or stream may use up to a quarter of the
    parse memory (``MEMORY_SHARE``) at ``ELEMENT_BYTES`` per element, so the memory limit is the guard:
    2,048 MB allows arrays of 4.2 million elements and streams of 512 MB; never below pypdf's defaults.
    """
    from pypdf import Configuration

    defaults = Configuration()
    budget = memory_bytes // MEMORY_SHARE
    elements = budget // ELEMENT_BYTES
    limits = {name: max(getattr(defaults, name), int(elements * share)) for name, (_, share) in _ELEMENT_LIMITS.items()}
    limits.update({name: max(getattr(defaults, name), budget) for name in _BYTE_LIMITS})
    return limits


def limit_error(path: Path, exc: BaseException, memory_bytes: int) -> DocumentProcessingError | None:
    """A clear error for a pypdf limit reached (which limit, how to raise it), or None if ``exc`` is none."""
    if type(exc).__name__ != "LimitReachedError":
        return None
    message = str(exc)
    lowered = message.lower()
    if "cycle" in lowered or "loop" in lowered or "cyclic" in lowered:
        return DocumentProcessingError(str(path), f"corrupt PDF: {message}")
    setting = next((name for words, name in _LIMIT_MESSAGES if words in lowered), None)
    how = (
        f"raise the parse memory limit (CHUNKBENCH_PARSE_MEMORY_MB, now {memory_bytes / (1024 * 1024):,.0f} MB; "
        "the PDF reader's limits grow with it) to parse it"
    )
    if setting is None:
        return DocumentProcessingError(
            str(path), f"the PDF is larger than a safety limit of the PDF reader ({message}); {how}"
        )
    value = pypdf_limits(memory_bytes)[setting]
    what = _ELEMENT_LIMITS[setting][0] if setting in _ELEMENT_LIMITS else _BYTE_LIMITS[setting]
    return DocumentProcessingError(
        str(path), f"the PDF is larger than the PDF reader's limit of {value:,} {what} ({setting}); {how}"
    )


def open_pdf(path: Path, memory_bytes: int | None = None) -> Any:
    """Open with pypdf; encrypted, unreadable and page-less PDFs raise DocumentProcessingError.

    A pypdf limit reached (see :func:`pypdf_limits`) is reported as such, with how to raise it."""
    from pypdf import PdfReader

    memory = memory_bytes if memory_bytes is not None else parse_memory_bytes(ParseOptions())

    def unreadable(exc: Exception, what: str = "corrupt or unreadable PDF") -> DocumentProcessingError:
        return limit_error(path, exc, memory) or DocumentProcessingError(
            str(path), f"{what} ({type(exc).__name__}: {exc})"
        )

    try:
        reader = PdfReader(str(path), strict=False)
    except Exception as exc:
        raise unreadable(exc) from None
    try:
        encrypted = reader.is_encrypted
    except Exception as exc:
        raise unreadable(exc) from None
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
        raise unreadable(exc, "corrupt PDF: cannot read its pages") from None
    if pages == 0:
        raise DocumentProcessingError(str(path), "PDF has no pages (0-page PDF)")
    return reader


def _font_metrics(font_dict: Any) -> Any:
    """pypdf's metrics of a font resource (glyph widths), or None when they cannot be read."""
    try:
        from pypdf.generic._font import Font

        return Font.from_font_resource(font_dict)
    except Exception:  # another pypdf, or a font without usable widths: widths are estimated
        return None


def page_fragments(page: Any) -> list[Fragment]:
    """Text fragments of one page with position, effective font size, boldness and right edge.

    The right edge comes from the font's glyph widths when pypdf can read them, else it is estimated
    from the number of characters (``AVG_CHAR_WIDTH_EMS``)."""
    frags: list[Fragment] = []
    metrics: dict[int, Any] = {}

    def width(font_dict: Any, text: str, size: float) -> float:
        if font_dict is None:
            return 0.0
        key = id(font_dict)
        if key not in metrics:
            metrics[key] = _font_metrics(font_dict)
        font = metrics[key]
        try:
            return float(font.get_text_width(text.strip())) / 1000.0 * size if font is not None else 0.0
        except Exception:
            return 0.0

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
                measured = width(font_dict, piece, size)
                frags.append(
                    Fragment(
                        m[4],
                        m[5],
                        size,
                        bold,
                        piece.translate(_LATIN_LIGATURES),
                        m[4] + measured if measured > 0 else 0.0,
                    )
                )

    page.extract_text(visitor_text=visitor)
    return frags


def _line_text(cells: list[Fragment], rtl: bool, rtl_order: str) -> str:
    texts = [clean_inline(c.text) for c in cells]
    texts = [t for t in texts if t]
    if rtl and rtl_order == "visual":
        words = " ".join(texts).split()
        return " ".join(order_rtl_tokens(words))
    return " ".join(texts)


def _is_sign(text: str) -> bool:
    return text.strip() in CURRENCY_SIGNS


#: a whole figure ("(9,380)", "$1,209", "12.5%", "—"): two of them side by side are two columns however close,
#: as in a cash-flow statement's four narrow columns
_WHOLE_VALUE = re.compile(r"^(?:[(\-\u2212]?[$€£¥]?\d[\d,]*(?:\.\d+)?\)?%?|[\u2014\u2013-])$")


def _starts_value(text: str) -> bool:
    t = text.strip()
    return bool(t) and (t[0].isdigit() or t[0] in "(-\u2212.")


def group_lines(frags: list[Fragment], page_no: int, options: ParseOptions) -> list[Line]:
    """Fragments in stream order -> lines (same baseline), with cells split at wide gaps.

    A gap wider than ``[pdf] cell_gap_ems`` font sizes starts a new cell, and so does a figure right after
    another figure (two narrow columns of numbers, however close). A currency sign printed
    apart ("$" at the left of its column, the number right-aligned) always starts a cell and takes
    the value after it, however wide the gap, so it never joins the number before it nor becomes
    a column of its own.
    """
    gap_ems = options.heuristics.pdf.cell_gap_ems
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
        # merge fragments into cells
        groups: list[list[Fragment]] = []
        for frag in ordered:
            if groups and options.pdf_rtl_order != "logical":
                cell = groups[-1]
                last = cell[-1]
                if len(cell) == 1 and _is_sign(last.text) and _starts_value(frag.text):
                    cell.append(frag)  # "$" + its value
                    continue
                if (
                    not _is_sign(frag.text)
                    and frag.x - last.right <= gap_ems * max(last.size, frag.size)
                    and not (_WHOLE_VALUE.match(last.text.strip()) and _WHOLE_VALUE.match(frag.text.strip()))
                ):
                    cell.append(frag)
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
        x1 = max(f.right for f in group)
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
    read right to left, except runs of left-to-right fragments (see order_rtl_tokens).
    A currency sign and its value are written together ("$82,959")."""
    texts = [clean_inline(f.text) for f in frags]
    texts = [t for t in texts if t]
    if rtl:
        texts = fix_rtl_edges(order_rtl_tokens(texts))
    first = frags[0]
    text = _join_tokens(texts)
    if len(texts) >= 2 and _is_sign(texts[0]) and _starts_value(texts[1]):
        text = texts[0] + _join_tokens(texts[1:])
    return Fragment(
        first.x,
        first.y,
        max(f.size for f in frags),
        all(f.bold for f in frags),
        text,
        max(f.right for f in frags),
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


_NUM = r"[\d\u0660-\u0669\u06f0-\u06f9]+"
_PAGE_REF = rf"(?:(?:page|p\.|صفحه)\s*)?{_NUM}(?:\s*(?:of|/|از)\s*{_NUM})?"
_PAGE_CELL = re.compile(rf"^\s*[-\u2013]?\s*{_PAGE_REF}\s*[-\u2013]?\s*$", re.IGNORECASE)
_TRAILING_PAGE = re.compile(
    rf"(?:\s*[|\-\u2013]\s*{_PAGE_REF}|\s+(?:page|p\.|صفحه)\s*{_NUM}(?:\s*(?:of|/|از)\s*{_NUM})?"
    rf"|\s+{_NUM}\s*(?:of|/|از)\s*{_NUM})\s*$",
    re.IGNORECASE,
)


def _running_key(line: Line) -> tuple[str, int, int]:
    """A line's text with its page number masked, its height on the page and its size.

    The page number is a first or last cell that is only a page number ("7", "Page 2 of 9", "- 3 -"),
    or a page number closing the line after a separator or the word "page" ("Report | 7", "... Page 2"),
    so "Page 2 of 9" matches "Page 3 of 9" while body text mentioning a page does not.
    """
    cells = [clean_inline(c.text) for c in line.cells] or [line.text]
    if len(cells) > 1:
        for k in (0, -1):
            if _PAGE_CELL.match(cells[k]):
                cells[k] = "#"
    text = _TRAILING_PAGE.sub(" #", " ".join(cells))
    return _norm_key(text), round(line.y / 3), round(line.size)


def _drop_running_lines(pages: list[list[Line]], share: float = 0.5) -> int:
    """Remove running headers/footers and page numbers; returns how many lines were dropped.

    A running line is one of the first or last ``EDGE_LINES`` lines of a page whose text (a page number
    at its start or end masked, so "Page 2 of 9" matches "Page 3 of 9"), height and size repeat on more
    than ``share`` of the pages (on every page of a document of up to three pages). A bare page number at the very top
    or bottom of a page is dropped too.
    """
    dropped = 0
    n = len(pages)
    repeated: set[tuple[str, int, int]] = set()
    if n >= 2:
        counts: Counter[tuple[str, int, int]] = Counter()
        for lines in pages:
            counts.update({_running_key(line) for line in _edge_lines(lines)})
        need = n if n <= 3 else max(3, math.floor(n * share) + 1)
        repeated = {k for k, c in counts.items() if c >= need}
    for i, lines in enumerate(pages):
        keep: list[Line] = []
        for j, line in enumerate(lines):
            at_edge = j < EDGE_LINES or j >= len(lines) - EDGE_LINES
            if at_edge and (
                _running_key(line) in repeated or (_PAGE_NUMBER.match(line.text) and (j == 0 or j == len(lines) - 1))
            ):
                dropped += 1
                continue
            keep.append(line)
        pages[i] = keep
    return dropped


def _edge_lines(lines: list[Line]) -> list[Line]:
    if len(lines) <= 2 * EDGE_LINES:
        return lines
    return lines[:EDGE_LINES] + lines[-EDGE_LINES:]


def text_layer_gate(path: Path, per_page_chars: list[int], options: ParseOptions) -> None:
    """Step 1: reject scanned PDFs (no text layer to index)."""
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


def _heuristic_kind(text: str, pdf: PDFHeuristics) -> tuple[int, bool, str] | None:
    """(relative level, is_article, rule) for text-pattern headings, else None."""
    for level, article, group in (
        (1, False, "chapter_patterns"),
        (2, True, "article_patterns"),
        (2, False, "section_patterns"),
    ):
        for pattern in getattr(pdf, group):
            if compiled(pattern).match(text):
                return level, article, f"text pattern {pattern!r} ([pdf] {group})"
    m = compiled(pdf.numbered_heading_pattern).match(text)
    if m:
        return (
            min(m.group(1).count(".") + 1, 4),
            False,
            f"numbered heading {m.group(1)!r} ([pdf] numbered_heading_pattern)",
        )
    return None


def _round_size(size: float) -> float:
    return round(size * 2) / 2


def assign_headings(
    lines: list[Line], titles: dict[str, int], spacing: dict[float, float], pdf: PDFHeuristics | None = None
) -> None:
    """Step 2: outline first, then font size/weight and text heuristics (``pdf`` settings)."""
    pdf = pdf or PDFHeuristics()
    if titles:
        matched = False
        for line in lines:
            level = titles.get(_norm_key(line.text))
            if level is not None:
                line.heading_level = level
                line.heading_rule = "a title of the PDF outline (bookmarks)"
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
            if line.size >= body * pdf.heading_size_ratio and len(line.text) <= pdf.max_heading_chars
        },
        reverse=True,
    )[:5]
    font_levels = {size: i + 1 for i, size in enumerate(big_sizes)}
    below = len(big_sizes)
    for i, line in enumerate(lines):
        size = _round_size(line.size)
        if size in font_levels and len(line.text) <= pdf.max_heading_chars and len(line.cells) == 1:
            line.heading_level = font_levels[size]
            line.heading_rule = (
                f"font size {size:g} pt, {size / body:.2f} times the body text's {body:g} pt "
                f"([pdf] heading_size_ratio {pdf.heading_size_ratio:g})"
            )
            continue
        if len(line.text) > pdf.max_short_line_chars or len(line.cells) != 1 or line.text.endswith(_END_PUNCT):
            continue
        if not _standalone(lines, i, spacing):
            continue
        kind = _heuristic_kind(line.text, pdf)
        if kind is not None:
            line.heading_level = min(6, below + kind[0])
            line.heading_rule = kind[2]
        elif pdf.bold_headings and line.bold and size <= body:
            line.heading_level = min(6, below + 1)
            line.heading_rule = "a short, fully bold line of body size standing alone ([pdf] bold_headings)"


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


def _table_grid(block: list[Line]) -> list[list[GridCell]]:
    """Assign the cells of a run of tabular lines to columns.

    The columns are those of the fullest rows: the largest cell count that two or more rows share
    (else the largest), each column spanning from its leftmost cell start to its rightmost cell end
    in those rows. Every cell then goes to the column whose part of the line holds it (the border
    between two columns is halfway across the gap between them); a cell reaching into the next
    columns, like a period header centred over two columns, covers them all as one merged cell.
    Two cells falling in one column are joined with a space.
    """
    rtl = sum(1 for line in block if line.rtl) > len(block) / 2
    counts = Counter(len(line.cells) for line in block)
    shared = [c for c, n in counts.items() if n >= 2 and c >= 2]
    width = max(shared) if shared else max(counts)
    model = [sorted(line.cells, key=lambda c: c.x) for line in block if len(line.cells) == width]
    extents = [(min(row[k].x for row in model), max(row[k].right for row in model)) for k in range(width)]
    borders: list[float] = []
    for k in range(width - 1):
        left_end, right_start = extents[k][1], extents[k + 1][0]
        border = (
            (left_end + right_start) / 2 if right_start > left_end else (sum(extents[k]) + sum(extents[k + 1])) / 4
        )  # overlapping estimates: between the centres
        borders.append(max(border, borders[-1]) if borders else border)

    def column(x: float) -> int:
        k = bisect.bisect_left(borders, x)
        return width - 1 - k if rtl else k

    rows: list[list[GridCell]] = []
    for r, line in enumerate(block):
        row = [GridCell("", ("pdf", r, c)) for c in range(width)]
        for cell in line.cells:
            text = clean_inline(cell.text)
            span = cell.right - cell.x
            # the estimated right edge may overshoot: a cell reaches into a column only by a clear margin
            first = column(cell.x + min(0.25 * span, cell.size))
            last = column(cell.right - min(0.25 * span, 2 * cell.size))
            lo, hi = min(first, last), max(first, last)
            if hi > lo:
                key: tuple[Any, ...] = ("pdf", r, "span", lo)
                for c in range(lo, hi + 1):
                    row[c] = GridCell(text, key)
                continue
            if row[lo].text:
                text = row[lo].text + " " + text
            row[lo] = GridCell(text, ("pdf", r, lo))
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


def _is_row(line: Line, page: int) -> bool:
    return line.heading_level is None and line.page == page and len(line.cells) >= 2


def _section_line(lines: list[Line], j: int, column_starts: list[float]) -> bool:
    """A one-cell line at (or left of) the first column ("Operating expenses:") with a table row right
    after it, both at row spacing."""
    line = lines[j]
    if len(line.cells) != 1 or line.rtl or not column_starts or line.heading_level is not None:
        return False
    if line.cells[0].x > column_starts[0] + 1.5 * line.size:
        return False
    if j + 1 >= len(lines) or not _is_row(lines[j + 1], line.page):
        return False
    return max(line.gap_before, lines[j + 1].gap_before) <= 2.2 * max(line.size, lines[j + 1].size)


def _value_area(run: list[Line]) -> tuple[float, float, float] | None:
    """(right edge of the row labels, left and right edge of the values) of a table run."""
    rows = [line for line in run if len(line.cells) >= 2]
    if not rows:
        return None
    first = min(line.cells[0].x for line in rows)
    labels = [line.cells[0].right for line in rows if abs(line.cells[0].x - first) <= line.size]
    values = [cell for line in rows for cell in line.cells[1:]]
    if not labels or not values:
        return None
    return max(labels), min(c.x for c in values), max(c.right for c in values)


def _header_line(line: Line, page: int, area: tuple[float, float, float] | None) -> bool:
    """A one-cell line over the value columns (a period header centred over the columns below), not a
    caption centred on the page: right of the row labels, centred over the values."""
    if len(line.cells) != 1 or line.page != page or line.rtl or area is None:
        return False
    label_right, value_left, value_right = area
    cell = line.cells[0]
    centre = (cell.x + cell.right) / 2
    return (
        cell.x > label_right
        and value_left - line.size <= centre <= value_right
        and cell.right <= value_right + 2 * line.size
    )


def table_runs(lines: list[Line]) -> dict[int, int]:
    """Start -> end (exclusive) of the runs of lines that are tables.

    Two or more consecutive lines of several cells on one page are a table; inside it, a one-cell
    line under a later column (a merged cell printed once) or at the first column with a row right
    after it (a section row) continues it; up to two one-cell lines right above it that sit over its
    value columns (a period header over two columns) belong to it.
    """
    runs: dict[int, int] = {}
    i = 0
    last_end = 0
    while i < len(lines):
        line = lines[i]
        if not _is_row(line, line.page):
            i += 1
            continue
        j = i
        starts: list[float] = []
        while j < len(lines) and lines[j].heading_level is None and lines[j].page == line.page:
            candidate = lines[j]
            if len(candidate.cells) < 2 and not (
                j > i and (_continues_table(candidate, starts) or _section_line(lines, j, starts))
            ):
                break
            for cell in candidate.cells:
                if not any(abs(cell.x - s) <= candidate.size for s in starts):
                    starts.append(cell.x)
            starts.sort()
            j += 1
        if j - i < 2:
            i += 1
            continue
        area = _value_area(lines[i:j])
        start = i
        # a section label right above the first row ("North America" over "Net sales"), with the period
        # header above it: the label is the table's first section, not a heading between header and rows
        label, above = (lines[i - 1], lines[i - 2]) if i - 2 >= last_end else (None, None)
        if (
            label is not None
            and above is not None
            and area is not None
            and len(label.cells) == 1
            and label.page == above.page == line.page
            and label.cells[0].right <= area[0] + line.size
            and (_header_line(above, line.page, area) or len(above.cells) >= 2 and _header_only([above]))
        ):
            start = i_header = i - 1
        else:
            i_header = i
        # two stacked period headers over two groups of columns ("Three Months Ended" / "March 31," beside
        # "Twelve Months Ended" / "March 31,") are four one-cell lines when their baselines differ a little
        while (
            start > last_end
            and i_header - start < HEADER_LINES_ABOVE
            and (
                _header_line(lines[start - 1], line.page, area)
                or start == i_header != i
                and len(lines[start - 1].cells) >= 2
                and lines[start - 1].page == line.page
                and _header_only(lines[start - 1 : start])
            )
            and lines[start].gap_before <= 2.5 * lines[start].size
        ):
            start -= 1
        for k in range(start, i):
            lines[k].heading_level = None
        runs[start] = j
        last_end = i = j
    return _join_continued_runs(lines, _join_header_runs(lines, runs))


_YEAR_CELL = re.compile(r"^(?:19|20)\d{2}$")
_VALUE_CELL = re.compile(r"^[(\-\u2212]?[$€£¥]?\s?[\d.]")
#: one-cell header lines a table run takes from right above it
HEADER_LINES_ABOVE = 4
#: one-cell lines ("ASSETS", "Current assets:") that may stand between a table's header row and its rows
LINES_UNDER_HEADER = 3


def _header_only(run: list[Line]) -> bool:
    """Lines of dates and labels without a value ("December 31, 2022 | March 31, 2023", "(unaudited)")."""
    return all(
        (not _VALUE_CELL.match(cell.text.strip()) or _YEAR_CELL.match(cell.text.strip())) and not _is_sign(cell.text)
        for line in run
        for cell in line.cells
    ) and all(len(line.cells) >= 2 or line.cells[0].x > run[0].cells[0].x - line.size for line in run)


def _row_width(run: list[Line]) -> int:
    """The cell count of the table's fullest rows (two or more rows sharing it), as the grid takes it."""
    counts = Counter(len(line.cells) for line in run)
    shared = [c for c, n in counts.items() if n >= 2 and c >= 2]
    return max(shared) if shared else max(counts)


def _join_continued_runs(lines: list[Line], runs: dict[int, int]) -> dict[int, int]:
    """Two runs on one page with the same columns, apart by at most ``LINES_UNDER_HEADER`` short one-cell lines
    (a balance sheet's "LIABILITIES AND STOCKHOLDERS' EQUITY" over "Current liabilities:"), are one table: the
    rows below keep the header and the title of the rows above."""
    out: dict[int, int] = {}
    current: int | None = None
    for start in sorted(runs):
        end = runs[start]
        if current is not None:
            previous_end = out[current]
            between = lines[previous_end:start]
            first, second = lines[current:previous_end], lines[start:end]
            area, next_area = _value_area(first), _value_area(second)
            if (
                len(between) <= LINES_UNDER_HEADER
                and all(len(line.cells) == 1 for line in between)
                and all(len(line.text) <= 80 for line in between)
                and lines[current].page == lines[end - 1].page
                and _row_width(first) == _row_width(second)
                and area is not None
                and next_area is not None
                and abs(area[2] - next_area[2]) <= 2 * lines[start].size
            ):
                for line in between:
                    line.heading_level = None
                out[current] = end
                continue
        out[start] = end
        current = start
    return out


def _join_header_runs(lines: list[Line], runs: dict[int, int]) -> dict[int, int]:
    """A run of header lines only (a balance sheet's dates) followed, on the same page and after at most
    ``LINES_UNDER_HEADER`` one-cell lines, by a table whose values sit under its cells is one table: the
    header row is the table's header, not a table of its own."""
    out: dict[int, int] = {}
    starts = sorted(runs)
    k = 0
    while k < len(starts):
        start, end = starts[k], runs[starts[k]]
        if k + 1 < len(starts) and end - start <= 2 and _header_only(lines[start:end]):
            following, following_end = starts[k + 1], runs[starts[k + 1]]
            between = lines[end:following]
            area = _value_area(lines[following:following_end])
            header_cells = [c for line in lines[start:end] for c in line.cells]
            if (
                len(between) <= LINES_UNDER_HEADER
                and all(len(line.cells) == 1 for line in between)
                and all(line.page == lines[start].page for line in lines[start:following_end])
                and area is not None
                and all(area[1] - 2 * c.size <= (c.x + c.right) / 2 <= area[2] + 2 * c.size for c in header_cells)
            ):
                for line in between:
                    line.heading_level = None
                out[start] = following_end
                k += 2
                continue
        out[start] = end
        k += 1
    return out


def _continues_previous(lines: list[Line], previous: tuple[int, int, list[str] | None], start: int, width: int) -> bool:
    """A table at the top of a page continues the one that ended the page before: the previous table
    was the last thing on its page, only up to three one-cell lines (a "(continued)" title) stand
    between, and both have the same columns."""
    end, previous_width, _ = previous
    if width != previous_width or end > start or end == 0:
        return False
    page = lines[start].page
    if lines[end - 1].page != page - 1:
        return False
    between = lines[end:start]
    return len(between) <= 3 and all(line.page == page and len(line.cells) == 1 for line in between)


def build_events(
    lines: list[Line],
    spacing: dict[float, float],
    images: list[PageImage] | None = None,
    heuristics: ParserHeuristics | None = None,
) -> list[Heading | Para | TableRows | Image]:
    """Lines -> headings, paragraphs (joined lines), flattened tables and images, in order."""
    heuristics = heuristics or ParserHeuristics()
    qa: QAHeuristics = heuristics.qa
    events: list[Heading | Para | TableRows | Image] = []
    pending = list(images or [])
    frame = _text_frame(lines)
    runs = table_runs(lines)
    previous: tuple[int, int, list[str] | None] | None = None  # the last table: end, width, header
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
        if i in runs:
            flush(line.page)
            grid = _table_grid(lines[i : runs[i]])
            width = len(grid[0]) if grid else 0
            continued = previous is not None and _continues_previous(lines, previous, i, width)
            flat = flatten_table(
                grid, heuristics.tables, context=True, inherited_header=previous[2] if continued and previous else None
            )
            events.append(TableRows(flat, continued=continued))
            previous = (runs[i], width, flat.header)
            i = runs[i]
            continue
        if line.heading_level is not None:
            flush(line.page)
            text = line.text
            # a heading wrapped over two lines of the same size and level
            while (
                i + 1 < len(lines)
                and i + 1 not in runs
                and lines[i + 1].heading_level == line.heading_level
                and lines[i + 1].page == line.page
                and abs(lines[i + 1].size - line.size) <= 0.5
                and lines[i + 1].gap_before <= PARAGRAPH_GAP_RATIO * max(line.size * 1.25, _spacing_for(spacing, line))
            ):
                i += 1
                text += " " + lines[i].text
            events.append(Heading(line.heading_level, text, line.heading_rule))
            i += 1
            continue
        if para:
            prev = lines[i - 1]
            if prev.page != line.page:
                # across a page break: a finished sentence ends the paragraph
                new_para = prev.text.endswith(_SENTENCE_END) or starts_item(line.text, qa)
            else:
                new_para = (
                    abs(prev.size - line.size) > 0.5
                    or prev.bold != line.bold
                    or line.gap_before > PARAGRAPH_GAP_RATIO * _spacing_for(spacing, line)
                    or starts_item(line.text, qa)
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
    """Parse a PDF (see module docstring), with pypdf's limits scaled to the parse memory limit."""
    from pypdf import apply_configuration

    memory = parse_memory_bytes(options)
    # the base configuration is named (None: pypdf's defaults) so that the limits only fill its overwrites
    with apply_configuration(None, **pypdf_limits(memory)):
        return _parse_pdf(path, options, memory)


def _parse_pdf(path: Path, options: ParseOptions, memory: int) -> ParsedDocument:
    warnings: list[str] = []
    with _quiet_pypdf():
        reader = open_pdf(path, memory)
        pages: list[list[Line]] = []
        per_page_chars: list[int] = []
        images: list[PageImage] = []
        seen_images: set[Any] = set()
        failed_pages = 0
        for number, page in enumerate(reader.pages, start=1):
            try:
                frags = page_fragments(page)
            except Exception as exc:
                limit = limit_error(path, exc, memory)
                if limit is not None:  # a missing page would be silent: say which limit and how to raise it
                    raise limit from None
                failed_pages += 1
                warnings.append(f"page {number}: text extraction failed ({type(exc).__name__})")
                frags = []
            images.extend(page_images(page, number, options.caption_source is not None, seen_images))
            per_page_chars.append(sum(len("".join(f.text.split())) for f in frags))
            pages.append(group_lines(frags, number, options))
        text_layer_gate(path, per_page_chars, options)
        titles = outline_titles(reader)
        metadata = pdf_metadata(reader)
    heuristics = options.heuristics
    dropped = _drop_running_lines(pages, heuristics.pdf.running_line_share)
    lines = [line for page_lines in pages for line in page_lines]
    for line in lines:
        line.text = normalize_persian(line.text, options.persian_digits)
    spacing = line_spacing(lines)
    assign_headings(lines, titles, spacing, heuristics.pdf)
    events = build_events(lines, spacing, images, heuristics)
    builder = MarkdownBuilder(options.persian_digits)
    reporter = ImageReporter(options)
    emit_events(list(events), builder, reporter, heuristics)
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
    markdown = builder.markdown
    return ParsedDocument(
        document=path.name,
        markdown=markdown,
        tree=builder.root,
        units=builder.units,
        parser="pdf",
        warnings=warnings,
        stats=stats,
        explain=builder.explain,
        page_starts=locate_page_starts(markdown, [_page_probes(page, options) for page in pages]),
        metadata=metadata,
    )


def pdf_metadata(reader: Any) -> dict[str, str]:
    """The document information dictionary's title, author, subject and keywords (those that are text)."""
    try:
        info = reader.metadata or {}
        items = {key: info.get(f"/{key.capitalize()}") for key in ("title", "author", "subject", "keywords")}
    except Exception:  # a damaged information dictionary: the header is told from the text instead
        return {}
    return {
        key: " ".join(str(value).split()) for key, value in items.items() if isinstance(value, str) and value.strip()
    }


def _page_probes(lines: list[Line], options: ParseOptions) -> list[str]:
    """Each line of a page as the markdown holds it: a table row by its first cell, other lines whole."""
    return [
        normalize_persian(clean_inline(line.cells[0].text), options.persian_digits)
        if len(line.cells) > 1
        else line.text
        for line in lines
    ]
