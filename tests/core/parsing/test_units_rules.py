"""Unit tests of the shared rules: Persian normalisation, Q&A pairing, table header detection."""

from __future__ import annotations

from chunkbench_core.parsing.persian import normalize_persian, order_rtl_tokens
from chunkbench_core.parsing.qa import pair_paragraphs
from chunkbench_core.parsing.tables import GridCell, flatten_table


def test_normalisation_rules() -> None:
    assert normalize_persian("كيك") == "کیک"  # Arabic kaf/yeh
    assert normalize_persian("علی") == "علی"
    assert normalize_persian("۱۲۳ ٤٥٦") == "123 456"
    assert normalize_persian("۱۲۳ ٤٥٦", digits="persian") == "۱۲۳ ۴۵۶"
    assert normalize_persian("مُحَمَّد") == "محمد"  # diacritics removed
    assert normalize_persian("نامـــه") == "نامه"  # tatweel removed
    assert normalize_persian("می\u200cروم") == "می\u200cروم"  # ZWNJ kept
    assert normalize_persian("\ufeb3\ufefc\ufee1") == "سلام"  # presentation forms folded (lam-alef too)


def test_normalisation_is_a_no_op_without_arabic_script() -> None:
    text = "Résumé — naïve ﬁ ligature, 123 ½ \u200c \ufeff"
    assert normalize_persian(text) is text or normalize_persian(text) == text


def test_rtl_token_order_keeps_ltr_runs() -> None:
    # left-to-right on the page: "Asia" "Bimeh" and two Persian words around them
    assert order_rtl_tokens(["شرکت", "Bimeh", "Asia", "بیمه"]) == ["بیمه", "Bimeh", "Asia", "شرکت"]


def test_qa_pairing_rules() -> None:
    items = pair_paragraphs(
        [
            "سوال ۱: مهلت چیست؟",
            "پاسخ: پنج روز.",
            "2- بیمه بدنه چیست؟ پاسخ: بیمه خودرو.",
            "1. Option A: the first one",
            "Question: Is it free?",
            "Answer: Yes.",
            "A: a lone answer",
        ]
    )
    assert [(i.question, i.answer) for i in items] == [
        ("سوال ۱: مهلت چیست؟", "پاسخ: پنج روز."),
        ("2- بیمه بدنه چیست؟", "پاسخ: بیمه خودرو."),
        ("1. Option A: the first one", None),
        ("Question: Is it free?", "Answer: Yes."),
        ("A: a lone answer", None),
    ]


def _grid(rows: list[list[str]]) -> list[list[GridCell]]:
    return [[GridCell(text, (r, c)) for c, text in enumerate(row)] for r, row in enumerate(rows)]


def test_header_needs_proof() -> None:
    # duplicate labels: not a header
    flat = flatten_table(_grid([["Name", "Name"], ["a", "b"]]))
    assert flat.header is None and [i.text for i in flat.items] == ["Name | Name", "a | b"]
    # an empty header cell: not a header
    flat = flatten_table(_grid([["Name", ""], ["a", "b"]]))
    assert flat.header is None
    # a long sentence: not a header
    flat = flatten_table(_grid([["This is a long sentence of body text", "x"], ["a", "b"]]))
    assert flat.header is None
    # nothing after it: not a header
    flat = flatten_table(_grid([["Name", "City"]]))
    assert flat.header is None and [i.text for i in flat.items] == ["Name | City"]
    # a proper header; empty data cells left out; empty columns dropped
    flat = flatten_table(_grid([["Name", "", "City"], ["a", "", ""], ["", "", ""], ["b", "", "c"]]))
    assert flat.header == ["Name", "City"]
    assert [i.text for i in flat.items] == ["Name: a", "Name: b | City: c"]


def test_title_rows_above_header() -> None:
    rows = _grid([["Report 2024", "", ""], ["", "", ""], ["A", "B", "C"], ["1", "2", "3"]])
    flat = flatten_table(rows)
    assert [(i.kind, i.text) for i in flat.items] == [("title", "Report 2024"), ("row", "A: 1 | B: 2 | C: 3")]
