"""``chunkbench runs list|exclude|include`` and ``chunkbench report [--run ID | --batch BATCH]``.

The logic is chunkbench_core.storage.runs (listing, exclusions, choosing runs) and
chunkbench_core.reporting (the reports); this module reads the arguments and prints.
Excluding or including a run compares the latest runs again and rewrites the latest reports
at once, so the leaderboard, the recommendation and every report tell the same story.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chunkbench_core.configuration import ranking_of


def _results(args: argparse.Namespace):
    from chunkbench_core.storage.results_db import ResultsDB

    return ResultsDB(args.settings.results_dir)


def _reports_dir(results) -> Path:
    return results.root / "reports"


def _ranking(args: argparse.Namespace):
    return ranking_of(args.settings)  # CHUNKBENCH_RANK_METRIC etc., as the pipeline


def refresh_latest(results, ranking) -> None:
    """Compare the latest runs again (or clear the comparison when none is left) and rewrite the latest reports."""
    from chunkbench_core.reporting import write_reports
    from chunkbench_core.stages.comparison import compare_latest_runs
    from chunkbench_core.storage.runs import clear_comparison

    results.ensure_database()
    if results.leaderboard().empty:
        clear_comparison(results)
    else:
        compare_latest_runs(results, ranking)
    write_reports(results, _reports_dir(results))


def _short(value, width: int) -> str:
    text = "–" if value in (None, "") else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def format_runs(runs, metric: str) -> str:
    """The runs as a plain-text table, oldest first."""
    if not runs:
        return "(no experiment has run yet)"
    header = (
        "experiment_run_id",
        "configuration",
        "setting",
        "n",
        metric,
        "created_at (UTC)",
        "batch",
        "corpus",
        "excluded",
    )
    rows = [
        (
            r.experiment_run_id,
            r.label or f"{r.strategy} × {r.corpus_model}",
            r.setting,
            "–" if r.n_questions is None else str(r.n_questions),
            "–" if r.metric_value is None else f"{r.metric_value:.3f}",
            r.created_at.strftime("%Y-%m-%d %H:%M:%S") if r.created_at else "–",
            _short(r.batch, 24),
            _short(r.corpus_fingerprint, 12),
            f"yes: {r.reason}" if r.excluded else "no",
        )
        for r in runs
    ]
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header) - 1)]
    numeric = {3, 4}
    lines = []
    for row in (header, *rows):
        cells = [str(c).rjust(w) if i in numeric else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells) + "  " + str(row[-1]))
    return "\n".join(lines)


def command_runs(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.storage.runs import exclude_run, exclusions, include_run, list_runs, resolve_run_id

    from .prune import run_prune

    results = _results(args)
    if args.action == "prune":
        if args.run_id or args.reason:
            args.parser.error("prune takes no run id and no --reason (only --keep N and --dry-run)")
        return run_prune(args, excluded={i for i, e in exclusions(results).items() if e.excluded})
    if args.keep is not None or args.dry_run:
        args.parser.error("--keep and --dry-run go with prune")
    if args.action == "list":
        if args.run_id:
            args.parser.error("list takes no run id")
        ranking = _ranking(args)
        print(format_runs(list_runs(results, ranking.rank_metric), ranking.rank_metric))
        print(
            f"{ranking.rank_metric}: the run's mean of the ranking metric (CHUNKBENCH_RANK_METRIC). excluded: left "
            "out of the leaderboard, the comparison and the reports (nothing is deleted; chunkbench runs include "
            "RUN_ID brings one back). The reports of one run: chunkbench report --run RUN_ID."
        )
        return 0
    if not args.run_id:
        args.parser.error(f"{args.action} needs a run id (see `chunkbench runs list`)")
    if args.action == "exclude" and not (args.reason or "").strip():
        args.parser.error("exclude needs --reason TEXT: why the run is set aside (it is shown with the run)")
    if args.action == "include" and args.reason:
        args.parser.error("include takes no --reason")
    args.run_id = resolve_run_id(results, args.run_id)  # a prefix of 8 characters or more names one run
    if args.action == "exclude":
        exclusion = exclude_run(results, args.run_id, args.reason)
        print(f"excluded {args.run_id} (since {exclusion.excluded_at:%Y-%m-%d %H:%M} UTC): {exclusion.reason}")
    else:
        included = include_run(results, args.run_id)
        print(f"included {args.run_id}" if included is not None else f"{args.run_id} was not excluded")
    try:
        refresh_latest(results, _ranking(args))
    except ChunkbenchError as exc:  # e.g. the DuckDB file held by another process: the exclusion itself is saved
        print(
            f"error: {exc}; the change is saved, the comparison and the reports are not redone yet: run the "
            "same command again (it changes nothing twice), or materialize the leaderboard and benchmark_report "
            "assets",
            file=sys.stderr,
        )
        return 1
    print(f"compared the latest runs again; reports: {_reports_dir(results) / 'benchmark_report.html'}")
    return 0


def _tagged(args: argparse.Namespace, batch: str) -> list[str]:
    """Run ids the Dagster instance lists under ``batch`` (runs made before experiments recorded their batch)."""
    from chunkbench_pipelines.run_control import runs_tagged_with_batch

    from .instance import open_instance

    instance = open_instance(args.settings)  # not ``with``: see instance.ensure_dagster_home
    try:
        return runs_tagged_with_batch(instance, batch)
    finally:
        instance.dispose()


def command_report(args: argparse.Namespace) -> int:
    from chunkbench_core.reporting import run_reports_folder, write_reports
    from chunkbench_core.storage.runs import select_batch, select_run

    results = _results(args)
    reports = _reports_dir(results)
    if args.run or args.batch:
        selection = (
            select_run(results, args.run) if args.run else select_batch(results, args.batch, _tagged(args, args.batch))
        )
        folder = Path(args.out) if args.out else run_reports_folder(reports, selection)
        paths = write_reports(results, folder, runs=selection, ranking=_ranking(args), latest=reports)
        what = (
            f"experiment run {selection.ident}"
            if selection.kind == "run"
            else f"batch {selection.ident} ({len(selection.run_ids)} experiment runs)"
        )
        print(f"reports of {what}:")
    else:
        paths = write_reports(results, Path(args.out) if args.out else reports)
        print("the latest reports (the latest run of each configuration):")
    for path in paths.as_dict().values():
        print(f"  {path}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from .prune import add_prune_arguments

    r = sub.add_parser(
        "runs",
        help="list experiment runs; exclude a bad run for good, or include it again; prune old collection builds",
    )
    r.add_argument("action", choices=["list", "exclude", "include", "prune"])
    r.add_argument(
        "run_id",
        nargs="?",
        metavar="RUN_ID",
        help="exclude/include: the experiment run id, or its first 8 characters or more",
    )
    r.add_argument("--reason", help="exclude: why the run is set aside (shown with it)")
    add_prune_arguments(r)
    r.set_defaults(func=command_runs, parser=r)
    p = sub.add_parser("report", help="write the HTML reports: the latest, or those of one past run or batch")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--run",
        metavar="RUN_ID",
        help="exactly this experiment run: its id or its first 8 characters or more (see `chunkbench runs list`)",
    )
    which.add_argument(
        "--batch",
        metavar="BATCH",
        help="the runs of one `chunkbench run` or Dagster backfill (the batch column of `chunkbench runs list`)",
    )
    p.add_argument("--out", metavar="FOLDER", help="write here (default: reports/, or reports/runs/<run or batch>/)")
    p.set_defaults(func=command_report, parser=p)
