import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkbench_core.chunking.sentences import (
    paragraph_spans,
    section_paragraph_spans,
    sentence_spans,
    sentence_spans_with_level,
    split_sentences,
)


def test_latin_sentences_respect_abbreviations_initials_and_decimals():
    text = "Dr. Smith studied P. falciparum, e.g. in blood. It took 37.5 hours! Was it worth it? Yes (mostly)."
    assert split_sentences(text) == [
        "Dr. Smith studied P. falciparum, e.g. in blood.",
        "It took 37.5 hours!",
        "Was it worth it?",
        "Yes (mostly).",
    ]


def test_persian_sentences_end_at_persian_question_mark_and_period_not_at_arabic_semicolon():
    text = "این یک جمله است. آیا این جمله دوم است؟ بله؛ درست است! پایان"
    assert split_sentences(text) == ["این یک جمله است.", "آیا این جمله دوم است؟", "بله؛ درست است!", "پایان"]


def test_zero_width_non_joiner_stays_inside_words():
    text = "کارکنان می\u200cتوانند مرخصی بگیرند. درخواست\u200cها بررسی می\u200cشود."
    assert split_sentences(text) == ["کارکنان می\u200cتوانند مرخصی بگیرند.", "درخواست\u200cها بررسی می\u200cشود."]


def test_headings_and_blank_lines_always_end_a_unit():
    text = "# Title\n\nno punctuation here\n\nsecond paragraph\n## Sub\ntext"
    assert split_sentences(text) == ["# Title", "no punctuation here", "second paragraph", "## Sub", "text"]


@pytest.mark.parametrize(
    "text,level,expected",
    [
        ("One. Two. Three.", "punctuation", ["One.", "Two.", "Three."]),
        ("one. two. three.", "single", ["one. two. three."]),
        ("row one\nrow two\nrow three", "lines", ["row one", "row two", "row three"]),
        ("a single unit without any break", "single", ["a single unit without any break"]),
        ("  \n ", "single", []),
    ],
)
def test_fallback_chain_levels(text, level, expected):
    spans, used = sentence_spans_with_level(text)
    assert used == level
    assert [text[s:e] for s, e in spans] == expected


def test_spans_of_a_slice_stay_inside_it():
    text = "ignored. A one. A two. ignored too."
    spans = sentence_spans(text, 9, 22)
    assert [text[s:e] for s, e in spans] == ["A one.", "A two."]


def test_paragraphs_and_section_paragraphs():
    text = "# H\n\nfirst para\nstill first\n\n## H2\n\nsecond\n\n\n## Trailing"
    assert [text[s:e] for s, e in paragraph_spans(text)] == [
        "# H",
        "first para\nstill first",
        "## H2",
        "second",
        "## Trailing",
    ]
    assert [text[s:e] for s, e in section_paragraph_spans(text)] == [
        "# H\n\nfirst para\nstill first",
        "## H2\n\nsecond\n\n\n## Trailing",
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(list("aB .?!؟؛\n#\u200c") + ["سلام", "Dr", "e.g", "\n\n", "# "]), max_size=60).map("".join)
)
def test_sentence_spans_are_trimmed_ordered_and_cover_every_non_space_char(text):
    spans = sentence_spans(text)
    covered = set()
    last_end = 0
    for s, e in spans:
        assert s >= last_end and s < e
        assert not text[s].isspace() and not text[e - 1].isspace()
        covered.update(range(s, e))
        last_end = e
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
