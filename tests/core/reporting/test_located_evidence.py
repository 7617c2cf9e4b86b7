"""Located evidence (found by ``questions locate``, not reviewed) is marked apart from hand-written evidence in the
reports: the inspector's data flags it per question and per chunk; the counts read "N scored (M judge-only)"."""

from __future__ import annotations

import json

from chunkbench_core.reporting.columns import question_counts
from chunkbench_core.reporting.data import load_report_data
from chunkbench_core.reporting.inspector import inspector_payload
from chunkbench_core.storage.results_db import ResultsDB


def test_the_inspector_marks_located_evidence(extended_results: ResultsDB) -> None:
    data = load_report_data(extended_results)
    questions = data.questions
    # the question whose evidence the retrieved chunks hold most: its spans made "located"
    chosen = None
    for index, row in questions.iterrows():
        refs = json.loads(row["references"]) if isinstance(row.get("references"), str) else []
        if refs and (row.get("recall") or 0) > 0:
            chosen = index
            break
    assert chosen is not None
    refs = json.loads(questions.at[chosen, "references"])
    questions.at[chosen, "references"] = json.dumps([{**r, "located_by": "answer_words", "score": 0.8} for r in refs])
    questions["evidence_origin"] = "written"
    questions.at[chosen, "evidence_origin"] = "located"
    payload = inspector_payload(data, extended_results)
    located = [r for r in payload["results"].values() if r["located"]]
    assert len(located) == 1
    result = located[0]
    assert result["origin"] == "located" and {x["by"] for x in result["located"]} == {"answer_words"}
    assert all(x["score"] == 0.8 for x in result["located"])
    with_evidence = [h for h in result["hits"] if h["evChars"]]
    assert with_evidence and all(h["evLocated"] for h in with_evidence)
    # hand-written evidence is not flagged
    others = [h for r in payload["results"].values() if not r["located"] for h in r["hits"] if h["evChars"]]
    assert others and not any(h.get("evLocated") for h in others)


def test_counts_read_n_scored_m_judge_only() -> None:
    assert (
        question_counts({"n_questions": 32, "n_judge_only": 7}) == "32 scored (7 judge-only, not scored without an LLM)"
    )
    assert (
        question_counts({"n_questions": 32, "n_judge_only": 7, "n_judged": 39})
        == "32 scored (7 judge-only, scored by the LLM judge only)"
    )
    assert question_counts({"n_questions": 5, "n_judge_only": None}) == "5 scored (0 judge-only)"


def test_the_recall_sentence_counts_only_questions_with_evidence_spans(extended_results: ResultsDB) -> None:
    """Recall averages over the questions with evidence spans: a question naming only its source documents is
    scored (at the document level) but not in that average, so the sentence gives the smaller count."""
    import re

    from chunkbench_core.reporting.managerial import render_managerial

    data = load_report_data(extended_results)
    data.board["n_questions"] = 7
    data.board["n_documents_only"] = 1
    html = render_managerial(data, [], "managerial")
    assert re.search(r"of the evidence text \(recall [0-9.]+ over 6 questions\)", html), html
    assert "Questions: 7 scored (0 judge-only); 1 of the 7 at the document level only" in html
