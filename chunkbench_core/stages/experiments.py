"""The experiments stage: every question retrieved from one collection and scored, with what it cost.

Behind the ``experiment_results`` asset: :func:`run_experiment` takes an :class:`ExperimentRequest` (the
resolved collection, the question folder, the parsed documents, the retrieval settings, the LLM if any)
and the stores, and returns an :class:`ExperimentSummary`. The question rows and the run's row go
through the results store (``ResultsDB.record_experiment``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from chunkbench_core.embedding import Embedder, EmbeddingModelSpec
from chunkbench_core.errors import QuestionSetError
from chunkbench_core.evaluation.cost import LLMPrices, query_usd_per_1000, question_usd
from chunkbench_core.evaluation.experiment import (
    DEFAULT_TOP_K,
    ExpansionSettings,
    ProvenanceInputs,
    QueryLatency,
    RetrievalOptions,
    aggregate,
    build_provenance,
    outcome_row,
    reference_entries,
    run_llm_evaluation,
    run_retrieval,
    split_chunk_rows,
)
from chunkbench_core.evaluation.llm import LLMSettings
from chunkbench_core.evaluation.metric_registry import METRICS, out_of_range
from chunkbench_core.evaluation.question_check import check_questions
from chunkbench_core.evaluation.search import SearchSettings
from chunkbench_core.evaluation.questions import question_set_hash
from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.labels import DEFAULT_RETRIEVER, configuration_label
from chunkbench_core.progress import scope, timed
from chunkbench_core.provenance import code_version
from chunkbench_core.storage.records import ExperimentRun, UsageRecord, now
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.space import ensure_space, parquet_rows_bytes
from chunkbench_core.storage.vector_store import VectorStore
from chunkbench_core.tokens import count_tokens

from .collections import read_build_chunks, read_build_tokens
from .spec import CollectionSpec


#: the scopes of a run: every question searches every document, or only its own documents
SHARED = "shared"
OWN_DOCUMENTS = "own_documents"


@dataclass(frozen=True)
class LLMUse:
    """The chat model of a run: its client and settings (both None: no LLM), and its prices."""

    client: Any = None
    settings: LLMSettings | None = None
    prices: LLMPrices | None = None

    @property
    def configured(self) -> bool:
        return self.client is not None and self.settings is not None


@dataclass(frozen=True)
class ExperimentRequest:
    """One experiment run against the collection ``spec`` names.

    ``provenance``: what the collection was built from (its build record) and the run's context (Dagster
    run, benchmark, batch), copied into the run's provenance; ``budgets``: the context budgets in tokens;
    ``retriever``: how the chunks are found (:mod:`chunkbench_core.retrievers`); ``filter_by_document``: each
    question searches only its own documents (the run's ``scope`` is then ``own_documents``, else ``shared``).
    """

    @property
    def scope(self) -> str:
        return OWN_DOCUMENTS if self.filter_by_document else SHARED

    spec: CollectionSpec
    experiment_run_id: str
    questions_folder: Path
    documents: Sequence[ParsedDocument]
    top_k: int = DEFAULT_TOP_K
    filter_by_document: bool = False
    retriever: str = DEFAULT_RETRIEVER
    expansion: ExpansionSettings = field(default_factory=ExpansionSettings)
    provenance: dict[str, Any] = field(default_factory=dict)
    budgets: Sequence[int] | None = None
    llm: LLMUse = field(default_factory=LLMUse)
    search: SearchSettings = field(default_factory=SearchSettings)  # the batched search's block size


@dataclass
class ExperimentSummary:
    experiment_run_id: str
    metrics: dict[str, float | int]
    errors: list[str]
    n_questions: int
    out_of_range: list[str] = field(default_factory=list)
    llm_report: Any = None  # evaluation.experiment.LLMRunReport when an LLM ran: evaluated, skipped and why


def run_experiment(
    request: ExperimentRequest, embedder: Embedder, store: VectorStore, results: ResultsDB
) -> ExperimentSummary:
    """Score every question of every question set against the collection.

    Also measures the query cost: warm query latency (the cold first call kept apart),
    context tokens per question, and dollars per 1,000 questions at the embedding model's
    and the LLM's prices (unknown prices count as 0). Progress lines name the configuration.
    """
    label = configuration_label(request.spec.strategy, request.spec.model.id, retriever=request.retriever)
    with scope(label), timed("retrieval"):
        return _run_experiment(request, embedder, store, results)


def _run_experiment(
    request: ExperimentRequest, embedder: Embedder, store: VectorStore, results: ResultsDB
) -> ExperimentSummary:
    spec = request.spec
    budgets = tuple(request.budgets) if request.budgets else RankingSettings().budgets
    sample = request.provenance.get("corpus_sample")
    # a sample smaller than the evidence sets aside the questions whose evidence it left out (counted, no problem)
    left_out = (sample.get("evidence_left_out") or ()) if isinstance(sample, dict) else ()
    check = check_questions(request.questions_folder, {d.document: d.markdown for d in request.documents}, left_out)
    sets, resolved, errors = check.sets, check.resolved, [str(e) for e in check.problems]
    results.record_question_problems(check.rows(now()))
    results.record_parse_ceiling(check.ceiling.rows(now()))
    if not resolved:
        raise QuestionSetError(  # permanent: the same questions fail the same way on a retry
            str(request.questions_folder),
            "no question could be evaluated: " + ("; ".join(errors) if errors else "no question sets in the folder"),
        )
    # every chunk of this collection (precision_omega, nDCG) and its parents (stored, not in the vector store)
    build, chunk_rows = read_build_chunks(results, spec.rows_key, request.provenance.get("build"))
    chunks, parents = split_chunk_rows(chunk_rows)
    token_ids = read_build_tokens(results, spec.rows_key, build, chunk_rows)  # empty for a build made before
    # a damaged or incomplete collection is moved aside here (permanent: its chunk_collections partition rebuilds it)
    store.verify_collection(spec.collection, sum(r.get("role") != "parent" for r in chunk_rows) or None)
    latency = QueryLatency()
    before = dataclasses.replace(embedder.usage)  # the query embeddings are what run_retrieval adds to it
    outcomes = run_retrieval(
        resolved,
        embedder,
        store,
        spec.collection,
        RetrievalOptions(
            top_k=request.top_k,
            filter_by_document=request.filter_by_document,
            strategy=spec.strategy,
            retriever=request.retriever,
            expansion=request.expansion,
            chunks=chunks,
            parents=parents,
            budgets=budgets,
            latency=latency,
            search=request.search,
            token_ids=token_ids,
        ),
    )
    del chunk_rows, chunks, parents, token_ids  # every chunk of the collection: not needed from here on (memory)
    query_usage = UsageRecord(spec.strategy, spec.model.id, "queries", embedder.usage.since(before).as_row())
    llm = request.llm
    llm_report = (
        run_llm_evaluation(outcomes, llm.client, llm.settings)  # never raises
        if llm.configured and llm.settings is not None
        else None
    )
    prices = resolve_llm_prices(llm.settings if llm.configured else None, llm.prices)
    questions = [
        {
            **outcome_row(o),
            "expected_answer": o.resolved.question.expected_answer,
            "references": json.dumps(reference_entries(o.resolved), ensure_ascii=False),
            "build": build,
        }  # the chunk rows it retrieved from stay readable after a rebuild
        for o in outcomes
    ]
    question_costs(questions, spec.model, prices)
    summary: dict[str, Any] = aggregate(outcomes)
    summary["cold_query_ms"] = latency.cold_ms
    summary["search_seconds"] = latency.search_seconds
    summary["retriever_index_seconds"] = latency.retriever_index_seconds
    summary["retriever_index_bytes"] = latency.retriever_index_bytes
    summary.update(query_cost(outcomes, spec.model, llm.settings if llm.configured else None, llm.prices))
    summary.update(partition_cost(results, spec.rows_key, questions, prices))
    n_outcomes = len(outcomes)
    del outcomes  # the retrieved chunks and what the metrics saw: the rows above hold what is kept (memory)
    summary["corpus_sample"] = (
        sample.get("label") if isinstance(sample, dict) else None
    ) or f"whole corpus ({len(request.documents):,} documents)"
    provenance = {
        **build_provenance(
            ProvenanceInputs(
                strategy=spec.strategy,
                corpus_model=spec.corpus_model,
                boundary_model=request.provenance.get("boundary_model"),
                chunking_params=request.provenance.get("chunking_params", {}),
                top_k=request.top_k,
                filter_by_document=request.filter_by_document,
                expansion=request.expansion,
                question_set_hash=question_set_hash(sets),
                question_sets={qs.name: qs.sha256 for qs in sets},
                documents={d.document: d.markdown for d in request.documents},
                code_version=code_version(),
                llm=llm.settings.to_dict() if llm.configured and llm.settings else None,
            )
        ),
        "documents": sorted(d.document for d in request.documents),
        "question_files": {Path(qs.path).name: qs.sha256 for qs in sets},  # the board names sets by file
        "variant": spec.variant,
        **request.provenance,
        "build": build,
        "budgets": list(budgets),
        "latency_sample": latency.sample,
        "retriever": request.retriever,
        "scope": request.scope,
    }
    run = ExperimentRun(
        experiment_run_id=request.experiment_run_id,
        strategy=spec.strategy,
        corpus_model=spec.corpus_model,
        variant=spec.variant,
        top_k=request.top_k,
        neighbor_prev=request.expansion.neighbor_prev,
        neighbor_next=request.expansion.neighbor_next,
        budgets=list(budgets),
        provenance=provenance,
        summary=summary,
        questions=questions,
        retriever=request.retriever,
        scope=request.scope,
    )
    ensure_space(results.tables_dir, parquet_rows_bytes(questions), "the experiment's results")  # before any row
    results.record_experiment(f"{spec.rows_key}__{request.experiment_run_id}", run)
    results.record_query_usage(f"{spec.rows_key}__{request.experiment_run_id}", query_usage)
    return ExperimentSummary(
        request.experiment_run_id, summary, errors, n_outcomes, out_of_range(questions, METRICS), llm_report=llm_report
    )


def resolve_llm_prices(llm_settings: LLMSettings | None, llm_prices: LLMPrices | None) -> LLMPrices:
    """The prices given, else the configured LLM's known prices, else unknown (counted as 0)."""
    prices = llm_prices or LLMPrices()
    if llm_settings is not None and not prices.known and llm_settings.prices():
        prices = LLMPrices(*llm_settings.prices())  # type: ignore[misc]  # prices() gives the two prices, checked just above
    return prices


def query_cost(
    outcomes: Sequence[Any], model: EmbeddingModelSpec, llm_settings: LLMSettings | None, llm_prices: LLMPrices | None
) -> dict[str, float]:
    """question_tokens, query_usd_per_1000 and llm_priced of a run (see evaluation.cost)."""
    scored = [o for o in outcomes if o.error is None]
    if not scored:
        return {"question_tokens": float("nan"), "query_usd_per_1000": float("nan"), "llm_priced": False}
    question_tokens = sum(count_tokens(o.resolved.question.question) for o in scored) / len(scored)
    context_tokens = sum(o.budget_scores.get("context_tokens", 0.0) for o in scored) / len(scored)
    prices = resolve_llm_prices(llm_settings, llm_prices)
    answered = [o.llm.answer_usage.completion_tokens for o in scored if o.llm is not None and o.llm.answer]
    answer_tokens = (
        sum(answered) / len(answered)
        if answered
        else float(llm_settings.answer_max_tokens if llm_settings else LLMSettings.answer_max_tokens)
    )
    return {
        "question_tokens": question_tokens,
        "query_usd_per_1000": query_usd_per_1000(
            question_tokens, context_tokens, model.price_per_mtok, prices, answer_tokens
        ),
        "llm_priced": prices.known,
    }


def question_costs(rows: Sequence[dict[str, Any]], model: EmbeddingModelSpec, prices: LLMPrices) -> None:
    """Add ``embedding_usd``, ``answer_usd``, ``judge_usd`` and ``cost_usd`` to each question row
    (evaluation.cost.question_usd; a question whose retrieval failed was not embedded)."""

    def tokens(row: dict[str, Any], name: str) -> float:
        value = row.get(name)
        return 0.0 if value is None or value != value else float(value)

    for row in rows:
        question = 0.0 if row.get("error") else float(count_tokens(row.get("question") or ""))
        row.update(
            question_usd(
                question,
                model.price_per_mtok,
                prices,
                tokens(row, "answer_prompt_tokens"),
                tokens(row, "answer_completion_tokens"),
                tokens(row, "judge_prompt_tokens"),
                tokens(row, "judge_completion_tokens"),
            )
        )


def partition_cost(
    results: ResultsDB, rows_key: str, rows: Sequence[dict[str, Any]], prices: LLMPrices
) -> dict[str, float]:
    """What the partition cost in this benchmark (evaluation.cost): its collection's ``index_usd``
    (embeddings, contextual LLM calls), the corpus's ``caption_usd``, and the questions' dollars
    (``questions_usd``, of which ``answer_usd`` and ``judge_usd``); ``cost_usd`` is their sum."""
    from chunkbench_core.evaluation.cost import caption_usd
    from chunkbench_core.parsing.captions import DEFAULT_PROMPT

    built = results.read("index_costs", rows_key)
    index = float(built[0].get("index_usd") or 0.0) if built else 0.0
    documents = results.read("documents", "corpus")
    n_captions = sum(int(d.get("n_captions") or 0) for d in documents)
    captions = caption_usd(
        n_captions, count_tokens(DEFAULT_PROMPT), sum(float(d.get("caption_tokens") or 0) for d in documents), prices
    )
    parts = {
        "index_usd": index,
        "caption_usd": captions,
        **{
            name: sum(float(r.get(column) or 0.0) for r in rows)
            for name, column in (
                ("questions_usd", "cost_usd"),
                ("answer_usd", "answer_usd"),
                ("judge_usd", "judge_usd"),
            )
        },
    }
    return {**parts, "cost_usd": parts["index_usd"] + parts["caption_usd"] + parts["questions_usd"]}
