"""``chunkbench run`` settings (flags or ``--config FILE``) and ``chunkbench defaults``.

Every setting of the run config is reachable: the parser's (PDF text-layer gate, digit
style), the chunker's (sizes, overflow, boundary model, and every option of every registered
strategy, from the strategy registry) and the experiment's (top k, neighbors, document filter). A ``--config`` file (JSON, YAML or
TOML) has the sections ``parsing``, ``chunking`` and ``experiment``; flags override it. The
values are checked by the same typed config classes the Dagster launchpad uses.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SECTIONS = ("parsing", "chunking", "experiment")

# flag -> (section, field, type): the settings every run takes; the strategies' options are added from the
# strategy registry (:func:`run_flags`)
FIXED_FLAGS: dict[str, tuple[str, str, Any]] = {
    "--pdf-min-total-chars": ("parsing", "pdf_min_total_chars", int),
    "--pdf-min-median-chars-per-page": ("parsing", "pdf_min_median_chars_per_page", int),
    "--persian-digits": ("parsing", "persian_digits", str),
    "--chunk-size": ("chunking", "chunk_size", int),
    "--chunk-overlap": ("chunking", "chunk_overlap", int),
    "--overflow": ("chunking", "overflow", str),
    "--boundary-model": ("chunking", "boundary_model", str),
}
EXPERIMENT_FLAGS: dict[str, tuple[str, str, Any]] = {
    "--top-k": ("experiment", "top_k", int),
    "--neighbor-prev": ("experiment", "neighbor_prev", int),
    "--neighbor-next": ("experiment", "neighbor_next", int),
}


def _boolean(text: str) -> bool:
    value = text.strip().lower()
    if value not in ("true", "false", "yes", "no", "1", "0", "on", "off"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value in ("true", "yes", "1", "on")


def run_flags() -> dict[str, tuple[str, str, Any]]:
    """Every ``chunkbench run`` flag: the fixed settings, one flag per strategy option (the registry as it is
    now), then the experiment's."""
    from chunkbench_core.chunking import STRATEGIES

    options = {f"--{o.name.replace('_', '-')}": ("chunking", o.name, _boolean if o.kind is bool else o.kind)
               for o in STRATEGIES.options().values()}
    return {**FIXED_FLAGS, **options, **EXPERIMENT_FLAGS}


def _config_classes():
    from .config import ParsingConfig, chunker_config, experiment_config

    return {"parsing": ParsingConfig, "chunking": chunker_config(), "experiment": experiment_config()}


def _help(section: str, name: str) -> str:
    field = _config_classes()[section].model_fields[name]
    return (field.description or "").replace("%", "%%")


def add_run_settings(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("settings (default: the run config defaults; see also --config)")
    group.add_argument("--config", metavar="FILE",
                       help="a JSON, YAML or TOML file with sections parsing, chunking, experiment (flags override it)")
    for flag, (section, name, kind) in run_flags().items():
        choices = _choices(section, name)
        group.add_argument(flag, dest=f"setting_{name}", type=kind, choices=choices, metavar=None if choices else
                           name.upper(), help=_help(section, name))
    group.add_argument("--filter-by-document", dest="setting_filter_by_document", action="store_true", default=None,
                       help=_help("experiment", "filter_by_document"))


def _choices(section: str, name: str) -> list[str] | None:
    import enum
    import typing

    annotation = _config_classes()[section].model_fields[name].annotation
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, enum.Enum):
            return [m.value for m in candidate]
    return None


def read_config_file(path: str) -> dict[str, dict[str, Any]]:
    """The sections of a --config file; a ValueError names the file and what is wrong."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc}") from exc
    try:
        if file.suffix == ".toml":
            import tomllib

            data = tomllib.loads(text)
        elif file.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - any parser's error is the file's fault
        raise ValueError(f"{path}: not valid {file.suffix.lstrip('.') or 'JSON'}: {exc}") from exc
    if not isinstance(data, dict) or set(data) - set(SECTIONS):
        raise ValueError(f"{path}: must hold an object with the sections {', '.join(SECTIONS)} "
                         f"(found {', '.join(sorted(map(str, data))) if isinstance(data, dict) else type(data).__name__})")
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ValueError(f"{path}: section {section} must be an object of settings")
    return {s: dict(data.get(s) or {}) for s in SECTIONS}


def run_settings(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The ``parsing`` / ``chunking`` / ``experiment`` settings given (file, then flags), validated.

    Raises ValueError with a message naming the setting and what is allowed.
    """
    settings = read_config_file(args.config) if getattr(args, "config", None) else {s: {} for s in SECTIONS}
    for flag, (section, name, _) in run_flags().items():
        value = getattr(args, f"setting_{name}", None)
        if value is not None:
            settings[section][name] = value
    if getattr(args, "setting_filter_by_document", None):
        settings["experiment"]["filter_by_document"] = True
    classes = _config_classes()
    from pydantic import ValidationError

    for section, values in settings.items():
        try:
            classes[section](**values)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"{section} settings: {problems}") from None
    return settings


def command_defaults(args: argparse.Namespace) -> int:
    """Persistent defaults in the results database: the boundary model and per-model semantic thresholds."""
    from chunkbench_core import settings
    from chunkbench_core.embedding import clear_semantic_threshold, semantic_threshold_overrides, set_semantic_threshold
    from chunkbench_core.embedding.thresholds import (
        clear_default_boundary_model,
        default_boundary_model,
        set_default_boundary_model,
    )
    from chunkbench_core.errors import ChunkbenchError

    home = settings.home_dir()
    try:
        if args.action == "set":
            if args.name is None or args.value is None:
                args.parser.error("set needs a setting and a value: boundary_model MODEL, or threshold:MODEL VALUE")
            if args.name == "boundary_model":
                set_default_boundary_model(args.value, home)
            elif args.name.startswith("threshold:"):
                try:
                    value = float(args.value)
                except ValueError:
                    args.parser.error(f"a threshold is a number in (0, 1], got {args.value!r}")
                set_semantic_threshold(args.name.removeprefix("threshold:"), value, home)
            else:
                args.parser.error(f"unknown setting {args.name!r}: boundary_model or threshold:MODEL")
        elif args.action == "clear":
            if args.name is None:
                args.parser.error("clear needs a setting: boundary_model or threshold:MODEL")
            if args.name == "boundary_model":
                clear_default_boundary_model(home)
            elif args.name.startswith("threshold:"):
                clear_semantic_threshold(args.name.removeprefix("threshold:"), home)
            else:
                args.parser.error(f"unknown setting {args.name!r}: boundary_model or threshold:MODEL")
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"boundary_model": default_boundary_model(home),
                      "thresholds": semantic_threshold_overrides(home)}, sort_keys=True))
    return 0


def add_defaults_command(sub) -> None:
    d = sub.add_parser("defaults", help="shared defaults: boundary model, semantic thresholds",
                       description="Persistent defaults kept in the results database, shared by every machine using "
                                   "it. A change marks the partitions it affects stale.")
    d.add_argument("action", choices=["list", "set", "clear"])
    d.add_argument("name", nargs="?", help="boundary_model, or threshold:MODEL")
    d.add_argument("value", nargs="?", help="set: the model id, or the threshold in (0, 1]")
    d.set_defaults(func=command_defaults, parser=d)
