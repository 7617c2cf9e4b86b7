"""A sampled corpus, on purpose: every document that holds evidence, and a seeded sample of the others.

A quick first answer on a big corpus: the questions are still answerable (no document their
evidence sits in is left out) and retrieval still has to find it among distractors, only fewer
of them. What was kept is recorded (:class:`SampleRecord`) so every view can say the results
come from a sample, of how many documents, and which (its fingerprint).

Evidence documents: those a question's evidence spans name (hand-written or located) and those its
document-level references match (names or globs, resolved against the corpus by
``evaluation.questions.resolve_source_documents``). A judge-only question names none.

Distractors are taken in the order of ``sha256(seed, name)``: the same seed keeps the same
documents on every machine and every run, whatever order the corpus was listed in, and a document
added to the corpus later never changes which of the others are kept (it only takes its own place
in the order). Up to ``n`` documents in all and/or ``token_budget`` tokens in all: a distractor that
would overflow the budget is passed over and the next one tried.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .errors import EstimateError


@dataclass(frozen=True)
class SampleRecord:
    """What a sampled run was built from: the provenance's ``corpus_sample`` and the views' label."""

    n_documents: int  # kept
    n_evidence: int  # kept because they hold evidence
    n_distractors: int  # kept at random
    n_corpus: int  # documents of the whole corpus
    seed: int
    requested_documents: int | None
    token_budget: int | None
    tokens: int | None  # tokens kept (when the documents' tokens were given)
    missing_evidence: tuple[str, ...]  # evidence documents the corpus does not hold
    fingerprint: str  # 16 hex of the kept names: two runs with the same fingerprint saw the same documents

    @property
    def complete(self) -> bool:
        """True when nothing was left out (the "sample" is the whole corpus)."""
        return self.n_documents == self.n_corpus

    def label(self) -> str:
        """What a view shows next to the results, e.g. ``sample of 40 of 1,200 documents (12 with evidence,
        seed 0)``, or ``whole corpus (1,200 documents)``."""
        if self.complete:
            return f"whole corpus ({self.n_corpus:,} documents)"
        return (f"sample of {self.n_documents:,} of {self.n_corpus:,} documents ({self.n_evidence:,} with evidence, "
                f"seed {self.seed})")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "missing_evidence": list(self.missing_evidence), "label": self.label()}


@dataclass(frozen=True)
class CorpusSample:
    documents: tuple[str, ...]  # every kept document, sorted
    evidence: tuple[str, ...]
    distractors: tuple[str, ...]
    record: SampleRecord


def _names_and_tokens(documents: Mapping[str, int] | Iterable[str]) -> tuple[list[str], dict[str, int] | None]:
    if isinstance(documents, Mapping):
        tokens = {}
        for name, value in documents.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise EstimateError(f"document {name!r}: its tokens must be an integer >= 0, got {value!r}")
            tokens[str(name)] = value
        return sorted(tokens), tokens
    names = []
    for d in documents:
        name = d if isinstance(d, str) else getattr(d, "document", None)
        if not isinstance(name, str):
            raise EstimateError(f"a document must be a name (or have a .document name), got {d!r}")
        names.append(name)
    return sorted(set(names)), None


def _positive(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EstimateError(f"{name} must be a whole number >= 1, got {value!r}")
    return value


def evidence_documents(questions: Iterable[Any], names: Iterable[str]) -> tuple[set[str], set[str]]:
    """(evidence documents the corpus holds, those it does not) of ``questions`` (``Question`` objects, or
    question sets with ``.questions``)."""
    from chunkbench_core.evaluation.questions import resolve_source_documents

    names = list(names)
    known = set(names)
    found: set[str] = set()
    for item in questions:
        for question in getattr(item, "questions", None) or [item]:
            found.update(resolve_source_documents(question, names))
    return found & known, found - known


def distractor_order(names: Iterable[str], seed: int) -> list[str]:
    """``names`` in the seeded order distractors are taken in (module rule)."""
    return sorted(names, key=lambda n: (hashlib.sha256(f"{seed}\0{n}".encode("utf-8")).hexdigest(), n))


def sample_documents(documents: Mapping[str, int] | Iterable[str], questions: Iterable[Any], n: int | None = None,
                     token_budget: int | None = None, seed: int = 0) -> CorpusSample:
    """Every document holding evidence for ``questions``, plus a seeded sample of the others (module rule).

    ``documents``: the corpus's names, or {name: cl100k tokens} (needed for ``token_budget``); ``n``: documents
    in all; ``token_budget``: tokens in all; neither: the whole corpus. Raises EstimateError when the
    evidence alone does not fit, saying how many documents (or tokens) it needs and what to do.
    """
    names, tokens = _names_and_tokens(documents)
    n = _positive("the number of documents to sample", n)
    token_budget = _positive("the token budget", token_budget)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise EstimateError(f"the sample's seed must be an integer, got {seed!r}")
    if token_budget is not None and tokens is None:
        raise EstimateError("a token budget needs each document's tokens: parse the corpus first "
                            "(or sample a number of documents instead)")
    if not names:
        raise EstimateError("the corpus holds no document to sample from")
    evidence, missing = evidence_documents(questions, names)
    if n is not None and n < len(evidence):
        raise EstimateError(
            f"a sample of {n} document(s) cannot hold the {len(evidence)} documents the questions' evidence is in: "
            f"sample {len(evidence)} or more ({len(evidence)} keeps only the evidence documents, no distractors), "
            "or use fewer questions")
    evidence_tokens = sum(tokens[d] for d in evidence) if tokens is not None else None
    if token_budget is not None and evidence_tokens is not None and evidence_tokens > token_budget:
        raise EstimateError(
            f"a token budget of {token_budget:,} cannot hold the {len(evidence)} evidence document(s), "
            f"{evidence_tokens:,} tokens: raise it to {evidence_tokens:,} or more, or use fewer questions")
    kept = set(evidence)
    used = evidence_tokens or 0
    for name in distractor_order((d for d in names if d not in evidence), seed):
        if n is not None and len(kept) >= n:
            break
        if token_budget is not None and tokens is not None:
            if used + tokens[name] > token_budget:
                continue
            used += tokens[name]
        kept.add(name)
    ordered = tuple(sorted(kept))
    digest = hashlib.sha256(json.dumps(ordered, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]
    distractors = tuple(d for d in ordered if d not in evidence)
    record = SampleRecord(
        n_documents=len(ordered), n_evidence=len(evidence), n_distractors=len(distractors), n_corpus=len(names),
        seed=seed, requested_documents=n, token_budget=token_budget,
        tokens=sum(tokens[d] for d in ordered) if tokens is not None else None,
        missing_evidence=tuple(sorted(missing)), fingerprint=digest)
    return CorpusSample(ordered, tuple(sorted(evidence)), distractors, record)
