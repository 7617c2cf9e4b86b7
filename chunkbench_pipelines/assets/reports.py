"""leaderboard (DuckDB view) and benchmark_report (HTML file)."""

from dagster import (
    AssetExecutionContext,
    AssetsDefinition,
    MultiPartitionsDefinition,
    AutomationCondition,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableRecord,
    TableSchema,
    asset,
)

import base64
from typing import TYPE_CHECKING

from chunkbench_core.errors import ConfigError
from chunkbench_core.reporting import run_reports_folder, write_reports
from chunkbench_core.reporting.leaderboard import (
    HEADERS,
    USD,
    board_row_label,
    cell,
    class_labels,
    costs_money,
    questions_needed_text,
    recommended_label,
    round_value,
    short_verdict,
    stability_text,
)
from chunkbench_core.reporting.plots import frontier_png, frontier_points
from chunkbench_core.stages.comparison import compare_latest_runs
from chunkbench_core.wording import plural
from chunkbench_core.storage.runs import clear_comparison, select_batch, select_run

from ..automation import on_new_results
from ..config import ReportConfig
from ..failures import fail_fast
from ..progress_log import progress_to_run_log
from ..ranks import report_ranks_on_partitions
from ..run_control import runs_tagged_with_batch
from ..resources import DuckDBResource, RankingResource, WorkspaceResource
from ..scope import Scope

if TYPE_CHECKING:
    import pandas as pd


#: the leaderboard's columns in the asset's table metadata: (column, type, description), named as the CLI's table
#: names them (``n``, ``tokens``, ``frontier``); ``rank_mean`` is shown under the ranking metric's own name and the
#: dollars only when something costs money. Dagster's UI never wraps a column's name and wraps a cell only at a
#: space or a hyphen, so the table is as wide as its names and longest words: with the long DuckDB names and a
#: column of zeros it pushed every text entry of the page past the right edge of a 1,600-pixel window
TABLE_COLUMNS = (
    (
        "rank",
        "int",
        "1 = first in the ranking (the recommendation's rule: the best, then the cheapest within the margin)",
    ),
    ("configuration", "string", "chunking strategy × corpus model"),
    ("n_questions", "int", "questions the run scored on evidence (the means are over them)"),
    ("rank_mean", "float", "mean of the ranking metric over the n questions"),
    (
        "verdict",
        "string",
        "recommended / highest mean / within the margin of the best / undecided (might be as "
        "good, cannot tell yet) / worse than the best",
    ),
    (
        "context_tokens",
        "int",
        "context tokens the LLM reads per question, mean over the questions (the cost when nothing costs money)",
    ),
    ("projected_usd", "float", "USD to build the index and answer 1,000 questions (shown when something costs money)"),
    ("on_frontier", "string", "yes: no other configuration is both better on the ranking metric and cheaper"),
)


def leaderboard_table(board) -> MetadataValue:
    """The ranked leaderboard as Dagster table metadata: rank, configuration (the one label), n, the ranking
    metric's mean (its column named after the metric), verdict, context tokens, dollars when anything costs money,
    and the frontier, with the CLI table's headers and values (numbers rounded to 3 places, dollars to 4)."""
    metric = next((str(m) for m in board.get("rank_metric", []) if isinstance(m, str) and m), "rank_mean")
    names = {**HEADERS, "rank_mean": metric}
    columns = [
        (name, kind, text)
        for name, kind, text in TABLE_COLUMNS
        if name in ("configuration", "rank_mean") or name in board.columns
    ]
    # local models: a column of zeros says nothing (the CLI and the reports drop it too)
    columns = [c for c in columns if c[0] not in USD or costs_money(board, (c[0],))]
    schema = TableSchema(
        columns=[TableColumn(names.get(name, name), kind, description=text) for name, kind, text in columns]
    )
    records = []
    for row in board.to_dict("records"):
        data: dict = {}
        for name, kind, _ in columns:
            header = names.get(name, name)
            if name == "configuration":
                data[header] = board_row_label(row)  # as every view names it (heading context without an LLM)
                continue
            value = round_value(row.get(name), 4 if name in USD else 3)  # a fraction of a cent is not 0
            if name == "on_frontier":
                data[header] = cell(name, value if value is not None else False)
            elif value is None:  # every record has every column (Dagster's table needs it): empty when not measured
                data[header] = None
            elif kind == "int":
                data[header] = int(round(float(value)))
            elif kind == "float":
                data[header] = float(value)
            elif name == "verdict":
                data[header] = short_verdict(str(value))
            else:
                data[header] = str(value)
        records.append(TableRecord(data))
    return MetadataValue.table(records, schema=schema)


def recommendation_metadata(recommendation: dict, board: "pd.DataFrame") -> dict:
    """The recommendation as the leaderboard asset's metadata: the pick (labelled as ``board`` names it), its
    stability right beside it, the rule, the margin, the classes and whether the rule could decide."""
    out: dict = {"recommendation": recommended_label(board, recommendation)}
    # the reason whole, as plain text of its own (the table has no room for it), the stability right beside it
    out["reason"] = MetadataValue.text(str(recommendation["reason"]))
    stability = round_value(recommendation.get("recommendation_stability"))
    if stability is not None:
        out["stability"] = stability_text(recommendation)
        out["recommendation_stability"] = stability
    out["decided"] = (
        bool(recommendation.get("decided")) if round_value(recommendation.get("decided")) is not None else True
    )
    out["rule"] = f"{recommendation['rule']}: {recommendation['rule_text']}"
    out["rank_metric"] = f"{recommendation['rank_metric']}: {recommendation['metric_definition']}"
    verdict = recommendation.get("verdict_sentence")
    if isinstance(verdict, str) and verdict:
        out["verdict"] = MetadataValue.text(verdict)  # the same sentence opens the reason, the CLI's and the reports'
    drivers = recommendation.get("drivers_sentence")
    if isinstance(drivers, str) and drivers:
        out["what_drives_the_scores"] = MetadataValue.text(drivers)
    needed = questions_needed_text(recommendation)
    if needed:  # the one "questions needed" figure, as the CLI and the reports give it
        out["questions_needed"] = int(recommendation["questions_needed"])
        out["questions_needed_text"] = MetadataValue.text(needed)
    for name in ("margin", "n_within_margin", "n_worse", "min_detectable_difference"):
        number = round_value(recommendation.get(name))
        if number is not None:
            out[name] = number if name in ("margin", "min_detectable_difference") else int(number)
    undecided = class_labels(board, "undecided")  # labelled and ordered as the leaderboard and the reports show them
    if undecided:
        out["might_be_as_good"] = ", ".join(undecided)
    return out


def decomposition_table(decomposition) -> MetadataValue:
    """Each factor's share of the ranking metric's variance with its 95% interval, as Dagster table metadata (the
    DuckDB view variance_decomposition), in percent rounded to one place."""
    schema = TableSchema(
        columns=[
            TableColumn(
                "factor",
                "string",
                description="what the share is of (a part of question or configuration when within says so)",
            ),
            TableColumn("share_percent", "float", description="share of the scores' variance (eta squared), in %"),
            TableColumn("interval_percent", "string", description="95% bootstrap interval over the questions, in %"),
            TableColumn("levels", "int", description="levels of the factor in this comparison"),
            TableColumn("within", "string", description="question or configuration: part of that share"),
        ]
    )
    records = [
        TableRecord(
            {
                "factor": row["factor"],
                "share_percent": round(100 * row["share"], 1),
                "interval_percent": f"{100 * row['ci_low']:.1f} to {100 * row['ci_high']:.1f}",
                "levels": int(row["levels"]),
                "within": row["within"] or "",
            }
        )
        for row in decomposition.to_rows()
    ]
    return MetadataValue.table(records, schema=schema)


def _relative_database(results) -> str:
    """``benchmarks/<name>/chunkbench.duckdb``: the results database as a path under the results root."""
    path = results.database_path
    return path.relative_to(path.parents[2]).as_posix() if len(path.parents) > 2 else str(path)


def compare_and_describe(
    context, scope: Scope, results, ranking: RankingResource, partitions_def: MultiPartitionsDefinition
) -> dict:
    """Compare the latest runs of the benchmark (the ``comparison`` the leaderboard view ranks by), report each
    partition's rank on it, and describe the leaderboard as metadata: the leaderboard asset's body, shared with
    the sweeps."""
    results.ensure_database()
    with results.one_reading():  # the run scores' pivot once for every read of the leaderboard here
        with progress_to_run_log(context):  # minutes on big question sets: the progress lines in the run's log
            outcome = compare_latest_runs(results, ranking.settings()) if not results.leaderboard().empty else None
        if outcome is None:  # no run left (none yet, or every one excluded): no stale recommendation
            clear_comparison(results)
        board = results.leaderboard()  # read again: ranked by the comparison just written
        recommendation = results.recommendation()
    metadata: dict = {
        **scope.metadata(),
        # relative to the results folder: a long absolute path would widen the metadata table past the page
        "database": MetadataValue.text(
            f"{_relative_database(results)} under the results root (chunkbench settings shows where it is)"
        ),
        "dagster/row_count": len(board),
    }
    if recommendation:
        metadata.update(recommendation_metadata(recommendation, board))
    if not board.empty:
        metadata["leaderboard"] = leaderboard_table(board)
        ranked = [
            r
            for r in board.to_dict("records")
            if round_value(r.get("rank")) is not None
            and r.get("class") is not None
            and r.get("class") == r.get("class")
        ]
        # rank and class on each experiment partition's page
        report_ranks_on_partitions(context, ranked, partitions_def, scope.key("experiment_results"))
        points, metric, axis = frontier_points(board)
        if points:
            png = base64.b64encode(frontier_png(points, metric, axis)).decode()
            metadata["quality_vs_cost"] = MetadataValue.md(f"![quality vs cost](data:image/png;base64,{png})")
    if outcome is not None and outcome.decomposition is not None and outcome.decomposition.shares:
        metadata["variance_decomposition"] = decomposition_table(outcome.decomposition)
    if outcome is not None and outcome.agreements:  # an LLM judge ran: does it tell the story the spans tell?
        from chunkbench_core.evaluation.recommendation import _label

        metadata["judge_agreement"] = MetadataValue.md(
            "".join(f"- {a.sentence(_label(a.configuration))}\n" for a in outcome.agreements)
        )
    if outcome is not None and outcome.diagnostics:
        metadata["warnings"] = MetadataValue.md("".join(f"- {d.message}\n" for d in outcome.diagnostics))
        for d in outcome.diagnostics:
            context.log.info(f"warning: {d.message}")  # the CLI prints them once, after the leaderboard
    return metadata


def build_leaderboard(partitions_def: MultiPartitionsDefinition, scope: Scope) -> AssetsDefinition:
    """The ``leaderboard`` asset of one benchmark; ranks are reported on its ``experiment_results`` partitions of
    ``partitions_def``."""

    @asset(
        key=scope.key("leaderboard"),
        group_name=scope.group,
        kinds={"duckdb"},
        deps=[scope.key("experiment_results")],
        tags=scope.tags(),
        automation_condition=on_new_results(),
        description=scope.describe(
            "Latest experiment run per strategy × corpus model, ranked and classed against the best "
            "(within the margin, undecided, worse), with costs and the recommendation and its stability "
            "(DuckDB views `leaderboard`, `comparison`, `recommendation`)."
        ),
    )
    def leaderboard(
        context: AssetExecutionContext, duckdb: DuckDBResource, ranking: RankingResource
    ) -> MaterializeResult:
        return MaterializeResult(
            metadata=compare_and_describe(context, scope, scope.results(duckdb), ranking, partitions_def)
        )

    return leaderboard


def build_benchmark_report(scope: Scope) -> AssetsDefinition:
    """The ``benchmark_report`` asset of one benchmark."""

    @asset(
        key=scope.key("benchmark_report"),
        group_name=scope.group,
        kinds={"html"},
        deps=[scope.key("leaderboard")],
        tags=scope.tags(),
        automation_condition=AutomationCondition.eager(),
        description=scope.describe(
            "Self-contained HTML reports: managerial, technical with retrieval inspector, decision board. "
            "Run config picks one past experiment run or batch (its own folder under reports/runs/); "
            "empty: the latest run of each configuration."
        ),
    )
    def benchmark_report(
        context: AssetExecutionContext,
        config: ReportConfig,
        workspace: WorkspaceResource,
        duckdb: DuckDBResource,
        ranking: RankingResource,
    ) -> MaterializeResult:
        return MaterializeResult(
            metadata={
                **scope.metadata(),
                **write_benchmark_reports(context, config, scope.workspace(workspace), scope.results(duckdb), ranking),
            }
        )

    return benchmark_report


def write_benchmark_reports(
    context, config: ReportConfig, workspace: WorkspaceResource, results, ranking: RankingResource
) -> dict:
    """Write the reports ``config`` asks for; their links as metadata."""
    run_id, batch = config.experiment_run_id.strip(), config.batch.strip()
    if run_id and batch:
        raise fail_fast("give experiment_run_id or batch, not both")
    try:
        selection = (
            select_run(results, run_id)
            if run_id
            else select_batch(results, batch, runs_tagged_with_batch(context.instance, batch))
            if batch
            else None
        )
    except ConfigError as exc:
        raise fail_fast(str(exc)) from exc
    with progress_to_run_log(context):  # minutes on big question sets: the progress lines in the run's log
        if selection is None:
            paths = write_reports(results, workspace.reports_dir())
        else:
            paths = write_reports(
                results,
                run_reports_folder(workspace.reports_dir(), selection),
                runs=selection,
                ranking=ranking.settings(),
                latest=workspace.reports_dir(),
            )
    # http:// links (served by `make ui`, see report_server.py): browsers refuse file:// from the UI
    return {
        "shows": "the latest run of each configuration"
        if selection is None
        else f"experiment run {selection.ident}"
        if selection.kind == "run"
        else f"batch {selection.ident} ({plural(len(selection.run_ids), 'experiment run')})",
        "url": MetadataValue.url(workspace.report_url(paths.managerial)),
        "plots": MetadataValue.url(workspace.report_url(paths.managerial, "frontier")),  # the recommendation's plot
        "technical_report": MetadataValue.url(workspace.report_url(paths.technical)),
        "decision_board": MetadataValue.url(workspace.report_url(paths.decision_board)),
        "path": MetadataValue.path(str(paths.managerial)),
    }
