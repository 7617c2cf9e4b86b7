"""The DOCX rules (chunkbench_core/parsing/docx.py) on a document built with python-docx."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.parsing import ParseOptions, parse
from tests.core.parsing import builders
from tests.core.parsing.conftest import assert_spans, unit_triples

GUIDE = "Branch guide"
FAQ_FA = "پرسش\u200cهای متداول"

EXPECTED_UNITS = [
    ("paragraph", "This guide lists our branches and answers common questions.", [GUIDE]),
    # data table, provable header -> labelled rows; the heading right above titles the table
    ("table_row", "Contacts — Branch: Central | City: Tehran | Phone: 021-5555", [GUIDE, "Contacts"]),
    ("table_row", "Contacts — Branch: South | City: Shiraz | Phone: 071-4444", [GUIDE, "Contacts"]),
    ("paragraph", "Figures per year follow.", [GUIDE, "Contacts"]),
    # no provable header (numbers) -> unlabelled rows; a sentence right above is no title
    ("table_row", "1402 | 120", [GUIDE, "Contacts"]),
    ("table_row", "1403 | 150", [GUIDE, "Contacts"]),
    # the merged title row titles every row (not a paragraph of its own), blank separator skipped,
    # vertical merge repeated on each row
    ("table_row", "Branch directory 1403 — Region: North | Manager: Ms Rahimi", [GUIDE, "Directory"]),
    ("table_row", "Branch directory 1403 — Region: North | Manager: Mr Karimi", [GUIDE, "Directory"]),
    # layout table (nested table): cells as prose, the nested data table recursed
    ("paragraph", "Left column prose about claims.", [GUIDE, "Layout"]),
    ("paragraph", "A second paragraph in the same cell.", [GUIDE, "Layout"]),
    ("paragraph", "Prices:", [GUIDE, "Layout"]),
    ("table_row", "Prices — Plan: Basic | Price: 100", [GUIDE, "Layout"]),
    ("table_row", "Prices — Plan: Gold | Price: 250", [GUIDE, "Layout"]),
    # Persian Q&A, normalised (Arabic kaf/yeh -> Persian, Persian digit -> ASCII, ZWNJ kept)
    ("qa_pair", "سوال: کارت بیمه را چگونه دریافت کنم؟\nپاسخ: کارت ظرف 3 روز کاری ارسال می\u200cشود.", [FAQ_FA]),
    ("qa_pair", "1- مهلت اعلام خسارت چقدر است؟\nپاسخ: حداکثر پنج روز کاری.", [FAQ_FA]),
    ("paragraph", "این متن یک پاراگراف عادی است.", [FAQ_FA]),
    ("qa_pair", "Q: How do I file a claim?\nA: Call your branch or use the website.", ["FAQ"]),
    ("paragraph", "Photo of the main office:", ["FAQ"]),
]

EXPECTED_MARKDOWN = """# Branch guide

This guide lists our branches and answers common questions.

## Contacts

Contacts — Branch: Central | City: Tehran | Phone: 021-5555
Contacts — Branch: South | City: Shiraz | Phone: 071-4444

Figures per year follow.

1402 | 120
1403 | 150

## Directory

Branch directory 1403 — Region: North | Manager: Ms Rahimi
Branch directory 1403 — Region: North | Manager: Mr Karimi

## Layout

Left column prose about claims.

A second paragraph in the same cell.

Prices:

Prices — Plan: Basic | Price: 100
Prices — Plan: Gold | Price: 250

# پرسش\u200cهای متداول

سوال: کارت بیمه را چگونه دریافت کنم؟
پاسخ: کارت ظرف 3 روز کاری ارسال می\u200cشود.

1- مهلت اعلام خسارت چقدر است؟
پاسخ: حداکثر پنج روز کاری.

این متن یک پاراگراف عادی است.

# FAQ

Q: How do I file a claim?
A: Call your branch or use the website.

Photo of the main office:"""


def test_rich_docx_units_markdown_and_spans(rich_docx: Path) -> None:
    parsed = parse(rich_docx)
    assert parsed.parser == "docx"
    assert parsed.document == "rich.docx"
    assert unit_triples(parsed) == EXPECTED_UNITS
    assert parsed.markdown == EXPECTED_MARKDOWN
    assert_spans(parsed)
    assert parsed.stats["tables"] == 5
    assert parsed.stats["layout_tables"] == 1
    assert parsed.stats["table_row"] == 8 and parsed.stats["qa_pair"] == 3


def test_rich_docx_tree(rich_docx: Path) -> None:
    tree = parse(rich_docx).tree
    assert tree.node_type == "document"
    top = [(n.node_type, n.heading, n.heading_level) for n in tree.children]
    assert top == [("section", GUIDE, 1), ("section", FAQ_FA, 1), ("section", "FAQ", 1)]
    guide = tree.children[0]
    subsections = [n.heading for n in guide.children if n.node_type == "section"]
    assert subsections == ["Contacts", "Directory", "Layout"]
    contacts = guide.children[1]
    leaves = [n for n in contacts.children if n.node_type == "paragraph"]
    assert [n.content_type for n in leaves] == ["table_row", "table_row", "paragraph", "table_row", "table_row"]
    assert leaves[0].text == "Contacts — Branch: Central | City: Tehran | Phone: 021-5555"


def test_rich_docx_tree_spans_match_markdown(rich_docx: Path) -> None:
    parsed = parse(rich_docx)

    def visit(node):  # type: ignore[no-untyped-def]  # a test helper
        if node.start is not None:
            span = parsed.markdown[node.start : node.end]
            if node.node_type == "paragraph":
                assert span == node.text
            else:
                assert span == "#" * node.heading_level + " " + node.heading
        for child in node.children:
            visit(child)

    visit(parsed.tree)
    assert parsed.to_dict()["tree"]["children"][0]["heading"] == GUIDE


def test_image_counted_and_reported_without_caption_source(rich_docx: Path) -> None:
    parsed = parse(rich_docx)
    assert parsed.stats["images"] == 1
    assert parsed.stats["images_uncaptioned"] == 1
    assert any("1 embedded image(s) not captioned" in w and "caption_source" in w for w in parsed.warnings)
    assert all(u.content_type != "image_caption" for u in parsed.units)


def test_image_caption_unit_with_caption_source(rich_docx: Path) -> None:
    seen: list[bytes] = []

    def caption(image: bytes) -> str:
        seen.append(image)
        return "A red square logo."

    parsed = parse(rich_docx, ParseOptions(caption_source=caption))
    assert len(seen) == 1 and seen[0].startswith(b"\x89PNG")
    assert unit_triples(parsed)[-2:] == [
        ("paragraph", "Photo of the main office:", ["FAQ"]),
        ("image_caption", "A red square logo.", ["FAQ"]),
    ]
    assert parsed.markdown.endswith("Photo of the main office:\n\nA red square logo.")
    assert parsed.stats["images_uncaptioned"] == 0
    assert parsed.warnings == []
    assert_spans(parsed)


def test_failing_caption_source_is_reported_not_fatal(rich_docx: Path) -> None:
    def broken(image: bytes) -> str:
        raise TimeoutError("vision endpoint timed out")

    parsed = parse(rich_docx, ParseOptions(caption_source=broken))
    assert parsed.stats["images_uncaptioned"] == 1
    assert any("vision endpoint timed out" in w for w in parsed.warnings)


def test_table_with_cell_larger_than_a_chunk_is_layout(tmp_path: Path) -> None:
    path = builders.build_layout_by_size_docx(tmp_path / "layout.docx")
    as_data = parse(path)
    assert unit_triples(as_data) == [
        (
            "table_row",
            "Topic: Claims | Text: First long paragraph of the cell with many words in it for the limit. "
            "Second paragraph of the same cell.",
            [],
        )
    ]
    as_layout = parse(path, ParseOptions(chunk_token_limit=10))
    assert unit_triples(as_layout) == [
        ("paragraph", "Topic", []),
        ("paragraph", "Text", []),
        ("paragraph", "Claims", []),
        ("paragraph", "First long paragraph of the cell with many words in it for the limit.", []),
        ("paragraph", "Second paragraph of the same cell.", []),
    ]
    assert as_layout.stats["layout_tables"] == 1
    assert_spans(as_layout)


def test_headings_from_styles_only_not_from_text(tmp_path: Path) -> None:
    from docx import Document

    doc = Document()
    doc.add_paragraph("Introduction")  # looks like a heading, has no heading style
    doc.add_paragraph("Body text.")
    doc.add_heading("Real heading", level=2)
    doc.add_paragraph("More text.")
    doc.add_paragraph("Big title", style="Title")
    path = tmp_path / "styles.docx"
    doc.save(str(path))
    parsed = parse(path)
    assert parsed.markdown == "Introduction\n\nBody text.\n\n## Real heading\n\nMore text.\n\n# Big title"
    assert unit_triples(parsed) == [
        ("paragraph", "Introduction", []),
        ("paragraph", "Body text.", []),
        ("paragraph", "More text.", ["Real heading"]),
    ]


def test_paragraph_starting_with_hash_is_escaped(tmp_path: Path) -> None:
    from docx import Document

    doc = Document()
    doc.add_paragraph("#1 ranked strategy")
    path = tmp_path / "hash.docx"
    doc.save(str(path))
    parsed = parse(path)
    assert parsed.markdown == "\\#1 ranked strategy"
    assert_spans(parsed)


def test_bad_options_are_refused_with_actionable_message() -> None:
    with pytest.raises(ConfigError, match="chunk_token_limit must be a positive integer"):
        ParseOptions(chunk_token_limit=0)
    with pytest.raises(ConfigError, match="caption_source must be None or a callable"):
        ParseOptions(caption_source="http://vision")  # type: ignore[arg-type]  # a wrong type on purpose: the check is what is tested
    with pytest.raises(ConfigError, match="persian_digits must be 'ascii' or 'persian'"):
        ParseOptions(persian_digits="arabic")  # type: ignore[arg-type]  # a wrong type on purpose: the check is what is tested
    with pytest.raises(ConfigError, match="unknown encoding"):
        ParseOptions(csv_encodings=("utf-8", "no-such-codec"))
