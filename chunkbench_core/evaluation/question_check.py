"""Check question sets against the parsed corpus, without retrieving anything.

``check_questions`` loads every question set of a folder and locates every reference in
the parsed documents. It is what ``chunkbench questions check`` prints, what an experiment
evaluates (the resolved questions) and what the ``question_errors`` results table holds
(the problems): each problem once, naming the file, the question id, the field and the
reason. Nothing is lost to a problem: a bad file is left out alone, a bad question is
dropped alone, and the others are evaluated. A document-level reference (a name or a glob) must
match a parsed document. The summary counts the questions with evidence spans, with source
documents only (document-level evidence) and judge-only ones, and says how to give the judge-only
ones evidence from their expected answers (``chunkbench questions locate``). It also measures the parse
ceiling: the share of the evidence passages found in the parsed text (the spans of the usable questions, and
the passages an import could not find, kept in a question's ``metadata.evidence_not_found``, looked for again:
a new parse may keep them).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkbench_core.errors import QuestionSetError

from .evidence import EvidenceCheck, ParseCeiling, evidence_kind, find_evidence
from .experiment import ResolvedQuestion, resolve_questions
from .questions import QuestionSet, document_problems, load_question_sets


def _unique(problems: list[QuestionSetError]) -> list[QuestionSetError]:
    seen: set[tuple[str, str | None, str | None, str]] = set()
    out = []
    for problem in problems:
        key = (problem.file, problem.question_id, problem.field, problem.reason)
        if key not in seen:
            seen.add(key)
            out.append(problem)
    return out


@dataclass
class QuestionCheck:
    folder: str
    sets: list[QuestionSet] = field(default_factory=list)
    resolved: list[ResolvedQuestion] = field(default_factory=list)
    problems: list[QuestionSetError] = field(default_factory=list)
    #: the share of the evidence passages found in the parsed text
    ceiling: ParseCeiling = field(default_factory=ParseCeiling)
    #: questions a sampled corpus sets aside: their evidence lies in documents it left out (not problems)
    set_aside: int = 0

    @property
    def n_judge_only(self) -> int:
        """No evidence at all: neither a span nor a source document."""
        return sum(r.question.judge_only for r in self.resolved)

    @property
    def n_documents_only(self) -> int:
        """Evidence at the document level only (source documents, no span)."""
        return sum(not r.references and not r.question.judge_only for r in self.resolved)

    @property
    def n_located(self) -> int:
        """Questions with evidence spans found by ``questions locate`` and not reviewed yet."""
        return sum(r.question.n_located > 0 for r in self.resolved)

    @property
    def n_locatable(self) -> int:
        """Judge-only questions with an expected answer: ``questions locate`` can look for their evidence."""
        return sum(r.question.judge_only and bool(r.question.expected_answer.strip()) for r in self.resolved)

    @property
    def n_questions(self) -> int:
        """Questions of the sets that loaded, those dropped while loading included."""
        return sum(len(qs.questions) + len(qs.errors) for qs in self.sets)

    @property
    def unreadable_files(self) -> list[str]:
        loaded = {qs.path for qs in self.sets}
        return sorted({p.file for p in self.problems if p.file not in loaded})

    @property
    def ok(self) -> bool:
        return not self.problems

    def set_name(self, file: str) -> str | None:
        for qs in self.sets:
            if qs.path == file:
                return qs.name
        return None

    def rows(self, checked_at: dt.datetime | None = None) -> list[dict[str, Any]]:
        """Rows of the ``question_errors`` results table."""
        stamp = checked_at or dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        return [
            {
                "file": p.file,
                "question_set": self.set_name(p.file),
                "question_id": p.question_id,
                "field": p.field,
                "reason": p.reason,
                "checked_at": stamp,
            }
            for p in self.problems
        ]

    def summary(self) -> str:
        evidence = len(self.resolved) - self.n_judge_only
        documents = f", {self.n_documents_only} of them with source documents only" if self.n_documents_only else ""
        located = f", {self.n_located} with located evidence not reviewed yet" if self.n_located else ""
        parts = [
            f"{len(self.sets)} question set(s) in {self.folder}: {len(self.resolved)} of "
            f"{self.n_questions} questions usable ({evidence} with evidence{documents}{located}, "
            f"{self.n_judge_only} judge-only, not scored without an LLM)"
        ]
        if self.set_aside:
            parts.append(
                f"{self.set_aside} question(s) set aside: their evidence lies in documents the sampled corpus left out"
            )
        if self.n_locatable:
            parts.append(
                f"{self.n_locatable} judge-only question(s) have an expected answer: "
                "`chunkbench questions locate FILE` looks for their evidence in the documents"
            )
        if self.unreadable_files:
            parts.append(f"{len(self.unreadable_files)} file(s) not read")
        if self.problems:
            parts.append(f"{len(self.problems)} problem(s)")
        line = "; ".join(parts)
        if self.ceiling.total:  # how much of the evidence the parse kept, even when it kept all of it
            line += "\n" + self.ceiling.summary()
        return line


def check_questions(folder: str | Path, documents: Mapping[str, str], left_out: Collection[str] = ()) -> QuestionCheck:
    """Load the question sets of ``folder`` and locate their references in ``documents`` (name -> parsed text).

    ``left_out``: evidence documents a sampled corpus did not keep (its record's ``evidence_left_out``): the
    questions with evidence in one of them are set aside and counted, not reported as problems."""
    sets, load_problems = load_question_sets(folder)
    asked, n_set_aside = sets, 0
    if left_out:
        from chunkbench_core.estimate.sampling import set_aside

        asked = []
        for qs in sets:
            kept, n = set_aside(qs.questions, left_out, documents)
            asked.append(dataclasses.replace(qs, questions=kept))
            n_set_aside += n
    resolved, resolve_problems = resolve_questions(asked, documents)
    paths = {qs.name: qs.path for qs in sets}
    kept = []
    for r in resolved:  # a document-level reference must name a parsed document
        problems = document_problems(r.question, documents, paths.get(r.question_set, str(folder)))
        if problems:
            resolve_problems.extend(problems)
        else:
            kept.append(r)
    resolved = kept
    if not sets and not load_problems:
        load_problems = [QuestionSetError(str(folder), "holds no question set (*.json, or a Chroma *.csv)")]
    return QuestionCheck(
        str(folder),
        sets,
        resolved,
        _unique([*load_problems, *resolve_problems]),
        parse_ceiling(resolved, documents),
        n_set_aside,
    )


def parse_ceiling(resolved: list[ResolvedQuestion], documents: Mapping[str, str]) -> ParseCeiling:
    """The evidence passages of the usable questions found in the parsed text: every span (found, or the
    question would not be usable), and every passage an import did not find, looked for again."""
    checks = []
    for r in resolved:
        q = r.question
        for ref in q.references:
            if ref.located:  # found from the answer by the locator: not a passage the set gives
                continue
            checks.append(
                EvidenceCheck(q.id, ref.document, evidence_kind(ref.content, q.labels), True, ref.page, r.question_set)
            )
        for item in q.metadata.get("evidence_not_found") or ():
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                continue
            document = str(item.get("document", ""))
            found = document in documents and find_evidence(item["text"], documents[document]) is not None
            page = item.get("page") if isinstance(item.get("page"), int) else None
            checks.append(
                EvidenceCheck(q.id, document, evidence_kind(item["text"], q.labels), found, page, r.question_set)
            )
    return ParseCeiling(checks)
