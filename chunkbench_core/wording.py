"""Words shown to people: one helper for counted nouns, used by evaluation texts and reports alike."""

from __future__ import annotations

from typing import Any


def plural(n: Any, word: str, words: str | None = None) -> str:
    """``"1 question"``, ``"3 questions"`` (``words`` for irregular plurals)."""
    count = int(n)
    return f"{count} {word if count == 1 else (words or word + 's')}"


def scored_counts(n_scored: Any, n_judge_only: Any = 0, n_documents_only: Any = 0, judged: bool = False) -> str:
    """How every view counts a run's questions: ``"32 scored (7 judge-only, not scored without an LLM)"``.

    ``n_scored``: questions scored on evidence (spans or source documents); ``n_judge_only``: questions with no
    evidence at all, scored only by an LLM judge (``judged``: one ran); ``n_documents_only``: of the scored,
    those with source documents but no evidence spans (scored by the document-level metrics only).
    """
    scored, judge_only, documents = _count(n_scored), _count(n_judge_only), _count(n_documents_only)
    if not judge_only:
        head = f"{scored} scored (0 judge-only)"
    else:
        head = f"{scored} scored ({judge_only} judge-only, " + (
            "scored by the LLM judge only)" if judged else "not scored without an LLM)"
        )
    if documents:
        which = (
            f"all {scored}"
            if documents == scored and scored > 1
            else "it"
            if documents == scored
            else f"{documents} of the {scored}"
        )
        head += f"; {which} at the document level only (source documents, no evidence spans)"
    return head


def _count(value: Any) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    return 0 if number != number else int(number)
