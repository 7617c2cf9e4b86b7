"""The ``chunkbench`` command.

- ``chunkbench run``: materialize the whole asset graph in-process (every strategy x every
  available corpus model) and print the leaderboard and the report's path.
- ``chunkbench parse FILE``: print a parsed document as JSON.
- ``chunkbench chunk FILE --strategy NAME``: print the chunks of a document as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from chunkbench_core import settings

DAGSTER_YAML = """\
# written by chunkbench for its own DAGSTER_HOME
nux:
  enabled: false
telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    # three runs at once; never two runs of the same partition (they share a collection)
    max_concurrent_runs: 3
    tag_concurrency_limits:
      - key: "dagster/partition"
        limit: 1
        value:
          applyLimitPerUniqueValue: true
      - key: "chunkbench/provider"
        value: "openai"
        limit: 2
"""


def ensure_dagster_home() -> Path:
    """Use the user's DAGSTER_HOME, or one inside CHUNKBENCH_HOME with chunkbench's dagster.yaml."""
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"])
    path = settings.dagster_home(settings.home_dir())
    path.mkdir(parents=True, exist_ok=True)
    config = path / "dagster.yaml"
    if not config.exists():
        config.write_text(DAGSTER_YAML, encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(path)
    return path


def command_run(args: argparse.Namespace) -> int:
    ensure_dagster_home()
    from chunkbench_pipelines.runner import run_everything

    return run_everything(strategies=args.strategy or None, corpus_models=args.corpus_model or None, out=sys.stdout)


def command_parse(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import DocumentProcessingError
    from chunkbench_core.parsing import parse

    try:
        parsed = parse(args.file)
    except DocumentProcessingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    data = parsed.to_dict()
    print(json.dumps({k: data[k] for k in ("document", "markdown", "tree", "units", "warnings", "stats")},
                     ensure_ascii=False, indent=2))
    return 0


def command_chunk(args: argparse.Namespace) -> int:
    from chunkbench_core.chunking import make_chunker
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.parsing import parse

    try:
        chunker = make_chunker(args.strategy, chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap)
        chunks = chunker.chunk(parse(args.file))
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    fields = ("chunk_id", "chunk_index", "start", "end", "token_count", "content_type", "parent_id", "text")
    out = []
    for c in chunks:
        row = {f: getattr(c, f) for f in fields}
        if c.embedded_text is not None and c.embedded_text != c.text:
            row["embedded_text"] = c.embedded_text
        out.append(row)
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return 0


def command_init(args: argparse.Namespace) -> int:
    home = settings.home_dir()
    home.mkdir(parents=True, exist_ok=True)
    print(ensure_dagster_home())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="chunkbench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="materialize the whole asset graph and print the leaderboard")
    run.add_argument("--strategy", action="append", help="only this strategy (repeatable)")
    run.add_argument("--corpus-model", action="append", help="only this corpus model (repeatable)")
    run.set_defaults(func=command_run)
    p = sub.add_parser("parse", help="print a parsed document as JSON")
    p.add_argument("file")
    p.set_defaults(func=command_parse)
    c = sub.add_parser("chunk", help="print the chunks of a document as JSON")
    c.add_argument("file")
    c.add_argument("--strategy", required=True)
    c.add_argument("--chunk-size", type=int, default=512)
    c.add_argument("--chunk-overlap", type=int, default=50)
    c.set_defaults(func=command_chunk)
    i = sub.add_parser("init", help="create CHUNKBENCH_HOME and print the DAGSTER_HOME chunkbench uses")
    i.set_defaults(func=command_init)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
