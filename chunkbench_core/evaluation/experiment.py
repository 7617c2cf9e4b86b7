"""One experiment run for one strategy x corpus model: retrieve for every question, score it.

The pipeline calls ``resolve_questions`` (locate every reference in the parsed
documents), then ``run_retrieval`` (embed the questions with the corpus model's query
prefix, search the partition's collection, expand - :mod:`.retrieval` - and score),
optionally ``run_llm_evaluation`` (answer + judge, :mod:`.llm`), then ``aggregate``.

Every score comes from the metric registry (:mod:`.metric_registry`): ``QuestionOutcome.values`` holds
each metric's value by its per-question name; ``scores`` (before expansion), ``scores_expanded`` (on the
context after neighbor expansion / parent context) and ``budget_scores`` show the same values grouped.
The shipped metrics:

- character metrics of :mod:`.metrics`: ``recall``, ``precision``, ``iou``; and
  ``precision_omega`` (a property of the chunking, the same before and after);
- ranking metrics of :mod:`.ranking` (trec_eval's definitions): ``hit`` (Success@k),
  ``reciprocal_rank`` (RR@k), ``ndcg`` (nDCG@k). Before expansion k = top_k over the
  hits in rank order; after expansion the ranking is :func:`.retrieval.ranking_order`
  (each hit followed by its neighbors, nearest first) and k is its length.

``precision_omega`` and ``ndcg`` need the collection's chunk list (``chunks=``); without
it they are NaN. Column names are fixed (the cutoff is the run's ``top_k``);
``ranking.canonical_name`` gives the measure's usual name (``nDCG@5``) for display.
Everything here is deterministic: the same inputs give the same evidence metrics.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chunkbench_core.embedding.providers import Embedder
from chunkbench_core.errors import ChunkbenchError, QuestionSetError
from chunkbench_core.storage.vector_store import VectorStore
from chunkbench_core.progress import Tracker

from . import budget, ranking
from .llm import LLM_COLUMNS, LLMResult, LLMSettings, evaluate_question
from .metric_registry import METRICS, MetricRegistry, Scored, score
from .questions import Question, QuestionSet, Span, locate_reference, resolve_source_documents
from .search import TIE_MARGIN, SearchSettings, search_all, search_stable  # noqa: F401 (re-exported)
from .retrieval import (
    ExpansionNode,
    ExpansionSettings,
    gives_parent_context,
    RetrievedChunk,
    apply_neighbor_expansion,
    attach_parents,
    ranking_order,
)
from .statistics import (
    DEFAULT_BOOTSTRAP_RESAMPLES,
    DEFAULT_CONFIDENCE,
    DEFAULT_SEED,
    bootstrap_cis,
    mean,
)

DEFAULT_TOP_K = 5

__all__ = [
    "DEFAULT_TOP_K",
    "CollectionChunk",
    "ExpansionSettings",
    "QuestionOutcome",
    "ResolvedQuestion",
    "RetrievedChunk",
    "aggregate",
    "build_provenance",
    "collection_chunks",
    "outcome_row",
    "reference_entries",
    "ProvenanceInputs",
    "RetrievalOptions",
    "resolve_questions",
    "run_retrieval",
    "search_stable",
    "split_chunk_rows",
    "score_outcomes",
    "QueryLatency",
    "measure_query_latency",
]


@dataclass
class ResolvedQuestion:
    """A question located in the parsed documents: its evidence spans and its source documents."""

    question_set: str
    question: Question
    references: list[Span]
    #: the source documents among the parsed ones (document-level references resolved, and the spans' documents)
    documents: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # the spans' documents are source documents too, whoever built this
        self.documents = tuple(sorted({*self.documents, *(r.document for r in self.references)}))

    @property
    def key(self) -> str:
        return f"{self.question_set}\x1f{self.question.id}"

    @property
    def judge_only(self) -> bool:
        """No evidence at all, neither spans nor source documents: retrieved (and answered and judged when an LLM
        is configured), never scored on evidence."""
        return not self.references and not self.documents

    @property
    def scoring(self) -> str:
        """``spans`` (scored on evidence text and on documents), ``documents`` (on documents only) or
        ``judge_only``."""
        return "spans" if self.references else "documents" if self.documents else "judge_only"


@dataclass(frozen=True)
class CollectionChunk:
    """A chunk of the collection as the evaluation needs it: id and span."""

    chunk_id: str
    document: str
    start: int
    end: int

    @property
    def span(self) -> Span:
        return Span(self.document, self.start, self.end)


def collection_chunks(items: Iterable[Any]) -> dict[str, list[CollectionChunk]]:
    """Document -> chunks of the collection, from Chunk objects or ``chunks`` table rows.

    Accepts objects with ``chunk_id, document, start, end`` attributes (chunking.Chunk)
    or mappings with ``chunk_id, document`` and ``start``/``end`` or
    ``start_offset``/``end_offset`` (rows of the results ``chunks`` table).
    """
    out: dict[str, list[CollectionChunk]] = {}
    for item in items:
        if isinstance(item, Mapping):
            start = item["start"] if "start" in item else item["start_offset"]
            end = item["end"] if "end" in item else item["end_offset"]
            chunk = CollectionChunk(str(item["chunk_id"]), str(item["document"]), int(start), int(end))
        else:
            chunk = CollectionChunk(item.chunk_id, item.document, int(item.start), int(item.end))
        out.setdefault(chunk.document, []).append(chunk)
    return out


class ChunkIndex:
    """The collection's chunks by document, sorted by start, to find those that touch a question's evidence
    without walking every chunk of the document (a 40 MB document has tens of thousands)."""

    def __init__(self, chunks: Mapping[str, Sequence[CollectionChunk]]) -> None:
        self._by_document: dict[str, tuple[list[int], list[CollectionChunk], int]] = {}
        for document, items in chunks.items():
            ordered = sorted(items, key=lambda c: (c.start, c.end))
            longest = max((c.end - c.start for c in ordered), default=0)
            self._by_document[document] = ([c.start for c in ordered], ordered, longest)
        self._position = {id(c): i for items in chunks.values() for i, c in enumerate(items)}

    def touching(self, document: str, references: Sequence[Span]) -> list[CollectionChunk]:
        """The chunks of ``document`` that meet one of ``references`` (touching counts, as in precision_omega),
        in the collection's order: every chunk a pool-based metric can count, the others scoring nothing."""
        from bisect import bisect_left, bisect_right

        entry = self._by_document.get(document)
        if entry is None:
            return []
        starts, ordered, longest = entry
        found: dict[int, CollectionChunk] = {}
        for r in references:
            if r.document != document:
                continue
            for c in ordered[bisect_left(starts, r.start - longest) : bisect_right(starts, r.end)]:
                if c.start <= r.end and c.end >= r.start:
                    found[id(c)] = c
        return sorted(found.values(), key=lambda c: self._position.get(id(c), 0))


def split_chunk_rows(
    rows: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, list[CollectionChunk]], dict[str, Mapping[str, Any]]]:
    """Rows of the results ``chunks`` table of one partition -> (collection chunks, parents by chunk id).

    Rows with ``role == "parent"`` (semantic_parent_child: stored, not embedded, never
    retrieved) are the parents; every other row is a retrievable chunk.
    """
    rows = list(rows)
    retrievable = [r for r in rows if r.get("role") != "parent"]
    parents = {str(r["chunk_id"]): r for r in rows if r.get("role") == "parent"}
    return collection_chunks(retrievable), parents


class SharedStrings:
    """One string object per distinct chunk text, chunk id and document name across a run's questions.

    Each search returns fresh copies of its payloads, so 20,000 questions hold about 200,000 copies of a few
    thousand chunk texts (hundreds of MB); the hits keep one copy of each instead."""

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}

    def share(self, *groups: Iterable[RetrievedChunk]) -> None:
        strings = self._strings
        for group in groups:
            for chunk in group:
                chunk.text = strings.setdefault(chunk.text, chunk.text)
                chunk.chunk_id = strings.setdefault(chunk.chunk_id, chunk.chunk_id)
                chunk.document = strings.setdefault(chunk.document, chunk.document)
                if chunk.parent_id is not None:
                    chunk.parent_id = strings.setdefault(chunk.parent_id, chunk.parent_id)


@dataclass
class QuestionOutcome:
    resolved: ResolvedQuestion
    retrieved: list[RetrievedChunk] = field(default_factory=list)  # hits, rank order (before expansion)
    scores: dict[str, float] = field(default_factory=dict)  # before expansion
    retrieval_ms: float = 0.0  # embed + search + expand
    error: str | None = None
    expanded: list[RetrievedChunk] = field(default_factory=list)  # the context: hits + neighbors/parents
    expansion_tree: list[ExpansionNode] = field(default_factory=list)
    scores_expanded: dict[str, float] = field(default_factory=dict)
    latency_ms: dict[str, float] = field(default_factory=dict)  # embed, search, expand (+ generate, judge)
    llm: LLMResult | None = None
    budget_scores: dict[str, float] = field(default_factory=dict)  # context_tokens, recall_at_B, budget_auc
    values: dict[str, Any] = field(default_factory=dict)  # every registered metric by per-question name (None: n/a)
    scored: Scored | None = None  # what the metrics saw (the judge's metrics are scored on it after the answers)


def resolve_questions(
    sets: Sequence[QuestionSet], documents: Mapping[str, str]
) -> tuple[list[ResolvedQuestion], list[QuestionSetError]]:
    """Locate every reference of every question in ``documents`` (name -> parsed markdown).

    A question whose reference cannot be located is left out and reported as an error;
    the other questions go on. A question's source documents are its document-level references (names or
    globs) matched against ``documents``, and its spans' documents. A question with neither spans nor source
    documents is judge-only (``ResolvedQuestion.judge_only``).
    """
    resolved: list[ResolvedQuestion] = []
    errors: list[QuestionSetError] = []
    total = sum(len(qs.questions) for qs in sets)
    tracker = Tracker("finding the evidence", total, unit="questions", only_when_long=True)
    done = 0
    for qs in sets:
        for q in qs.questions:
            tracker.step(done)
            done += 1
            spans: list[Span] = []
            try:
                for i, ref in enumerate(q.references):
                    where = f"references[{i}].document"
                    if ref.document not in documents:
                        known = ", ".join(sorted(documents)) or "none"
                        raise QuestionSetError(
                            qs.path,
                            f"document {ref.document!r} is not a parsed document of the corpus (parsed: {known})",
                            q.id,
                            where,
                        )
                    spans.append(
                        locate_reference(ref, documents[ref.document], qs.path, q.id, f"references[{i}].content")
                    )
            except QuestionSetError as exc:
                errors.append(exc)
                continue
            resolved.append(ResolvedQuestion(qs.name, q, spans, resolve_source_documents(q, documents)))
    tracker.step(total)
    return resolved, errors


#: questions scored at once (a progress line between slices)
SCORE_SLICE = 1000


def score_outcomes(outcomes: Sequence["QuestionOutcome"], chosen: Iterable[Any]) -> None:
    """Score the ``chosen`` registry metrics on every outcome that retrieved (``outcome.values``), and show the
    retrieval metrics grouped as before: ``scores`` (NaN where undefined), ``scores_expanded`` and
    ``budget_scores`` (judge-only questions: their context tokens only)."""
    chosen = list(chosen)
    live = [o for o in outcomes if o.scored is not None]
    for o in live:
        if o.scored is not None and o.llm is not None and o.scored.llm is not o.llm:
            o.scored = replace(o.scored, llm=o.llm, cache=o.scored.cache)
    tracker = Tracker("scoring", len(live), unit="questions") if len(live) > SCORE_SLICE else None
    for begin in range(0, len(live), SCORE_SLICE):  # each question's values are its own: slices say how far
        part = live[begin : begin + SCORE_SLICE]
        _apply_scores(part, score([o.scored for o in part], chosen), chosen)  # type: ignore[misc]  # live outcomes only: scored is set
        if tracker is not None:
            tracker.step(begin + len(part))


def _apply_scores(live: Sequence["QuestionOutcome"], scored: Sequence[Mapping[str, Any]], chosen: list[Any]) -> None:
    retrieval = [m for m in chosen if m.source == "retrieval"]
    # whether each question admits each test, found once per test (the metrics share a few)
    admits = {test: [test(o.scored) for o in live] for test in dict.fromkeys(m.applies_to for m in retrieval)}
    shown = [(m.name, m.base or m.name, m.base is not None, admits[m.applies_to]) for m in retrieval]
    shown = [entry for entry, m in zip(shown, retrieval) if m.group == "evidence"]
    for position, (o, values) in enumerate(zip(live, scored)):
        o.values.update(values)
        for name, column, expanded, admitted in shown:
            if admitted[position]:
                value = values[name]
                (o.scores_expanded if expanded else o.scores)[column] = float("nan") if value is None else value
        if retrieval:
            q = o.scored
            assert q is not None
            o.budget_scores = (
                dict(q.budget_scores)
                if q.has_evidence
                else {"context_tokens": float(sum(p.tokens for p in budget.context_pieces(list(q.context))))}
            )


@dataclass
class LLMRunReport:
    """How a partition's LLM work ended: questions evaluated, and those skipped by the deadline or the breaker."""

    evaluated: int = 0
    skipped_deadline: int = 0
    skipped_breaker: int = 0
    seconds: float = 0.0
    stopped_because: str | None = None


def _skipped(reason: str) -> LLMResult:
    return LLMResult(answer_error=f"answer: skipped, {reason}", judge_error="judge: skipped, no answer")


def run_llm_evaluation(
    outcomes: Sequence["QuestionOutcome"],
    client: Any,
    settings: LLMSettings,
    label: str = "LLM answers",
    registry: MetricRegistry = METRICS,
) -> LLMRunReport:
    """Fill ``outcome.llm`` (and its latencies) for every outcome that retrieved without error, then score the
    judge's metrics of ``registry``.

    The whole loop has ``settings.deadline_seconds``: each request's timeout is cut to what is left, and
    once it has passed the questions left get an answer error saying so. After
    ``settings.breaker_failures`` questions in a row failed on the endpoint (no answer, or the judge's
    request failed), the rest are skipped the same way, so a dead endpoint costs a few timeouts, not
    one per question. Progress is reported to :mod:`chunkbench_core.progress` (and a stop request obeyed).
    """
    report = LLMRunReport()
    todo = [o for o in outcomes if o.error is None]
    tracker = Tracker(label, len(todo), unit="questions")
    started = time.monotonic()
    failures_in_a_row = 0
    for done, outcome in enumerate(todo):
        tracker.step(done)
        left = settings.deadline_seconds - (time.monotonic() - started)
        if report.stopped_because is None and left <= 0:
            report.stopped_because = (
                f"the partition's LLM deadline of {settings.deadline_seconds:g} s passed (LLMSettings.deadline_seconds)"
            )
        if report.stopped_because is not None:
            outcome.llm = _skipped(report.stopped_because)
            if failures_in_a_row >= settings.breaker_failures:
                report.skipped_breaker += 1
            else:
                report.skipped_deadline += 1
            continue
        # every request's retries end with what is left of the deadline
        call_settings = replace(
            settings,
            timeout_seconds=max(0.5, min(settings.timeout_seconds, left)),
            retry_budget_seconds=max(0.5, min(settings.retry_budget_seconds, left)),
        )
        context = outcome.expanded or outcome.retrieved
        outcome.llm = evaluate_question(client, call_settings, outcome.resolved.question, context)
        outcome.latency_ms["generate"] = outcome.llm.generate_ms
        outcome.latency_ms["judge"] = outcome.llm.judge_ms
        report.evaluated += 1
        failures_in_a_row = failures_in_a_row + 1 if outcome.llm.endpoint_failed else 0
        if outcome.llm.fatal and time.monotonic() - started < settings.deadline_seconds:
            # refused, or its retries spent: every other question would wait and fail alike (past the deadline,
            # the questions left are the deadline's, below)
            report.stopped_because = (outcome.llm.answer_error or outcome.llm.judge_error or "").split(": ", 1)[-1]
            failures_in_a_row = settings.breaker_failures  # the questions left are counted as the breaker's
        elif failures_in_a_row >= settings.breaker_failures:
            last = outcome.llm.answer_error or outcome.llm.judge_error or ""
            report.stopped_because = (
                f"the LLM endpoint failed {failures_in_a_row} questions in a row (circuit "
                f"breaker, LLMSettings.breaker_failures); last error: {last}"
            )
    tracker.step(len(todo))
    report.seconds = time.monotonic() - started
    for outcome in todo:
        if outcome.scored is None:  # an outcome made without run_retrieval: what the judge's metrics need
            rq = outcome.resolved
            outcome.scored = Scored(
                rq.key,
                rq.question,
                tuple(rq.references),
                tuple(outcome.retrieved),
                tuple(outcome.expanded or outcome.retrieved),
                max(len(outcome.retrieved), 1),
                documents=rq.documents,
            )
    score_outcomes(outcomes, registry.values(source="judge"))
    return report


LATENCY_SAMPLE = 20


@dataclass
class QueryLatency:
    """Query latency of a run (the cold first call apart from the warm mean), and how long its search took."""

    cold_ms: float = float("nan")
    warm_ms: float = float("nan")
    sample: int = 0
    #: wall time of searching, expanding and scoring every question (their embedding apart)
    search_seconds: float = float("nan")
    #: the retriever's own index (a keyword index; 0 for dense, whose index is the collection): build time, size
    retriever_index_seconds: float = 0.0
    retriever_index_bytes: int = 0


def measure_query_latency(embedder: Embedder, questions: Sequence[str], sample: int = LATENCY_SAMPLE) -> QueryLatency:
    """Time the first query embedding alone (cold), then up to ``sample`` questions one at a time (warm mean).

    Both bypass the embedding cache, so the numbers are the model's, whatever ran before.
    """
    result = QueryLatency()
    if not questions:
        return result
    started = time.perf_counter()
    embedder.embed([questions[0]], "query", use_cache=False)
    result.cold_ms = (time.perf_counter() - started) * 1000
    timings = []
    for text in list(questions)[: max(sample, 0)]:
        started = time.perf_counter()
        embedder.embed([text], "query", use_cache=False)
        timings.append((time.perf_counter() - started) * 1000)
    result.sample = len(timings)
    result.warm_ms = float(np.mean(timings)) if timings else result.cold_ms
    return result


@dataclass(frozen=True)
class RetrievalOptions:
    """How a run retrieves and scores (see :func:`run_retrieval`)."""

    top_k: int = DEFAULT_TOP_K
    filter_by_document: bool = False
    strategy: str | None = None
    retriever: str = "dense"
    expansion: ExpansionSettings | None = None
    chunks: Mapping[str, Sequence[CollectionChunk]] | None = None
    parents: Mapping[str, Mapping[str, Any]] | None = None
    budgets: Sequence[int] = budget.DEFAULT_BUDGETS
    latency: "QueryLatency | None" = None
    latency_sample: int = LATENCY_SAMPLE
    registry: MetricRegistry = METRICS
    search: SearchSettings = SearchSettings()
    #: cl100k token ids by chunk text, as the collection's build stored them: the budget metrics use them instead
    #: of encoding those texts again (texts left out are encoded; the values are the same either way)
    token_ids: Mapping[str, np.ndarray] | None = None


def run_retrieval(
    questions: Sequence[ResolvedQuestion],
    embedder: Embedder,
    store: VectorStore,
    collection: str,
    options: RetrievalOptions = RetrievalOptions(),
) -> list[QuestionOutcome]:
    """Retrieve ``top_k`` chunks per question, expand them, and score both sets.

    Questions are embedded in one batch and searched together (:func:`.search.search_many`, in blocks of
    ``options.search.block_mb`` MB of scores), which finds exactly what one search per question finds, by the
    retriever ``options.retriever`` names (:mod:`chunkbench_core.retrievers`: ``dense``, ``hybrid``); with
    ``filter_by_document`` each question searches only its own documents (all those its references and source
    documents name: :func:`question_documents`), otherwise every document (the Chroma protocol); tied scores
    are ordered by chunk_id (:func:`search_stable`). ``strategy`` and
    ``expansion`` decide neighbor expansion and parent context (for the strategies registered with
    ``parent_context``; ``parents`` maps parent chunk ids to their rows, else the store is asked); ``chunks`` (see
    :func:`collection_chunks` / :func:`split_chunk_rows`)
    enables precision_omega and nDCG. A search that fails is recorded on that question.
    ``budgets`` are the context budgets of :mod:`.budget` (``recall_at_B``, ``budget_auc``); ``token_ids``
    (chunk text -> its cl100k ids, stored with the collection's build) spares encoding the contexts' chunks.
    Every retrieval metric of ``registry`` is scored (the judge's are scored by :func:`run_llm_evaluation`).

    Query latency (``options.latency``, filled in when given): the cold query is what the first
    question of a fresh process costs: loading the model (as timed when this process loaded it,
    0 for a remote model), the first query's embedding (timed alone) and its search; so it is
    comparable with the warm query time, which is embedding plus search too. Then up to
    ``options.latency_sample`` questions are embedded one at a time, without the embedding cache,
    and their mean is the warm query-embedding time of every question (``embed_ms``). So
    run order and cache hits never show up as latency. The search of up to ``options.latency_sample``
    questions is timed alone the same way (a user's question is searched alone), and their mean is every
    question's ``search_ms``; expansion is timed per question. ``latency.search_seconds`` is the wall time of
    searching, expanding and scoring every question.
    """
    top_k, filter_by_document, strategy = options.top_k, options.filter_by_document, options.strategy
    chunks, parents, latency, registry = options.chunks, options.parents, options.latency, options.registry
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    expansion = options.expansion or ExpansionSettings()
    budgets = budget.validate_budgets(options.budgets)
    outcomes: list[QuestionOutcome] = []
    if not questions:
        return outcomes
    measured = measure_query_latency(embedder, [rq.question.question for rq in questions], options.latency_sample)
    if latency is not None:
        latency.cold_ms, latency.warm_ms, latency.sample = measured.cold_ms, measured.warm_ms, measured.sample
    embed_ms = measured.warm_ms
    vectors = np.asarray(embedder.embed([rq.question.question for rq in questions], "query"))
    # the question's own documents: every document its references and source documents name
    documents = [question_documents(rq) if filter_by_document else None for rq in questions]
    texts = [rq.question.question for rq in questions]
    from chunkbench_core.retrievers import RETRIEVERS, SearchRequest  # the retrievers import this module

    retriever = RETRIEVERS.open(options.retriever, store, collection)
    if latency is not None:
        latency.retriever_index_seconds, latency.retriever_index_bytes = retriever.index.seconds, retriever.index.bytes
    started = time.perf_counter()
    # one query's search as a user's question runs it (alone): the query latency of every question
    sampled = time_single_searches(retriever, texts, vectors, top_k, documents, options.latency_sample)
    # hundreds of thousands of hits, expansion nodes and values are made here, freed by reference counting: with
    # the cycle collector running, its passes over every object alive took about a fifth of the whole (20,000
    # questions x 65,000 chunks: 15.8 s with it, 13.0 s without, side by side)
    with collector_paused():
        found = retriever.search_all(SearchRequest(texts, vectors, top_k, documents, options.search))
        search_ms = [float(np.mean(sampled)) if sampled else 0.0] * len(questions)
        if latency is not None and sampled:  # the first query of a fresh process: load, embed, search
            load_ms = float(getattr(embedder, "load_seconds", 0.0) or 0.0) * 1000
            latency.cold_ms = load_ms + measured.cold_ms + sampled[0]
        tracker = Tracker("retrieval", len(questions), unit="questions")
        index = None if chunks is None else ChunkIndex(chunks)
        shared = SharedStrings()
        for position, rq in enumerate(questions):
            tracker.step(position)
            outcome = QuestionOutcome(rq)
            outcomes.append(outcome)
            hits = found[position]
            if isinstance(hits, ChunkbenchError):
                outcome.error = f"retrieval: {hits}"
                continue
            t1 = time.perf_counter()
            try:
                outcome.retrieved = hits
                outcome.expanded, outcome.expansion_tree = apply_neighbor_expansion(
                    outcome.retrieved, store, collection, strategy, expansion
                )
                if gives_parent_context(strategy):
                    outcome.expanded = attach_parents(
                        outcome.expanded, outcome.expansion_tree, store, collection, parents
                    )
            except ChunkbenchError as exc:
                outcome.error = f"retrieval: {exc}"
                continue
            t2 = time.perf_counter()
            shared.share(outcome.retrieved, outcome.expanded)
            outcome.latency_ms = {"embed": embed_ms, "search": search_ms[position], "expand": (t2 - t1) * 1000}
            outcome.retrieval_ms = embed_ms + search_ms[position] + (t2 - t1) * 1000

            order = ranking_order(outcome.expansion_tree) if outcome.expansion_tree else outcome.expanded
            reference_documents = sorted({r.document for r in rq.references})
            # the chunks meeting the evidence: the only ones the pool's metrics count (others score nothing)
            pool = (
                None
                if index is None
                else tuple(c for d in reference_documents for c in index.touching(d, rq.references))
            )
            outcome.scored = Scored(
                rq.key,
                rq.question,
                tuple(rq.references),
                tuple(outcome.retrieved),
                tuple(order),
                top_k,
                pool,
                budgets,
                documents=rq.documents,
            )
        if options.token_ids:  # the contexts' tokens as the build stored them: the budget metrics encode none of them
            budget.remember_tokens(options.token_ids, (c.text for o in outcomes if o.scored for c in o.scored.context))
        score_outcomes(outcomes, registry.values(source="retrieval"))
    tracker.step(len(questions))
    if latency is not None:
        latency.search_seconds = time.perf_counter() - started
    return outcomes


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector paused for the block, then as it was. Reference counting still frees every object
    that is not in a cycle; one that is waits for the collector's next pass after the block. A block making many
    objects that form no cycles so spares the collector's passes over every object alive, which grow with the
    objects it makes."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def question_documents(rq: ResolvedQuestion) -> tuple[str, ...] | None:
    """The documents a question searches within its own documents: all those its references and source
    documents name (None for a question naming none: it searches them all)."""
    return tuple(rq.documents) or None


def time_single_searches(
    retriever: Any,
    texts: Sequence[str],
    vectors: np.ndarray,
    top_k: int,
    documents: Sequence[str | Sequence[str] | None],
    sample: int,
) -> list[float]:
    """Milliseconds of one search of each of the first ``sample`` questions, alone (as one user question is
    searched), by ``retriever`` (:class:`chunkbench_core.retrievers.Retriever`); an error leaves the rest
    untimed (the batched search reports it on its question)."""
    timings: list[float] = []
    for text, vector, document in itertools.islice(zip(texts, vectors, documents), max(sample, 1)):
        started = time.perf_counter()
        try:
            retriever.search_one(text, vector, top_k, document)
        except ChunkbenchError:
            break
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def metric_value(outcome: QuestionOutcome, metric: Any) -> Any:
    """The outcome's value of a registry metric (None: not scored); an outcome built by hand shows its
    grouped scores."""
    if metric.name in outcome.values:
        return outcome.values[metric.name]
    if metric.group == "budget":
        value = outcome.budget_scores.get(metric.name)
    elif metric.base is not None:
        value = outcome.scores_expanded.get(metric.base)
    else:
        value = outcome.scores.get(metric.name)
    return _finite(value)


def outcome_row(outcome: QuestionOutcome, registry: MetricRegistry = METRICS) -> dict[str, Any]:
    """The ``question_results`` columns this module owns (the pipeline adds run ids): the question, what was
    retrieved, latencies, the LLM's cells, and every registered metric's value."""
    q = outcome.resolved.question
    row: dict[str, Any] = {
        "question_set": outcome.resolved.question_set,
        "question_id": q.id,
        "question": q.question,
        "category": q.category,
        "difficulty": q.difficulty,
        "n_references": len(outcome.resolved.references),
        "judge_only": outcome.resolved.judge_only,
        "labels": json.dumps(dict(q.labels), ensure_ascii=False, sort_keys=True) if q.labels else None,
        "source_documents": json.dumps(list(outcome.resolved.documents), ensure_ascii=False),
        "n_located_references": q.n_located,
        "evidence_origin": q.evidence_origin,
        "retrieved": json.dumps([r.to_record() for r in outcome.retrieved], ensure_ascii=False),
        "expanded": json.dumps([r.to_record() for r in outcome.expanded], ensure_ascii=False),
        "expansion_tree": json.dumps([n.to_record() for n in outcome.expansion_tree], ensure_ascii=False),
        "n_expanded": len(outcome.expanded),
        "retrieval_ms": outcome.retrieval_ms,
        "embed_ms": outcome.latency_ms.get("embed"),
        "search_ms": outcome.latency_ms.get("search"),
        "expand_ms": outcome.latency_ms.get("expand"),
        "error": outcome.error,
        "context_tokens": _finite(outcome.budget_scores.get("context_tokens")),
        # every configured budget (the metric columns hold the default ones)
        "budget_recalls": json.dumps(
            {c.removeprefix("recall_at_"): v for c, v in outcome.budget_scores.items() if c.startswith("recall_at_")}
        ),
    }
    row.update(outcome.llm.row() if outcome.llm is not None else {c: None for c in LLM_COLUMNS})
    row.update({m.name: metric_value(outcome, m) for m in registry.values()})
    return row


def reference_entries(resolved: ResolvedQuestion) -> list[dict[str, Any]]:
    """The ``references`` cell of a question row: each evidence span ``{document, start, end, located_by}``
    (``located_by``: how ``questions locate`` found it, with its ``score``; "" for one written by hand or
    accepted in review)."""
    sources = resolved.question.references
    entries = []
    for i, span in enumerate(resolved.references):
        ref = sources[i] if i < len(sources) else None
        entry: dict[str, Any] = {
            "document": span.document,
            "start": span.start,
            "end": span.end,
            "located_by": ref.located_by if ref is not None else "",
        }
        if ref is not None and ref.located_by and ref.score is not None:
            entry["score"] = round(ref.score, 3)
        entries.append(entry)
    return entries


def aggregate(
    outcomes: Sequence[QuestionOutcome],
    confidence: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_BOOTSTRAP_RESAMPLES,
    seed: int = DEFAULT_SEED,
    registry: MetricRegistry = METRICS,
) -> dict[str, float | int]:
    """Means over scored questions with seeded percentile-bootstrap confidence intervals.

    Keys: n_questions (questions scored on evidence: spans or source documents), n_documents_only (of them,
    those with source documents but no spans: scored by the document-level metrics only), n_located (of them,
    those with evidence spans found by ``questions locate`` and not reviewed yet), n_judge_only
    (questions without evidence: left out of the evidence means, judged when the LLM ran), n_failed; for every registered
    metric its run name (the mean over the questions it applies to) and ``<run_name>_ci_low`` /
    ``<run_name>_ci_high``, the judge's only when the LLM ran; latency means (retrieval_ms, generate_ms,
    judge_ms). When the LLM ran: n_judged, n_answer_failed, n_judge_failed and token sums.
    Values are numbers only (NaN where a metric is unavailable).
    """
    scored = [o for o in outcomes if o.error is None]
    evidence = [o for o in scored if not o.resolved.judge_only]
    result: dict[str, float | int] = {
        "n_questions": len(evidence),
        "n_judge_only": len(scored) - len(evidence),
        "n_documents_only": sum(o.resolved.scoring == "documents" for o in evidence),
        "n_located": sum(o.resolved.question.n_located > 0 for o in evidence),
        "n_failed": len(outcomes) - len(scored),
    }
    llm = [o.llm for o in scored if o.llm is not None]
    metrics_list = list(registry.values())
    tracker = Tracker("confidence intervals", len(metrics_list), unit="metrics") if len(scored) > SCORE_SLICE else None
    columns: dict[str, list[Any]] = {}
    for done, metric in enumerate(metrics_list):
        if tracker is not None:
            tracker.step(done)
        if metric.source == "judge":
            if not llm:
                continue  # no LLM ran: the judge's means stay empty
            applicable = [o for o in scored if o.llm is not None]
        else:
            applicable = [
                o
                for o in scored
                if (metric.applies_to(o.scored) if o.scored is not None else not o.resolved.judge_only)
            ]
        values = [metric_value(o, metric) for o in applicable]
        columns[metric.run_name] = [float(v) if isinstance(v, bool) else v for v in values]
        result[metric.run_name] = mean(columns[metric.run_name])
    # every metric's interval at once: the metrics of as many questions resample the same draws (one seed)
    intervals = bootstrap_cis(list(columns.values()), confidence=confidence, n_resamples=n_resamples, seed=seed)
    for name, (low, high) in zip(columns, intervals):
        result[f"{name}_ci_low"], result[f"{name}_ci_high"] = low, high
    if tracker is not None:
        tracker.step(len(metrics_list))
    result["retrieval_ms"] = mean(o.retrieval_ms for o in scored)
    result["context_tokens"] = mean(o.budget_scores.get("context_tokens") for o in scored)
    result["query_ms"] = mean(
        (o.latency_ms.get("embed", 0.0) + o.latency_ms.get("search", 0.0)) for o in scored if o.latency_ms
    )
    if llm:
        result["n_judged"] = sum(r.judgement is not None for r in llm)
        result["n_answer_failed"] = sum(r.answer_error is not None for r in llm)
        result["n_judge_failed"] = sum(r.judgement is None and r.answer_error is None for r in llm)
        result["generate_ms"] = mean(r.generate_ms for r in llm if r.answer_error is None)
        result["judge_ms"] = mean(r.judge_ms for r in llm if r.judge_attempts)
        result["answer_prompt_tokens"] = sum(r.answer_usage.prompt_tokens for r in llm)
        result["answer_completion_tokens"] = sum(r.answer_usage.completion_tokens for r in llm)
        result["judge_prompt_tokens"] = sum(r.judge_usage.prompt_tokens for r in llm)
        result["judge_completion_tokens"] = sum(r.judge_usage.completion_tokens for r in llm)
    return result


def document_hashes(documents: Mapping[str, str]) -> dict[str, str]:
    """SHA-256 of each document's parsed markdown (what the offsets refer to)."""
    return {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in sorted(documents.items())}


@dataclass(frozen=True)
class ProvenanceInputs:
    """What a run's provenance is made of (see :func:`build_provenance`)."""

    strategy: str
    corpus_model: str
    boundary_model: str | None
    chunking_params: Mapping[str, Any]
    top_k: int
    filter_by_document: bool
    expansion: ExpansionSettings
    question_set_hash: str
    question_sets: Mapping[str, str]
    documents: Mapping[str, str]
    code_version: str
    llm: Mapping[str, Any] | None = None
    seed: int = DEFAULT_SEED


def build_provenance(inputs: ProvenanceInputs) -> dict[str, Any]:
    """Everything that determines a run's numbers, recorded with every run so a number can be traced to what
    made it."""
    i = inputs
    return {
        "strategy": i.strategy,
        "corpus_model": i.corpus_model,
        "boundary_model": i.boundary_model,
        "chunking_params": dict(i.chunking_params),
        "top_k": i.top_k,
        "filter_by_document": i.filter_by_document,
        "neighbors": {**i.expansion.to_dict(), "applied": i.expansion.applies_to(i.strategy)},
        "parent_context": gives_parent_context(i.strategy),
        "question_set_hash": i.question_set_hash,
        "question_sets": dict(i.question_sets),
        "document_hashes": document_hashes(i.documents),
        "code_version": i.code_version,
        "metrics_library": ranking.library_version(),
        "bootstrap": {"confidence": DEFAULT_CONFIDENCE, "resamples": DEFAULT_BOOTSTRAP_RESAMPLES, "seed": i.seed},
        "llm": dict(i.llm) if i.llm else None,
    }
