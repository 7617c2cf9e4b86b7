"""The "Question problems" section of the managerial and technical reports.

Lists every problem of the question sets as of the latest experiment (the
``question_errors`` results table: a file that could not be read, or one question dropped
alone) and how many questions are judge-only (no evidence references: left out of the
evidence metrics, scored by the LLM judge when one is configured).
"""

from __future__ import annotations

from .columns import value
from .data import ReportData
from .html import esc, table


def _judge_only_count(data: ReportData) -> int:
    q = data.questions
    if q.empty or "judge_only" not in q.columns:
        return 0
    flagged = q[q["judge_only"].fillna(False).astype(bool)]
    return int(flagged[["question_set", "question_id"]].drop_duplicates().shape[0])


def render_parse_ceiling(data: ReportData) -> str:
    """The sentence beside the scores when the parser lost evidence passages ("" when it kept them all)."""
    from chunkbench_core.evaluation.evidence import ceiling_from_rows, scores_cover

    frame = data.parse_ceiling
    if frame is None or frame.empty:
        return ""
    sentence = scores_cover(ceiling_from_rows(frame.to_dict("records")))
    return f"<p class='note' id='parse-ceiling'>{esc(sentence)}</p>" if sentence else ""


def render_question_problems(data: ReportData) -> str:
    """The section's HTML (heading included); says so plainly when there is no problem."""
    parts = ["<h2 id='question-problems'>Question problems</h2>"]
    errors = data.question_errors
    if errors.empty:
        parts.append(
            "<p class='good' id='no-question-problems'>Every question set loaded and every reference "
            "was found in the documents.</p>"
        )
    else:
        n_questions = int(errors["question_id"].notna().sum())
        n_files = int(errors["question_id"].isna().sum())
        parts.append(
            f"<p class='fail'>{n_questions} question(s) were left out of these results"
            + (f" and {n_files} file(s) could not be read" if n_files else "")
            + ". Each is listed once; fix it and run again (check with "
            "<code>chunkbench questions check</code>).</p>"
        )
        rows = [
            [
                esc(value(r, "file")),
                esc(value(r, "question_id") or "(whole file)"),
                esc(value(r, "field") or ""),
                esc(value(r, "reason")),
            ]
            for r in errors.to_dict("records")
        ]
        parts.append(table(["file", "question", "field", "problem"], rows, element_id="question-errors"))
    judge_only = _judge_only_count(data)
    if judge_only:
        parts.append(
            f"<p class='note' id='judge-only-note'>{judge_only} question(s) are judge-only, not scored "
            "without an LLM: they have no evidence (neither evidence spans nor source documents), so they "
            "are left out of recall, precision and the other evidence measures (not scored 0) and are "
            "scored by the LLM judge when one is configured.</p>"
        )
    return "".join(parts)
