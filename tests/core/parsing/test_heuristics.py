"""Parser heuristics as settings: defaults, the TOML file, validation, per-format cache keys, effects, explain."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.parsing import ParseOptions, ParserHeuristics, explain_text, load_parser_heuristics, parse
from chunkbench_core.parsing.heuristics import PDFHeuristics, QAHeuristics, TableHeuristics
from tests.core.parsing import builders


def test_defaults_are_todays_rules() -> None:
    h = ParserHeuristics()
    assert h.qa.question_markers == ("سوال", "سؤال", "پرسش", "question", "q")
    assert h.qa.answer_markers == ("پاسخ", "جواب", "answer", "a")
    assert (h.tables.header_max_chars, h.tables.header_max_words) == (60, 6)
    assert h.pdf.heading_size_ratio == 1.15 and h.pdf.max_heading_chars == 150
    assert h.changed() == {}


def test_the_template_round_trips_and_a_file_overrides_only_what_it_names(tmp_path: Path) -> None:
    path = tmp_path / "parser.toml"
    path.write_text(ParserHeuristics().to_toml(), encoding="utf-8")
    assert load_parser_heuristics(path) == ParserHeuristics()
    path.write_text(
        '[qa]\nquestion_markers = ["Frage"]\nanswer_markers = ["Antwort"]\n\n'
        "[pdf]\nchapter_patterns = ['Item\\s+\\d+\\.']\nheading_size_ratio = 1.3\n",
        encoding="utf-8",
    )
    h = load_parser_heuristics(path)
    assert h.qa.question_markers == ("Frage",) and h.pdf.heading_size_ratio == 1.3
    assert h.tables == TableHeuristics() and h.qa.numbered_questions is True
    assert h.changed() == {
        "qa": {"question_markers": ["Frage"], "answer_markers": ["Antwort"]},
        "pdf": {"heading_size_ratio": 1.3, "chapter_patterns": [r"Item\s+\d+\."]},
    }
    path.write_text("[pdf]\ncell_gap_ems = 2\n", encoding="utf-8")  # a whole number for a float setting
    assert load_parser_heuristics(path).fingerprint(".pdf") == ParserHeuristics().fingerprint(".pdf")


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "[qa]\nquestion_marker = ['Q']\n",
            r"unknown setting\(s\) \[qa\] question_marker; \[qa\] has question_markers",
        ),
        ("[headings]\nx = 1\n", r"unknown section\(s\) \[headings\]"),
        ("[pdf]\nchapter_patterns = ['(unclosed']\n", r"\[pdf\] chapter_patterns: '\(unclosed' is not a valid regular"),
        ("[pdf]\nnumbered_heading_pattern = '\\d+\\s'\n", r"needs a group around the number"),
        ("[tables]\nheader_max_words = 0\n", r"\[tables\] header_max_words must be a whole number of at least 1"),
        ("[tables]\nheader_max_chars = 'sixty'\n", r"header_max_chars must be a whole number"),
        ("[qa]\nquestion_markers = 'Q'\n", r"\[qa\] question_markers must be a list"),
        ("[qa]\nquestion_markers = []\n", r"question_markers needs at least one marker"),
        ("[pdf]\nrunning_line_share = 1.5\n", r"running_line_share must be between 0 and 1"),
        ("[pdf]\nheading_size_ratio = 0.9\n", r"heading_size_ratio must be above 1"),
        ("[pdf\n", r"not valid TOML"),
    ],
)
def test_bad_settings_are_refused_naming_the_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "parser.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        load_parser_heuristics(path)
    assert str(path) in str(info.value)


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="parser settings file not found"):
        load_parser_heuristics(tmp_path / "nope.toml")


def test_a_setting_changes_the_cache_key_of_the_formats_it_applies_to_only() -> None:
    base = ParseOptions()
    pdf_pattern = ParseOptions(heuristics=ParserHeuristics(pdf=PDFHeuristics(section_patterns=(r"§\s*\d+",))))
    qa_marker = ParseOptions(heuristics=ParserHeuristics(qa=QAHeuristics(question_markers=("Frage",))))
    header = ParseOptions(heuristics=ParserHeuristics(tables=TableHeuristics(header_max_words=9)))
    caption = ParseOptions(heuristics=ParserHeuristics(tables=TableHeuristics(caption_lines=1)))
    changed = {
        name: {
            suffix
            for suffix in (".pdf", ".docx", ".doc", ".xlsx", ".csv", ".md", ".txt")
            if options.fingerprint(suffix) != base.fingerprint(suffix)
        }
        for name, options in (("pdf", pdf_pattern), ("qa", qa_marker), ("header", header), ("caption", caption))
    }
    assert changed == {
        "pdf": {".pdf"},
        "qa": {".pdf", ".docx", ".doc"},
        "header": {".pdf", ".docx", ".doc", ".xlsx", ".csv"},
        "caption": {".pdf", ".docx", ".doc"},
    }
    assert pdf_pattern.fingerprint() != base.fingerprint()  # the whole-corpus digest covers everything


def test_question_markers_change_what_is_a_qa_pair(tmp_path: Path) -> None:
    from docx import Document

    doc = Document()
    doc.add_paragraph("Frage: Wie melde ich einen Schaden?")
    doc.add_paragraph("Antwort: Über das Portal.")
    path = tmp_path / "faq.docx"
    doc.save(str(path))
    assert [u.content_type for u in parse(path).units] == ["paragraph", "paragraph"]
    german = ParserHeuristics(
        qa=QAHeuristics(question_markers=("Frage",), answer_markers=("Antwort",), inline_answer_markers=("Antwort",))
    )
    parsed = parse(path, ParseOptions(heuristics=german))
    assert [u.content_type for u in parsed.units] == ["qa_pair"]
    assert parsed.explain[-1].rule == "question marker 'Frage:' + answer marker 'Antwort:' in the next paragraph"


def test_pdf_heading_pattern_and_table_thresholds_are_applied(tmp_path: Path, dejavu: None) -> None:
    pdf = builders._pdf()
    pdf.add_page()
    pdf.set_font("DejaVu", "", 11)
    pdf.multi_cell(0, 6, "Opening paragraph of the report, long enough for the text layer gate to pass easily. " * 3)
    pdf.ln(6)
    pdf.cell(0, 6, "Item 7 Risks", new_x="LMARGIN", new_y="NEXT")
    pdf.ln(6)
    pdf.multi_cell(0, 6, "The risks of the business are described in this section of the report in full. " * 3)
    path = tmp_path / "items.pdf"
    pdf.output(str(path))
    assert [u.heading_path for u in parse(path).units][-1] == []
    items = ParserHeuristics(pdf=PDFHeuristics(chapter_patterns=(r"item\s+\d+",)))
    parsed = parse(path, ParseOptions(heuristics=items))
    assert parsed.units[-1].heading_path == ["Item 7 Risks"]
    assert parsed.explain[0].rule == "level 1: text pattern 'item\\\\s+\\\\d+' ([pdf] chapter_patterns)"
    assert "settings changed from the defaults: [pdf] chapter_patterns = ['item\\\\s+\\\\d+']" in explain_text(
        parsed, items
    )


def test_header_thresholds_decide_the_header(tmp_path: Path) -> None:
    from docx import Document

    doc = Document()
    table = doc.add_table(rows=2, cols=2)
    for c, (head, value) in enumerate((("Number of days of annual leave", "27"), ("Notes", "paid"))):
        table.cell(0, c).text, table.cell(1, c).text = head, value
    path = tmp_path / "leave.docx"
    doc.save(str(path))
    assert parse(path).units[-1].text == "Number of days of annual leave: 27 | Notes: paid"
    strict = ParserHeuristics(tables=TableHeuristics(header_max_words=4))
    parsed = parse(path, ParseOptions(heuristics=strict))
    assert [u.text for u in parsed.units] == ["Number of days of annual leave | Notes", "27 | paid"]
    assert "longer than a header (60 characters, 4 words" in parsed.explain[0].rule


def test_explain_text_lists_each_decision(rich_docx: Path) -> None:
    parsed = parse(rich_docx)
    text = explain_text(parsed, ParserHeuristics())
    assert text.splitlines()[:2] == [
        "rich.docx (docx): 6 headings, 4 tables, 3 Q&A pairs",
        "parser settings: the defaults",
    ]
    assert "heading (line 1): Branch guide\n  rule: level 1: Word paragraph style 'heading 1'" in text
    assert (
        "table (lines 7-8): header: Branch | City | Phone; title: Contacts\n"
        "  rule: row 1 is a header: every cell is short, distinct and not a number; "
        "title from the heading above the table"
    ) in text
    assert "rule: no header: the first row is data, '1402' is a number" in text
    assert (
        "Q&A pair (lines 43-44): Q: How do I file a claim?\n  rule: question marker 'Q:' + answer marker 'A:'"
    ) in text
    # the record survives the round trip through storage (and the isolated parser's pipe)
    again = type(parsed).from_dict(parsed.to_dict())
    assert again.explain == parsed.explain


def test_options_refuse_something_else_than_heuristics() -> None:
    with pytest.raises(ConfigError, match="ParseOptions.heuristics must be a ParserHeuristics"):
        ParseOptions(heuristics={"qa": {}})  # type: ignore[arg-type]  # a wrong type on purpose: the check is what is tested
    with pytest.raises(ConfigError, match=r"\[tables\] caption_lines must be a whole number of at least 0"):
        ParserHeuristics(tables=replace(TableHeuristics(), caption_lines=-1))
