"""chunkbench: which chunking strategy and embedding model retrieve best on your documents.

Run `chunkbench COMMAND --help` for a command's options.
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
concurrency:
  runs:
    # three runs at once; never two runs of the same partition (they share a collection)
    max_concurrent_runs: 3
    tag_concurrency_limits:
      - key: "dagster/partition"
        limit: 1
        value:
          applyLimitPerUniqueValue: true
# Remote providers are limited by Dagster pools named after them ("openai", "openai_compatible"),
# claimed by the partition that calls them; the monitoring daemon frees slots a crashed run held.
run_monitoring:
  enabled: true
  free_slots_after_run_end_seconds: 60
"""


def ensure_dagster_home() -> Path:
    """Use the user's DAGSTER_HOME, or one inside CHUNKBENCH_HOME with chunkbench's dagster.yaml.

    Either way the provider pools are created with their starting limit (concurrency.py).
    """
    if os.environ.get("DAGSTER_HOME"):
        path = Path(os.environ["DAGSTER_HOME"])
    else:
        path = settings.dagster_home(settings.home_dir())
        path.mkdir(parents=True, exist_ok=True)
        config = path / "dagster.yaml"
        if not config.exists():
            config.write_text(DAGSTER_YAML, encoding="utf-8")
        os.environ["DAGSTER_HOME"] = str(path)
    _ensure_provider_pools()
    return path


def _ensure_provider_pools() -> None:
    from dagster import DagsterInstance

    from chunkbench_pipelines.concurrency import ensure_provider_pools

    # not ``with``: Dagster 1.13's instance context leaves its state storage set after the instance is gone
    instance = DagsterInstance.get()
    try:
        ensure_provider_pools(instance, _resources()["embeddings"].pool_limit)
    finally:
        instance.dispose()


def command_run(args: argparse.Namespace) -> int:
    from chunkbench_pipelines.run_control import check_run_arguments, run_interruptibly

    check_run_arguments(args.strategy, args.corpus_model)  # before any work: a bad value exits 2
    ensure_dagster_home()
    from dagster import DagsterInstance

    from chunkbench_pipelines.runner import run_everything

    from chunkbench_pipelines.cli_settings import run_settings

    try:
        settings_given = run_settings(args)
    except ValueError as exc:
        args.parser.error(str(exc))
    instance = DagsterInstance.get()
    return run_interruptibly(lambda: run_everything(strategies=args.strategy or None,
                                                    corpus_models=args.corpus_model or None, out=sys.stdout,
                                                    instance=instance, wide=args.wide,
                                                    run_settings=settings_given), instance, sys.stdout)


def command_leaderboard(args: argparse.Namespace) -> int:
    from chunkbench_core import settings as core_settings
    from chunkbench_core.storage.results_db import ResultsDB
    from chunkbench_pipelines.runner import leaderboard_text

    print(leaderboard_text(ResultsDB(core_settings.results_dir()), wide=args.wide))
    return 0


def command_parse(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import DocumentProcessingError
    from chunkbench_core.parsing import parse

    try:
        parsed = parse(args.file)
    except DocumentProcessingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.text:  # exactly the text references are located in (no newline added)
        sys.stdout.flush()
        sys.stdout.buffer.write(parsed.markdown.encode("utf-8"))
        sys.stdout.buffer.flush()
        return 0
    data = parsed.to_dict()
    print(json.dumps({k: data[k] for k in ("document", "markdown", "tree", "units", "warnings", "stats")},
                     ensure_ascii=False, indent=2))
    return 0


def command_chunk(args: argparse.Namespace) -> int:
    """Chunks of one document with the pipeline's own chunker (corpus model window, boundary model)."""
    from chunkbench_core.embedding import get_model
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.parsing import parse
    from chunkbench_core.stages import build_chunker, chunking_params, model_window

    embeddings = _resources()["embeddings"]
    try:
        spec = get_model(args.corpus_model)
        params = chunking_params(spec, args.chunk_size, args.chunk_overlap)
        boundary, threshold = embeddings.boundary(args.strategy, args.boundary_model, settings.home_dir())
        chunker = build_chunker(args.strategy, params, model_window(spec), boundary, threshold)
        chunks = chunker.chunk(parse(args.file))
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    fields = ("chunk_id", "chunk_index", "start", "end", "token_count", "content_type", "parent_id", "role",
              "context_source", "text")
    out = []
    for c in chunks:
        row = {f: getattr(c, f) for f in fields}
        if c.embedded_text is not None and c.embedded_text != c.text:
            row["embedded_text"] = c.embedded_text
        out.append(row)
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return 0


def command_estimate(args: argparse.Namespace) -> int:
    """Dry run: what building and evaluating every partition would cost, spending nothing.

    Index: embedding tokens per corpus model at the registry's price, contextual_retrieval's
    LLM calls, image captions. Experiments: LLM answer and judge calls, query embeddings.
    """
    from chunkbench_core.chunking import STRATEGIES
    from chunkbench_core.tokens import count_tokens
    from chunkbench_core.embedding import get_model
    from chunkbench_core.evaluation.cost import estimate_captions, estimate_index
    from chunkbench_core.evaluation.llm import estimate_cost
    from chunkbench_core.evaluation.questions import load_question_sets
    from chunkbench_core.stages import chunking_params, load_parsed_corpus

    resources = _resources()
    llm = resources["llm"]
    prices = llm.prices()
    strategies = args.strategy or STRATEGIES.names()
    models = args.corpus_model or resources["embeddings"].available_models()
    documents = load_parsed_corpus(resources["workspace"].parsed_store())
    tokens = [count_tokens(d.markdown) for d in documents]
    if not documents:
        from chunkbench_core.storage.corpus import scan_corpus

        tokens = [s.size_bytes // 4 for s in scan_corpus(resources["workspace"].corpus_dir())]
        print("no parsed documents yet: the index estimate counts about 4 bytes of each file as one token "
              "(materialize parsed_documents for an exact count)")
    total = 0.0
    for model in models:
        spec = get_model(model)
        params = chunking_params(spec, None, None)
        index = estimate_index(tokens, model, spec.price_per_mtok, len(strategies), params["chunk_size"],
                               params["chunk_overlap"], llm.configured and any(STRATEGIES[s].capabilities.llm for s in strategies), prices)
        total += index.embedding_usd + index.context_usd
        print("index " + index.summary())
    n_images = sum(int((d.stats or {}).get("images", 0) or 0) for d in documents) if llm.vision_model else 0
    if n_images:
        calls, captions_usd = estimate_captions(n_images, prices)
        total += captions_usd
        print(f"captions: {calls} vision calls (${captions_usd:,.4f})")
    if not llm.configured:
        print("no LLM configured (set CHUNKBENCH_LLM_MODEL, and CHUNKBENCH_LLM_BASE_URL for a local server): "
              "experiments use evidence metrics only and make no LLM call")
    else:
        sets, errors = load_question_sets(settings.questions_dir())
        for error in errors:
            print(f"warning: {error}", file=sys.stderr)
        questions = [q for qs in sets for q in qs.questions]
        estimate = estimate_cost(questions, len(strategies), llm.settings(), n_corpus_models=len(models),
                                 top_k=args.top_k, neighbor_prev=args.neighbor_prev, neighbor_next=args.neighbor_next)
        print("experiments " + estimate.summary())
        total += estimate.usd or 0.0
    if not prices.known and llm.configured:
        print("the LLM's price is unknown: set CHUNKBENCH_LLM_PRICE_INPUT and CHUNKBENCH_LLM_PRICE_OUTPUT "
              "(USD per million tokens; 0 for a local server)")
    print(f"estimated total: ${total:,.2f} (a first build; cached embeddings and contexts are not paid again)")
    return 0


def _resources():
    """The same resources the Dagster definitions use (secrets from the environment)."""
    from chunkbench_pipelines.definitions import build_resources

    return build_resources(resolve=True)


def command_models(args: argparse.Namespace) -> int:
    from chunkbench_core.embedding.admin import models_jsonl

    print(models_jsonl(_resources()["embeddings"].provider_settings(), home=settings.home_dir()))
    return 0


def command_health(args: argparse.Namespace) -> int:
    from chunkbench_core.storage.operations import health

    resources = _resources()
    with resources["qdrant"].open() as store:
        checks = health(store, resources["duckdb"].results().database_path,
                        resources["embeddings"].provider_settings(), probe_providers=not args.no_probe)
    for check in checks:
        print(json.dumps(check.as_dict(), ensure_ascii=False))
    return 0 if all(c.ok for c in checks if c.configured) else 1  # an unconfigured provider is no failure


def command_collections(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.storage.operations import list_collections, preview_chunks, wipe_collections

    try:
        with _resources()["qdrant"].open() as store:
            if args.action == "list":
                for info in list_collections(store):
                    print(json.dumps(asdict(info), ensure_ascii=False))
            elif args.action == "wipe":
                if args.all and args.names:
                    args.parser.error("wipe takes collection names or --all, not both")
                if not args.names and not (args.all and args.yes):
                    args.parser.error("wipe needs the collection names to delete, or --all --yes to delete every "
                                      "chunkbench collection (see `chunkbench collections list`)")
                print(json.dumps(wipe_collections(store, args.names or None, keep_collection=args.points_only)))
            else:
                if not (args.strategy and args.model and args.document):
                    args.parser.error("preview needs --strategy, --model and --document")
                print(json.dumps(preview_chunks(store, args.strategy, args.model, args.document, args.limit),
                                 ensure_ascii=False, indent=2))
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def command_thresholds(args: argparse.Namespace) -> int:
    from chunkbench_core.embedding import clear_semantic_threshold, semantic_threshold_overrides, set_semantic_threshold
    from chunkbench_core.errors import ChunkbenchError

    home = settings.home_dir()
    if args.action == "set" and (args.model is None or args.value is None):
        args.parser.error("set needs a model id and a threshold in (0, 1], e.g. `thresholds set all-minilm-l6-v2 0.35`")
    if args.action == "clear" and args.model is None:
        args.parser.error("clear needs a model id")
    try:
        if args.action == "set":
            set_semantic_threshold(args.model, args.value, home)
        elif args.action == "clear":
            clear_semantic_threshold(args.model, home)
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(semantic_threshold_overrides(home), sort_keys=True))
    return 0


def command_init(args: argparse.Namespace) -> int:
    home = settings.home_dir()
    home.mkdir(parents=True, exist_ok=True)
    print(ensure_dagster_home())
    return 0


class _OneLineCommands(argparse.RawDescriptionHelpFormatter):
    """The top-level help lists every command on one line: its name, then what it does."""

    def _format_action(self, action: argparse.Action) -> str:
        if isinstance(action, argparse._SubParsersAction):
            names = [a.dest for a in action._get_subactions()]
            width = max(map(len, names)) + 2
            return "".join(f"  {a.dest:<{width}}{a.help}\n" for a in action._get_subactions())
        return super()._format_action(action)


def build_parser() -> argparse.ArgumentParser:
    from chunkbench_core.chunking import STRATEGIES
    from chunkbench_core.embedding import model_registry

    from .cli_settings import add_defaults_command, add_run_settings

    from chunkbench_core.errors import ConfigError

    strategies = list(STRATEGIES.names())
    try:
        model_choices: list[str] | None = list(model_registry())
        models = ", ".join(model_choices)
    except ConfigError:  # a bad registry file: the command itself reports it in one line
        model_choices, models = None, "see chunkbench models"
    parser = argparse.ArgumentParser(prog="chunkbench", description=__doc__, formatter_class=_OneLineCommands)
    parser.add_argument("--benchmark", metavar="NAME",
                        help="keep this benchmark's results, collections and reports apart "
                             "(same as CHUNKBENCH_BENCHMARK; default: sample, or the corpus folder's name)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    run = sub.add_parser("run", help="materialize the whole asset graph and print the leaderboard")
    # values are checked by run_control.check_run_arguments (one line naming the valid ones, exit 2, before any work)
    run.add_argument("--strategy", action="append", metavar="STRATEGY",
                     help=f"only this strategy (repeatable): {', '.join(strategies)}")
    run.add_argument("--corpus-model", action="append", metavar="MODEL",
                     help=f"only this corpus model (repeatable): {models}")
    run.add_argument("--wide", action="store_true", help="print every leaderboard column (default: fits 120 columns)")
    add_run_settings(run)
    run.set_defaults(func=command_run, parser=run)
    lb = sub.add_parser("leaderboard", help="print the ranked leaderboard, the recommendation and its warnings")
    lb.add_argument("--wide", action="store_true", help="print every column (default: fits 120 columns)")
    lb.set_defaults(func=command_leaderboard)
    p = sub.add_parser("parse", help="print a parsed document as JSON")
    p.add_argument("file")
    p.add_argument("--text", action="store_true", help="print only the parsed text, exactly: what question "
                                                       "excerpts must match")
    p.set_defaults(func=command_parse)
    c = sub.add_parser("chunk", help="print the chunks of a document as JSON")
    c.add_argument("file")
    c.add_argument("--strategy", required=True, choices=strategies)
    c.add_argument("--chunk-size", type=int, help="cl100k tokens (default: fits the corpus model's window)")
    c.add_argument("--chunk-overlap", type=int)
    c.add_argument("--corpus-model", default="all-minilm-l6-v2", choices=model_choices,
                   help="whose window bounds the chunks")
    c.add_argument("--boundary-model", help="semantic cuts (default: CHUNKBENCH_BOUNDARY_MODEL or MiniLM)")
    c.set_defaults(func=command_chunk)
    e = sub.add_parser("estimate", help="dry run: what building and evaluating would cost (embeddings, LLM calls)")
    e.add_argument("--strategy", action="append", choices=strategies)
    e.add_argument("--corpus-model", action="append", choices=model_choices)
    e.add_argument("--top-k", type=int, default=5)
    e.add_argument("--neighbor-prev", type=int, default=0)
    e.add_argument("--neighbor-next", type=int, default=0)
    e.set_defaults(func=command_estimate)
    m = sub.add_parser("models", help="the embedding models as JSON lines, with availability")
    m.set_defaults(func=command_models)
    h = sub.add_parser("health", help="check Qdrant, DuckDB and each configured provider")
    h.add_argument("--no-probe", action="store_true", help="do not call remote providers")
    h.set_defaults(func=command_health)
    col = sub.add_parser("collections", help="list or wipe collections, preview a document's chunks")
    col.add_argument("action", choices=["list", "wipe", "preview"])
    col.add_argument("names", nargs="*", help="wipe: the collection names to delete")
    col.add_argument("--all", action="store_true", help="wipe: every chunkbench collection (needs --yes)")
    col.add_argument("--yes", action="store_true", help="wipe --all: confirm")
    col.add_argument("--points-only", action="store_true", help="wipe: keep the collections, remove their points")
    col.add_argument("--strategy")
    col.add_argument("--model")
    col.add_argument("--document")
    col.add_argument("--limit", type=int)
    col.set_defaults(func=command_collections, parser=col)
    t = sub.add_parser("thresholds", help="per-model semantic thresholds kept in the results database")
    t.add_argument("action", choices=["list", "set", "clear"])
    t.add_argument("model", nargs="?")
    t.add_argument("value", nargs="?", type=float)
    t.set_defaults(func=command_thresholds, parser=t)
    add_defaults_command(sub)
    i = sub.add_parser("init", help="create CHUNKBENCH_HOME and print the DAGSTER_HOME used")
    i.set_defaults(func=command_init)
    from chunkbench_pipelines import cli_ask, cli_questions, cli_reproduce, cli_runs

    cli_reproduce.add_parser(sub)
    cli_questions.register(sub)
    cli_ask.register(sub)
    cli_runs.register(sub)
    from .cli_ui import add_parser as add_ui_parser

    add_ui_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from chunkbench_core.errors import ConfigError

    args = build_parser().parse_args(argv)
    if args.benchmark:
        os.environ["CHUNKBENCH_BENCHMARK"] = args.benchmark
    try:
        settings.benchmark_name()
        return int(args.func(args))
    except ConfigError as exc:  # a bad value, benchmark name or model registry: one line, no traceback
        print(f"chunkbench {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
