"""The comparison stage: rank, class, price and recommend the latest run of every configuration.

Behind the ``leaderboard`` asset (and ``chunkbench runs exclude|include``, which compare again):
:func:`compare_latest_runs` reads the latest runs' question rows and costs, and replaces the
``comparison``, ``recommendation`` and ``diagnostics`` tables, so every view reads the same numbers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.labels import configuration_key, configuration_label, split_configuration_key
from chunkbench_core.metric_catalog import CATALOG
from chunkbench_core.provenance import strategy_label
from chunkbench_core.storage.records import now
from chunkbench_core.storage.results_db import ResultsDB


@dataclass
class Ranking:
    """What the leaderboard asset computes: comparison, frontier, recommendation, diagnostics."""

    comparison: Any
    recommendation: Any
    diagnostics: list[Any]
    frontier: set[str]
    cost_axis: str
    settings: RankingSettings
    decomposition: Any = None  # what drives the scores (evaluation.drivers.Decomposition)
    verdict: Any = None  # whether the choice matters (evaluation.drivers.Verdict)
    agreements: list[Any] | None = None  # the judge's agreement with the evidence (evaluation.judge_agreement)


def _json_object(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def compare_latest_runs(results: ResultsDB, settings: RankingSettings | None = None) -> Ranking:
    """Rank, class, price and recommend the latest run of every strategy x corpus model.

    Writes the ``comparison`` (one row per configuration), ``recommendation`` (one row) and
    ``diagnostics`` tables, each replaced every time, so every view reads the same numbers.
    """
    from chunkbench_core.evaluation import diagnostics as checks
    from chunkbench_core.evaluation.cost import cost_axis, pareto_frontier
    from chunkbench_core.evaluation.recommendation import recommend, recommendation_warnings
    from chunkbench_core.evaluation.statistics import compare_configurations

    from chunkbench_core.progress import Tracker
    from chunkbench_core.reporting.data import PROGRESS_ROWS, leaderboard_question_rows

    settings = settings or RankingSettings()
    # minutes on tens of thousands of question rows: a line per step (reading the rows; the classes; the
    # recommendation with its stability's resamples; the warnings; the tables written)
    tracker = (
        Tracker("comparing the runs", 5, unit="steps") if leaderboard_question_rows(results) >= PROGRESS_ROWS else None
    )
    # the board row's own questions: a run that also scored sweep variants holds other rows under its id,
    # written with their own timestamps (run_experiment stamps a run's metrics and questions alike)
    rows = results.query(
        """SELECT q.* FROM question_results q
           JOIN leaderboard l USING (experiment_run_id, strategy, corpus_model)
           WHERE q.created_at = l.created_at"""
    ).to_dict("records")
    for row in rows:  # a configuration is strategy x corpus model x retriever (labels.configuration_key)
        row["configuration_key"] = _key(row)
    if tracker is not None:
        tracker.step(1)
    board = results.query(
        "SELECT l.strategy, l.corpus_model, l.experiment_run_id, l.projected_usd, l.context_tokens, "
        "l.query_ms, l.index_seconds, l.retriever, m.provenance FROM leaderboard l JOIN experiment_metrics m "
        "USING (experiment_run_id, strategy, corpus_model)"
    ).to_dict("records")
    labels = {_key(r): strategy_label(r["strategy"], _json_object(r.pop("provenance"))) for r in board}
    costs = {_key(r): r for r in board}
    # each run's recorded means and intervals: the comparison shows the interval the run recorded, not a second draw
    recorded = {
        _key(r): r
        for r in results.query(
            """SELECT m.* FROM leaderboard l JOIN experiment_metrics m USING (experiment_run_id, strategy, corpus_model)
           WHERE m.created_at = l.created_at AND coalesce(m.variant, '') = ''
             AND coalesce(m.neighbor_prev, 0) = 0 AND coalesce(m.neighbor_next, 0) = 0"""
        ).to_dict("records")
    }
    comparison = compare_configurations(
        rows,
        key=("configuration_key",),
        metric=settings.rank_metric,
        margin=settings.margin,
        costs=costs,
        cost_tolerance=settings.cost_tolerance,
        recorded=recorded,
    )
    if tracker is not None:
        tracker.step(2)
    axis = cost_axis(list(costs.values()))
    means = {c.configuration: c.mean for c in comparison.configurations}
    # ties on score and cost resolved by the ranking's cost order: the configuration ranked first of a tie is on it
    frontier = pareto_frontier(
        {name: (means.get(name, float("nan")), float(c.get(axis) or 0.0)) for name, c in costs.items()},
        costs,
        settings.cost_tolerance,
    )
    lengths = _evidence_lengths(results, rows)
    decomposition = decompose_comparison(comparison, rows)
    choice = judge_choice(comparison, decomposition, settings.interchangeable_share, labels, rows)
    recommendation = recommend(comparison, costs, settings, labels, choice=choice)
    if tracker is not None:
        tracker.step(3)
    found = checks.collect(
        checks.one_chunk_per_document(_chunks_per_document(results)),
        checks.evidence_longer_than_chunks(*_evidence_and_chunk_sizes(results, rows)),
        checks.no_disagreement(_per_question(rows, comparison.metric)),
        checks.boundary_model_language(_boundary_choices(results)),
        *recommendation_warnings(comparison, recommendation, labels),
        *_evidence_warnings(rows, comparison.best, labels),
        lengths.warning,
    )
    if tracker is not None:
        tracker.step(4)
    run_of = {_key(r): r["experiment_run_id"] for r in rows}
    stamp = now()
    results.write(
        "comparison",
        "latest",
        [
            {
                **r,
                "experiment_run_id": run_of.get(r["configuration"]),
                "rule": comparison.rule,
                "strategy_label": labels.get(r["configuration"]),
                "recommended": recommendation is not None and r["configuration"] == recommendation.configuration,
                "on_frontier": r["configuration"] in frontier,
                "cost_axis": axis,
                "compared_at": stamp,
                **_named(r["configuration"], labels),
            }
            for r in comparison.to_rows()
        ],
    )
    from chunkbench_core.evaluation.drivers import drivers_sentence

    results.write(
        "recommendation",
        "latest",
        [
            {
                **recommendation.to_row(labels),
                "cost_axis": axis,
                "drivers_sentence": drivers_sentence(decomposition),
                "compared_at": stamp,
            }
        ]
        if recommendation
        else [],
    )
    results.write("diagnostics", "latest", [{**d.to_row(), "compared_at": stamp} for d in found])
    from chunkbench_core.evaluation.judge_agreement import judge_agreements

    agreements = judge_agreements(rows, comparison.metric)
    results.write(
        "judge_agreement",
        "latest",
        [{**a.to_row(), "compared_at": stamp, **_named(a.configuration, labels)} for a in agreements],
    )
    results.write("question_evidence", "latest", [{**r, "compared_at": stamp} for r in lengths.rows])
    results.write("variance_decomposition", "latest", [{**r, "compared_at": stamp} for r in decomposition.to_rows()])
    if tracker is not None:
        tracker.step(5)
    return Ranking(comparison, recommendation, found, frontier, axis, settings, decomposition, choice, agreements)


@dataclass
class _Lengths:
    rows: list[dict[str, Any]]
    report: Any
    warning: Any


def _evidence_lengths(results: ResultsDB, rows: Sequence[dict[str, Any]]) -> _Lengths:
    """Each question's evidence length in tokens (evaluation.evidence_length), and a warning when the lengths favour
    one of the chunk sizes compared (each configuration's median chunk)."""
    from chunkbench_core.evaluation import diagnostics as checks
    from chunkbench_core.evaluation.evidence_length import (
        density_of,
        favours_one_size,
        length_report,
        question_evidence_rows,
    )

    chunks = results.query(
        """SELECT strategy, corpus_model, document, token_count, start_offset, end_offset FROM current_chunks
           WHERE coalesce(variant, '') = '' AND coalesce(role, '') <> 'parent'"""
    )
    density = density_of(chunks.to_dict("records"))
    evidence = question_evidence_rows(rows, density)
    sizes = chunks.groupby(["strategy", "corpus_model"])["token_count"].median().tolist() if not chunks.empty else []
    report = length_report([r["evidence_tokens"] for r in evidence], sizes)
    favoured = favours_one_size(report)
    return _Lengths(evidence, report, checks.Diagnostic("evidence_length_favours", favoured) if favoured else None)


def _question_labels(rows: Sequence[dict[str, Any]]) -> dict[tuple, tuple[str | None, str | None]]:
    """Each question's (category, source documents) from its rows: the question factors of the decomposition."""
    from chunkbench_core.evaluation.breakdowns import label, source_documents

    out: dict[tuple, tuple[str | None, str | None]] = {}
    for row in rows:
        key = (row.get("question_set"), row.get("question_id"))
        if key not in out:
            documents = source_documents(row)
            out[key] = (label(row.get("category")), " + ".join(sorted(documents)) if documents else None)
    return out


def decompose_comparison(comparison: Any, rows: Sequence[dict[str, Any]]) -> Any:
    """What drives the comparison's scores (evaluation.drivers): the ranking metric's per-question table split
    into the questions' share (their category and documents), the strategy's, the corpus model's..."""
    from chunkbench_core.evaluation.drivers import Decomposition, decompose

    scores = comparison.scores
    if scores is None:
        return Decomposition(comparison.metric, 0, 0, 0, float("nan"))
    labels = _question_labels(rows)
    known = [labels.get(q, (None, None)) for q in scores.questions]
    # each configuration's key names its retriever (evaluation.drivers reads it from there)
    return decompose(
        scores.values,
        scores.names,
        comparison.metric,
        categories=[k[0] for k in known],
        documents=[k[1] for k in known],
    )


def judge_choice(
    comparison: Any, decomposition: Any, threshold: float, labels: dict[str, str], rows: Sequence[dict[str, Any]]
) -> Any:
    """Whether the choice matters (evaluation.drivers.verdict), with what would separate interchangeable
    configurations."""
    from chunkbench_core.evaluation.drivers import separating_questions, verdict
    from chunkbench_core.evaluation.recommendation import _label

    best = _label(comparison.best, labels) if comparison.best else None
    separate = separating_questions(comparison, _question_labels(rows), labels)
    return verdict(decomposition, threshold, best, separate)


def _key(row: Any) -> str:
    """The configuration key of a leaderboard or question row (``strategy|corpus_model``, ``|retriever`` when not
    dense)."""
    retriever = row.get("retriever")
    return configuration_key(row["strategy"], row["corpus_model"], retriever if isinstance(retriever, str) else None)


def _named(key: str, labels: dict[str, str]) -> dict[str, str]:
    """A comparison row's strategy, corpus model and retriever (from its key) and its one label."""
    strategy, corpus_model, retriever = split_configuration_key(key)
    return {
        "strategy": strategy,
        "corpus_model": corpus_model,
        "retriever": retriever,
        "configuration": configuration_label(labels.get(key) or strategy, corpus_model, retriever=retriever),
    }


def _boundary_choices(results: ResultsDB) -> list[dict[str, Any]]:
    """How the boundary model of each current default collection was chosen (its build's recorded settings)."""
    frame = results.query("SELECT settings FROM collections WHERE coalesce(variant, '') = '' AND settings IS NOT NULL")
    return [choice for raw in frame["settings"] if isinstance(choice := _json_object(raw).get("boundary_choice"), dict)]


def _chunks_per_document(results: ResultsDB) -> dict[str, list[int]]:
    frame = results.query(
        """SELECT strategy, corpus_model, document, count(*) AS n FROM current_chunks
           WHERE coalesce(variant, '') = '' AND coalesce(role, '') <> 'parent'
           GROUP BY ALL"""
    )
    out: dict[str, list[int]] = {}
    for row in frame.itertuples():
        out.setdefault(str(row.strategy), []).append(int(row.n))
    return out


def _evidence_and_chunk_sizes(
    results: ResultsDB, rows: Sequence[dict[str, Any]]
) -> tuple[list[int], dict[str, list[int]]]:
    """Evidence span lengths and each configuration's chunk lengths, in characters."""
    evidence: list[int] = []
    seen: set[tuple[str, str]] = set()
    for row in rows:
        key = (str(row.get("question_set")), str(row.get("question_id")))
        if key in seen or not row.get("references"):
            continue
        seen.add(key)
        try:
            evidence += [int(r["end"]) - int(r["start"]) for r in json.loads(row["references"])]
        except (TypeError, ValueError, KeyError):
            continue
    frame = results.query(
        """SELECT strategy || '|' || corpus_model AS configuration, end_offset - start_offset AS size FROM current_chunks
           WHERE coalesce(variant, '') = '' AND coalesce(role, '') <> 'parent'"""
    )
    sizes: dict[str, list[int]] = {}
    for configuration, size in zip(frame["configuration"], frame["size"]):
        sizes.setdefault(str(configuration), []).append(int(size))
    return evidence, sizes


def _per_question(rows: Sequence[dict[str, Any]], metric: str) -> list[list[float]]:
    table: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        if row.get("error") not in (None, "") and row.get("error") == row.get("error"):
            continue
        value = row.get(metric)
        if value is None or value != value:
            continue
        table.setdefault((str(row.get("question_set")), str(row.get("question_id"))), []).append(float(value))
    return list(table.values())


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number


def _true(value: Any) -> bool:
    """A flag of a question row: missing (None, NaN, NA) is false."""
    try:
        return value is not None and value == value and bool(value)
    except TypeError:  # pandas' NA
        return False


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _source_documents(row: dict[str, Any]) -> list[str]:
    try:
        value = json.loads(row.get("source_documents") or "[]")
    except (TypeError, ValueError):
        return []
    return [str(d) for d in value] if isinstance(value, list) else []


def _evidence_warnings(rows: Sequence[dict[str, Any]], best: str | None, labels: dict[str, str]) -> list[Any]:
    """The best configuration's evidence recall below 0.3, and the recall ceiling top_k puts on its
    multi-document questions (evaluation.diagnostics)."""
    from chunkbench_core.evaluation import diagnostics as checks
    from chunkbench_core.evaluation.recommendation import _label

    live = [r for r in rows if r.get("error") in (None, "") or r.get("error") != r.get("error")]
    judge_only = {(r.get("question_set"), r.get("question_id")) for r in live if _true(r.get("judge_only"))}
    if live and len(judge_only) == len({(r.get("question_set"), r.get("question_id")) for r in live}):
        judged = any(_number(r.get(m)) is not None for r in live for m in CATALOG.judge_scores())
        return checks.collect(checks.nothing_scored(len(judge_only), judged))
    if best is None:
        return []
    mine = [r for r in rows if _key(r) == best and (r.get("error") in (None, "") or r.get("error") != r.get("error"))]
    name = _label(best, labels)
    recall = _mean([_number(r.get("recall")) for r in mine])
    metric = "recall"
    if recall is None:
        recall, metric = _mean([_number(r.get("doc_recall")) for r in mine]), "doc_recall"
    multi = [r for r in mine if len(_source_documents(r)) > 1]
    ceiling = None
    if multi:
        capped = [r for r in multi if (_number(r.get("doc_recall_ceiling")) or 1.0) < 1.0]
        top_k = int(_number(multi[0].get("top_k")) or 0)
        ceiling = checks.Ceiling(
            top_k=top_k,
            n_multi_document=len(multi),
            n_capped=len(capped),
            doc_ceiling=_mean([_number(r.get("doc_recall_ceiling")) for r in capped]) or 0.0,
            doc_recall=_mean([_number(r.get("doc_recall")) for r in capped]) or 0.0,
            recall_ceiling=_mean([_number(r.get("recall_ceiling")) for r in multi]),
            recall=_mean([_number(r.get("recall")) for r in multi]),
        )
    return checks.collect(checks.low_evidence_recall(name, recall, metric), checks.recall_ceiling(name, ceiling))
