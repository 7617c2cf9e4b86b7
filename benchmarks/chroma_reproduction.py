"""Reproduce the all-MiniLM-L6-v2 table of Chroma's chunking report with chunkbench's own code.

    python benchmarks/chroma_reproduction.py [--data DIR] [--out FILE] [--limit N]
        [--corpora chatlogs,state_of_the_union] [--configs fixed_size:250:125,...]

The same run as ``chunkbench reproduce chroma``; the protocol and the code live in
``chunkbench_core.evaluation.chroma``. By default it runs every row of the published table plus
the reproduction-only ``recursive_chroma`` rows, on the data set that ships with chunkbench
(``chunkbench_core/datasets/chroma_general_evaluation``); ``--data`` names another copy of it.

Prints one row per config: ours / published / difference for recall, precision,
precision_omega and IoU (percent), then whether the fixed_size and recursive rows are within
the targets (recall within 3 points, IoU within 1 point). ``--out`` writes our rows as CSV with
the columns of published_minilm.csv. ``--limit N`` keeps the first N questions (file order) of
the selected corpora; ``--corpora`` selects corpora (both make a quick slice whose numbers are
not comparable with the published table).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.evaluation.chroma import (  # noqa: F401  (re-exported for scripts that import this file)
    CONFIGS,
    DEFAULT_DATA,
    METRICS,
    PUBLISHED_CONFIGS,
    TARGETS,
    ChromaRecursiveSplitter,
    ConfigResult,
    Reproduction,
    load_corpora,
    load_questions,
    make_config_chunker,
    parse_configs,
    published_table,
    run,
    run_config,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="a Chroma evaluation data folder (default: the copy shipped with chunkbench)",
    )
    parser.add_argument("--out", type=Path, help="write our rows as CSV (published_minilm.csv's columns)")
    parser.add_argument("--limit", type=int, help="only the first N questions (file order)")
    parser.add_argument("--corpora", help="comma-separated corpus ids (default: all five)")
    parser.add_argument(
        "--configs",
        help="comma-separated strategy:size:overlap (default: the published table and the recursive_chroma rows)",
    )
    parser.add_argument("--work", type=Path, help="folder for the temporary Qdrant store (default: system temp)")
    args = parser.parse_args(argv)
    try:
        configs = parse_configs(args.configs) if args.configs else CONFIGS
        run(args.data, args.out, args.limit, args.corpora.split(",") if args.corpora else None, configs, args.work)
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
