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

from chunkbench_core.configuration import registry_of
from chunkbench_core.settings import Settings

from . import session
from .session import earlier_layout
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
        models: list[str] | None = list(registry_of(settings or Settings()))
    except ConfigError:  # a bad registry file: the command itself reports it in one line
        models = None
    parser = argparse.ArgumentParser(prog="chunkbench", description=__doc__, formatter_class=_OneLineCommands)
    parser.add_argument(
        "--benchmark",
        metavar="NAME",
        help="keep this benchmark's results, collections and reports apart "
        "(same as CHUNKBENCH_BENCHMARK; default: sample, or the corpus folder's name)",
    )
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


class Stopped(BaseException):
    """A TERM signal (or Ctrl-C) met while a command ran: raised where the command was, so the files it was
    writing are left as they were (every write is to a temporary file, then renamed) and no traceback is printed.
    A BaseException, so that no command's ``except Exception`` takes it for an error of its own."""

    def __init__(self, signo: int) -> None:
        self.signo = signo
        super().__init__(signo)


def _stop_here(signo: int, _frame: object) -> None:
    raise Stopped(signo)


def stopped_line(command: str, signo: int) -> str:
    """What a stopped command says (one line): the signal, and that nothing was left half written."""
    import signal

    name = signal.Signals(signo).name + (" (Ctrl-C)" if signo == signal.SIGINT else "")
    return (
        f"chunkbench {command}: stopped by {name}; nothing was left half written (what was finished is kept); "
        "run the command again to finish"
    )


def main(argv: list[str] | None = None) -> int:
    """The command line: the settings are built here, once, from the environment and ``--benchmark``.

    Ctrl-C and a TERM signal end every command with one line and the exit status 130 / 143 (``run`` has its own
    handlers while its runs go: chunkbench_pipelines.run_control)."""
    import signal
    import threading

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C raises KeyboardInterrupt already; a TERM signal would end the process without a word
        handlers = {signal.SIGTERM: signal.signal(signal.SIGTERM, _stop_here)}
    words = [str(a) for a in (argv if argv is not None else sys.argv[1:])]
    try:
        return _main(argv)
    except (Stopped, KeyboardInterrupt) as exc:
        signo = exc.signo if isinstance(exc, Stopped) else int(signal.SIGINT)
        sys.stdout.flush()
        print(stopped_line(_command_name(words), signo), file=sys.stderr, flush=True)
        return 128 + int(signo)
    finally:
        for signo, old in handlers.items():
            signal.signal(signo, old)


def _command_name(argv: list[str]) -> str:
    """The command's name in ``argv`` (its first word that is not an option or an option's value)."""
    words = list(argv)
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option == "--benchmark" and words:
            words.pop(0)
    return (
        " ".join(words[:2])
        if words and words[0] in ("questions", "runs", "defaults", "thresholds")
        else (words[0] if words else "command")
    )


def _main(argv: list[str] | None) -> int:
    from chunkbench_core.errors import ChunkbenchError, ConfigError

    try:
        environment: Settings | None = Settings.from_environment()
    except ConfigError:
        environment = None  # reported below, once the command is known
    args = build_parser(environment).parse_args(argv)
    settings: Settings | None = None
    try:
        args.settings = settings = session.use(Settings.from_environment({"benchmark": args.benchmark}))
        layout = earlier_layout(settings)
        if layout is not None and not (args.command == "doctor" and getattr(args, "repair", False)):
            print(f"chunkbench: {layout.notice()}", file=sys.stderr)  # said by every command while they are there
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
