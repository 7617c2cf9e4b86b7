"""A sampled corpus, on purpose: every document that holds evidence, and a seeded sample of the others.

A quick first answer on a big corpus: the questions are still answerable (no document their
evidence sits in is left out) and retrieval still has to find it among distractors, only fewer
of them. What was kept is recorded (:class:`SampleRecord`) so every view can say the results
come from a sample, of how many documents, and which (its fingerprint).

A sample asked to be smaller than the evidence keeps the evidence of as many whole questions as fit
(those needing the fewest documents first, then those whose documents the most questions share) and
sets the other questions aside: its record says how many questions it keeps and which evidence
documents it left out (:func:`set_aside` is what a run of it applies).

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
    questions: int = 0  # questions asked of the corpus
    questions_kept: int = 0  # those a run of the sample scores: all, unless the sample is smaller than the evidence
    #: evidence documents the sample left out (it was asked for fewer documents or tokens than the evidence needs):
    #: a question whose evidence lies in one of them is set aside, not reported as a problem
    evidence_left_out: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """True when nothing was left out (the "sample" is the whole corpus)."""
        return self.n_documents == self.n_corpus

    def label(self) -> str:
        """What a view shows next to the results, e.g. ``sample of 40 of 1,200 documents (12 with evidence,
        seed 0)``, or ``whole corpus (1,200 documents)``."""
        if self.complete:
            return f"whole corpus ({self.n_corpus:,} documents)"
        questions = (
            f"; {self.questions_kept:,} of {self.questions:,} questions, those whose evidence it holds"
            if self.evidence_left_out
            else ""
        )
        return (
            f"sample of {self.n_documents:,} of {self.n_corpus:,} documents ({self.n_evidence:,} with evidence, "
            f"seed {self.seed}{questions})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "missing_evidence": list(self.missing_evidence),
            "evidence_left_out": list(self.evidence_left_out),
            "label": self.label(),
        }


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
    names = list(names)
    known = set(names)
    found: set[str] = set()
    for documents in question_evidence(questions, names):
        found.update(documents)
    return found & known, found - known


def question_evidence(questions: Iterable[Any], names: Iterable[str]) -> list[frozenset[str]]:
    """Each question's evidence documents (``Question`` objects, or question sets with ``.questions``), empty for
    a judge-only question."""
    from chunkbench_core.evaluation.questions import resolve_source_documents

    names = list(names)
    return [
        frozenset(resolve_source_documents(question, names))
        for item in questions
        for question in (getattr(item, "questions", None) or [item])
    ]


def set_aside(questions: Iterable[Any], left_out: Iterable[str], names: Iterable[str]) -> tuple[list[Any], int]:
    """The ``questions`` a sampled corpus can answer, and how many it sets aside: those with evidence in one of the
    ``left_out`` documents (evidence documents the sample did not keep; ``names``: the sample's documents)."""
    questions, left_out = list(questions), set(left_out)
    if not left_out:
        return questions, 0
    from chunkbench_core.evaluation.questions import resolve_source_documents

    everything = sorted(set(names) | left_out)
    kept = [q for q in questions if not left_out.intersection(resolve_source_documents(q, everything))]
    return kept, len(questions) - len(kept)


def _choose_evidence(
    needs: list[frozenset[str]], n: int | None, token_budget: int | None, tokens: Mapping[str, int] | None, seed: int
) -> set[str]:
    """The evidence documents of a sample too small for all of them: whole questions' evidence, those needing the
    fewest documents (then those shared by the most questions) first, ties in the seeded order."""
    counts: dict[frozenset[str], int] = {}
    for need in needs:
        if need:
            counts[need] = counts.get(need, 0) + 1

    def rank(need: frozenset[str]) -> tuple[Any, ...]:
        names = sorted(need)
        return (len(need), -counts[need], hashlib.sha256(f"{seed}\0{json.dumps(names)}".encode("utf-8")).hexdigest())

    kept: set[str] = set()
    used = 0
    for need in sorted(counts, key=rank):
        new = need - kept
        cost = sum(tokens[d] for d in new) if tokens is not None else 0
        if n is not None and len(kept) + len(new) > n:
            continue
        if token_budget is not None and used + cost > token_budget:
            continue
        kept |= new
        used += cost
    return kept


def distractor_order(names: Iterable[str], seed: int) -> list[str]:
    """``names`` in the seeded order distractors are taken in (module rule)."""
    return sorted(names, key=lambda n: (hashlib.sha256(f"{seed}\0{n}".encode("utf-8")).hexdigest(), n))


def sample_documents(
    documents: Mapping[str, int] | Iterable[str],
    questions: Iterable[Any],
    n: int | None = None,
    token_budget: int | None = None,
    seed: int = 0,
) -> CorpusSample:
    """Every document holding evidence for ``questions``, plus a seeded sample of the others (module rule).

    ``documents``: the corpus's names, or {name: cl100k tokens} (needed for ``token_budget``); ``n``: documents
    in all; ``token_budget``: tokens in all; neither: the whole corpus. A sample smaller than the evidence keeps
    the evidence of as many whole questions as fit (the questions needing fewest documents first), and its
    record says how many questions it keeps and which evidence documents it left out; EstimateError when not
    even one question's evidence fits.
    """
    names, tokens = _names_and_tokens(documents)
    n = _positive("the number of documents to sample", n)
    token_budget = _positive("the token budget", token_budget)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise EstimateError(f"the sample's seed must be an integer, got {seed!r}")
    if token_budget is not None and tokens is None:
        raise EstimateError(
            "a token budget needs each document's tokens: parse the corpus first "
            "(or sample a number of documents instead)"
        )
    if not names:
        raise EstimateError("the corpus holds no document to sample from")
    questions = list(questions)
    known = set(names)
    named = question_evidence(questions, names)
    needs = [need & known for need in named]
    missing = set().union(*named) - known
    evidence = set().union(*needs) if needs else set()
    evidence_tokens = sum(tokens[d] for d in evidence) if tokens is not None else None
    too_many = n is not None and n < len(evidence)
    too_big = token_budget is not None and evidence_tokens is not None and evidence_tokens > token_budget
    chosen = _choose_evidence(needs, n, token_budget, tokens, seed) if too_many or too_big else set(evidence)
    if (too_many or too_big) and not chosen:
        smallest = min((need for need in needs if need), key=len)
        what = f"a sample of {n} document(s)" if too_many else f"a token budget of {token_budget:,}"
        raise EstimateError(
            f"{what} cannot hold the evidence of any question: the smallest needs {len(smallest)} document(s)"
            + (f", {sum(tokens[d] for d in smallest):,} tokens" if tokens is not None else "")
            + f"; the whole evidence is {len(evidence)} document(s)"
            + (f", {evidence_tokens:,} tokens" if evidence_tokens is not None else "")
            + ": ask for more"
        )
    kept = set(chosen)
    used = sum(tokens[d] for d in kept) if tokens is not None else 0
    for name in distractor_order((d for d in names if d not in kept), seed):
        if n is not None and len(kept) >= n:
            break
        if token_budget is not None and tokens is not None:
            if used + tokens[name] > token_budget:
                continue
            used += tokens[name]
        kept.add(name)
    left_out = evidence - kept
    evidence = evidence & kept
    n_kept = sum(1 for need in needs if not need & left_out)
    ordered = tuple(sorted(kept))
    digest = hashlib.sha256(json.dumps(ordered, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]
    distractors = tuple(d for d in ordered if d not in evidence)
    record = SampleRecord(
        n_documents=len(ordered),
        n_evidence=len(evidence),
        n_distractors=len(distractors),
        n_corpus=len(names),
        seed=seed,
        requested_documents=n,
        token_budget=token_budget,
        tokens=sum(tokens[d] for d in ordered) if tokens is not None else None,
        missing_evidence=tuple(sorted(missing)),
        fingerprint=digest,
        questions=len(needs),
        questions_kept=n_kept,
        evidence_left_out=tuple(sorted(left_out)),
    )
    return CorpusSample(ordered, tuple(sorted(evidence)), distractors, record)
