"""``chunkbench runs prune``: remove the chunk rows of old collection builds from the results.

Every collection build's chunks are kept (chunkbench_core.storage.history) so any past run can be
inspected chunk by chunk; this is the only command that removes them.

Two ways to register it: :func:`add_prune_parser` adds ``prune`` to a ``runs`` command made of
sub-parsers; :func:`add_prune_arguments` adds its options to a ``runs`` parser whose action is a
positional choice (then dispatch ``prune`` to :func:`run_prune`).
"""

from __future__ import annotations

import argparse
from typing import Any, Collection

HELP = (
    "remove the chunks of old collection builds (keeps the N most recent builds of each collection and every "
    "build a run in the reports retrieved from)"
)
DESCRIPTION = (
    "Every rebuild of a collection with other settings or from a changed corpus keeps the previous "
    "build's chunks, so the inspector of an older run still shows the chunks it retrieved. prune removes "
    "all builds of each collection but the N most recent, except the builds that the latest run of a "
    "configuration (not excluded) retrieved from. A run whose build was removed keeps its scores; its "
    "inspector shows the offsets of its chunks without their texts."
)


def add_prune_arguments(parser: argparse.ArgumentParser) -> None:
    """``--keep`` and ``--dry-run`` (``--keep`` is checked by :func:`run_prune`, so a shared parser keeps working)."""
    parser.add_argument(
        "--keep", type=int, metavar="N", help="prune: the most recent builds to keep per collection (at least 1)"
    )
    parser.add_argument("--dry-run", action="store_true", help="prune: print what would be removed, remove nothing")


def add_prune_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``prune`` on the ``runs`` command's sub-parsers."""
    prune = subparsers.add_parser("prune", help=HELP, description=DESCRIPTION)
    add_prune_arguments(prune)
    prune.set_defaults(func=run_prune, parser=prune)
    return prune


def run_prune(args: argparse.Namespace, excluded: Collection[str] = ()) -> int:
    """Print what is removed (``--dry-run``: what would be), then remove it. ``excluded``: run ids set aside,
    whose builds are not kept on their account."""
    from chunkbench_core.storage.history import describe_plan, plan_prune, prune
    from chunkbench_core.storage.results_db import ResultsDB

    if args.keep is None:
        args.parser.error("prune needs --keep N: how many of the most recent builds of each collection to keep")
    results = ResultsDB(args.settings.results_dir)
    plan = plan_prune(results, args.keep, excluded)
    for line in describe_plan(plan, args.dry_run):
        print(line)
    if not args.dry_run:
        prune(results, plan)
    return 0
