"""chunkbench: which chunking strategy and embedding model retrieve best on your documents.

Run `chunkbench COMMAND --help` for a command's options.
"""

# The command line is a client of chunkbench_core: one module per command group, each with its
# ``register`` (the sub-commands and their flags) and its ``command_*`` functions (which import what
# they use when they run, so ``chunkbench --help`` and ``chunkbench parse FILE`` start without Dagster,
# the embedding engines or pandas). ``main`` builds the settings once, from the environment and the
# flags, and hands them to the command as ``args.settings``.

from __future__ import annotations

import argparse
import os
import sys

from chunkbench_core.settings import Settings

from . import session
from .instance import DAGSTER_YAML, ensure_dagster_home

__all__ = ["DAGSTER_YAML", "build_parser", "ensure_dagster_home", "main"]


class _OneLineCommands(argparse.RawDescriptionHelpFormatter):
    """The top-level help lists every command on one line: its name, then what it does."""

    def _format_action(self, action: argparse.Action) -> str:
        if isinstance(action, argparse._SubParsersAction):
            names = [a.dest for a in action._get_subactions()]
            width = max(map(len, names)) + 2
            return "".join(f"  {a.dest:<{width}}{a.help}\n" for a in action._get_subactions())
        return super()._format_action(action)


def build_parser(settings: Settings | None = None) -> argparse.ArgumentParser:
    """The parser of every command; the model choices are those of ``settings``' registry (default: the shipped
    models), the strategies those registered now."""
    from chunkbench_core.chunking import STRATEGIES
    from chunkbench_core.errors import ConfigError

    from . import ask, defaults, documents, operations, questions, reproduce, run, runs, sweep
    from . import strategies as catalog

    strategies = list(STRATEGIES.names())
    try:
        models: list[str] | None = list((settings or Settings()).registry())
    except ConfigError:  # a bad registry file: the command itself reports it in one line
        models = None
    parser = argparse.ArgumentParser(prog="chunkbench", description=__doc__, formatter_class=_OneLineCommands)
    parser.add_argument("--benchmark", metavar="NAME",
                        help="keep this benchmark's results, collections and reports apart "
                             "(same as CHUNKBENCH_BENCHMARK; default: sample, or the corpus folder's name)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    run.register(sub, strategies, models)
    documents.register(sub, strategies, models)
    run.register_estimate(sub, strategies, models)
    operations.register(sub)
    defaults.register(sub)
    operations.register_init(sub)
    reproduce.add_parser(sub)
    questions.register(sub)
    ask.register(sub)
    runs.register(sub)
    sweep.register(sub, strategies, models)
    catalog.register(sub)
    from chunkbench_pipelines.cli_ui import add_parser as add_ui_parser

    add_ui_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line: the settings are built here, once, from the environment and ``--benchmark``."""
    from chunkbench_core.errors import ChunkbenchError, ConfigError

    try:
        environment: Settings | None = Settings.load(os.environ)
    except ConfigError:
        environment = None  # reported below, once the command is known
    args = build_parser(environment).parse_args(argv)
    settings: Settings | None = None
    try:
        args.settings = settings = session.use(Settings.load(os.environ, {"benchmark": args.benchmark}))
        return int(args.func(args))
    except ConfigError as exc:  # a bad value, benchmark name or model registry: one line, no traceback
        print(f"chunkbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ChunkbenchError as exc:  # a full disk, damaged state, a source file: one line naming it and the fix
        print(f"chunkbench {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        found = disk_failure(exc, settings.home if settings is not None else None)
        if found is None:
            raise  # a bug: its traceback is what a report needs
        print(f"chunkbench {args.command}: error: {one_line(found)}", file=sys.stderr)
        return 1


def one_line(exc: BaseException) -> str:
    """An error's message on one line (a message never spans lines in a terminal)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def disk_failure(exc: BaseException, home: "os.PathLike[str] | None") -> Exception | None:
    """The StorageError a full disk or an input/output error stands for, wherever it was met (Dagster's own
    SQLite storage, a file written outside chunkbench's guarded writes), or None when ``exc`` is no such thing.
    The exception's cause chain is searched: a database layer wraps the error the disk gave."""
    from chunkbench_core.errors import StorageFullError
    from chunkbench_core.storage.space import MARGIN_BYTES, existing_folder, free_bytes, full_message, storage_error

    seen: set[int] = set()
    current: BaseException | None = exc
    first = None
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        where = getattr(current, "filename", None) or home or os.getcwd()
        found = storage_error(current, where, "chunkbench's state") if isinstance(current, Exception) else None
        if isinstance(found, StorageFullError):
            return found
        first = first or found
        current = current.__cause__ or current.__context__
    if first is not None and home is not None and "input/output error" in str(first):
        # SQLite (Dagster's run storage) reports a write into a full disk as a "disk I/O error"
        folder = existing_folder(home)
        free = free_bytes(folder)
        if free < MARGIN_BYTES:
            return StorageFullError(full_message(folder, "chunkbench's state", None, free), str(folder), None, free)
    return first
