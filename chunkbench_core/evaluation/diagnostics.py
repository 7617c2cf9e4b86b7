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
- ``too_few_questions``: fewer than 30 questions, or a tie at the top that these questions
  cannot break (the number needed to separate the top two is more than there are).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from chunkbench_core.wording import plural

MIN_QUESTIONS = 30
DISAGREEMENT_SHARE = 0.10
DISAGREEMENT_MARGIN = 0.01
ONE_CHUNK_MEDIAN = 1.5


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
        return Diagnostic("one_chunk_per_document",
                          f"{len(few)} of {len(medians)} strategies make about one chunk per document "
                          f"({', '.join(few)}): the documents are too short for chunking to change much, so these "
                          "results say little about how the strategies differ.")
    return None


def evidence_longer_than_chunks(evidence_sizes: Sequence[int],
                                chunk_sizes: Mapping[str, Sequence[int]]) -> Diagnostic | None:
    """``evidence_sizes``: characters of each evidence span; ``chunk_sizes``: configuration -> chunk characters."""
    if not len(evidence_sizes):
        return None
    evidence = float(np.median(evidence_sizes))
    shorter = sorted(c for c, sizes in chunk_sizes.items() if len(sizes) and float(np.median(sizes)) < evidence)
    if shorter:
        return Diagnostic("evidence_longer_than_chunks",
                          f"The median evidence span ({evidence:,.0f} characters) is longer than the median chunk of "
                          f"{len(shorter)} configuration(s) ({', '.join(shorter[:5])}{', ...' if len(shorter) > 5 else ''}): "
                          "no single chunk can hold the evidence, which favours larger chunks.")
    return None


def no_disagreement(per_question: Sequence[Sequence[float]]) -> Diagnostic | None:
    """``per_question``: for each question, the ranking metric of every configuration."""
    rows = [[v for v in row if not (isinstance(v, float) and math.isnan(v))] for row in per_question]
    rows = [r for r in rows if len(r) > 1]
    if not rows:
        return None
    differ = sum(1 for r in rows if max(r) - min(r) > DISAGREEMENT_MARGIN)
    if differ < DISAGREEMENT_SHARE * len(rows):
        where = (f"on none of the {plural(len(rows), 'question')}" if differ == 0
                 else f"on only {differ} of {plural(len(rows), 'question')}")
        return Diagnostic("no_disagreement",
                          f"The configurations score differently {where}: "
                          "there is almost nothing to decide between them on this question set.")
    return None


def too_few_questions(n_questions: int, tier_size: int, questions_to_separate: int | None) -> Diagnostic | None:
    """Too few questions overall, or too few to break a tie at the top."""
    if n_questions < MIN_QUESTIONS:
        return Diagnostic("too_few_questions",
                          f"Only {plural(n_questions, 'question')} {'was' if n_questions == 1 else 'were'} scored; "
                          f"rankings over fewer than {MIN_QUESTIONS} questions change easily. "
                          "Add questions before relying on the order.")
    if tier_size > 1 and questions_to_separate is not None and questions_to_separate > n_questions:
        return Diagnostic("too_few_questions",
                          f"{tier_size} configurations are tied at the top; telling the top two apart would take "
                          f"about {questions_to_separate:,} questions ({n_questions} were scored).")
    return None


def collect(*diagnostics: Diagnostic | None) -> list[Diagnostic]:
    return [d for d in diagnostics if d is not None]
