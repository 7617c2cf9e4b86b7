"""``chunkbench sweep neighbors|chunk-size``: one sweep on demand, run as the benchmark's Dagster sweep job.

The same job runs from the UI's launchpad (``<benchmark>__neighbor_sweep``, ``<benchmark>__chunk_size_sweep``) and
from the weekly schedules; the results land in ``leaderboard_by_setting`` and the reports either way.
"""

from __future__ import annotations

import argparse
import sys

from chunkbench_core.configuration import default_corpus_model


def command_sweep(args: argparse.Namespace) -> int:
    from chunkbench_core.sweeps import SWEEP_SIZES, NEIGHBOR_LEVELS, format_levels, parse_levels, parse_sizes
    from chunkbench_pipelines.run_control import check_run_arguments, run_interruptibly

    from .instance import open_instance

    settings = args.settings
    check_run_arguments(args.strategy, args.corpus_model, settings)  # a bad value exits 2 before any work
    if args.kind == "neighbors" and args.sizes:
        args.parser.error("--sizes goes with chunk-size (neighbors takes --levels)")
    if args.kind == "chunk-size" and args.levels:
        args.parser.error("--levels goes with neighbors (chunk-size takes --sizes)")
    models = list(dict.fromkeys(args.corpus_model or [default_corpus_model(settings)]))
    config: dict = {"strategies": args.strategy or [], "corpus_models": models}
    if args.kind == "neighbors":
        levels = parse_levels(args.levels or format_levels(NEIGHBOR_LEVELS))  # ConfigError: one line, exit 2
        config["levels"] = [f"{p}:{n}" for p, n in levels]
        sweep = "neighbor_sweep"
    else:
        config["sizes"] = parse_sizes(args.sizes or ",".join(map(str, SWEEP_SIZES)))
        sweep = "chunk_size_sweep"
    if not args.corpus_model:
        print(f"corpus model: {models[0]} (the default corpus model; --corpus-model M for another)")
    from chunkbench_pipelines.runner import run_sweep

    instance = open_instance(settings)
    return run_interruptibly(
        lambda: run_sweep(settings, sweep, config, out=sys.stdout, instance=instance), instance, sys.stdout
    )


def register(sub: argparse._SubParsersAction, strategies: list[str], models: list[str] | None) -> None:
    s = sub.add_parser(
        "sweep",
        help="run a neighbor or chunk-size sweep now, as the benchmark's Dagster sweep job",
        description="Run one sweep now: each level or size is its own experiment run, compared side "
        "by side in leaderboard_by_setting and the reports. Runs the benchmark's Dagster "
        "job <benchmark>__neighbor_sweep or <benchmark>__chunk_size_sweep (also on the "
        "UI's launchpad).",
    )
    s.add_argument(
        "kind",
        choices=["neighbors", "chunk-size"],
        help="neighbors: neighbor expansion levels; chunk-size: chunk sizes, each its own collection",
    )
    s.add_argument(
        "--levels",
        metavar="P:N,...",
        help="neighbors: chunks added before:after each hit, 0..5 each (default 0:0,1:1,2:2,3:3)",
    )
    s.add_argument(
        "--sizes",
        metavar="N,...",
        help="chunk-size: sizes in tokens (default 128,256,512,1024; "
        "overlap one eighth; sizes above a model's window left out)",
    )
    s.add_argument(
        "--strategy",
        action="append",
        metavar="STRATEGY",
        help="only this strategy (repeatable; default: neighbors: those whose chunks are windows of "
        f"running text; chunk-size: the sweepable ones): {', '.join(strategies)}",
    )
    s.add_argument(
        "--corpus-model",
        action="append",
        metavar="MODEL",
        help="this corpus model (repeatable; default: the default corpus model)"
        + (f": {', '.join(models)}" if models else ""),
    )
    s.set_defaults(func=command_sweep, parser=s)
