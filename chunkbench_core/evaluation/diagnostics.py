"""Warnings to read before trusting a ranking: when the data cannot support the claim.

Each check is a pure function over plain numbers and returns a :class:`Diagnostic` or None:

- ``one_chunk_per_document``: most strategies make about one chunk per document
  (median chunks per document <= 1.5 for more than half of them): the documents are too
  short for chunking to matter, so strategies cannot be told apart.
- ``evidence_longer_than_chunks``: the median evidence span is longer (in characters)
  than a configuration's median chunk, so no single chunk can hold it and recall rewards
  big chunks.
- ``no_disagreement``: the configurations score the same on almost every question
  (fewer than 10% of questions differ by more than 0.01): there is nothing to decide.
- ``too_few_questions``: fewer than 30 questions, or a top two that score the same on every
  question (more questions like these would not tell them apart either).
- ``recommendation_undecided``: the best is recommended only because no cheaper configuration
  could be shown within the margin of it; says how many questions would settle it.
- ``recommendation_unstable``: the rule picks the same configuration in fewer than 70% of the
  resamples of the questions; says the other picks and how many questions would settle it.
- ``low_evidence_recall``: the best configuration's mean evidence recall (``recall``; ``doc_recall`` when
  the questions have only source documents) is below 0.3: the questions or their evidence may be wrong,
  or retrieval fails on these documents.
- ``nothing_scored``: every question is judge-only (no evidence spans, no source documents) and no LLM judged
  them: nothing was scored; says how to give them evidence.
- ``recall_ceiling``: questions with evidence in more documents than top_k chunks can come from: their
  doc recall cannot reach 1 whatever the chunking (ceiling ``min(1, k / source documents)``); says the
  ceiling apart from the score, and the span-recall ceiling of the best configuration's chunks.
- ``boundary_model_language``: the semantic cuts were decided by a boundary model picked for the
  corpus's language (an English-only default replaced by a multilingual model), or by an English-only
  model chosen explicitly for a corpus that is not in the Latin script (chunkbench_core.embedding.language).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from chunkbench_core.wording import plural

from .stability import STABLE_PICK_LIMIT
from .statistics import STABLE_SHARE

MIN_QUESTIONS = 30
DISAGREEMENT_SHARE = 0.10
DISAGREEMENT_MARGIN = 0.01
ONE_CHUNK_MEDIAN = 1.5
#: a best configuration finding less of the evidence than this is suspicious
LOW_RECALL = 0.3


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str

    def to_row(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def one_chunk_per_document(chunks_per_document: Mapping[str, Sequence[int]]) -> Diagnostic | None:
    """``chunks_per_document``: strategy -> chunk counts of each document."""
    medians = {s: float(np.median(c)) for s, c in chunks_per_document.items() if len(c)}
    few = sorted(s for s, m in medians.items() if m <= ONE_CHUNK_MEDIAN)
    if medians and len(few) * 2 > len(medians):
        return Diagnostic(
            "one_chunk_per_document",
            f"{len(few)} of {len(medians)} strategies make about one chunk per document "
            f"({', '.join(few)}): the documents are too short for chunking to change much, so these "
            "results say little about how the strategies differ.",
        )
    return None


def evidence_longer_than_chunks(
    evidence_sizes: Sequence[int], chunk_sizes: Mapping[str, Sequence[int]]
) -> Diagnostic | None:
    """``evidence_sizes``: characters of each evidence span; ``chunk_sizes``: configuration -> chunk characters."""
    if not len(evidence_sizes):
        return None
    evidence = float(np.median(evidence_sizes))
    shorter = sorted(c for c, sizes in chunk_sizes.items() if len(sizes) and float(np.median(sizes)) < evidence)
    if shorter:
        return Diagnostic(
            "evidence_longer_than_chunks",
            f"The median evidence span ({evidence:,.0f} characters) is longer than the median chunk of "
            f"{len(shorter)} configuration(s) ({', '.join(shorter[:5])}{', ...' if len(shorter) > 5 else ''}): "
            "no single chunk can hold the evidence, which favours larger chunks.",
        )
    return None


def no_disagreement(per_question: Sequence[Sequence[float]]) -> Diagnostic | None:
    """``per_question``: for each question, the ranking metric of every configuration."""
    rows = [[v for v in row if not (isinstance(v, float) and math.isnan(v))] for row in per_question]
    rows = [r for r in rows if len(r) > 1]
    if not rows:
        return None
    differ = sum(1 for r in rows if max(r) - min(r) > DISAGREEMENT_MARGIN)
    if differ < DISAGREEMENT_SHARE * len(rows):
        where = (
            f"on none of the {plural(len(rows), 'question')}"
            if differ == 0
            else f"on only {differ} of {plural(len(rows), 'question')}"
        )
        return Diagnostic(
            "no_disagreement",
            f"The configurations score differently {where}: "
            "there is almost nothing to decide between them on this question set.",
        )
    return None


def too_few_questions(n_questions: int, identical_top_two: tuple[str, str] | None = None) -> Diagnostic | None:
    """Too few questions overall, or a top two that score the same on every question (no number of questions
    like these would tell them apart). ``identical_top_two``: the names of such a top two."""
    if n_questions < MIN_QUESTIONS:
        return Diagnostic(
            "too_few_questions",
            f"Only {plural(n_questions, 'question')} {'was' if n_questions == 1 else 'were'} scored on the "
            "ranking metric; "
            f"rankings over fewer than {MIN_QUESTIONS} questions change easily. "
            "Add questions before relying on the order.",
        )
    if identical_top_two is not None:
        first, second = identical_top_two
        return Diagnostic(
            "too_few_questions",
            f"The top two, {first} and {second}, score the same on every one of the "
            f"{plural(n_questions, 'question')}: these questions cannot tell them apart, and more "
            "questions like them would not either. Add questions on which they differ.",
        )
    return None


def recommendation_undecided(
    best: str, candidate: str | None, margin: float, questions: int | None, n_questions: int
) -> Diagnostic | None:
    """The best is recommended only because no cheaper configuration could be shown within the margin of it:
    ``candidate`` (the nearest cheaper one) might be as good. ``questions``: how many questions would settle
    it if the observed difference held (None: more than can be said)."""
    if candidate is None:
        return None
    settle = (
        f"about {questions:,} questions would settle it if the observed difference held ({n_questions} were scored)"
        if questions is not None
        else "no number of questions like these would settle it"
    )
    return Diagnostic(
        "recommendation_undecided",
        f"The rule cannot decide yet: {best} is recommended only because nothing cheaper could be "
        f"shown within {margin:g} of it. {candidate} is cheaper and might be as good; {settle}.",
    )


def recommendation_unstable(
    pick: str, share: float, resamples: int, runner_ups: str, questions: int | None, n_questions: int
) -> Diagnostic | None:
    """The pick changes on resamples of the questions: it is the same in only ``share`` of them (below
    :data:`.statistics.STABLE_SHARE`)."""
    threshold, limit = STABLE_SHARE, STABLE_PICK_LIMIT

    if not resamples or share >= threshold:
        return None
    settle = (
        f"about {questions:,} questions would make the pick stable if these {n_questions} are representative"
        if questions is not None
        else f"even {limit:,} questions like these would not make it stable: configurations close to the best or to "
        "the margin keep trading places"
    )
    return Diagnostic(
        "recommendation_unstable",
        f"The recommendation is unstable: the rule picks {pick} in only {share:.0%} of {resamples:,} "
        f"resamples of the questions (otherwise: {runner_ups}); {settle}.",
    )


def low_evidence_recall(best: str, recall: float | None, metric: str = "recall") -> Diagnostic | None:
    """The best configuration finds less than :data:`LOW_RECALL` of the evidence on average."""
    if recall is None or (isinstance(recall, float) and math.isnan(recall)) or recall >= LOW_RECALL:
        return None
    what = (
        "of the evidence text"
        if metric == "recall"
        else "of the questions' source documents"
        if metric == "doc_recall"
        else f"by {metric}"
    )
    return Diagnostic(
        "low_evidence_recall",
        f"The best configuration, {best}, finds only {recall:.2f} {what} in its top-k chunks "
        f"({metric}, below {LOW_RECALL:g}): the questions or their evidence may be wrong (read a few "
        "in the technical report's retrieval inspector), or retrieval fails on these documents.",
    )


def nothing_scored(n_judge_only: int, judged: bool) -> Diagnostic | None:
    """Every question is judge-only and no LLM judged them: no number ranks anything."""
    if not n_judge_only or judged:
        return None
    return Diagnostic(
        "nothing_scored",
        f"Nothing was scored: the {plural(n_judge_only, 'question')} {'is' if n_judge_only == 1 else 'are'} "
        "judge-only (no evidence spans, no source documents), not scored without an LLM. Name each "
        "question's source documents (a reference with only a document name or glob), or let "
        "`chunkbench questions locate FILE` find evidence from the expected answers, or configure an "
        "LLM judge.",
    )


@dataclass(frozen=True)
class Ceiling:
    """The questions of one configuration whose evidence is in more documents than ``top_k`` chunks reach."""

    top_k: int
    n_multi_document: int  # questions with two or more source documents
    n_capped: int  # of them, those with more source documents than top_k
    doc_ceiling: float  # mean min(1, k / source documents) over the capped questions
    doc_recall: float  # the configuration's mean doc_recall over them
    recall_ceiling: float | None = None  # mean span-recall ceiling of its chunks over the multi-document ones
    recall: float | None = None  # its mean recall over them


def recall_ceiling(configuration: str, ceiling: Ceiling | None) -> Diagnostic | None:
    """Multi-document questions whose recall top_k caps, with the ceiling said apart from the score: the
    document-level ceiling min(1, k / source documents), and the best evidence recall k chunks of the
    configuration's chunking could reach."""
    if ceiling is None or not ceiling.n_multi_document:
        return None
    parts = []
    if ceiling.n_capped:
        one = ceiling.n_capped == 1
        parts.append(
            f"{plural(ceiling.n_capped, 'question')} {'has' if one else 'have'} evidence in more documents "
            f"than top_k {ceiling.top_k} chunks can come from: {'its' if one else 'their'} doc recall cannot "
            f"exceed {ceiling.doc_ceiling:.2f}{'' if one else ' on average'}, whatever the chunking "
            f"({configuration} reaches {ceiling.doc_recall:.2f} on {'it' if one else 'them'})."
        )
    if ceiling.recall_ceiling is not None and not math.isnan(ceiling.recall_ceiling) and ceiling.recall_ceiling < 0.995:
        reached = (
            f"; it reaches {ceiling.recall:.2f}"
            if ceiling.recall is not None and not math.isnan(ceiling.recall)
            else ""
        )
        which = (
            "On the one question with evidence in several documents"
            if ceiling.n_multi_document == 1
            else f"On the {ceiling.n_multi_document} questions with evidence in several documents"
        )
        parts.append(
            f"{which}, the best evidence "
            f"recall any {ceiling.top_k} of {configuration}'s chunks could reach is "
            f"{ceiling.recall_ceiling:.2f}{reached}."
        )
    if not parts:
        return None
    return Diagnostic(
        "recall_ceiling",
        " ".join(parts) + " Read these scores against that ceiling, apart from the chunking's quality, or raise top_k.",
    )


def boundary_model_language(choices: Sequence[Mapping[str, object]]) -> Diagnostic | None:
    """``choices``: the boundary choices recorded by the current collections (``BoundaryChoice.to_dict``)."""
    warned = sorted({str(c["warning"]) for c in choices if c.get("warning")})
    if warned:
        return Diagnostic("boundary_model_language", " ".join(warned))
    switched = sorted(
        {
            (str(c.get("model")), str(c.get("replaced")), str(c.get("reason")))
            for c in choices
            if c.get("source") == "corpus language"
        }
    )
    if switched:
        model, replaced, reason = switched[0]
        return Diagnostic(
            "boundary_model_language",
            f"Semantic cuts were decided by {model}, not the default {replaced}: {reason}. To choose "
            f"the boundary model yourself: chunkbench defaults set boundary_model MODEL.",
        )
    return None


def collect(*diagnostics: Diagnostic | None) -> list[Diagnostic]:
    return [d for d in diagnostics if d is not None]
