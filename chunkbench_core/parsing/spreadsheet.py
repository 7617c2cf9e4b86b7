"""Spreadsheets (.xlsx with openpyxl, .csv with the standard csv module): one ``table_row`` per row.

The rules (the csv module reads CSV, so quoted fields with commas and line breaks stay one cell):

* merged cells are forward-filled: the value of a merged range (stored by
  openpyxl in its top-left cell only) is copied to every cell of the range, so
  every row is self-contained; a range spanning columns is written once per row;
* the real header row is detected after skipping merged title rows and blank
  separator rows, and rows are rendered ``Header: value | ...`` (rules in
  :mod:`chunkbench_core.parsing.tables`); a title row's text is kept as a
  ``paragraph`` unit;
* sheets with no data row (the "dead second sheet") are skipped and counted in
  ``stats['sheets_skipped']``; when more than one sheet has data, each sheet's
  rows follow a ``# <sheet name>`` heading;
* cell values: formulas give their cached value, whole floats print without
  ".0", dates as ISO dates (with the time only when it is not midnight);
* .csv: the encoding is detected (UTF-8, UTF-8 with BOM, cp1256 - see
  ``ParseOptions.csv_encodings``) or a clear error is raised; the delimiter
  (comma, semicolon, tab or pipe) is sniffed from the first lines.
"""

from __future__ import annotations

import bisect
import csv
import datetime as dt
import io
from pathlib import Path
from typing import Any

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.builder import MarkdownBuilder
from chunkbench_core.parsing.guards import decode_text
from chunkbench_core.parsing.models import Explanation, ParsedDocument
from chunkbench_core.parsing.options import ParseOptions
from chunkbench_core.parsing.persian import normalize_persian
from chunkbench_core.parsing.tables import FlatTable, GridCell, flatten_table


def cell_text(value: Any) -> str:
    """A cell value as text (see module docstring)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def _cell_values(ws: Any) -> dict[tuple[int, int], Any]:
    """{(row, column): value} of the cells holding a value (not just formatting), read from the sheet's cells."""
    cells = getattr(ws, "_cells", None)
    if isinstance(cells, dict):
        return {(r, c): cell.value for (r, c), cell in cells.items() if cell.value is not None and cell.value != ""}
    return {  # pragma: no cover - openpyxl internals changed
        (cell.row, cell.column): cell.value
        for row in ws.iter_rows()
        for cell in row
        if cell.value is not None and cell.value != ""
    }


def sheet_grid(ws: Any, digits: str) -> list[list[GridCell]]:
    """Cells of a worksheet with merged ranges forward-filled, read by its cells, not its bounding box.

    Only rows and columns holding a value are kept (blank rows are skipped and empty columns dropped
    by :func:`flatten_table` anyway), so one value at XFD1048576 costs one more cell, not the 17 billion
    of the box from A1. A cell of a merged range takes the value of the range's top-left cell; a row or
    column that only a merged range reaches (no value of its own) is left out.
    """
    values = _cell_values(ws)
    if not values:
        return []
    used_rows = sorted({r for r, _ in values})
    used_cols = sorted({c for _, c in values})
    merged: dict[tuple[int, int], tuple[Any, str]] = {}
    for rng in list(ws.merged_cells.ranges):
        min_col, min_row, max_col, max_row = rng.bounds
        top_left = values.get((min_row, min_col))
        key = str(rng.coord)
        rows_in = used_rows[bisect.bisect_left(used_rows, min_row) : bisect.bisect_right(used_rows, max_row)]
        cols_in = used_cols[bisect.bisect_left(used_cols, min_col) : bisect.bisect_right(used_cols, max_col)]
        for r in rows_in:
            for c in cols_in:
                merged[(r, c)] = (top_left, key)
    rows: list[list[GridCell]] = []
    for r in used_rows:
        row: list[GridCell] = []
        for c in used_cols:
            hit = merged.get((r, c))
            if hit is not None:
                row.append(GridCell(normalize_persian(cell_text(hit[0]), digits), ("m", hit[1])))
            else:
                row.append(GridCell(normalize_persian(cell_text(values.get((r, c))), digits), (r, c)))
        rows.append(row)
    return rows


def _has_data(flat: FlatTable) -> bool:
    return any(item.kind == "row" for item in flat.items)


def _emit(flat: FlatTable, builder: MarkdownBuilder) -> None:
    builder.end_table()
    start = end = None
    for item in flat.items:
        if item.kind == "title":
            builder.add_unit("paragraph", item.text)
            builder.end_table()
        else:
            unit = builder.add_unit("table_row", item.text, inline=True)
            if unit is not None:
                start = unit.start if start is None else start
                end = unit.end
    builder.end_table()
    if start is not None and end is not None:
        labels = [label for label in (flat.header or []) if label]
        what = f"header: {' | '.join(labels)}" if labels else "no header"
        builder.explain.append(Explanation("table", what, flat.header_rule, start, end))


def parse_xlsx(path: Path, options: ParseOptions) -> ParsedDocument:
    """Parse an .xlsx workbook (see module docstring)."""
    from openpyxl import load_workbook

    try:
        wb = load_workbook(str(path), data_only=True, read_only=False)
    except DocumentProcessingError:
        raise
    except Exception as exc:
        raise DocumentProcessingError(
            str(path), f"cannot open as an Excel .xlsx workbook ({type(exc).__name__}: {exc})"
        ) from None
    try:
        sheets: list[tuple[str, FlatTable]] = []
        skipped: list[str] = []
        for ws in wb.worksheets:
            flat = flatten_table(sheet_grid(ws, options.persian_digits), options.heuristics.tables)
            if _has_data(flat):
                sheets.append((ws.title, flat))
            else:
                skipped.append(ws.title)
    finally:
        wb.close()
    builder = MarkdownBuilder(options.persian_digits)
    for title, flat in sheets:
        if len(sheets) > 1:
            builder.heading(title, 1)
        _emit(flat, builder)
    stats = builder.stats()
    stats.update({"sheets": len(sheets), "sheets_skipped": len(skipped)})
    warnings = [f"sheet {name!r} skipped: no data rows" for name in skipped]
    return ParsedDocument(
        document=path.name,
        markdown=builder.markdown,
        tree=builder.root,
        units=builder.units,
        parser="xlsx",
        warnings=warnings,
        stats=stats,
        explain=builder.explain,
    )


def _sniff_dialect(sample: str) -> type[csv.Dialect] | csv.Dialect:
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        return csv.excel


def parse_csv(path: Path, options: ParseOptions) -> ParsedDocument:
    """Parse a .csv file (see module docstring)."""
    text, encoding = decode_text(path, path.read_bytes(), options.csv_encodings)
    text = normalize_persian(text, options.persian_digits)
    dialect = _sniff_dialect(text[:8192])
    rows: list[list[GridCell]] = []
    try:
        for r_index, record in enumerate(csv.reader(io.StringIO(text, newline=""), dialect)):
            rows.append([GridCell(value, (r_index, c_index)) for c_index, value in enumerate(record)])
    except csv.Error as exc:
        raise DocumentProcessingError(str(path), f"malformed CSV ({exc})") from None
    flat = flatten_table(rows, options.heuristics.tables)
    builder = MarkdownBuilder(options.persian_digits)
    _emit(flat, builder)
    warnings: list[str] = []
    if encoding.lower() not in ("utf-8-sig", "utf-8", "utf8"):
        warnings.append(f"decoded as {encoding} (not UTF-8)")
    if not _has_data(flat):
        warnings.append("no data rows")
    stats = builder.stats()
    stats["rows"] = len(rows)
    return ParsedDocument(
        document=path.name,
        markdown=builder.markdown,
        tree=builder.root,
        units=builder.units,
        parser="csv",
        warnings=warnings,
        stats=stats,
        explain=builder.explain,
    )
