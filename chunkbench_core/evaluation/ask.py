"""Ask one question of one configuration (strategy x corpus model) and look at what comes back.

Works from a built collection only (the ``chunk_collections`` partition): the question is
embedded with the corpus model's query prefix, searched by the configuration's retriever with the same
tie-breaking as the experiments (:mod:`chunkbench_core.retrievers`), expanded with neighbors (:mod:`.retrieval`)
and, for parent-child strategies, given its parent sections. With an LLM configured, the
answer is generated from that context exactly as in an experiment (no judge: there is no
expected answer). Nothing is written here (the command line saves each query to the history:
chunkbench_core.storage.queries).

:func:`choose_configuration` decides the configuration when the user names none (module rule there).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping, Sequence

import numpy as np

from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.labels import DEFAULT_RETRIEVER, configuration_label, named_retriever
from chunkbench_core.redaction import describe_error
from chunkbench_core.storage.queries import query_id

from .experiment import split_chunk_rows
from .llm import LLMResult, LLMSettings, build_context, generate_answer
from .retrieval import (
    ExpansionNode,
    ExpansionSettings,
    gives_parent_context,
    RetrievedChunk,
    apply_neighbor_expansion,
    attach_parents,
)


class CollectionMissingError(ChunkbenchError):
    """The configuration's collection is not built; the message says which partition to materialize."""

    def __init__(self, collection: str, strategy: str, corpus_model: str) -> None:
        self.collection = collection
        super().__init__(
            f"collection {collection} is not built: materialize the chunk_collections partition "
            f"{corpus_model}|{strategy} first (chunkbench run --strategy {strategy} --corpus-model {corpus_model}, "
            "or in the Dagster UI)"
        )


@dataclass
class AskResult:
    question: str
    strategy: str
    corpus_model: str
    collection: str
    top_k: int
    expansion: ExpansionSettings
    document: str | None
    hits: list[RetrievedChunk] = field(default_factory=list)
    context: list[RetrievedChunk] = field(default_factory=list)  # hits + neighbors + parents, in prompt order
    tree: list[ExpansionNode] = field(default_factory=list)
    latency_ms: dict[str, float] = field(default_factory=dict)
    context_tokens: int | None = None
    context_truncated: bool | None = None
    answer: str | None = None
    answer_error: str | None = None
    llm_model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    retriever: str = DEFAULT_RETRIEVER

    @property
    def parents(self) -> list[RetrievedChunk]:
        return [c for c in self.context if c.role == "parent"]

    def to_dict(self) -> dict[str, Any]:
        def chunk(c: RetrievedChunk) -> dict[str, Any]:
            return {**c.to_record(), "text": c.text}

        by_id = {c.chunk_id: c for c in self.context}
        return {
            "question": self.question,
            "strategy": self.strategy,
            "corpus_model": self.corpus_model,
            "retriever": self.retriever,
            "collection": self.collection,
            "top_k": self.top_k,
            "document": self.document,
            "neighbors": {
                "previous": self.expansion.neighbor_prev,
                "next": self.expansion.neighbor_next,
                "applied": self.expansion.applies_to(self.strategy),
            },
            "hits": [chunk(c) for c in self.hits],
            "expansion_tree": [n.to_record() for n in self.tree],
            "context": [chunk(by_id.get(c.chunk_id, c)) for c in self.context],
            "parents": [chunk(c) for c in self.parents],
            "answer": self.answer,
            "answer_error": self.answer_error,
            "llm_model": self.llm_model,
            "latency_ms": {k: round(v, 1) for k, v in self.latency_ms.items()},
            "tokens": {
                "context": self.context_tokens,
                "prompt": self.prompt_tokens,
                "completion": self.completion_tokens,
            },
            "context_truncated": self.context_truncated,
        }

    def to_text(self, width: int = 240) -> str:
        def clip(text: str) -> str:
            flat = " ".join(text.split())
            return flat if len(flat) <= width else flat[: width - 3] + "..."

        lines = [
            f"question: {self.question}",
            f"configuration: {configuration_label(self.strategy, self.corpus_model, retriever=self.retriever)} (collection "
            f"{self.collection}), top {self.top_k}"
            + (f", document {self.document}" if self.document else "")
            + (
                f", neighbors -{self.expansion.neighbor_prev}/+{self.expansion.neighbor_next}"
                if self.expansion.applies_to(self.strategy)
                else ""
            ),
            "",
            "retrieved chunks:",
        ]
        for c in self.hits:
            lines.append(f"  {c.rank}. score {c.score:.4f}  {c.document} [{c.start}:{c.end}]  {c.chunk_id}")
            lines.append(f"     {clip(c.text)}")
        if not self.hits:
            lines.append("  (none)")
        if any(n.neighbors_prev or n.neighbors_next or n.parent for n in self.tree):
            lines += ["", "expansion tree:"]
            for n in self.tree:
                lines.append(f"  hit {n.hit.rank} {n.hit.chunk_id}")
                for c in n.neighbors_prev:
                    lines.append(f"    previous {c.chunk_id} [{c.start}:{c.end}]")
                for c in n.neighbors_next:
                    lines.append(f"    next     {c.chunk_id} [{c.start}:{c.end}]")
                if n.parent is not None:
                    lines.append(f"    parent   {n.parent.chunk_id} [{n.parent.start}:{n.parent.end}]")
        for p in self.parents:
            lines += ["", f"parent context {p.chunk_id} ({p.document} [{p.start}:{p.end}]):", f"  {clip(p.text)}"]
        lines.append("")
        if self.answer is not None:
            lines += [f"answer ({self.llm_model}):", f"  {self.answer}"]
        elif self.answer_error:
            lines.append(f"answer failed: {self.answer_error}")
        else:
            lines.append(
                "answer: no LLM configured (set CHUNKBENCH_LLM_MODEL, and CHUNKBENCH_LLM_BASE_URL for a local server)"
            )
        latency = ", ".join(f"{k} {v:.0f} ms" for k, v in self.latency_ms.items())
        tokens = [
            f"context {self.context_tokens}" if self.context_tokens is not None else None,
            f"prompt {self.prompt_tokens}" if self.prompt_tokens is not None else None,
            f"completion {self.completion_tokens}" if self.completion_tokens is not None else None,
        ]
        lines.append(f"latency: {latency}")
        if any(tokens):
            lines.append("tokens: " + ", ".join(t for t in tokens if t))
        return "\n".join(lines)


@dataclass(frozen=True)
class AskRequest:
    """One question against one built collection: ``chunk_rows`` are the collection's rows of the ``chunks``
    table (the parents of parent-child strategies are stored there, not in the collection); ``document``: search
    this document only; ``retriever``: how the chunks are found (:mod:`chunkbench_core.retrievers`)."""

    question: str
    strategy: str
    collection: str
    chunk_rows: Sequence[Mapping[str, Any]] = ()
    top_k: int = 5
    expansion: ExpansionSettings | None = None
    document: str | None = None
    retriever: str = DEFAULT_RETRIEVER


def ask(
    request: AskRequest,
    embedder: Any,
    store: Any,
    llm_client: Any | None = None,
    llm_settings: LLMSettings | None = None,
) -> AskResult:
    """Retrieve, expand and (with an LLM) answer the question against the collection; nothing is written.

    Raises CollectionMissingError when the collection is not built.
    """
    question, strategy, collection = request.question, request.strategy, request.collection
    chunk_rows, top_k, expansion, document = request.chunk_rows, request.top_k, request.expansion, request.document
    if not question.strip():
        raise ChunkbenchError("the question is empty")
    if top_k < 1:
        raise ChunkbenchError(f"top_k must be >= 1, got {top_k}")
    expansion = expansion or ExpansionSettings()
    corpus_model = embedder.spec.id
    if collection not in store.list_collections():
        raise CollectionMissingError(collection, strategy, corpus_model)
    from chunkbench_core.retrievers import RETRIEVERS  # the retrievers import the evaluation modules

    RETRIEVERS.get(request.retriever)  # an unknown name is refused before the model loads
    result = AskResult(
        question, strategy, corpus_model, collection, top_k, expansion, document, retriever=request.retriever
    )
    started = time.perf_counter()
    vector = np.asarray(embedder.embed([question], "query"))[0]
    retriever = RETRIEVERS.open(request.retriever, store, collection)  # a keyword index is built here
    t1 = time.perf_counter()
    result.hits = retriever.search_one(question, vector, top_k, (document,) if document else None)
    t2 = time.perf_counter()
    result.context, result.tree = apply_neighbor_expansion(result.hits, store, collection, strategy, expansion)
    if gives_parent_context(strategy):
        _, parents = split_chunk_rows(chunk_rows)
        result.context = attach_parents(result.context, result.tree, store, collection, parents or None)
    t3 = time.perf_counter()
    result.latency_ms = {"embed": (t1 - started) * 1000, "search": (t2 - t1) * 1000, "expand": (t3 - t2) * 1000}
    if llm_client is not None and llm_settings is not None:
        context, result.context_tokens, result.context_truncated = build_context(
            result.context or result.hits, llm_settings.max_context_tokens
        )
        record = LLMResult()
        result.llm_model = llm_settings.model
        try:
            result.answer = generate_answer(llm_client, llm_settings, question, context, record)
        except Exception as exc:  # noqa: BLE001 - shown to the user, never raised
            # a provider's failure (retried as every LLM request is, within the budget) is its own one line
            result.answer_error = describe_error(exc)
        result.latency_ms["generate"] = record.generate_ms
        result.prompt_tokens = record.answer_usage.prompt_tokens
        result.completion_tokens = record.answer_usage.completion_tokens
    else:
        from chunkbench_core.tokens import count_tokens

        result.context_tokens = sum(count_tokens(c.text) for c in result.context or result.hits)
    return result


@dataclass(frozen=True)
class ConfigurationChoice:
    """The configuration a question is asked of, how it was chosen (``source``: given | recommended | defaults)
    and a sentence saying so."""

    strategy: str
    corpus_model: str
    source: str
    note: str
    retriever: str = DEFAULT_RETRIEVER

    @property
    def label(self) -> str:
        return configuration_label(self.strategy, self.corpus_model, retriever=self.retriever)


def choose_configuration(
    strategy: str | None,
    corpus_model: str | None,
    recommendation: Mapping[str, Any] | None,
    default_corpus_model: tuple[str, str],
    built: Sequence[tuple[str, str]],
    ranked: Sequence[tuple[str, str]] = (),
    retriever: str | None = None,
) -> ConfigurationChoice:
    """The configuration to ask of.

    - Both given: those.
    - Neither given: the recommended configuration of the latest comparison (``recommendation``), else the
      corpus model in force (``default_corpus_model``: (model, where it comes from)) with its best-ranked
      strategy (``ranked``: the leaderboard's configurations in rank order), else its first built collection
      (``built``: (strategy, corpus model) of the built default collections).
    - One given: the other from the recommendation when it matches, else as above.
    - ``retriever``: the one given, else the recommendation's when it is the configuration asked, else dense.

    Raises ChunkbenchError when nothing is built for the corpus model to use, naming what to run.
    """
    if strategy and corpus_model:
        return ConfigurationChoice(strategy, corpus_model, "given", "", retriever or DEFAULT_RETRIEVER)
    rec = (str(recommendation["strategy"]), str(recommendation["corpus_model"])) if recommendation else None
    rec_retriever = named_retriever((recommendation or {}).get("retriever")) or DEFAULT_RETRIEVER
    if rec and (strategy in (None, rec[0])) and (corpus_model in (None, rec[1])) and retriever in (None, rec_retriever):
        return ConfigurationChoice(
            rec[0],
            rec[1],
            "recommended",
            f"asking the recommended configuration of the latest comparison, "
            f"{configuration_label(*rec, retriever=rec_retriever)} (--strategy, "
            "--corpus-model and --retriever choose another)",
            rec_retriever,
        )
    retriever = retriever or DEFAULT_RETRIEVER
    model, model_source = (corpus_model, "given") if corpus_model else default_corpus_model
    if strategy:
        return ConfigurationChoice(
            strategy,
            model,
            "defaults",
            f"corpus model {model} ({model_source}; --corpus-model chooses another)",
            retriever,
        )
    for s, m in [*ranked, *built]:
        if m == model:
            why = "its best-ranked strategy" if (s, m) in ranked else "its first built collection"
            return ConfigurationChoice(
                s,
                m,
                "defaults",
                f"asking {configuration_label(s, m)}: corpus model {m} ({model_source}), "
                f"{why} (--strategy and --corpus-model choose another)",
                retriever,
            )
    raise ChunkbenchError(
        f"nothing is built for corpus model {model} ({model_source}) and no comparison recommends a configuration: "
        f"run the benchmark first (chunkbench run --corpus-model {model}), or name one with --strategy and "
        "--corpus-model"
    )


def query_row(
    result: AskResult, *, configuration_source: str, created_at: datetime, build: str | None = None
) -> dict[str, Any]:
    """The ``queries`` row of an answered question (``configuration_source``: given | recommended | defaults)."""
    data = result.to_dict()
    settings = {
        "top_k": result.top_k,
        "document": result.document,
        "collection": result.collection,
        "neighbors": data["neighbors"],
    }
    if result.retriever != DEFAULT_RETRIEVER:  # the ids of dense queries stay what they were
        settings["retriever"] = result.retriever
    latency = result.latency_ms
    return {
        "query_id": query_id(result.question, result.strategy, result.corpus_model, settings, created_at),
        "question": result.question,
        "strategy": result.strategy,
        "corpus_model": result.corpus_model,
        "configuration": configuration_label(result.strategy, result.corpus_model, retriever=result.retriever),
        "configuration_source": configuration_source,
        "collection": result.collection,
        "build": build,
        "top_k": result.top_k,
        "document": result.document,
        "neighbor_prev": result.expansion.neighbor_prev,
        "neighbor_next": result.expansion.neighbor_next,
        "expansion_applied": bool(data["neighbors"]["applied"]),
        "retrieved": json.dumps(data["hits"], ensure_ascii=False),
        "context": json.dumps(data["context"], ensure_ascii=False),
        "expansion_tree": json.dumps(data["expansion_tree"], ensure_ascii=False),
        "answer": result.answer,
        "answer_error": result.answer_error,
        "llm_model": result.llm_model,
        "embed_ms": latency.get("embed"),
        "search_ms": latency.get("search"),
        "expand_ms": latency.get("expand"),
        "generate_ms": latency.get("generate"),
        "total_ms": sum(latency.values()) if latency else None,
        "context_tokens": result.context_tokens,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "context_truncated": result.context_truncated,
        "created_at": created_at,
    }
