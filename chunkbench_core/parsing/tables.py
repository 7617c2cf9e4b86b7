"""Table rows to ``table_row`` units: header detection, title/separator rows, row rendering.

Shared by DOCX tables, XLSX sheets, CSV files and PDF tables (ADR-0004 "Detect
table rows" and "Spreadsheet handling", as amended by ADR-0018):

* blank separator rows (no text in any cell) are skipped;
* title rows - one populated cell that is merged over two or more columns, or,
  above the header, the only populated cell of a multi-column row - are not
  table rows and never a header; their text is kept as a ``paragraph`` unit so
  nothing is silently lost;
* the first remaining row is the header only when it is *provably* one
  (ADR-0018): at least two cells, every cell non-empty, all texts distinct, each
  short (at most 60 characters and 6 words) and none a bare number/date/phone,
  and at least one data row follows. Otherwise every row is data;
* each data row is one unit on one line: ``Header: value | Header2: value2``
  with a header, ``value | value2`` without; empty cells are left out and a cell
  merged across columns is written once.

Columns that are empty in every row are dropped before any of this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Hashable

from chunkbench_core.parsing.builder import clean_inline

ROW_SEPARATOR = " | "
LABEL_SEPARATOR = ": "

MAX_HEADER_CHARS = 60
MAX_HEADER_WORDS = 6
_NUMBERISH = re.compile(r"^[\d\u0660-\u0669\u06f0-\u06f9\s.,:;/\\\-+()%\u066b\u066c#*]+$")


@dataclass(frozen=True)
class GridCell:
    """One grid position: its text and a key shared by all positions of one merged cell."""

    text: str
    key: Hashable


@dataclass
class TableItem:
    """A rendered piece of a table: ``kind`` is "row" (a table_row) or "title" (a paragraph)."""

    kind: str
    text: str


@dataclass
class FlatTable:
    header: list[str] | None
    items: list[TableItem] = field(default_factory=list)


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


def is_header_row(row: list[GridCell], has_data_after: bool) -> bool:
    """ADR-0018: row 0 is a header only when it provably is one (see module docstring)."""
    if not has_data_after:
        return False
    cells = _distinct(row)
    if len(cells) < 2:
        return False
    seen: set[str] = set()
    for cell in cells:
        text = cell.text
        if not text:
            return False
        if len(text) > MAX_HEADER_CHARS or len(text.split()) > MAX_HEADER_WORDS:
            return False
        if _NUMBERISH.match(text):
            return False
        folded = text.casefold()
        if folded in seen:
            return False
        seen.add(folded)
    return True


def _drop_empty_columns(rows: list[list[GridCell]]) -> list[list[GridCell]]:
    width = max((len(r) for r in rows), default=0)
    keep = [i for i in range(width) if any(i < len(r) and r[i].text for r in rows)]
    if len(keep) == width:
        return [list(r) + [GridCell("", ("pad", n, i)) for i in range(len(r), width)] for n, r in enumerate(rows)]
    out = []
    for n, r in enumerate(rows):
        out.append([r[i] if i < len(r) else GridCell("", ("pad", n, i)) for i in keep])
    return out


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


def flatten_table(raw_rows: list[list[GridCell]]) -> FlatTable:
    """Apply the rules of the module docstring to a grid of cells (texts already normalised)."""
    rows = [[GridCell(clean_inline(c.text), c.key) for c in r] for r in raw_rows]
    rows = _drop_empty_columns(rows)
    width = len(rows[0]) if rows else 0
    result = FlatTable(header=None)
    header_decided = False
    for index, row in enumerate(rows):
        if is_blank_row(row):
            continue
        if is_merged_title_row(row) or (not header_decided and _single_cell_row(row, width)):
            result.items.append(TableItem("title", _populated(row)[0].text))
            continue
        if not header_decided:
            header_decided = True
            has_data_after = any(not is_blank_row(r) and not is_merged_title_row(r) for r in rows[index + 1 :])
            if is_header_row(row, has_data_after):
                result.header = [c.text for c in row]
                continue
        text = render_row(row, result.header)
        if text:
            result.items.append(TableItem("row", text))
    return result
