"""Located evidence: answer words and figures found in the source documents, common phrases never, the wrong
document never; the review turns accepted references into ordinary ones and remembers rejected ones."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from chunkbench_core.evaluation.locate import Locator, figures, line_span, locate_questions
from chunkbench_core.evaluation.question_check import check_questions
from chunkbench_core.evaluation.questions import Question, load_question_set
from chunkbench_core.evaluation.review import apply_decisions, decide_by_score, locate_file, read_decisions

BOILERPLATE = "For the three months ended September 30, 2023 the company reported its results as follows."
DOCUMENTS = {
    "aapl-2023-q3.md": (
        f"# Apple Inc. quarterly report\n\n{BOILERPLATE}\n\n"
        "| Item | Three Months Ended July 1, 2023 | Three Months Ended June 25, 2022 |\n|---|---|---|\n"
        "| Total net sales | 81,797 | 82,959 |\n| Operating loss | (3,117) | (2,100) |\n\n"
        'The Company\'s gross margin percentage was driven by a "different mix" of products and services, '
        "partially offset by weakness in foreign currencies.\n\n"
        f"{BOILERPLATE}\n"
    ),
    "msft-2023-q3.md": (
        f"# Microsoft quarterly report\n\n{BOILERPLATE}\n\n| Total revenue | 56,517 | 50,122 |\n\n"
        'The Company\'s gross margin percentage was driven by a "different mix" of products and services, '
        "partially offset by weakness in foreign currencies.\n\n"
        "Cloud growth was driven by Azure consumption across many regions and industries.\n\n"
        f"{BOILERPLATE}\n"
    ),
    "goog-2023-q3.md": f"# Alphabet quarterly report\n\n{BOILERPLATE}\n\n| Revenues | 76,693 | 69,092 |\n\n{BOILERPLATE}\n",
}


def located(question: Question, documents=DOCUMENTS):
    [out], report = locate_questions([question], Locator(documents))
    return [r for r in out.references if r.located], report


def test_figures_are_read_in_every_usual_format():
    found = figures(
        "Sales were $82,959 million, 82959 or 82,959; a (3,117) loss, -3,117; 36.4% margin; $82.9 billion in 2023"
    )
    values = [(f.value, f.negative, f.scale, f.percent) for f in found]
    assert values[:3] == [
        (Decimal(82959), False, 6, False),
        (Decimal(82959), False, 0, False),
        (Decimal(82959), False, 0, False),
    ]
    assert values[3:5] == [(Decimal(3117), True, 0, False), (Decimal(3117), True, 0, False)]
    assert values[5] == (Decimal("36.4"), False, 0, True) and values[6] == (Decimal("82.9"), False, 9, False)
    assert found[7].is_year and not found[7].informative
    assert not figures("on day 30")[0].informative


def test_a_sentence_quoted_with_curly_quotes_and_other_dashes_is_found_in_its_source_only():
    question = Question(
        "q1",
        "What drove Apple's gross margin?",
        documents=("aapl-*",),
        expected_answer="Apple said “the Company’s gross margin percentage was driven by a ‘different "
        "mix’ of products and services” — partially offset by weakness.",
    )
    refs, report = located(question)
    [ref] = refs  # the Microsoft filing holds the same sentence: never proposed
    assert ref.document == "aapl-2023-q3.md" and ref.located_by == "answer_words" and ref.score == 1.0
    assert (
        ref.content.startswith("The Company's gross margin percentage")
        and "partially offset by weakness" in ref.content
    )
    assert DOCUMENTS[ref.document][ref.start : ref.end] == ref.content
    assert report.by_method == {"answer_words": 1} and report.n_found == 1


def test_figures_take_the_table_row_holding_them_whatever_their_format():
    question = Question(
        "q2",
        "Net sales a year earlier, and the operating loss?",
        documents=("aapl-2023-q3.md",),
        expected_answer="Net sales were $82959 million; the operating loss was 3,117.",
    )
    refs, _ = located(question)
    contents = {r.content: r for r in refs}
    assert set(contents) == {"| Total net sales | 81,797 | 82,959 |", "| Operating loss | (3,117) | (2,100) |"}
    assert all(r.located_by == "answer_figures" for r in refs)


def test_a_scaled_figure_matches_a_table_in_millions_with_a_lower_score():
    question = Question("q3", "Net sales?", documents=("aapl-2023-q3.md",), expected_answer="About $82.9 billion.")
    [ref], _ = located(question)
    assert ref.content == "| Total net sales | 81,797 | 82,959 |" and ref.located_by == "answer_figures_scaled"
    assert ref.score < 0.5


def test_common_phrases_alone_never_count():
    question = Question("q4", "Which period?", expected_answer=BOILERPLATE)
    refs, report = located(question)
    assert refs == [] and report.without == ["q4"]
    short = Question("q5", "When?", expected_answer="The quarter ended September 30.")
    assert located(short)[0] == []


SHOP = {
    "rental_terms.md": "# Rental terms\n\nA flat tyre is normal wear. A bent wheel costs 45 euros.\n"
    "A private tour costs 35 euros per rider,\nbikes and helmets included.\n"
    "The shop is open on Mondays from April.\n",
    "tours.md": "# Tours\n\nThe lighthouse tour leaves every Saturday.\n",
    "storage.md": "# Storage\n\nStorage costs 12 euros per month.\n",
}


def test_a_short_answer_found_whole_counts_and_a_small_part_of_one_does_not():
    # too few informative characters for a long answer, but the whole of this one: sure evidence
    [ref], _ = located(Question("s1", "Bent wheel?", expected_answer="A bent wheel costs 45 euros."), SHOP)
    assert ref.content == "A bent wheel costs 45 euros" and ref.score == 0.8
    # a word inserted ("with") and a line break: two runs of one span
    [ref], _ = located(
        Question("s2", "Tour price?", expected_answer="35 euros per rider with bikes and helmets included."), SHOP
    )
    assert ref.content == "35 euros per rider,\nbikes and helmets included"
    # three words of a longer answer are not evidence of it
    refs, report = located(
        Question(
            "s3", "Open?", expected_answer="The shop is open on Mondays and Tuesdays through the whole summer season."
        ),
        SHOP,
    )
    assert refs == [] and report.without == ["s3"]


def test_an_answer_of_three_or_four_words_found_whole_counts_and_the_same_words_inside_a_longer_answer_do_not():
    # the short answers of a team's spreadsheet: found whole, in order, in their source document
    [ref], _ = located(Question("w1", "Which tour?", expected_answer="the lighthouse tour"), SHOP)
    assert ref.content == "The lighthouse tour" and ref.document == "tours.md" and ref.score == 0.8
    [ref], _ = located(Question("w2", "Storage?", expected_answer="Storage costs 12 euros"), SHOP)
    assert ref.content == "Storage costs 12 euros" and ref.document == "storage.md"
    # the same four words as part of a longer answer are not evidence of it
    refs, report = located(
        Question(
            "w3", "Storage?", expected_answer="Storage costs 12 euros only for members who rent a locker for the winter"
        ),
        SHOP,
    )
    assert refs == [] and report.without == ["w3"]
    # a whole answer with too few informative characters is not evidence ("on Mondays" is 7)
    refs, _ = located(Question("w4", "When?", expected_answer="open on Mondays"), SHOP)
    assert refs == []


def test_an_answer_giving_times_of_day_is_found_whole():
    # a spreadsheet's answer with opening hours: its times are informative words, its hours alone are not
    library = {
        "library.md": "# Library\n\nThe reading room is open from 8:00 to 22:00 on weekdays and from 10:00 to "
        "18:00 on Saturdays.\n",
        **SHOP,
    }
    [ref], _ = located(Question("t1", "Saturday hours?", expected_answer="From 10:00 to 18:00 on Saturdays."), library)
    assert ref.document == "library.md" and ref.content == "from 10:00 to 18:00 on Saturdays" and ref.score == 0.8
    # the same hours without the colon are small whole numbers: too little to be evidence
    refs, report = located(Question("t2", "Saturday hours?", expected_answer="From 10 to 18 on Saturdays."), library)
    assert refs == [] and report.without == ["t2"]


def test_without_source_documents_the_whole_corpus_is_searched_and_a_sentence_in_two_places_is_kept_apart():
    unique = Question("q6", "Cloud?", expected_answer="Cloud growth was driven by Azure consumption across regions.")
    [ref], _ = located(unique)
    assert ref.document == "msft-2023-q3.md"
    figure = Question("q7", "Alphabet revenue?", expected_answer="Revenues of $76,693 million.")
    [ref], _ = located(figure)
    assert ref.document == "goog-2023-q3.md" and ref.content == "| Revenues | 76,693 | 69,092 |"


def test_a_long_paragraph_gives_the_sentence_holding_the_figure():
    text = "Intro. " * 80 + "Revenue grew to 12,345 units in the year. " + "More words here. " * 40
    start, end = line_span(text, text.index("12,345"))
    assert text[start:end] == "Revenue grew to 12,345 units in the year."


def write(folder, name, data):
    path = folder / name
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def test_seed_format_files_get_evidence_from_their_expected_answers_and_relocating_is_idempotent(tmp_path):
    """The plain format (id, question, expected_answer, category, difficulty): located, reviewed, checked."""
    path = write(
        tmp_path,
        "seed.json",
        {
            "name": "seed",
            "description": "kept",
            "questions": [
                {
                    "id": "s1",
                    "question": "Alphabet revenue?",
                    "expected_answer": "Revenues of $76,693 million.",
                    "category": "figures",
                    "difficulty": "easy",
                },
                {
                    "id": "s2",
                    "question": "Cloud?",
                    "expected_answer": "Cloud growth was driven by Azure consumption across "
                    "many regions and industries.",
                },
                {"id": "s3", "question": "Which period?", "expected_answer": BOILERPLATE},
                {
                    "id": "s4",
                    "question": "Hand-written?",
                    "references": [{"document": "goog-2023-q3.md", "content": "Alphabet quarterly report"}],
                },
            ],
        },
    )
    before = check_questions(tmp_path, DOCUMENTS)
    assert before.n_judge_only == 3 and "`chunkbench questions locate FILE`" in before.summary()
    report, problems, written = locate_file(path, DOCUMENTS)
    assert problems == [] and written == path
    assert report.n_found == 2 and report.without == ["s3"] and report.n_searched == 3
    assert "evidence located for 2 of 3 question(s)" in report.summary()
    first = path.read_text(encoding="utf-8")
    data = json.loads(first)
    assert data["description"] == "kept" and data["questions"][0]["references"][0]["located_by"] == "answer_figures"
    assert data["questions"][3]["references"] == [
        {"document": "goog-2023-q3.md", "content": "Alphabet quarterly report"}
    ]
    locate_file(path, DOCUMENTS)
    assert path.read_text(encoding="utf-8") == first  # re-running gives the same file
    check = check_questions(tmp_path, DOCUMENTS)
    assert check.ok and check.n_judge_only == 1 and check.n_located == 2

    # review: s1 accepted, s2 rejected (and never proposed again)
    qs = load_question_set(path)
    s1, s2 = qs.questions[0].references[0], qs.questions[1].references[0]
    decisions_path = write(
        tmp_path,
        "seed.decisions.json",
        {
            "chunkbench": "review-decisions",
            "decisions": [
                {"question_id": "s1", "document": s1.document, "start": s1.start, "end": s1.end, "decision": "accept"},
                {"question_id": "s2", "document": s2.document, "start": s2.start, "end": s2.end, "decision": "reject"},
                {"question_id": "s9", "document": "x.md", "start": 0, "end": 1, "decision": "accept"},
            ],
        },
    )
    outcome, _ = apply_decisions(path, read_decisions(decisions_path))
    assert (outcome.accepted, outcome.rejected, outcome.undecided) == (1, 1, 0) and len(outcome.unknown) == 1
    reviewed = load_question_set(path).questions
    assert reviewed[0].references[0].located_by == "" and reviewed[0].references[0].score is None
    assert reviewed[1].references == () and reviewed[1].metadata["rejected_evidence"][0]["start"] == s2.start
    relocated, _, _ = locate_file(path, DOCUMENTS)
    # the accepted evidence counts: not "located for 0 of 3 ... 3 without"
    assert relocated.reviewed == ["s1"] and relocated.without == ["s2", "s3"] and relocated.n_found == 0
    assert relocated.summary().startswith("evidence for 1 of 3 question(s) with an answer: 1 with reviewed evidence")
    assert relocated.summary().endswith("; 2 without")
    again = load_question_set(path).questions
    assert again[1].references == ()  # the rejected span is not proposed again
    assert again[0].references == reviewed[0].references  # the accepted one stays, ordinary
    assert check_questions(tmp_path, DOCUMENTS).ok  # the decisions file in the folder is not a question set


def test_a_score_threshold_accepts_the_sure_ones_and_rejects_the_others(tmp_path):
    path = write(
        tmp_path,
        "set.json",
        {
            "questions": [
                {
                    "id": "a",
                    "question": "?",
                    "expected_answer": "Cloud growth was driven by Azure consumption across many "
                    "regions and industries.",
                },
                {
                    "id": "b",
                    "question": "?",
                    "expected_answer": "About $82.9 billion.",
                    "references": [{"document": "aapl-2023-q3.md"}],
                },
            ]
        },
    )
    locate_file(path, DOCUMENTS)
    decisions = decide_by_score(path, 0.8)
    assert sorted(decisions.values()) == ["accept", "reject"]
    outcome, _ = apply_decisions(path, decisions)
    questions = load_question_set(path).questions
    assert (outcome.accepted, outcome.rejected) == (1, 1)
    assert questions[0].references[0].located_by == "" and questions[1].references == ()
    assert questions[1].documents == ("aapl-2023-q3.md",)  # the document-level reference stays


def test_bad_decisions_files_are_one_line(tmp_path):
    path = write(tmp_path, "d.json", {"decisions": [{"question_id": "a", "decision": "maybe"}]})
    with pytest.raises(Exception, match="decisions\\[0\\]"):
        read_decisions(path)
