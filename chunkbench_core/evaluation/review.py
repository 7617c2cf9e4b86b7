"""Located evidence in a question file: locate it, show it to a person, keep what they accept.

- :func:`locate_file` locates evidence for the questions of a question set file (``chunkbench questions
  locate``) and rewrites the file: hand-written and accepted references stay, earlier located ones are
  replaced by the new ones, everything else of the file (descriptions, metadata, questions with a
  problem) is kept as it was. Re-running gives the same file.
- :func:`review_page` writes a self-contained HTML page (works offline; its script and stylesheet ship in
  ``review_page/``) listing each located reference in its context, with accept / reject choices and
  "accept all above a score"; it saves the decisions as a JSON file.
- :func:`apply_decisions` (``chunkbench questions review FILE --decisions D``) turns accepted references into
  ordinary ones (``located_by`` and ``score`` removed) and removes rejected ones, remembering them in the
  question's ``metadata.rejected_evidence`` so that locating again never proposes them again.
  :func:`decide_by_score` makes the same decisions from a score threshold (``--accept-all``,
  ``--min-score``).
"""

from __future__ import annotations

import hashlib
import html
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from chunkbench_core.errors import QuestionSetError
from chunkbench_core.reporting.html import script_json
from chunkbench_core.storage.space import guard_writes

from .locate import DEFAULT_MIN_SCORE, LocateReport, Locator, locate_questions
from .questions import (
    DECISIONS_SUFFIX,
    decode_json_file,
    parse_question_set,
    reference_to_json,
    resolve_source_documents,
    write_question_file,
)

CONTEXT_CHARS = 240


def _load(path: str | Path) -> tuple[dict[str, Any], bytes]:
    data, raw = decode_json_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise QuestionSetError(
            str(path),
            "is not a question set: expected an object with a 'questions' list "
            "(import other formats with `chunkbench questions import`)",
        )
    return data, raw


def locate_file(
    path: str | Path, documents: Mapping[str, str], min_score: float = DEFAULT_MIN_SCORE, out: str | Path | None = None
) -> tuple[LocateReport, list[QuestionSetError], Path]:
    """Locate evidence from the expected answers of the questions of ``path`` and write the file (``out``, default
    ``path`` itself). Returns the report, the problems of questions left as they were, and the path written."""
    data, raw = _load(path)
    qs = parse_question_set(data, str(path), hashlib.sha256(raw).hexdigest())
    located, report = locate_questions(qs.questions, Locator(documents), min_score)
    by_id = {q.id: q for q in located}
    for item in data["questions"]:
        question = by_id.get(str(item.get("id"))) if isinstance(item, dict) and item.get("id") is not None else None
        if question is None or question.id not in report.located:
            continue
        kept = [r for r in (item.get("references") or []) if not (isinstance(r, dict) and r.get("located_by"))]
        refs = kept + [reference_to_json(r) for r in report.located[question.id]]
        if refs:
            item["references"] = refs
        else:
            item.pop("references", None)
    target = write_question_file(data, out or path)
    return report, qs.errors, target


# -- the review page ---------------------------------------------------------------------------------
def _asset(name: str) -> str:
    return resources.files("chunkbench_core.evaluation").joinpath("review_page", name).read_text(encoding="utf-8")


def decisions_name(path: str | Path) -> str:
    return Path(path).stem + DECISIONS_SUFFIX


def review_data(path: str | Path, documents: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What the page shows: each question with located references, each with the text around it."""
    data, raw = _load(path)
    qs = parse_question_set(data, str(path), hashlib.sha256(raw).hexdigest())
    questions = []
    for q in qs.questions:
        located = []
        for r in q.references:
            if not r.located:
                continue
            text = (documents or {}).get(r.document)
            before = after = ""
            if text is not None and r.start is not None and r.end is not None:
                before = text[max(0, r.start - CONTEXT_CHARS) : r.start]
                after = text[r.end : r.end + CONTEXT_CHARS]
            located.append(
                {
                    "document": r.document,
                    "start": r.start,
                    "end": r.end,
                    "content": r.content,
                    "located_by": r.located_by,
                    "score": r.score,
                    "before": before,
                    "after": after,
                }
            )
        if located:
            sources = list(resolve_source_documents(q, documents or {})) if q.documents else []
            questions.append(
                {
                    "id": q.id,
                    "question": q.question,
                    "expected_answer": q.expected_answer,
                    "labels": dict(q.labels),
                    "sources": sources or list(q.documents),
                    "located": located,
                }
            )
    return {
        "question_set": qs.name,
        "file": Path(path).name,
        "file_sha256": qs.sha256,
        "decisions_name": decisions_name(path),
        "questions": questions,
    }


def review_page(path: str | Path, out: str | Path, documents: Mapping[str, str] | None = None) -> tuple[Path, int]:
    """Write the review page of ``path`` to ``out``; returns the page and the number of located references."""
    payload = review_data(path, documents)
    n = sum(len(q["located"]) for q in payload["questions"])
    # <, >, & and the JavaScript line separators escaped: no text of a question can end the script element
    embedded = script_json(payload)
    title = f"Review located evidence: {payload['question_set']}"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{_asset("review.css")}</style></head>
<body>
<h1>{html.escape(title)}</h1>
<p class="meta">{n} located reference(s) in {len(payload["questions"])} question(s) of {html.escape(payload["file"])}.
Each was found in the documents from the question's expected answer (its words or its figures); the score says how
sure the match is (0 to 1). Accept the ones that are the evidence of the answer, reject the others, then save the
decisions and run <code>chunkbench questions review {html.escape(payload["file"])} --decisions
{html.escape(payload["decisions_name"])}</code>. Accepted references become ordinary references; rejected ones are
removed and never proposed again. Your choices are kept in this browser until you save.</p>
<div class="toolbar" role="toolbar">
<label>Score at least <input id="threshold" type="number" min="0" max="1" step="0.05" value="0.7"></label>
<button id="accept-above" type="button">Accept all at or above it</button>
<button id="clear" type="button">Clear all choices</button>
<button id="save" type="button" class="primary">Save decisions</button>
<span id="counts" class="counts"></span>
</div>
<p id="saved" class="note" role="status"></p>
<div id="questions"></div>
<noscript><p>This page needs JavaScript to record decisions; without it use
<code>chunkbench questions review FILE --min-score S</code>.</p></noscript>
<script type="application/json" id="review-data">{embedded}</script>
<script>{_asset("review.js")}</script>
</body></html>
"""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with guard_writes(target, f"the review page {target.name}", cleanup=[tmp]):  # never half written
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, target)
    return target, n


# -- decisions ---------------------------------------------------------------------------------------
@dataclass
class ReviewOutcome:
    accepted: int = 0
    rejected: int = 0
    undecided: int = 0
    unknown: list[str] = field(default_factory=list)  # decisions naming no located reference of the file

    def summary(self) -> str:
        text = (
            f"{self.accepted} located reference(s) accepted (now ordinary references), {self.rejected} rejected "
            f"(removed, never proposed again), {self.undecided} left to review"
        )
        if self.unknown:
            text += f"; {len(self.unknown)} decision(s) match no located reference of the file"
        return text


def _decision_key(question_id: Any, document: Any, start: Any, end: Any) -> tuple[str, str, int, int] | None:
    if not isinstance(question_id, str) or not isinstance(document, str):
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        return None
    return question_id, document, start, end


def read_decisions(path: str | Path) -> dict[tuple[str, str, int, int], str]:
    """The decisions file the review page saves: (question id, document, start, end) -> accept | reject."""
    data, _ = decode_json_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("decisions"), list):
        raise QuestionSetError(
            str(path),
            "is not a review decisions file: expected an object with a 'decisions' "
            "list (the review page's Save decisions writes one)",
        )
    out: dict[tuple[str, str, int, int], str] = {}
    for i, item in enumerate(data["decisions"]):
        key = (
            _decision_key(*(item.get(k) for k in ("question_id", "document", "start", "end")))
            if isinstance(item, dict)
            else None
        )
        decision = item.get("decision") if isinstance(item, dict) else None
        if key is None or decision not in ("accept", "reject"):
            raise QuestionSetError(
                str(path),
                "each decision needs question_id, document, start, end and a decision of accept or reject",
                field=f"decisions[{i}]",
            )
        out[key] = decision
    return out


def apply_decisions(
    path: str | Path, decisions: Mapping[tuple[str, str, int, int], str], out: str | Path | None = None
) -> tuple[ReviewOutcome, Path]:
    """Accepted located references become ordinary ones; rejected ones are removed and remembered."""
    data, _ = _load(path)
    outcome = ReviewOutcome()
    used: set[tuple[str, str, int, int]] = set()
    for item in data["questions"]:
        if not isinstance(item, dict) or not isinstance(item.get("references"), list):
            continue
        refs = []
        for ref in item["references"]:
            if not (isinstance(ref, dict) and ref.get("located_by")):
                refs.append(ref)
                continue
            key = _decision_key(item.get("id"), ref.get("document"), ref.get("start"), ref.get("end"))
            decision = decisions.get(key) if key else None
            if key is not None and decision == "accept":
                used.add(key)
                outcome.accepted += 1
                refs.append({k: v for k, v in ref.items() if k not in ("located_by", "score")})
            elif key is not None and decision == "reject":
                used.add(key)
                outcome.rejected += 1
                metadata = item.setdefault("metadata", {})
                if isinstance(metadata, dict):
                    metadata.setdefault("rejected_evidence", []).append(
                        {
                            "document": ref["document"],
                            "start": ref["start"],
                            "end": ref["end"],
                            "content": str(ref.get("content", ""))[:200],
                        }
                    )
            else:
                outcome.undecided += 1
                refs.append(ref)
        if refs:
            item["references"] = refs
        else:
            item.pop("references", None)
    outcome.unknown = [f"{k[0]} {k[1]} [{k[2]}:{k[3]}]" for k in decisions if k not in used]
    return outcome, write_question_file(data, out or path)


def decide_by_score(path: str | Path, min_score: float | None) -> dict[tuple[str, str, int, int], str]:
    """Decisions from a threshold: accept the located references scoring at least ``min_score`` and reject the
    others (``None``: accept them all)."""
    data, _ = _load(path)
    out: dict[tuple[str, str, int, int], str] = {}
    for item in data["questions"]:
        if not isinstance(item, dict):
            continue
        for ref in item.get("references") or []:
            if isinstance(ref, dict) and ref.get("located_by"):
                key = _decision_key(item.get("id"), ref.get("document"), ref.get("start"), ref.get("end"))
                score = ref.get("score")
                if key:
                    ok = min_score is None or (isinstance(score, (int, float)) and score >= min_score)
                    out[key] = "accept" if ok else "reject"
    return out
