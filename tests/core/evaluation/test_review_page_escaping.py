"""The review page's embedded data cannot end its <script> element or break the script, whatever a question holds:
``<``, ``>``, ``&`` and the JavaScript line separators U+2028 / U+2029 are escaped, and the data reads back whole."""

from __future__ import annotations

import json

from chunkbench_core.evaluation.review import locate_file, review_page

from .test_locate import DOCUMENTS, write

HOSTILE = "</script><script>alert(1)</script> <!-- a & b > c \u2028 next \u2029 end"


def test_every_character_that_could_end_or_break_the_script_is_escaped(tmp_path):
    path = write(
        tmp_path,
        "hostile.json",
        {
            "name": "hostile",
            "questions": [
                {
                    "id": "q1",
                    "question": HOSTILE,
                    "labels": {"note": "</SCRIPT > & <b>"},
                    "expected_answer": "Cloud growth was driven by Azure consumption across many regions.",
                }
            ],
        },
    )
    locate_file(path, DOCUMENTS)  # the page shows the questions with located evidence
    page, n = review_page(path, tmp_path / "hostile.review.html", DOCUMENTS)
    assert n == 1
    text = page.read_text(encoding="utf-8")
    opening = '<script type="application/json" id="review-data">'
    embedded = text[text.index(opening) + len(opening) :]
    embedded = embedded[: embedded.index("</script>")]
    for character in ("<", ">", "&", "\u2028", "\u2029"):
        assert character not in embedded, repr(character)
    [question] = json.loads(embedded)["questions"]
    assert question["question"] == HOSTILE and question["labels"] == {"note": "</SCRIPT > & <b>"}
    assert text.count("<script") == 2 and list(tmp_path.glob(".*.tmp")) == []  # the data's own and the page's
