"""``chunkbench ask "QUESTION"``: one question against one built configuration; ``chunkbench queries``: the history.

The logic is chunkbench_core.evaluation.ask (retrieval, expansion, answer, and which configuration when none
is named) and chunkbench_core.storage.queries (the ``queries`` table); this module reads the arguments, opens
the same resources the pipeline uses, saves the query (unless ``--no-save``) and prints (text, or JSON).
"""

from __future__ import annotations

import argparse
import json
import sys

from chunkbench_core.configuration import corpus_model_default


def _configuration(args: argparse.Namespace, results):
    """The configuration to ask of: the flags, else the recommendation, else the defaults (evaluation.ask)."""
    from chunkbench_core.evaluation.ask import choose_configuration

    if args.strategy and args.corpus_model:
        return choose_configuration(args.strategy, args.corpus_model, None, ("", ""), (), retriever=args.retriever)
    default = corpus_model_default(args.settings)
    ranked = [
        (str(r.strategy), str(r.corpus_model))
        for r in results.query("SELECT strategy, corpus_model FROM leaderboard").itertuples()
    ]
    built = [
        (str(r.strategy), str(r.corpus_model))
        for r in results.query(
            "SELECT strategy, corpus_model FROM collections WHERE coalesce(variant, '') = '' ORDER BY built_at DESC"
        ).itertuples()
    ]
    return choose_configuration(
        args.strategy,
        args.corpus_model,
        results.recommendation(),
        (default.model, default.detail),
        built,
        ranked,
        retriever=args.retriever,
    )


def command_ask(args: argparse.Namespace) -> int:
    from chunkbench_core.chunking import STRATEGIES
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.evaluation.ask import AskRequest, ask
    from chunkbench_core.evaluation.retrieval import ExpansionSettings
    from chunkbench_core.stages.collections import read_build_chunks
    from chunkbench_core.stages.spec import partition_collection, partition_rows_key
    from chunkbench_core.evaluation.ask import query_row
    from chunkbench_core.storage.queries import save_query
    from chunkbench_core.storage.records import UsageRecord, now

    from .instance import resources as make_resources

    if args.strategy is not None and args.strategy not in STRATEGIES:
        print(f"error: unknown strategy {args.strategy!r}; known: {', '.join(STRATEGIES)}", file=sys.stderr)
        return 2
    from chunkbench_core.retrievers import RETRIEVERS

    if args.retriever is not None and args.retriever not in RETRIEVERS.names():
        print(f"error: unknown retriever {args.retriever!r}; known: {', '.join(RETRIEVERS.names())}", file=sys.stderr)
        return 2
    resources = make_resources(args.settings)
    llm = resources["llm"]
    try:
        results = resources["duckdb"].results()
        choice = _configuration(args, results)
        if choice.note:
            print(choice.note, file=sys.stderr)
        prev, nxt = args.neighbors or (0, 0)
        expansion = ExpansionSettings(prev, nxt, frozenset(STRATEGIES) if args.neighbors else frozenset())
        embedder = resources["embeddings"].embedder(choice.corpus_model)
        build, rows = read_build_chunks(results, partition_rows_key(choice.strategy, embedder.spec.id))
        with resources["qdrant"].open() as store:
            request = AskRequest(
                args.question,
                choice.strategy,
                partition_collection(choice.strategy, embedder.spec.id),
                chunk_rows=rows,
                top_k=args.top_k,
                expansion=expansion,
                document=args.document,
                retriever=choice.retriever,
            )
            result = ask(
                request,
                embedder,
                store,
                llm.client() if llm.configured else None,
                llm.settings() if llm.configured else None,
            )
        saved = None
        if not args.no_save:
            saved = save_query(
                results, query_row(result, configuration_source=choice.source, created_at=now(), build=build)
            )
            # the question's embedding, with the corpus embeddings in embedding_usage (stage "queries")
            results.record_query_usage(
                f"ask__{saved}", UsageRecord(choice.strategy, embedder.spec.id, "queries", embedder.usage.as_row())
            )
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(
            json.dumps(
                {**result.to_dict(), "query_id": saved, "configuration_source": choice.source},
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        print(result.to_text())
        if saved:
            print(f"saved as query {saved} (chunkbench queries show {saved[:8]})")
    return 0 if result.answer_error is None else 1


#: ``queries list --corpus-model all``: every corpus model's queries, whatever the default in force
EVERY_MODEL = "all"


def _listed_corpus_model(args: argparse.Namespace) -> str | None:
    """The corpus model whose queries ``queries list`` shows: the one named, else the default set for the
    benchmark (``chunkbench defaults set corpus_model`` or the environment, said on stderr), else every model's."""
    if args.corpus_model == EVERY_MODEL:
        return None
    if args.corpus_model:
        return args.corpus_model
    default = corpus_model_default(args.settings)
    if default.source == "registry":  # nothing chosen: the history of every model
        return None
    print(
        f"queries of {default.model}, the corpus model in force ({default.source}: {default.detail}); "
        f"--corpus-model {EVERY_MODEL} lists every model's",
        file=sys.stderr,
    )
    return default.model


def command_queries(args: argparse.Namespace) -> int:
    """``queries list`` (newest first) and ``queries show ID`` (8 or more characters of the id)."""
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.storage.queries import find_query, list_queries, query_text
    from chunkbench_core.storage.results_db import ResultsDB

    results = ResultsDB(args.settings.results_dir)
    try:
        if args.action == "show":
            if not args.id:
                args.parser.error("show needs a query id (8 or more characters; chunkbench queries list shows them)")
            query = find_query(results, args.id)
            print(json.dumps(query.to_dict(), ensure_ascii=False, indent=2) if args.json else query_text(query))
            return 0
        if args.id:
            args.parser.error("list takes no id (chunkbench queries show ID shows one query)")
        corpus_model = _listed_corpus_model(args)
        rows = list_queries(results, None if args.all else args.limit, args.strategy, corpus_model)
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print('no saved queries yet (chunkbench ask "QUESTION" saves each one)')
        return 0
    for r in rows:
        answered = "answered" if r["answered"] else "no answer"
        total = f"{r['total_ms']:.0f} ms" if isinstance(r.get("total_ms"), (int, float)) else "-"
        question = " ".join(str(r["question"]).split())
        question = question if len(question) <= 70 else question[:67] + "..."
        print(
            f"{r['query_id']}  {r['created_at']}  {r['configuration']}  {r['hits']} hits, {answered}, {total}  "
            f"{question}"
        )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser(
        "ask",
        help="ask one question of one built configuration and show what comes back",
        description="Ask one question of a built configuration. Without --strategy and "
        "--corpus-model: the recommended configuration of the latest comparison, else "
        "the corpus model in force (chunkbench defaults set corpus_model) with its "
        "best-ranked strategy. Each query is saved to the benchmark's query history "
        "(chunkbench queries list) unless --no-save.",
    )
    a.add_argument("question")
    a.add_argument("--strategy", help="default: the recommended configuration's (see above)")
    a.add_argument("--corpus-model", help="default: the recommended configuration's, else the corpus model in force")
    a.add_argument(
        "--neighbors",
        nargs=2,
        type=int,
        metavar=("PREVIOUS", "NEXT"),
        help="add this many chunks before and after each hit (0..5), whatever the strategy",
    )
    a.add_argument("--document", help="search this document only")
    a.add_argument(
        "--retriever",
        help="how the chunks are found: dense (the embedding's nearest chunks) or hybrid "
        "(fused with a keyword ranking); default: the recommended configuration's, "
        "else dense",
    )
    a.add_argument("--top-k", type=int, default=5)
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.add_argument("--no-save", action="store_true", help="do not save the query to the history")
    a.set_defaults(func=command_ask)
    q = sub.add_parser(
        "queries",
        help="the questions asked with chunkbench ask: list them, show one",
        description="The benchmark's query history (the queries table of its results database): "
        "`list` shows the newest first, `show ID` one query in full (8 or more "
        "characters of its id).",
    )
    q.add_argument("action", choices=["list", "show"])
    q.add_argument("id", nargs="?", help="show: the query's id, or 8 or more of its first characters")
    q.add_argument("--limit", type=int, default=20, help="list: this many, newest first (default 20)")
    q.add_argument("--all", action="store_true", help="list: every saved query")
    q.add_argument("--strategy", help="list: only this strategy's queries")
    q.add_argument(
        "--corpus-model",
        help="list: only this corpus model's queries (default: the corpus model set "
        "by chunkbench defaults set corpus_model or CHUNKBENCH_CORPUS_MODEL, "
        f"else every model's; '{EVERY_MODEL}': every model's)",
    )
    q.add_argument("--json", action="store_true", help="print JSON")
    q.set_defaults(func=command_queries, parser=q)
