"""``chunkbench strategies``: the strategy catalog, read from the strategy registry.

Each strategy with its one-line description, what it needs and gives (its capabilities) and its options:
type, default, allowed values and what each does (chunkbench_core.chunking.registry).
"""

from __future__ import annotations

import argparse
import json

#: capabilities in words, as the catalog prints them
CAPABILITY_WORDS = {
    "boundary_model": "cuts with the boundary model",
    "llm": "writes context with the LLM when one is configured",
    "parent_context": "hands each hit's parent section to the LLM",
    "sweepable": "in the chunk-size sweep",
    "neighbor_expansion": "neighbor expansion on by default",
    "covers_text": "chunks cover all the text",
    "sized_by_chunk_size": "chunk_size bounds its chunks",
}


def _value(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return "decided at build time" if value is None else str(value)


def catalog_text(strategies: list[dict]) -> str:
    from chunkbench_core.chunking.registry import COMMON_OPTIONS, StrategyOptions

    common = {name: spec.get_default() for name, spec in StrategyOptions.model_fields.items()}
    lines = []
    for s in strategies:
        # a common option is listed once at the end, and with a strategy only where its default differs
        s = {
            **s,
            "options": [
                o for o in s["options"] if o["name"] not in COMMON_OPTIONS or o["default"] != common[o["name"]]
            ],
        }
        lines.append(s["name"])
        lines.append(f"  {s['description']}")
        if s.get("description_without_llm"):
            lines.append(f"  without an LLM: {s['description_without_llm']}")
        can = [CAPABILITY_WORDS.get(k, k) for k, v in s["capabilities"].items() if v]
        lines.append(f"  capabilities: {', '.join(can) if can else 'none beyond chunk_size and chunk_overlap'}")
        if not s["options"]:
            lines.append("  options: none of its own")
        for o in s["options"]:
            lines.append(f"  --{o['name'].replace('_', '-')} ({o['rule']}; default {_value(o['default'])})")
            if o["description"]:
                lines.append(f"      {o['description']}")
        lines.append("")
    lines.append("every strategy")
    for name, spec in StrategyOptions.model_fields.items():
        lines.append(f"  --{name.replace('_', '-')} (true or false; default {_value(common[name])})")
        lines.append(f"      {spec.description}")
    return "\n".join(lines).rstrip() + "\n"


def command_strategies(args: argparse.Namespace) -> int:
    from chunkbench_core.chunking import STRATEGIES

    strategies = [s.describe() for s in STRATEGIES.values() if not args.names or s.name in args.names]
    unknown = sorted(set(args.names) - set(STRATEGIES.names()))
    if unknown:
        args.parser.error(f"unknown strategy {', '.join(unknown)}; known: {', '.join(STRATEGIES.names())}")
    if args.json:
        print(json.dumps(strategies, ensure_ascii=False, indent=2, default=str))
    else:
        print(catalog_text(strategies), end="")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "strategies",
        help="the chunking strategies: what each does, its options and capabilities",
        description="Every registered chunking strategy with its description, capabilities and "
        "options (type, default, allowed values). Every strategy also takes chunk_size, "
        "chunk_overlap and the options listed last.",
    )
    s.add_argument("names", nargs="*", help="only these strategies")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=command_strategies, parser=s)
