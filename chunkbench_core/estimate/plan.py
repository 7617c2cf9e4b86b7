"""The estimate of a real run, assembled from the state on disk: what ``chunkbench run`` prints before it starts
and ``chunkbench estimate`` prints on its own.

- the documents: the corpus scan, with the cl100k tokens of each one's parsed text (counted once per
  parse and kept beside the parsed records, in ``estimate_tokens.json``; the caller parses what is not parsed
  yet first, so a file's size is only a fallback);
- the partitions: the resolved collection specs (chunk size, overlap, boundary model in force);
- each engine's rate: calibrated on this machine and kept (:func:`~.calibration.calibrated`), a remote
  model's from its recorded usage (:func:`~.calibration.remote_rate`);
- what the embedding cache holds: the last build's texts of the documents unchanged since, probed in the
  cache (:func:`~.predict.cache_coverage`);
- the corrections learnt from past runs (:mod:`.feedback`).

After the run, :func:`partition_actual` turns the stage clock's seconds into the actuals
:func:`~.feedback.compare_run` compares.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .calibration import CalibrationStore, EngineRate, calibrate_embedder, calibrated, engine_key, remote_rate
from .errors import EstimateError
from .feedback import PartitionTimes, StageActual, partition_actuals
from .predict import (
    DocumentSize,
    Learnt,
    LLMTiming,
    PipelineTiming,
    RunEstimate,
    RunShape,
    STORE_TIMINGS,
    StoreTiming,
    cache_coverage,
    coverage_cache,
    estimate_run,
)

#: the file beside the parsed records holding each record's cl100k tokens
TOKENS_FILE = "estimate_tokens.json"
#: a calibration's budget in seconds (once per engine and machine)
CALIBRATION_SECONDS = 3.0


def parsed_tokens(store: Any, sources: Sequence[Any], count: Callable[[str], int] | None = None) -> dict[str, int]:
    """{document: cl100k tokens} of the sources whose parse is stored (``ParsedStore``, or a list of them looked in
    order), counted once per record and kept in ``estimate_tokens.json`` beside the records; one record read at a
    time. A document whose stored parse failed counts 0 (a run leaves it out)."""
    if count is None:
        from chunkbench_core.tokens import count_tokens

        count = count_tokens
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    known_by_root: dict[Path, dict[str, Any]] = {}
    changed: set[Path] = set()
    for each in stores:
        root = Path(each.root)
        if root in known_by_root:
            continue
        path = root / TOKENS_FILE
        try:
            known = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        except (OSError, ValueError):
            known = {}
        known_by_root[root] = known if isinstance(known, dict) else {}
    out: dict[str, int] = {}
    for source in sources:
        for each in stores:
            root = Path(each.root)
            known = known_by_root[root]
            record_path = each._path(source)  # noqa: SLF001 - the record's name is the store's key
            name = record_path.name
            value = known.get(name)
            if isinstance(value, int) and value >= 0:
                out[source.document] = value
                break
            if not record_path.exists():
                continue
            record = each.get(source)
            if not record or record.get("status") not in ("parsed", "failed"):
                continue
            markdown = (record.get("parsed") or {}).get("markdown") or "" if record["status"] == "parsed" else ""
            out[source.document] = known[name] = int(count(markdown))
            changed.add(root)
            break
    for root in changed:
        try:
            root.mkdir(parents=True, exist_ok=True)
            path = root / TOKENS_FILE
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(known_by_root[root]), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass  # only a cache: counted again next time
    return out


def corpus_documents(store: Any, sources: Sequence[Any]) -> list[DocumentSize]:
    """The corpus as the estimate sees it: parsed documents by their tokens, the others by their file size
    (``store``: a ParsedStore, or a list of them looked in order)."""
    tokens = parsed_tokens(store, sources)
    return [DocumentSize(s.document, int(s.size_bytes), tokens.get(s.document), s.document in tokens) for s in sources]


def engine_rates(
    models: Sequence[str],
    registry: Mapping[str, Any],
    calibration: CalibrationStore,
    embedder_for: Callable[[str], Any],
    usage_rows: Callable[[str], Sequence[Mapping[str, Any]]],
    say: Callable[[str], None] | None = None,
    budget_seconds: float = CALIBRATION_SECONDS,
) -> dict[str, EngineRate]:
    """Each model's rate: a local engine timed here once (``say`` tells when it is), a remote one from usage."""
    rates: dict[str, EngineRate] = {}
    for model in dict.fromkeys(models):
        spec = registry[model]
        key = engine_key(spec)
        if spec.provider == "local":

            def measure(model: str = model) -> EngineRate:
                if say is not None:
                    say(f"timing {model} on this machine (a few seconds, once) ...")
                return calibrate_embedder(embedder_for(model), budget_seconds=budget_seconds)

            rates[model], _ = calibrated(calibration, key, measure)
        else:
            rates[model] = remote_rate(calibration, key, usage_rows(model))
    return rates


def stored_rates(folder: str | os.PathLike[str], specs: Sequence[Any]) -> dict[str, EngineRate]:
    """The rates kept for these models (``EmbeddingModelSpec``) on this machine, by model id; nothing is timed."""
    store = CalibrationStore(folder)
    out = {}
    for spec in specs:
        try:
            rate = store.rate(engine_key(spec))
        except Exception:  # noqa: BLE001 - without a rate the build's own time per text is used
            rate = None
        if rate is not None:
            out[spec.id] = rate
    return out


def cached_share(
    previous: Mapping[str, Sequence[str]], document_tokens: Mapping[str, float], unchanged: Sequence[str], embedder: Any
) -> float:
    """The share of a partition's texts the embedder's cache holds (0 without a cache)."""
    cache = getattr(embedder, "cache", None)
    if cache is None or not previous:
        return 0.0
    spec = embedder.spec

    def count_cached(keys: list[str]) -> int:
        found = 0
        for begin in range(0, len(keys), 2000):
            found += len(cache.get_many(embedder.namespace, keys[begin : begin + 2000], spec.dimension))
        return found

    prefix = spec.apply_prefix([""], "document")[0]
    return cache_coverage(previous, document_tokens, unchanged, count_cached, prefix)


@dataclass(frozen=True)
class PlannedPartition:
    """One partition to run: its corpus model, strategy, sizes, boundary model, and the embedded texts of its
    last build by document (empty before the first)."""

    corpus_model: str
    strategy: str
    chunk_size: int
    chunk_overlap: int
    boundary_model: str | None
    previous_texts: Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class RunSettings:
    """The settings of a run the estimate needs besides its partitions: the questions, each model's dimension,
    the search's scope, whether the embedding cache is on, the LLM's timing (None without one), the pipeline's
    timing, and the vector store's engine ("edge", "client" or "server": :data:`~.predict.STORE_TIMINGS`)."""

    n_questions: int = 0
    dimensions: Mapping[str, int] = field(default_factory=dict)
    filter_by_document: bool = False
    cache_enabled: bool = True
    llm: LLMTiming | None = None
    pipeline: PipelineTiming = field(default_factory=PipelineTiming)
    store_engine: str = "edge"


def estimate_partitions(
    documents: Sequence[DocumentSize],
    partitions: Sequence[PlannedPartition],
    rates: Mapping[str, EngineRate],
    settings: RunSettings,
    *,
    unchanged: Sequence[str],
    embedder_for: Callable[[str], Any],
    calibration: CalibrationStore,
) -> RunEstimate:
    """The run's estimate: partitions grouped by sizes and boundary model (one :class:`RunShape` each), each
    group estimated with what the cache holds, then put together in the run's order (parsing, warm-ups and
    the finish counted once)."""
    n_questions, dimensions, llm = settings.n_questions, settings.dimensions, settings.llm
    filter_by_document, cache_enabled, pipeline = settings.filter_by_document, settings.cache_enabled, settings.pipeline
    if not partitions:
        raise EstimateError("nothing to estimate: no corpus model x strategy to run")
    tokens = {d.document: float(d.tokens) for d in documents if d.tokens is not None}
    cached: dict[tuple[str, str], float] = {}
    if cache_enabled:
        for p in partitions:
            if p.previous_texts:
                cached[(p.corpus_model, p.strategy)] = cached_share(
                    p.previous_texts, tokens, unchanged, embedder_for(p.corpus_model)
                )
    groups: dict[tuple[int, int, str | None], list[PlannedPartition]] = {}
    for p in partitions:
        groups.setdefault((p.chunk_size, p.chunk_overlap, p.boundary_model), []).append(p)
    timing = STORE_TIMINGS.get(settings.store_engine, StoreTiming())
    merged: RunEstimate | None = None
    for (size, overlap, boundary), members in groups.items():
        models = list(dict.fromkeys(p.corpus_model for p in members))
        strategies = list(dict.fromkeys(p.strategy for p in members))
        shape = RunShape(
            corpus_models=models,
            strategies=strategies,
            chunk_size=size,
            chunk_overlap=overlap,
            n_questions=n_questions,
            boundary_model=boundary,
            filter_by_document=filter_by_document,
            dimensions={m: int(dimensions.get(m, 768)) for m in models},
            cache_enabled=cache_enabled,
            store=timing,
            pipeline=pipeline,
            llm=llm,
        )
        part = estimate_run(
            documents, shape, rates, Learnt(cached=coverage_cache(cached), corrections=calibration.correction)
        )
        wanted = {(p.corpus_model, p.strategy) for p in members}
        kept = tuple(e for e in part.partitions if (e.corpus_model, e.strategy) in wanted)
        part = replace(part, partitions=kept)
        if merged is None:
            merged = part
            continue
        merged = replace(
            merged,
            partitions=merged.partitions + part.partitions,
            warmup_seconds={**part.warmup_seconds, **merged.warmup_seconds},
            rates={**merged.rates, **part.rates},
            keys={**merged.keys, **part.keys},
            boundary_model=merged.boundary_model or part.boundary_model,
            finishing_seconds=merged.finishing_seconds + pipeline.finishing_seconds_per_partition * len(kept),
        )
    assert merged is not None
    order = {(p.corpus_model, p.strategy): i for i, p in enumerate(partitions)}
    return replace(
        merged, partitions=tuple(sorted(merged.partitions, key=lambda e: order.get((e.corpus_model, e.strategy), 0)))
    )


def partition_actual(
    corpus_model: str, strategy: str, before: Mapping[str, float], after: Mapping[str, float], step_seconds: float
) -> list[StageActual]:
    """The actual stages of one partition from the stage clock before and after its step (seconds by stage:
    chunking with the boundary pass inside it, boundary, embedding, indexing, retrieval)."""

    def delta(stage: str) -> float:
        return max(0.0, after.get(stage, 0.0) - before.get(stage, 0.0))

    boundary = delta("boundary")
    build = delta("chunking") + delta("embedding") + delta("indexing")
    return partition_actuals(
        corpus_model,
        strategy,
        PartitionTimes(
            index_seconds=build,
            embedding_seconds=delta("embedding"),
            boundary_seconds=boundary,
            retrieval_seconds=delta("retrieval"),
            step_seconds=max(step_seconds, build + delta("retrieval")),
        ),
    )


def estimate_row(
    estimate: RunEstimate,
    *,
    batch: str,
    benchmark: str,
    actual: Mapping[str, Any] | None = None,
    sample: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``run_estimates`` row of a run: its estimate and, once it ended, what it took."""
    actual = dict(actual or {})
    total = actual.get("total_seconds")
    return {
        "batch": batch,
        "benchmark": benchmark,
        "created_at": estimate.created_at,
        "estimated_seconds": float(estimate.total),
        "actual_seconds": float(total) if total is not None else None,
        "ratio": float(total) / estimate.total if total is not None and estimate.total > 0 else None,
        "n_documents": estimate.n_documents,
        "n_partitions": len(estimate.partitions),
        "texts_to_embed": int(sum(p.to_embed for p in estimate.partitions)),
        "texts_cached": int(sum(p.cached for p in estimate.partitions)),
        "corpus_sample": json.dumps(dict(sample), ensure_ascii=False) if sample else None,
        "estimate": json.dumps(estimate.to_dict(), ensure_ascii=False, default=str),
        "actual": json.dumps(actual, ensure_ascii=False, default=str) if actual else None,
    }
