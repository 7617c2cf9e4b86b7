"""The XLSX (openpyxl) and CSV (csv module) rules (chunkbench_core/parsing/spreadsheet.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing import parse
from tests.core.parsing.conftest import assert_spans, unit_triples


def test_directory_xlsx(directory_xlsx: Path) -> None:
    parsed = parse(directory_xlsx)
    assert parsed.parser == "xlsx"
    assert unit_triples(parsed) == [
        # merged title row: kept as prose, never a header
        ("paragraph", "فهرست شعب بیمه", []),
        # blank separator skipped; header row detected; A4:A5 merge forward-filled to both rows
        ("table_row", "شهر: تهران | شعبه: مرکزی | تلفن: 021-1111", []),
        ("table_row", "شهر: تهران | شعبه: ونک | تلفن: 021-2222", []),
        # Arabic yeh normalised to Persian yeh; whole float written as an integer
        ("table_row", "شهر: شیراز | شعبه: زند | تلفن: 7132220000", []),
    ]
    assert parsed.markdown == (
        "فهرست شعب بیمه\n\n"
        "شهر: تهران | شعبه: مرکزی | تلفن: 021-1111\n"
        "شهر: تهران | شعبه: ونک | تلفن: 021-2222\n"
        "شهر: شیراز | شعبه: زند | تلفن: 7132220000"
    )
    # the dead second sheet is skipped and reported
    assert parsed.stats["sheets"] == 1 and parsed.stats["sheets_skipped"] == 1
    assert parsed.warnings == ["sheet 'Sheet2' skipped: no data rows"]
    assert_spans(parsed)


def test_two_sheets_with_data_get_sheet_headings(tmp_path: Path) -> None:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "QA"
    ws.append(["q", "a"])
    ws.append(["How long is a claim?", "Five days"])
    ws2 = wb.create_sheet("Numbers")
    ws2.append([1, 2.5])
    ws2.append([3, 4])
    path = tmp_path / "two.xlsx"
    wb.save(str(path))
    parsed = parse(path)
    assert parsed.markdown == "# QA\n\nq: How long is a claim? | a: Five days\n\n# Numbers\n\n1 | 2.5\n3 | 4"
    assert unit_triples(parsed) == [
        ("table_row", "q: How long is a claim? | a: Five days", ["QA"]),
        ("table_row", "1 | 2.5", ["Numbers"]),
        ("table_row", "3 | 4", ["Numbers"]),
    ]
    assert_spans(parsed)


def test_csv_utf8_with_header(tmp_path: Path) -> None:
    path = tmp_path / "branches.csv"
    path.write_text('name,city,note\nCentral,Tehran,"open, 8-16"\n\nSouth,Shiraz,\n', encoding="utf-8")
    parsed = parse(path)
    assert parsed.parser == "csv"
    assert unit_triples(parsed) == [
        ("table_row", "name: Central | city: Tehran | note: open, 8-16", []),
        ("table_row", "name: South | city: Shiraz", []),
    ]
    assert parsed.markdown == "name: Central | city: Tehran | note: open, 8-16\nname: South | city: Shiraz"
    assert_spans(parsed)


def test_csv_utf8_bom_and_semicolons(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffسوال;پاسخ\nمهلت خسارت؟;پنج روز\n".encode("utf-8"))
    parsed = parse(path)
    assert unit_triples(parsed) == [("table_row", "سوال: مهلت خسارت؟ | پاسخ: پنج روز", [])]


def test_csv_cp1256(tmp_path: Path) -> None:
    path = tmp_path / "windows.csv"
    path.write_bytes("شهر,تلفن\nتهران,021\nكرج,026\n".encode("cp1256"))
    parsed = parse(path)
    assert unit_triples(parsed) == [
        ("table_row", "شهر: تهران | تلفن: 021", []),
        ("table_row", "شهر: کرج | تلفن: 026", []),
    ]
    assert any("cp1256" in w for w in parsed.warnings)


def test_csv_undecodable_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.csv"
    path.write_bytes(b"a,b\n\x01\x02\x03,\x04\n")
    with pytest.raises(DocumentProcessingError, match="cannot decode text as any of utf-8-sig, cp1256") as info:
        parse(path)
    assert str(path) in str(info.value)


def test_csv_utf16_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "utf16.csv"
    path.write_bytes("a,b\n1,2\n".encode("utf-16"))
    with pytest.raises(DocumentProcessingError, match="UTF-16"):
        parse(path)
