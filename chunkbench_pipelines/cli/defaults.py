"""``chunkbench thresholds list|set|clear`` and ``chunkbench defaults list|set|clear``: the shared defaults.

The corpus model, the boundary model and the per-model semantic thresholds live in the results database
in force (chunkbench_core.embedding.thresholds), shared by every machine using it; a change of the boundary
model or a threshold marks the partitions it affects stale. The corpus model default is what ``ask``,
``queries`` and ``sweep`` use when none is given.
"""

from __future__ import annotations

import argparse
import json
import sys


def _shared(args: argparse.Namespace):
    from chunkbench_core.configuration import shared_defaults_of

    return shared_defaults_of(args.settings)


def command_thresholds(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import ChunkbenchError

    if args.action == "set" and (args.model is None or args.value is None):
        args.parser.error("set needs a model id and a threshold in (0, 1], e.g. `thresholds set all-minilm-l6-v2 0.35`")
    if args.action == "clear" and args.model is None:
        args.parser.error("clear needs a model id")
    try:
        shared = _shared(args)
        if args.action == "set":
            shared.set_threshold(args.model, args.value)
        elif args.action == "clear":
            shared.clear_threshold(args.model)
        print(json.dumps(shared.thresholds(), sort_keys=True))
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


_SETTINGS = "corpus_model MODEL, boundary_model MODEL, or threshold:MODEL VALUE"


def command_defaults(args: argparse.Namespace) -> int:
    """Persistent defaults in the results database: the corpus and boundary models, per-model semantic thresholds."""
    from chunkbench_core.errors import ChunkbenchError

    try:
        shared = _shared(args)
        if args.action == "set":
            if args.name is None or args.value is None:
                args.parser.error(f"set needs a setting and a value: {_SETTINGS}")
            if args.name == "boundary_model":
                shared.set_boundary_model(args.value)
            elif args.name == "corpus_model":
                shared.set_corpus_model(args.value)
            elif args.name.startswith("threshold:"):
                try:
                    value = float(args.value)
                except ValueError:
                    args.parser.error(f"a threshold is a number in (0, 1], got {args.value!r}")
                shared.set_threshold(args.name.removeprefix("threshold:"), value)
            else:
                args.parser.error(f"unknown setting {args.name!r}: {_SETTINGS}")
        elif args.action == "clear":
            if args.name is None:
                args.parser.error("clear needs a setting: corpus_model, boundary_model or threshold:MODEL")
            if args.name == "boundary_model":
                shared.clear_boundary_model()
            elif args.name == "corpus_model":
                shared.clear_corpus_model()
            elif args.name.startswith("threshold:"):
                shared.clear_threshold(args.name.removeprefix("threshold:"))
            else:
                args.parser.error(f"unknown setting {args.name!r}: corpus_model, boundary_model or threshold:MODEL")
        settings = args.settings
        # the waits of a remote provider: environment settings (not shared), named here with the other defaults
        providers = {
            "provider_timeout_seconds": settings.provider_timeout,
            "provider_retry_budget_seconds": settings.provider_retry_budget,
        }
        print(
            json.dumps(
                {
                    "corpus_model": shared.corpus_model(),
                    "boundary_model": shared.boundary_model(),
                    "thresholds": shared.thresholds(),
                    **providers,
                },
                sort_keys=True,
            )
        )
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser(
        "thresholds",
        help="per-model semantic thresholds kept in the results database (used by "
        "the absolute cut rule, threshold_mode absolute)",
    )
    t.add_argument("action", choices=["list", "set", "clear"])
    t.add_argument("model", nargs="?")
    t.add_argument("value", nargs="?", type=float)
    t.set_defaults(func=command_thresholds, parser=t)
    d = sub.add_parser(
        "defaults",
        help="shared defaults: corpus model, boundary model, semantic thresholds",
        description="Persistent defaults kept in the results database, shared by every machine using "
        "it. corpus_model: what ask, queries and sweep use when no --corpus-model is "
        "given. A change of boundary_model or a threshold marks the partitions it "
        "affects stale. `chunkbench models` shows the models in force and where each "
        "comes from. The list also names the request timeout and the retry budget of "
        "embedding servers and the LLM (CHUNKBENCH_PROVIDER_TIMEOUT_S, "
        "CHUNKBENCH_PROVIDER_RETRY_BUDGET_S: environment settings).",
    )
    d.add_argument("action", choices=["list", "set", "clear"])
    d.add_argument("name", nargs="?", help="corpus_model, boundary_model, or threshold:MODEL")
    d.add_argument("value", nargs="?", help="set: the model id, or the threshold in (0, 1]")
    d.set_defaults(func=command_defaults, parser=d)
