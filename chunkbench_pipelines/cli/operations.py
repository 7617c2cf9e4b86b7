"""``chunkbench models|health|collections|init|settings|doctor``: what is configured, what works, what is stored,
and whether the stored state can be read."""

from __future__ import annotations

import argparse
import json
import sys

from chunkbench_core.configuration import provider_settings_of, registry_of, role_defaults_of, shared_defaults_of


def command_models(args: argparse.Namespace) -> int:
    """The models in force for each role (and where each comes from), then every registered model."""
    from chunkbench_core.embedding.admin import models_jsonl, models_report, models_table

    settings = args.settings
    in_force = role_defaults_of(settings)
    if args.json:
        print(
            models_jsonl(provider_settings_of(settings), registry_of(settings), shared_defaults_of(settings), in_force)
        )
        return 0
    rows = models_report(provider_settings_of(settings), registry_of(settings), shared_defaults_of(settings), in_force)
    print(models_table(rows, in_force))
    return 0


def command_health(args: argparse.Namespace) -> int:
    from chunkbench_core.storage.operations import health

    from .instance import resources as make_resources

    resources = make_resources(args.settings)
    with resources["qdrant"].open() as store:
        checks = health(
            store,
            resources["duckdb"].results().database_path,
            resources["embeddings"].provider_settings(),
            probe_providers=not args.no_probe,
        )
    for check in checks:
        print(json.dumps(check.as_dict(), ensure_ascii=False))
    return 0 if all(c.ok for c in checks if c.configured) else 1  # an unconfigured provider is no failure


def command_collections(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.storage.operations import list_collections, preview_chunks, wipe_collections

    from .instance import resources

    try:
        with resources(args.settings)["qdrant"].open() as store:
            if args.action == "list":
                for info in list_collections(store):
                    print(json.dumps(asdict(info), ensure_ascii=False))
            elif args.action == "wipe":
                if args.all and args.names:
                    args.parser.error("wipe takes collection names or --all, not both")
                if not args.names and not (args.all and args.yes):
                    args.parser.error(
                        "wipe needs the collection names to delete, or --all --yes to delete every "
                        "chunkbench collection (see `chunkbench collections list`)"
                    )
                print(json.dumps(wipe_collections(store, args.names or None, keep_collection=args.points_only)))
            else:
                if not (args.strategy and args.model and args.document):
                    args.parser.error("preview needs --strategy, --model and --document")
                print(
                    json.dumps(
                        preview_chunks(store, args.strategy, args.model, args.document, args.limit),
                        ensure_ascii=False,
                        indent=2,
                    )
                )
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def command_doctor(args: argparse.Namespace) -> int:
    """Check every state file of the benchmark and the shared caches; ``--repair`` moves the unreadable derived
    ones aside (the next run makes them again). Exit 0 when nothing needs doing, else 1."""
    from chunkbench_core.doctor import doctor
    from chunkbench_core.storage.context_cache import default_context_cache_path
    from chunkbench_core.storage.embedding_cache import default_cache_path

    settings = args.settings
    from .session import earlier_layout
    from chunkbench_core.storage.earlier_layout import bring_along

    layout = earlier_layout(settings)
    if layout is not None and args.repair:  # results of the oldest layout: brought into this benchmark first
        for source, target in bring_along(layout):
            print(f"brought along: {source} -> {target}")
    report = doctor(
        settings.results_dir,
        qdrant_dir=None if settings.qdrant_url else settings.qdrant_dir,
        corpus_dir=settings.corpus,
        questions_dir=settings.questions,
        caches=[default_cache_path(settings.home), default_context_cache_path(settings.home)],
        repair=args.repair,
    )
    print(f"benchmark {settings.benchmark}: {settings.results_dir}")
    for line in report.lines():
        print(line)
    if any(f.needs_action and f.kind != "source" for f in report.findings):
        print(
            "to repair them: chunkbench doctor --repair (derived files are moved aside and made again by the "
            "next chunkbench run; source files are never changed)"
        )
    return 0 if report.healthy and (layout is None or args.repair) else 1


def command_init(args: argparse.Namespace) -> int:
    from .instance import ensure_dagster_home

    args.settings.home.mkdir(parents=True, exist_ok=True)
    print(ensure_dagster_home(args.settings))
    return 0


def shared_rows(settings) -> list[tuple[str, str, str]]:
    """The shared defaults in force (the results database's): the boundary model and the semantic thresholds."""
    from chunkbench_core.errors import ChunkbenchError

    try:
        in_force = role_defaults_of(settings)
        overrides = shared_defaults_of(settings).thresholds()
    except ChunkbenchError as exc:
        return [("shared defaults", "unreadable", str(exc))]
    thresholds = ", ".join(f"{m} {t:g}" for m, t in sorted(overrides.items()))
    return [
        *((f"{role.replace('_', ' ')} in force", d.model, f"{d.source}: {d.detail}") for role, d in in_force.items()),
        (
            "semantic thresholds",
            thresholds or "the model registry's",
            "results database (chunkbench thresholds)" if thresholds else "default",
        ),
    ]


def command_settings(args: argparse.Namespace) -> int:
    """Every setting in force, its value (secrets: set or not) and where it came from."""
    rows = [*args.settings.rows(), *shared_rows(args.settings)]
    if args.json:
        print(json.dumps([{"setting": s, "value": v, "from": f} for s, v, f in rows], ensure_ascii=False, indent=2))
        return 0
    widths = [max(len(r[i]) for r in (("setting", "value", "from"), *rows)) for i in range(2)]
    for setting, value, source in (("setting", "value", "from"), *rows):
        print(f"{setting:<{widths[0]}}  {value:<{widths[1]}}  {source}".rstrip())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser(
        "models",
        help="the embedding models in force and every registered model, with availability",
        description="The corpus and boundary models in force when none is given, and where each "
        "comes from (chunkbench defaults set, the environment, the model registry, or "
        "the corpus's language for the boundary model); then every registered model.",
    )
    m.add_argument("--json", action="store_true", help="one JSON line per model (its roles in force in in_force_as)")
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
    doc = sub.add_parser(
        "doctor",
        help="check the benchmark's state files and the caches (--repair fixes them)",
        description="Check every state file of the benchmark (results tables, the views file, "
        "parsed records, collections) and the shared caches, and name damaged source "
        "files. Exit status 0 when nothing needs doing, else 1.",
    )
    doc.add_argument(
        "--repair",
        action="store_true",
        help="move unreadable derived files aside (the next run makes them again), recreate the "
        "views file, drop damaged cache entries; source files are never changed",
    )
    doc.set_defaults(func=command_doctor)


def register_init(sub: argparse._SubParsersAction) -> None:
    i = sub.add_parser("init", help="create CHUNKBENCH_HOME and print the DAGSTER_HOME used")
    i.set_defaults(func=command_init)
    s = sub.add_parser(
        "settings",
        help="print the settings in force and where each came from",
        description="Every setting chunkbench reads (environment variables, --benchmark), its value "
        "(secrets shown as set or not set) and where it came from.",
    )
    s.add_argument("--json", action="store_true", help="print one JSON list")
    s.set_defaults(func=command_settings)
