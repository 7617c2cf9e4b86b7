"""Table rows to ``table_row`` units: header detection, title/section rows, row rendering.

Shared by DOCX tables, XLSX sheets, CSV files and PDF tables, so one table reads the same whatever file
it came in:

* blank separator rows (no text in any cell) are skipped;
* title rows - one populated cell that is merged over two or more columns, or,
  above the header, the only populated cell of a multi-column row - are not
  table rows and never a header;
* the first remaining row is the header only when it is *provably* one
  (a data row taken for a header would be repeated into every row): at least two cells, every cell non-empty, all texts distinct, each
  short (``header_max_chars`` characters and ``header_max_words`` words, 60 and 6
  by default) and none a bare number/date/phone, and at least one data row
  follows. Otherwise every row is data;
* each data row is one unit on one line: ``Header: value | Header2: value2``
  with a header, ``value | value2`` without; empty cells are left out and a cell
  merged across columns is written once.

Columns that are empty in every row are dropped before any of this.

**Rows that keep their meaning** (``context=True``: Word and PDF tables, where
financial statements live) add to these rules:

* a header may span several rows: a first row whose first (row-label) column is
  empty and whose other cells are short header texts or years ("Three Months
  Ended" over "June 25," over "2022") starts a header band, and so does a
  provable header with a cell spanning columns; the rows below that also leave
  the first column empty and hold header texts or years belong to it. Each
  column's label is its band texts read top-down ("Three Months Ended June 25,
  2022");
* a cell holding only a currency sign (``$``, ``€``, ...) joins the value to its
  right, and a lone ``%`` or ``)`` the value to its left, so signs never shift
  the columns; ``$ 82,959`` is written ``$82,959``, a negative in parentheses
  stays with its number;
* below the header, a row with only its first cell filled that ends like a
  section label ("Operating expenses:"), or one cell merged over the whole row,
  is a section: its text goes in front of the label of the rows under it
  (``Operating expenses > Research and development | ...``) until the next
  section, a blank row, or a row whose label starts with a total prefix
  ("Total operating expenses") closes it;
* the table's title (its title rows, or the caption above the table that the
  Word and PDF parsers pass in) goes in front of every row, ``Title — row``:
  every chunker cuts tables at arbitrary rows, so a row that carries its own
  title and column headers can be understood, embedded and retrieved alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Hashable

from chunkbench_core.parsing.builder import clean_inline
from chunkbench_core.parsing.heuristics import TableHeuristics, compiled

ROW_SEPARATOR = " | "
LABEL_SEPARATOR = ": "
TITLE_SEPARATOR = " \u2014 "  # em dash: "Title — Row label | Header: value"
SECTION_SEPARATOR = " > "
#: words of a label standing alone in the first column that still make it a section (without a colon)
SECTION_MAX_WORDS = 8

_DEFAULT = TableHeuristics()
MAX_HEADER_CHARS = _DEFAULT.header_max_chars
MAX_HEADER_WORDS = _DEFAULT.header_max_words
_NUMBERISH = re.compile(r"^[\d\u0660-\u0669\u06f0-\u06f9\s.,:;/\\\-+()%\u066b\u066c#*$€£¥₹₩₽\u2212]+$")
CURRENCY_SIGNS = ("$", "US$", "C$", "A$", "€", "£", "¥", "₹", "₩", "₽", "CHF")
_CURRENCY_CELL = re.compile(r"^(?:US\$|C\$|A\$|CHF|[$€£¥₹₩₽])$")
_SIGN_SPACE = re.compile(r"^(US\$|C\$|A\$|[$€£¥₹₩₽])\s+(?=[(\-\d\u06f0-\u06f9])")
_PERCENT_SPACE = re.compile(r"(?<=[\d\u06f0-\u06f9)])\s+%")
_PAREN_SPACE = re.compile(r"^\(\s+|\s+\)$")
_VALUE = re.compile(r"^[(\-\u2212]?[\d\u06f0-\u06f9\u0660-\u0669]")


@dataclass(frozen=True)
class GridCell:
    """One grid position: its text and a key shared by all positions of one merged cell."""

    text: str
    key: Hashable


@dataclass
class TableItem:
    """A rendered piece of a table: ``kind`` is "row" (a table_row), "title" (a title row) or "section"
    (a section row); ``section`` is the section a row sits in."""

    kind: str
    text: str
    section: str | None = None


@dataclass
class FlatTable:
    header: list[str] | None
    items: list[TableItem] = field(default_factory=list)
    header_rows: int = 0  # rows of the header band
    header_rule: str = ""  # why the first row(s) are, or are not, the header (for --explain)

    @property
    def titles(self) -> list[str]:
        return [i.text for i in self.items if i.kind == "title"]

    @property
    def has_rows(self) -> bool:
        return any(i.kind == "row" for i in self.items)


def _distinct(row: list[GridCell]) -> list[GridCell]:
    out: list[GridCell] = []
    for i, cell in enumerate(row):
        if i and row[i - 1].key == cell.key:
            continue
        out.append(cell)
    return out


def is_blank_row(row: list[GridCell]) -> bool:
    return all(not c.text for c in row)


def _populated(row: list[GridCell]) -> list[GridCell]:
    seen: set[Hashable] = set()
    out: list[GridCell] = []
    for c in row:
        if c.text and c.key not in seen:
            seen.add(c.key)
            out.append(c)
    return out


def is_merged_title_row(row: list[GridCell]) -> bool:
    """One populated cell, and that cell covers two or more columns of the row."""
    populated = _populated(row)
    if len(populated) != 1:
        return False
    key = populated[0].key
    return sum(1 for c in row if c.key == key) >= 2


def _single_cell_row(row: list[GridCell], width: int) -> bool:
    return width >= 2 and len(_populated(row)) == 1


def header_verdict(row: list[GridCell], has_data_after: bool, tables: TableHeuristics = _DEFAULT) -> tuple[bool, str]:
    """(whether ``row`` is provably a header, the reason in words)."""
    if not has_data_after:
        return False, "no data row follows it"
    cells = _distinct(row)
    if len(cells) < 2:
        return False, "it has fewer than two cells"
    seen: set[str] = set()
    for cell in cells:
        text = cell.text
        if not text:
            return False, "it has an empty cell"
        if len(text) > tables.header_max_chars or len(text.split()) > tables.header_max_words:
            return False, (
                f"{text[:40]!r} is longer than a header ({tables.header_max_chars} characters, "
                f"{tables.header_max_words} words: [tables] header_max_chars, header_max_words)"
            )
        if _NUMBERISH.match(text):
            return False, f"{text!r} is a number"
        folded = text.casefold()
        if folded in seen:
            return False, f"{text!r} appears twice"
        seen.add(folded)
    return True, "every cell is short, distinct and not a number"


def is_header_row(row: list[GridCell], has_data_after: bool, tables: TableHeuristics = _DEFAULT) -> bool:
    """Row 0 is a header only when it provably is one (see module docstring)."""
    return header_verdict(row, has_data_after, tables)[0]


def _header_text(text: str, tables: TableHeuristics) -> bool:
    if len(text) > tables.header_max_chars or len(text.split()) > tables.header_max_words:
        return False
    return not _NUMBERISH.match(text) or bool(compiled(tables.header_year_pattern, 0).match(text))


def _stub_header(row: list[GridCell], tables: TableHeuristics, distinct: bool) -> bool:
    """A header row of a table with row labels: first column empty, other cells header texts or years."""
    if len(row) < 2 or row[0].text:
        return False
    cells = [c for c in _distinct(row)[1:] if c.text]
    if not cells or not all(_header_text(c.text, tables) for c in cells):
        return False
    if distinct and len({c.text.casefold() for c in cells}) != len(cells):
        return False
    return True


def _spans(row: list[GridCell]) -> bool:
    """A populated cell of the row covers two or more columns."""
    return any(c.text and i + 1 < len(row) and row[i + 1].key == c.key for i, c in enumerate(row))


def _drop_empty_columns(rows: list[list[GridCell]]) -> list[list[GridCell]]:
    width = max((len(r) for r in rows), default=0)
    keep = [i for i in range(width) if any(i < len(r) and r[i].text for r in rows)]
    if len(keep) == width:
        return [list(r) + [GridCell("", ("pad", n, i)) for i in range(len(r), width)] for n, r in enumerate(rows)]
    out = []
    for n, r in enumerate(rows):
        out.append([r[i] if i < len(r) else GridCell("", ("pad", n, i)) for i in keep])
    return out


def normalize_value(text: str) -> str:
    """``$ 82,959`` -> ``$82,959``, ``12.5 %`` -> ``12.5%``, ``( 1,204 )`` -> ``(1,204)``."""
    text = _SIGN_SPACE.sub(r"\1", text)
    text = _PERCENT_SPACE.sub("%", text)
    return _PAREN_SPACE.sub(lambda m: m.group(0).strip(), text)


def merge_sign_cells(row: list[GridCell]) -> list[GridCell]:
    """Currency signs join the value to their right; a lone "%" or ")" the value to its left."""
    cells = [GridCell(normalize_value(c.text), c.key) for c in row]
    for i, cell in enumerate(cells):
        text = cell.text
        if _CURRENCY_CELL.match(text):
            j = next((k for k in range(i + 1, len(cells)) if cells[k].key != cell.key and cells[k].text), None)
            if j is not None and _VALUE.match(cells[j].text):
                _set_text(cells, j, text + cells[j].text)
                _set_text(cells, i, "")
        elif text in ("%", ")"):
            j = next((k for k in range(i - 1, -1, -1) if cells[k].key != cell.key and cells[k].text), None)
            if j is not None and _VALUE.match(cells[j].text.lstrip("$€£¥₹₩₽")):
                _set_text(cells, j, cells[j].text + text)
                _set_text(cells, i, "")
    return cells


def _set_text(cells: list[GridCell], index: int, text: str) -> None:
    key = cells[index].key
    for k, c in enumerate(cells):  # every position of a merged cell
        if c.key == key:
            cells[k] = GridCell(text, key)


def render_row(row: list[GridCell], header: list[str] | None) -> str:
    """One data row as one line (see module docstring)."""
    parts: list[str] = []
    for i, cell in enumerate(row):
        if i and row[i - 1].key == cell.key:
            continue
        if not cell.text:
            continue
        label = header[i] if header is not None and i < len(header) else ""
        parts.append(f"{label}{LABEL_SEPARATOR}{cell.text}" if label else cell.text)
    return ROW_SEPARATOR.join(parts)


def _band_labels(band: list[list[GridCell]]) -> list[str]:
    labels = []
    for c in range(len(band[0])):
        parts: list[str] = []
        for row in band:
            text = row[c].text if c < len(row) else ""
            if text and (not parts or parts[-1] != text):
                parts.append(text)
        labels.append(" ".join(parts))
    return labels


def _section_row(row: list[GridCell], width: int, tables: TableHeuristics) -> str | None:
    """The text of a section row ("Operating expenses:") or None."""
    populated = _populated(row)
    if width < 2 or len(populated) != 1:
        return None
    cell = populated[0]
    merged_over_row = all(c.key == cell.key for c in row)
    if merged_over_row or (row[0].key == cell.key and cell.text.endswith(tables.section_endings)):
        return cell.text.rstrip("".join(tables.section_endings)).strip() or None
    # a short label alone in the first column, without figures ("International", "ASSETS"): no row has a
    # label and no value, so it names the rows under it
    if row[0].key == cell.key and len(cell.text.split()) <= SECTION_MAX_WORDS and not re.search(r"\d", cell.text):
        return cell.text.strip() or None
    return None


def flatten_table(
    raw_rows: list[list[GridCell]],
    tables: TableHeuristics | None = None,
    *,
    context: bool = False,
    inherited_header: list[str] | None = None,
) -> FlatTable:
    """Apply the rules of the module docstring to a grid of cells (texts already normalised).

    ``context``: the rules of "rows that keep their meaning" (multi-row headers, signs, sections).
    ``inherited_header``: the header of the table this one continues (a table split over two pages):
    used when the table does not repeat a header of its own and has as many columns.
    """
    tables = tables or _DEFAULT
    rows = [[GridCell(clean_inline(c.text), c.key) for c in r] for r in raw_rows]
    if context:
        rows = [merge_sign_cells(r) for r in rows]
    rows = _drop_empty_columns(rows)
    width = len(rows[0]) if rows else 0
    result = FlatTable(header=None)
    header_decided = False
    section: str | None = None
    index = 0
    while index < len(rows):
        row = rows[index]
        index += 1
        if is_blank_row(row):
            section = None
            continue
        if (
            not header_decided
            and (is_merged_title_row(row) or _single_cell_row(row, width))
            and not (context and _period_header_start(rows, index - 1, tables))
        ):
            result.items.append(TableItem("title", _populated(row)[0].text))
            continue
        if not context and is_merged_title_row(row):
            result.items.append(TableItem("title", _populated(row)[0].text))
            continue
        if not header_decided:
            header_decided = True
            band = _header_band(rows, index - 1, tables, context, result)
            if band:
                result.header = _band_labels(band)
                result.header_rows = len(band)
                index += len(band) - 1
                if inherited_header is not None:
                    result.header_rule += " (repeated on this page: the table continues from the page before)"
                continue
            if inherited_header is not None and len(inherited_header) == width:
                result.header = list(inherited_header)
                result.header_rule = "the header of the table it continues on the page before"
        if context and index < len(rows) and _wraps_into(row, rows[index], width, tables):
            # a row label printed over two lines: its first line goes in front of the label below
            following = rows[index]
            key = following[0].key
            text = f"{_populated(row)[0].text} {following[0].text}"
            rows[index] = [GridCell(text, c.key) if c.key == key else c for c in following]
            continue
        if context:
            name = _section_row(row, width, tables)
            if name is not None:
                section = name
                result.items.append(TableItem("section", name))
                continue
        text = render_row(row, result.header)
        if not text:
            continue
        result.items.append(TableItem("row", text, section))
        label = next((c.text for c in row if c.text), "")
        if section and label.casefold().startswith(tuple(p.casefold() for p in tables.total_prefixes)):
            section = None
    return result


_CONTINUES = re.compile(r"^(?:[a-z0-9$(\u2212\-]|and\b|or\b)")
_OPEN_END = re.compile(r"(?:\b(?:and|or|of|to|in|for|the|net|on|from|by|with|at)|[,;(\-])$", re.IGNORECASE)


def _wraps_into(row: list[GridCell], following: list[GridCell], width: int, tables: TableHeuristics) -> bool:
    """``row`` holds only the first line of the label of ``following`` (a long label wrapped by the printer):
    its one cell starts in the first column and does not end like a section ("Operating expenses:"), and
    the row below has values and a label that goes on from it (starts in lower case, with a figure, or after
    an open end such as "and", "of", a comma)."""
    populated = _populated(row)
    if width < 2 or len(populated) != 1 or row[0].key != populated[0].key:
        return False
    text = populated[0].text
    if text.endswith(tables.section_endings) or not following or not following[0].text:
        return False
    if len(_populated(following)) < 2 or following[0].key == following[-1].key:
        return False
    return bool(_CONTINUES.match(following[0].text)) or bool(_OPEN_END.search(text))


def _period_header_start(rows: list[list[GridCell]], index: int, tables: TableHeuristics) -> bool:
    """A one-cell row over the value columns ("Three Months Ended March 31," over two columns) that
    starts a header band: first column empty, and a header row or rows of values below."""
    row = rows[index]
    if not _stub_header(row, tables, distinct=True):
        return False
    following = next((r for r in rows[index + 1 :] if not is_blank_row(r)), None)
    if following is not None and _stub_header(following, tables, distinct=False):
        return True
    return any(len(_populated(r)) >= 2 for r in rows[index + 1 :])  # it heads rows of values


def _has_data_after(rows: list[list[GridCell]], index: int) -> bool:
    return any(not is_blank_row(r) and not is_merged_title_row(r) for r in rows[index + 1 :])


def _header_band(
    rows: list[list[GridCell]], start: int, tables: TableHeuristics, context: bool, result: FlatTable
) -> list[list[GridCell]]:
    """The header rows starting at ``start`` (empty when the first row is data); sets the rule."""
    row = rows[start]
    data_after = _has_data_after(rows, start)
    provable, why = header_verdict(row, data_after, tables)
    if provable:
        rule = f"row 1 is a header: {why}"
    elif context and data_after and _stub_header(row, tables, distinct=True):
        rule = "rows 1-{end} are a header: the first column is empty above the row labels"
    else:
        result.header_rule = f"no header: the first row is data, {why}"
        return []
    band = [row]
    if context:
        stubs_empty = not row[0].text
        j = start + 1
        while (
            j < len(rows)
            and (stubs_empty or _spans(band[0]))
            and _stub_header(rows[j], tables, distinct=False)
            and _has_data_after(rows, j)
        ):
            band.append(rows[j])
            j += 1
        if len(band) > 1 and provable:
            rule = f"rows 1-{{end}} are a header: row 1 {why}, with a cell spanning columns over the rows below"
        if any(_spans(r) for r in band):
            rule += "; a cell spanning columns labels each column under it"
    if len(band) == 1:
        rule = rule.replace("rows 1-{end} are", "row 1 is")
    result.header_rule = rule.replace("{end}", str(len(band)))
    return band


def compose_row(text: str, section: str | None, title: str | None) -> str:
    """The unit text of a row: ``Title — Section > row`` (title and section when there are)."""
    if section:
        text = f"{section}{SECTION_SEPARATOR}{text}"
    if title:
        text = f"{title}{TITLE_SEPARATOR}{text}"
    return text


def table_units(flat: FlatTable, caption: str | None) -> tuple[str | None, list[tuple[str, str]]]:
    """(title, [(content_type, text), ...]) of a context table in order.

    The title is the table's title rows, else ``caption``; rows carry it and their section. Title
    rows and sections that no row carries are kept as paragraphs, so no text is lost.
    """
    titles = flat.titles
    title = " ".join(titles) if titles else (caption or None)
    carried = flat.has_rows
    out: list[tuple[str, str]] = []
    if titles and not carried:
        out.extend(("paragraph", t) for t in titles)
    pending: str | None = None
    for item in flat.items:
        if item.kind == "section":
            if pending is not None:
                out.append(("paragraph", pending))
            pending = item.text
        elif item.kind == "row":
            if pending is not None and item.section != pending:
                out.append(("paragraph", pending))
            pending = None
            out.append(("table_row", compose_row(item.text, item.section, title if carried else None)))
    if pending is not None:
        out.append(("paragraph", pending))
    return (title if carried else None), out
