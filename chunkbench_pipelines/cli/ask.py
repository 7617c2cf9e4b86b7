"""``chunkbench ask "QUESTION" --strategy S --corpus-model M``: one question against one built collection.

The logic is chunkbench_core.evaluation.ask; this module reads the arguments, opens the same
resources the pipeline uses, and prints (text, or one JSON object with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import sys


def command_ask(args: argparse.Namespace) -> int:
    from chunkbench_core.chunking import STRATEGIES
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.evaluation.ask import AskRequest, ask
    from chunkbench_core.evaluation.retrieval import ExpansionSettings
    from chunkbench_core.stages.collections import read_build_chunks
    from chunkbench_core.stages.spec import partition_collection, partition_rows_key

    from .instance import resources as make_resources

    if args.strategy not in STRATEGIES:
        print(f"error: unknown strategy {args.strategy!r}; known: {', '.join(STRATEGIES)}", file=sys.stderr)
        return 2
    resources = make_resources(args.settings)
    llm = resources["llm"]
    try:
        prev, nxt = args.neighbors or (0, 0)
        expansion = ExpansionSettings(prev, nxt, frozenset(STRATEGIES) if args.neighbors else frozenset())
        embedder = resources["embeddings"].embedder(args.corpus_model)
        _, rows = read_build_chunks(resources["duckdb"].results(), partition_rows_key(args.strategy, embedder.spec.id))
        with resources["qdrant"].open() as store:
            request = AskRequest(args.question, args.strategy, partition_collection(args.strategy, embedder.spec.id),
                                 chunk_rows=rows, top_k=args.top_k, expansion=expansion, document=args.document)
            result = ask(request, embedder, store, llm.client() if llm.configured else None,
                         llm.settings() if llm.configured else None)
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
    else:
        print(result.to_text())
    return 0 if result.answer_error is None else 1


def register(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser("ask", help="ask one question of one built configuration and show what comes back")
    a.add_argument("question")
    a.add_argument("--strategy", required=True)
    a.add_argument("--corpus-model", required=True)
    a.add_argument("--neighbors", nargs=2, type=int, metavar=("PREVIOUS", "NEXT"),
                   help="add this many chunks before and after each hit (0..5), whatever the strategy")
    a.add_argument("--document", help="search this document only")
    a.add_argument("--top-k", type=int, default=5)
    a.add_argument("--json", action="store_true", help="print one JSON object")
    a.set_defaults(func=command_ask)
