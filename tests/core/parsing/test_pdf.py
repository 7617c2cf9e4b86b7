"""The PDF rules (chunkbench_core/parsing/pdf.py) on PDFs built with fpdf2."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing import ParseOptions, parse
from tests.core.parsing import builders
from tests.core.parsing.conftest import assert_spans, unit_triples

TITLE = "Chunking benchmark"
BODY_4 = (
    "Semantic chunking had the best recall on this corpus, and fixed-size chunking came second "
    "with a much lower cost per document."
)
BODY_5 = "The corpus is small and every question was written by one person."


def test_english_pdf_font_headings_paragraphs_and_table(english_pdf: Path) -> None:
    parsed = parse(english_pdf)
    assert parsed.parser == "pdf"
    assert unit_triples(parsed) == [
        ("paragraph", builders.ENGLISH_BODY_1, [TITLE]),
        ("paragraph", builders.ENGLISH_BODY_2, [TITLE]),
        ("paragraph", builders.ENGLISH_BODY_3, [TITLE, "Strategies"]),
        ("table_row", "Strategy: fixed_size | Tokens: 512 | Recall: 0.71", [TITLE, "Strategies"]),
        ("table_row", "Strategy: semantic | Tokens: 300 | Recall: 0.78", [TITLE, "Strategies"]),
        ("paragraph", BODY_4, [TITLE, "Results"]),
        # bold, body-size standalone line -> heading one level below the font-size headings
        ("paragraph", BODY_5, [TITLE, "Results", "Limitations"]),
    ]
    assert parsed.markdown.startswith(f"# {TITLE}\n\n{builders.ENGLISH_BODY_1}\n\n")
    assert "\n\n## Strategies\n\n" in parsed.markdown
    assert "\n\n### Limitations\n\n" in parsed.markdown
    assert (
        "\n\nStrategy: fixed_size | Tokens: 512 | Recall: 0.71\nStrategy: semantic | Tokens: 300 | Recall: 0.78\n\n"
        in parsed.markdown
    )
    assert parsed.stats["pages"] == 2
    assert_spans(parsed)


def test_outline_headings_take_precedence(english_outline_pdf: Path) -> None:
    parsed = parse(english_outline_pdf)
    assert parsed.stats["headings_from_outline"] == 1
    headings = [(n.heading, n.heading_level) for n in parsed.tree.children]
    assert headings == [(TITLE, 1)]
    assert [(n.heading, n.heading_level) for n in parsed.tree.children[0].children if n.node_type == "section"] == [
        ("Strategies", 2),
        ("Results", 2),
    ]
    # "Limitations" is not in the outline, so with an outline it is not a heading
    assert unit_triples(parsed)[-3:] == [
        ("paragraph", BODY_4, [TITLE, "Results"]),
        ("paragraph", "Limitations", [TITLE, "Results"]),
        ("paragraph", BODY_5, [TITLE, "Results"]),
    ]
    assert_spans(parsed)


def test_persian_pdf_reading_order_and_normalisation(persian_pdf: Path) -> None:
    from pypdf import PdfReader

    raw = PdfReader(str(persian_pdf)).pages[0].extract_text()
    # the fixture reproduces environment-facts: presentation forms, reversed word order
    assert any(0xFE70 <= ord(c) <= 0xFEFC for c in raw)

    parsed = parse(persian_pdf, ParseOptions(pdf_min_total_chars=50, pdf_min_median_chars_per_page=20))
    heading = builders.PERSIAN_HEADING
    article = "ماده 12"
    assert unit_triples(parsed) == [
        ("paragraph", " ".join(builders.PERSIAN_LINES), [heading]),
        ("paragraph", "بیمه\u200cگذار باید حادثه را فورا به شعبه اطلاع دهد", [heading, article]),
    ]
    assert parsed.markdown.startswith(f"# {heading}\n\n")
    chapter = parsed.tree.children[0]
    assert (chapter.node_type, chapter.heading) == ("section", heading)
    article_node = [n for n in chapter.children if n.node_type == "article"]
    assert [n.heading for n in article_node] == [article]
    assert not any(0xFB50 <= ord(c) <= 0xFEFC for c in parsed.markdown)
    assert_spans(parsed)


def test_persian_pdf_logical_order_option_keeps_extraction_order(persian_pdf: Path) -> None:
    opts = ParseOptions(pdf_min_total_chars=50, pdf_min_median_chars_per_page=20, pdf_rtl_order="logical")
    parsed = parse(persian_pdf, opts)
    assert parsed.units[0].text != " ".join(builders.PERSIAN_LINES)


def test_scanned_pdf_rejected_by_text_layer_gate(scanned_pdf: Path) -> None:
    with pytest.raises(DocumentProcessingError) as info:
        parse(scanned_pdf)
    message = str(info.value)
    assert str(scanned_pdf) in message
    assert "no usable text layer (scanned PDF?)" in message
    assert "0 characters in 2 page(s)" in message


def test_gate_thresholds_are_configurable(tmp_path: Path, dejavu: None) -> None:
    path = builders.build_text_pdf(tmp_path / "short.pdf", ["Only a short line of text here."])
    with pytest.raises(DocumentProcessingError, match="needs at least 100 in total"):
        parse(path)
    parsed = parse(path, ParseOptions(pdf_min_total_chars=10, pdf_min_median_chars_per_page=10))
    assert unit_triples(parsed) == [("paragraph", "Only a short line of text here.", [])]


def test_median_rule_rejects_mostly_empty_pages(tmp_path: Path, dejavu: None) -> None:
    path = builders.build_text_pdf(tmp_path / "mostly-empty.pdf", ["Plenty of text on this page. " * 10, "", ""])
    with pytest.raises(DocumentProcessingError, match="median 0 per page"):
        parse(path)


def test_running_headers_and_page_numbers_dropped(tmp_path: Path, dejavu: None) -> None:
    pdf = builders._pdf()
    pdf.set_auto_page_break(False)
    for n in range(1, 4):
        pdf.add_page()
        pdf.set_font("DejaVu", "", 9)
        pdf.cell(0, 6, "ACME Insurance - internal", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("DejaVu", "", 11)
        pdf.ln(4)
        pdf.multi_cell(0, 6, f"Page {n} body text that is long enough to pass the text layer gate easily.")
        pdf.set_y(-20)
        pdf.set_font("DejaVu", "", 9)
        pdf.cell(0, 6, str(n), align="C")
    path = tmp_path / "running.pdf"
    pdf.output(str(path))
    parsed = parse(path)
    assert [u.text for u in parsed.units] == [
        f"Page {n} body text that is long enough to pass the text layer gate easily." for n in range(1, 4)
    ]
    assert parsed.stats["pdf_dropped_lines"] == 6


LO_PRINTED_UNITS = [
    ("paragraph", "This guide lists our branches and answers common questions.", ["Branch guide"]),
    # the heading right above a table titles its rows
    ("table_row", "Contacts — Branch: Central | City: Tehran | Phone: 021-5555", ["Branch guide", "Contacts"]),
    ("table_row", "Contacts — Branch: South | City: Shiraz | Phone: 071-4444", ["Branch guide", "Contacts"]),
    ("paragraph", "Figures per year follow.", ["Branch guide", "Contacts"]),
    ("table_row", "1402 | 120", ["Branch guide", "Contacts"]),
    ("table_row", "1403 | 150", ["Branch guide", "Contacts"]),
    # the printed title row is a line above the table: a paragraph, and the caption of the rows
    ("paragraph", "Branch directory 1403", ["Branch guide", "Directory"]),
    ("table_row", "Branch directory 1403 — Region: North | Manager: Ms Rahimi", ["Branch guide", "Directory"]),
    # the PDF prints a vertically merged cell once: its row has the other column only
    ("table_row", "Branch directory 1403 — Manager: Mr Karimi", ["Branch guide", "Directory"]),
    ("paragraph", "Left column prose about claims.", ["Branch guide", "Layout"]),
    ("paragraph", "A second paragraph in the same cell.", ["Branch guide", "Layout"]),
    ("paragraph", "Prices:", ["Branch guide", "Layout"]),
    ("table_row", "Prices — Plan: Basic | Price: 100", ["Branch guide", "Layout"]),
    ("table_row", "Prices — Plan: Gold | Price: 250", ["Branch guide", "Layout"]),
    # the printed PDF loses the zero-width non-joiner (it becomes a gap between glyph runs)
    ("qa_pair", "سوال: کارت بیمه را چگونه دریافت کنم؟\nپاسخ: کارت ظرف 3 روز کاری ارسال می شود.", ["پرسش های متداول"]),
    ("qa_pair", "1- مهلت اعلام خسارت چقدر است؟\nپاسخ: حداکثر پنج روز کاری.", ["پرسش های متداول"]),
    ("paragraph", "این متن یک پاراگراف عادی است.", ["پرسش های متداول"]),
    ("qa_pair", "Q: How do I file a claim?\nA: Call your branch or use the website.", ["FAQ"]),
    ("paragraph", "Photo of the main office:", ["FAQ"]),
]


@pytest.mark.tools
def test_pdf_printed_by_libreoffice_matches_its_docx(rich_docx: Path, tmp_path: Path) -> None:
    """A real printing application's PDF (outline, shared resources, Persian in a left-to-right
    paragraph, no paragraph spacing) parses to the same structure as the DOCX it came from."""
    from chunkbench_core.parsing.legacy_doc import convert_with_soffice
    from tests.conftest import require_executable

    soffice = require_executable("soffice")
    pdf = convert_with_soffice(rich_docx, "pdf", tmp_path, 180.0, soffice)
    parsed = parse(pdf)
    assert unit_triples(parsed) == LO_PRINTED_UNITS
    assert parsed.stats["headings_from_outline"] == 1
    assert parsed.stats["images"] == 1  # one picture, though its resource is shared by both pages
    assert_spans(parsed)


def _pdf_with_image(path: Path) -> Path:
    import io

    pdf = builders._pdf()
    pdf.add_page()
    pdf.set_font("DejaVu", "", 11)
    pdf.multi_cell(0, 6, "The figure below shows the branch network of the company in 1403. " * 3)
    pdf.image(io.BytesIO(builders.png_bytes()), x=20, w=30)
    pdf.output(str(path))
    return path


def test_pdf_images_counted_or_captioned(tmp_path: Path, dejavu: None) -> None:
    path = _pdf_with_image(tmp_path / "figure.pdf")
    plain = parse(path)
    assert plain.stats["images"] == 1 and plain.stats["images_uncaptioned"] == 1
    assert any("not captioned" in w for w in plain.warnings)
    seen: list[bytes] = []
    captioned = parse(path, ParseOptions(caption_source=lambda b: seen.append(b) or "Map of branches."))
    assert [u.content_type for u in captioned.units] == ["paragraph", "image_caption"]
    assert captioned.units[-1].text == "Map of branches."
    assert len(seen) == 1 and seen[0]
    assert captioned.warnings == []
    assert_spans(captioned)


def test_line_joining_rules() -> None:
    from chunkbench_core.parsing.pdf import _join_lines, fix_rtl_edges

    assert _join_lines(["fixed-", "size chunking", "works"]) == "fixed-size chunking works"
    assert _join_lines(["pages 1-", "3 and", "N-", "Gram"]) == "pages 1- 3 and N- Gram"
    assert fix_rtl_edges([".", "پاسخ", "روز"]) == ["پاسخ", "روز", "."]
    assert fix_rtl_edges(["مهلت", "است؟", "1-"]) == ["1-", "مهلت", "است؟"]


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_pdf_encrypted_with_owner_password_only_is_read(tmp_path: Path, dejavu: None, algorithm: str) -> None:
    path = builders.build_encrypted_pdf(tmp_path / "restricted.pdf", user_password="", algorithm=algorithm)
    parsed = parse(path)
    assert parsed.units[0].text.startswith("Confidential text Confidential text")


def test_pdf_encrypted_with_aes_user_password_is_refused(tmp_path: Path, dejavu: None) -> None:
    path = builders.build_encrypted_pdf(tmp_path / "locked-aes.pdf", algorithm="AES-256")
    with pytest.raises(DocumentProcessingError, match="encrypted PDF: a password is required"):
        parse(path)
