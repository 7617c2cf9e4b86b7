"""The time estimate of ``chunkbench run`` and ``chunkbench estimate``, from the resources in force.

:func:`plan_estimate` resolves each partition as its asset would (the run config's sizes, the boundary model
in force), reads what the corpus, the parsed store, the last builds and the embedding cache hold, and asks
the core (:mod:`chunkbench_core.estimate.plan`) for the expected time. :class:`RunTimer` keeps the stage
clock of a run and, at its end, prints the wall time per stage and the estimate against the actual time,
learns from it and keeps the ``run_estimates`` row.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chunkbench_core.configuration import parse_limits_of, parser_heuristics_of
from chunkbench_core import progress
from chunkbench_core.estimate.calibration import CalibrationStore
from chunkbench_core.estimate.feedback import StageActual, compare_run, learn
from chunkbench_core.estimate.plan import (
    PlannedPartition,
    RunSettings,
    corpus_documents,
    engine_rates,
    estimate_partitions,
    estimate_row,
    partition_actual,
)
from chunkbench_core.estimate.predict import LLMTiming, RunEstimate, duration

#: the stages of the summary at the end of a run, in the order they run
STAGE_ORDER = ("parsing", "chunking", "boundary", "embedding", "indexing", "retrieval", "finishing")


def _previous_texts(results: Any, spec: Any) -> dict[str, list[str]]:
    """The embedded texts of the collection's current build, by document ({} before its first build)."""
    from chunkbench_core.stages.collections import read_build_chunks

    try:
        _, rows = read_build_chunks(results, spec.rows_key)
    except Exception:  # noqa: BLE001 - an unreadable table only makes the estimate assume nothing is cached
        return {}
    out: dict[str, list[str]] = {}
    for row in rows:
        if row.get("role") == "parent":
            continue
        out.setdefault(str(row.get("document")), []).append(row.get("embedded_text") or row.get("text") or "")
    return out


def sampled_sources(
    resources: Mapping[str, Any], parsing_settings: Mapping[str, Any], sources: Sequence[Any] | None = None
) -> tuple[list[Any], dict[str, Any] | None, Any]:
    """The corpus's sources a run with these ``parsing`` run settings would parse (its sample when one is asked
    for, chosen as the parse step chooses it), the sample's record (None: the whole corpus), and the parsed store
    of its parse options (``chunkbench estimate``'s tokens, dollars and time all read this one corpus)."""
    from chunkbench_core.run_config import ParsingRunSettings
    from chunkbench_core.stages.documents import sample_sources
    from chunkbench_core.storage.corpus import scan_corpus

    workspace, llm = resources["workspace"], resources["llm"]
    parsing = ParsingRunSettings(**parsing_settings)
    try:  # as the parse step makes them: the benchmark's parser settings, then the run's
        options = dataclasses.replace(
            llm.parse_options(), heuristics=parser_heuristics_of(workspace.settings()), **parsing.given()
        )
    except (AttributeError, TypeError):
        options = dataclasses.replace(llm.parse_options(), **parsing.given())
    store = workspace.parsed_store(options)
    if sources is None:
        sources = scan_corpus(workspace.corpus_dir())
    kept, record = sample_sources(sources, workspace.questions_dir(), store, **parsing.sample())
    return kept, record, store


def parse_for_estimate(resources: Mapping[str, Any], store: Any, sources: Sequence[Any]) -> list[Any]:
    """Parse (and store) the ``sources`` whose parse under ``store``'s options is not stored yet, with progress
    lines, so the estimate counts the tokens of their text; the run then reads these parses instead of parsing
    again. Without image captions (the estimate spends nothing): a parse with captions a run made is read first.
    Returns the parsed stores to read the tokens from, in order."""
    from chunkbench_core.parsing.isolation import IsolatedParser
    from chunkbench_core.stages.documents import read_or_parse, without_captions

    workspace = resources["workspace"]
    options = store.options
    plain = without_captions(options) if options is not None else None
    stores = [store] if plain is options else [store, workspace.parsed_store(plain)]
    with IsolatedParser(parse_limits_of(workspace.settings())) as parser:
        read_or_parse(sources, stores[-1], lambda path: parser.parse(path, plain), read_first=stores[:-1], load=False)
    return stores


def estimate_corpus(
    resources: Mapping[str, Any], parsing_settings: Mapping[str, Any], sources: Sequence[Any] | None = None
) -> tuple[list[Any], dict[str, Any] | None, list[Any]]:
    """The corpus a run with these ``parsing`` run settings would read (:func:`sampled_sources`), parsed
    (:func:`parse_for_estimate`): its sources, the sample's record (None: the whole corpus), and each document's
    size and tokens (``DocumentSize``) from its parsed text."""
    kept, record, store = sampled_sources(resources, parsing_settings, sources)
    stores = parse_for_estimate(resources, store, kept)
    return kept, record, corpus_documents(stores, kept)


def sample_teller(
    resources: Mapping[str, Any], parsing_settings: Mapping[str, Any], sources: Sequence[Any]
) -> Callable[[int], str]:
    """What a sampled corpus of n of ``sources`` keeps, in words, chosen as the run would choose it (the same
    questions and seed): the estimate says it beside the ``--sample-documents n`` it suggests."""
    from chunkbench_core.estimate.sampling import sample_documents
    from chunkbench_core.evaluation.questions import load_question_sets
    from chunkbench_core.run_config import ParsingRunSettings

    sets, _ = load_question_sets(resources["workspace"].questions_dir())
    seed = ParsingRunSettings(**parsing_settings).sample().get("seed") or 0
    names = [s.document for s in sources]

    def tell(n: int) -> str:
        record = sample_documents(names, sets, n=n, seed=seed).record
        if record.evidence_left_out:
            return (
                f"{n} of {record.n_corpus} documents; it keeps {record.questions_kept:,} of "
                f"{record.questions:,} questions, those whose evidence lies in its documents"
            )
        return (
            f"every document holding evidence and a seeded sample of the others, {n} of {record.n_corpus}; "
            f"every question kept"
        )

    return tell


def plan_estimate(
    resources: Mapping[str, Any],
    settings: Any,
    partitions: Sequence[tuple[str, str]],
    run_settings: Mapping[str, Any] | None = None,
    say: Callable[[str], None] | None = None,
    sources: Sequence[Any] | None = None,
    in_pipeline: bool = True,
) -> RunEstimate:
    """The expected time of running ``partitions`` ((strategy, corpus model) pairs) with the resources of a run."""
    from chunkbench_core.estimate.predict import PipelineTiming
    from chunkbench_core.evaluation.questions import load_question_sets
    from chunkbench_core.run_config import chunking_settings
    from chunkbench_core.stages.spec import resolve_collection

    from .resources import spec_context

    given = run_settings or {}
    workspace, embeddings, llm = resources["workspace"], resources["embeddings"], resources["llm"]
    results = resources["duckdb"].results()
    sources, sample, documents = estimate_corpus(resources, given.get("parsing") or {}, sources)
    manifest = workspace.parsed_store().manifest() or {}
    current = {s.document: s.sha256 for s in sources}
    unchanged = [e["document"] for e in manifest.get("documents", []) if current.get(e["document"]) == e["sha256"]]
    chunking = chunking_settings()(**(given.get("chunking") or {}))
    context = spec_context(workspace, results, embeddings)
    planned = []
    for strategy, model in partitions:
        spec = resolve_collection(chunking.request(strategy, model), context)  # type: ignore[attr-defined]  # the run config's chunking model defines it
        planned.append(
            PlannedPartition(
                model,
                strategy,
                spec.chunk_size,
                spec.chunk_overlap,
                spec.boundary_model,
                _previous_texts(results, spec),
            )
        )
    embedders: dict[str, Any] = {}

    def embedder_for(model: str) -> Any:
        if model not in embedders:
            embedders[model] = embeddings.embedder(model)
        return embedders[model]

    def usage_rows(model: str) -> list[dict[str, Any]]:
        try:
            # the corpus embeddings (a run's query embeddings include the model's loading and one-at-a-time probes)
            frame = results.query(
                "SELECT * FROM embedding_usage WHERE corpus_model = ? AND coalesce(stage, '') <> 'queries'", [model]
            )
        except Exception:  # noqa: BLE001 - nothing recorded yet
            return []
        return frame.to_dict("records")

    registry = embeddings.registry()
    models = [p.corpus_model for p in planned] + [p.boundary_model for p in planned if p.boundary_model]
    calibration = CalibrationStore(settings.home)
    rates = engine_rates(models, registry, calibration, embedder_for, usage_rows, say)
    sets, _ = load_question_sets(workspace.questions_dir())
    n_questions = sum(len(s.questions) for s in sets)
    if sample and isinstance(sample.get("questions_kept"), int):  # a sample sets aside questions it cannot answer
        n_questions = sample["questions_kept"]
    experiment = given.get("experiment") or {}
    pipeline = (
        PipelineTiming() if in_pipeline else PipelineTiming(0, finishing_seconds=0, finishing_seconds_per_partition=0)
    )
    run = RunSettings(
        n_questions=n_questions,
        dimensions={m: registry[m].dimension for m in models},
        filter_by_document=bool(experiment.get("filter_by_document", False)),
        llm=LLMTiming() if llm.configured else None,
        pipeline=pipeline,
        store_engine=getattr(resources["qdrant"], "local_engine", "edge")
        if not getattr(resources["qdrant"], "url", None)
        else "server",
    )
    return estimate_partitions(
        documents, planned, rates, run, unchanged=unchanged, embedder_for=embedder_for, calibration=calibration
    )


def stage_lines(seconds: Mapping[str, float], total: float) -> list[str]:
    """``wall time per stage: parsing 12 s, chunking 3 s, ...`` (stages that took time, in run order)."""
    parts = []
    for stage in STAGE_ORDER:
        if stage == "boundary" or seconds.get(stage, 0.0) < 0.5:
            continue
        part = f"{stage} {duration(seconds[stage])}"
        if stage == "chunking" and seconds.get("boundary", 0.0) >= 0.5:
            part += f" (the boundary model's {duration(seconds['boundary'])} of it)"
        parts.append(part)
    rest = total - sum(v for k, v in seconds.items() if k in STAGE_ORDER and k != "boundary")
    if rest >= 0.5:
        parts.append(f"other {duration(rest)}")
    return [f"wall time {duration(total)}: " + (", ".join(parts) if parts else "every stage under a second")]


class RunTimer:
    """The stage clock of one run, the actual time of each partition, and the comparison at the end."""

    def __init__(self, estimate: RunEstimate | None = None) -> None:
        self.estimate = estimate
        self.clock = progress.StageClock()
        self.actuals: list[StageActual] = []
        self.started = time.perf_counter()
        self._before: dict[str, float] = {}
        self._step = 0.0
        # when the estimate was made (the parse it needed came before it): what it is compared with starts there
        self._estimated_at = self.started
        self._clock_at_estimate: dict[str, float] = {}

    def set_estimate(self, estimate: RunEstimate | None) -> None:
        """The run's estimate, made now, inside the timer: the documents it parsed count in the run's wall time
        and its parsing stage, not in what the estimate is compared with."""
        self.estimate = estimate
        self._estimated_at = time.perf_counter()
        self._clock_at_estimate = self.clock.seconds()

    def __enter__(self) -> "RunTimer":
        progress.add_clock(self.clock)
        return self

    def __exit__(self, *exc: object) -> None:
        progress.remove_clock(self.clock)

    def start_partition(self) -> None:
        self._before = self.clock.seconds()
        self._step = time.perf_counter()

    def end_partition(self, strategy: str, corpus_model: str) -> None:
        after = self.clock.seconds()
        if self.estimate is not None and any(
            p.corpus_model == corpus_model and p.strategy == strategy for p in self.estimate.partitions
        ):
            self.actuals += partition_actual(
                corpus_model, strategy, self._before, after, time.perf_counter() - self._step
            )

    def finish(
        self,
        calibration: CalibrationStore | None,
        results: Any = None,
        batch: str = "",
        benchmark: str = "",
        sample: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """The summary lines (wall time per stage; estimate against actual), learnt from and recorded."""
        total = time.perf_counter() - self.started
        seconds = self.clock.seconds()
        lines = stage_lines(seconds, total)
        if self.estimate is None:
            return lines
        actuals = list(self.actuals)
        parsing = seconds.get("parsing", 0.0) - self._clock_at_estimate.get("parsing", 0.0)
        if "parsing" in seconds:
            actuals.append(StageActual(None, None, ("parsing",), max(0.0, parsing)))
        comparison = compare_run(self.estimate, actuals, actual_total=time.perf_counter() - self._estimated_at)
        lines.append("estimate against actual, " + comparison.text())
        if calibration is not None:
            try:
                learn(calibration, comparison)
            except Exception:  # noqa: BLE001 - the next estimate is only less corrected
                pass
        if results is not None:
            try:
                results.write(
                    "run_estimates",
                    batch.replace(":", "-") or "run",
                    [
                        estimate_row(
                            self.estimate,
                            batch=batch,
                            benchmark=benchmark,
                            sample=sample,
                            actual={"total_seconds": total, "stages": seconds, **comparison.to_dict()},
                        )
                    ],
                )
            except Exception:  # noqa: BLE001 - the record is kept when it can be; the run's results are not at stake
                pass
        return lines
