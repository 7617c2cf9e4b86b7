"""``chunkbench reproduce chroma``: check chunkbench's numbers against the Chroma report's table.

- ``chunkbench reproduce chroma [--configs fixed_size:250:0,...] [--limit N] [--corpora a,b] [--out FILE]``
  runs the report's protocol (five corpora in one collection, 5 chunks per question, MiniLM) with
  the pipeline's parser, chunkers, embedder, vector store and metrics, and prints ours / published /
  difference per configuration and whether the targets are met. Exit status 1 when a full run
  misses a target.
- ``chunkbench reproduce chroma --pipeline [--strategy S] [--corpus-model M]`` runs the data set
  through the Dagster pipeline instead, as the corpus and question folder of a benchmark named
  ``chroma``: its results land in DuckDB and the reports like any other run (chunk sizes are then
  the pipeline's own, so the numbers are not the published table's configurations).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from chunkbench_core.datasets import CHROMA_CORPORA, CHROMA_QUESTIONS

from . import session

DESCRIPTION = """\
Run the protocol of the Chroma report "Evaluating Chunking Strategies for Retrieval" (five corpora
in one collection, 472 questions, 5 chunks per question, all-MiniLM-L6-v2) with chunkbench's own
parser, chunkers, embedder, vector store and metrics, on the copy of its data set that ships with
chunkbench. Prints ours / published / difference for each configuration and whether the targets
are met (recall within 3 points, IoU within 1 point, for fixed_size and recursive). Exit status 1
when a full run misses a target.

With --pipeline, runs the same corpora and questions through the Dagster pipeline instead, as the
benchmark "chroma": results land in DuckDB and the reports like any other run, with the pipeline's
own chunk sizes."""

#: what ``--pipeline`` runs unless told otherwise: the report's embedding model and chunkers
PIPELINE_STRATEGIES = ("fixed_size", "recursive", "cluster_semantic")
PIPELINE_MODEL = "all-minilm-l6-v2"


def add_parser(sub: Any) -> None:
    """Register ``reproduce`` on the ``chunkbench`` sub-parsers."""
    r = sub.add_parser(
        "reproduce",
        help="reproduce a published benchmark table with chunkbench's own code",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument(
        "benchmark",
        choices=["chroma"],
        help="chroma: the Chroma report 'Evaluating Chunking Strategies for Retrieval', all-MiniLM-L6-v2 table",
    )
    r.add_argument(
        "--configs",
        help="comma-separated strategy:size:overlap (default: every row of the published "
        "table; recursive_chroma:SIZE:OVERLAP is the report's own recursive splitter)",
    )
    r.add_argument("--limit", type=int, help="only the first N questions, for a quick look (no target check)")
    r.add_argument(
        "--corpora",
        help="comma-separated corpora (chatlogs, finance, pubmed, state_of_the_union, "
        "wikitexts; default all five; a subset gets no target check)",
    )
    r.add_argument("--out", help="also write our rows as CSV, with the published table's columns")
    r.add_argument(
        "--pipeline",
        action="store_true",
        help="run the data set through the Dagster pipeline as the benchmark 'chroma' (DuckDB, reports)",
    )
    r.add_argument(
        "--strategy",
        action="append",
        help=f"--pipeline: only this strategy (repeatable; default {', '.join(PIPELINE_STRATEGIES)})",
    )
    r.add_argument(
        "--corpus-model",
        action="append",
        help=f"--pipeline: only this corpus model (repeatable; default {PIPELINE_MODEL})",
    )
    r.set_defaults(func=command_reproduce)


def command_reproduce(args: argparse.Namespace) -> int:
    if args.pipeline:
        return _through_pipeline(args)
    from pathlib import Path

    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.evaluation.chroma import PUBLISHED_CONFIGS, parse_configs, run

    try:
        configs = parse_configs(args.configs) if args.configs else PUBLISHED_CONFIGS
        reproduction = run(
            out=Path(args.out) if args.out else None,
            limit=args.limit,
            corpora=args.corpora.split(",") if args.corpora else None,
            configs=configs,
            print_fn=lambda line: print(line, flush=True),
        )
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if reproduction.full and reproduction.misses:
        return 1
    return 0 if all(r.error is None for r in reproduction.results) else 1


def _through_pipeline(args: argparse.Namespace) -> int:
    """The shipped corpora and questions as the pipeline's corpus and question folder."""
    ignored = [
        flag
        for flag, value in (
            ("--configs", args.configs),
            ("--limit", args.limit),
            ("--corpora", args.corpora),
            ("--out", args.out),
        )
        if value
    ]
    if ignored:
        verb = "applies" if len(ignored) == 1 else "apply"
        print(f"error: {', '.join(ignored)} {verb} only without --pipeline", file=sys.stderr)
        return 2
    settings = args.settings
    chroma: dict[str, Any] = {"corpus": CHROMA_CORPORA, "questions": CHROMA_QUESTIONS}
    if not settings.given("benchmark"):
        chroma["benchmark"] = "chroma"  # kept apart from other benchmarks' results
    settings = session.use(settings.replace("chunkbench reproduce chroma --pipeline", **chroma))
    from chunkbench_pipelines.runner import RunConsole, run_everything

    from .instance import prepare_state

    print(f"corpus {CHROMA_CORPORA}\nquestions {CHROMA_QUESTIONS}", flush=True)
    instance = prepare_state(settings)  # once, under the setup lock (as chunkbench run)
    return run_everything(
        settings,
        strategies=args.strategy or list(PIPELINE_STRATEGIES),
        corpus_models=args.corpus_model or [PIPELINE_MODEL],
        console=RunConsole(sys.stdout),
        instance=instance,
    )
