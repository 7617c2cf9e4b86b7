"""``chunkbench runs prune``: remove the chunk rows of old collection builds from the results.

Every collection build's chunks are kept (chunkbench_core.storage.history) so any past run can be
inspected chunk by chunk; this is the only command that removes them.
"""

from __future__ import annotations

import argparse
from typing import Any, Collection


def add_prune_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``prune`` on the ``runs`` command's sub-parsers."""
    prune = subparsers.add_parser(
        "prune", help="remove the chunks of old collection builds (keeps the N most recent builds of each "
                      "collection and every build a run in the reports retrieved from)",
        description="Every rebuild of a collection with other settings or from a changed corpus keeps the "
                    "previous build's chunks, so the inspector of an older run still shows the chunks it retrieved. "
                    "This removes all builds of each collection but the N most recent, except the builds that the "
                    "latest run of a configuration (not excluded) retrieved from. A run whose build was removed "
                    "keeps its scores; its inspector shows the offsets of its chunks without their texts.")
    prune.add_argument("--keep", type=int, required=True, metavar="N",
                       help="the most recent builds to keep per collection (at least 1)")
    prune.add_argument("--dry-run", action="store_true", help="print what would be removed and remove nothing")
    prune.set_defaults(func=run_prune, parser=prune)
    return prune


def run_prune(args: argparse.Namespace, excluded: Collection[str] = ()) -> int:
    """Print what is removed (``--dry-run``: what would be), then remove it. ``excluded``: run ids set aside."""
    from chunkbench_core import settings
    from chunkbench_core.storage.history import describe_plan, plan_prune, prune
    from chunkbench_core.storage.results_db import ResultsDB

    results = ResultsDB(settings.results_dir())
    plan = plan_prune(results, args.keep, excluded)
    for line in describe_plan(plan, args.dry_run):
        print(line)
    if not args.dry_run:
        prune(results, plan)
    return 0
