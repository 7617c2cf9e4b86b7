"""leaderboard (DuckDB view) and benchmark_report (HTML file)."""


from dagster import AssetExecutionContext, AutomationCondition, MaterializeResult, MetadataValue, asset

import base64

from chunkbench_core.reporting import write_reports
from chunkbench_core.reporting.plots import ScatterPoint, recall_precision_png
from chunkbench_core.reporting.leaderboard import format_markdown
from chunkbench_core.stages import compare_latest_runs

from ..automation import on_new_results
from ..resources import DuckDBResource, WorkspaceResource
from .experiments import experiment_results


@asset(group_name="reports", kinds={"duckdb"}, deps=[experiment_results], automation_condition=on_new_results(),
       description="Latest experiment run per strategy x corpus model, ranked (DuckDB view `leaderboard`).")
def leaderboard(context: AssetExecutionContext, duckdb: DuckDBResource) -> MaterializeResult:
    results = duckdb.results()
    results.ensure_database()
    comparison = compare_latest_runs(results) if not results.leaderboard().empty else None
    board = results.leaderboard()  # read again: ranked by the comparison just written
    metadata = {
        "database": MetadataValue.path(str(results.database_path)),
        "dagster/row_count": len(board),
        "leaderboard": MetadataValue.md(format_markdown(board)),
    }
    if comparison is not None and comparison.best:
        metadata["best_configuration"] = comparison.best
        metadata["best_rule"] = MetadataValue.md(comparison.rule)
    if not board.empty:
        best = comparison.best if comparison is not None else None
        points = [ScatterPoint(f"{r.strategy} / {r.corpus_model}", float(r.precision), float(r.recall),
                               best=f"{r.strategy}|{r.corpus_model}" == best) for r in board.itertuples()]
        png = base64.b64encode(recall_precision_png(points)).decode()
        metadata["recall_vs_precision"] = MetadataValue.md(f"![recall vs precision](data:image/png;base64,{png})")
    return MaterializeResult(metadata=metadata)


@asset(group_name="reports", kinds={"html"}, deps=[leaderboard], automation_condition=AutomationCondition.eager(),
       description="Self-contained HTML reports: managerial, technical with retrieval inspector, decision board.")
def benchmark_report(context: AssetExecutionContext, workspace: WorkspaceResource, duckdb: DuckDBResource) -> MaterializeResult:
    paths = write_reports(duckdb.results(), workspace.reports_dir())
    # http:// links (served by `make ui`, see report_server.py): browsers refuse file:// from the UI
    return MaterializeResult(metadata={
        "url": MetadataValue.url(workspace.report_url(paths.managerial)),
        "plots": MetadataValue.url(workspace.report_url(paths.managerial, "recall-precision")),
        "technical_report": MetadataValue.url(workspace.report_url(paths.technical)),
        "decision_board": MetadataValue.url(workspace.report_url(paths.decision_board)),
        "path": MetadataValue.path(str(paths.managerial)),
    })
