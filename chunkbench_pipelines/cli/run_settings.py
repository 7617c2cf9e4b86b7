"""``chunkbench run`` settings: flags or ``--config FILE``, generated from the run's settings as the core declares them.

Every setting of the run config is reachable: the parser's (PDF text-layer gate, digit style), the
chunker's (sizes, overflow, boundary model, and every option of every registered strategy) and the
experiment's (top k, neighbors, document filter, retrievers). A ``--config`` file (JSON, YAML or TOML) has the
sections ``parsing``, ``chunking`` and ``experiment``; flags override it. The values are checked by
the same typed models the Dagster launchpad's config is made from (chunkbench_core.run_config), so
nothing here imports Dagster.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

SECTIONS = ("parsing", "chunking", "experiment")

# the settings every run takes: flag -> (section, field, type); the strategies' options follow from the registry
FIXED_FLAGS: dict[str, tuple[str, str, Any]] = {
    "--pdf-min-total-chars": ("parsing", "pdf_min_total_chars", int),
    "--pdf-min-median-chars-per-page": ("parsing", "pdf_min_median_chars_per_page", int),
    "--persian-digits": ("parsing", "persian_digits", str),
    "--csv-encodings": ("parsing", "csv_encodings", str),
    "--sample-documents": ("parsing", "sample_documents", int),
    "--sample-tokens": ("parsing", "sample_tokens", int),
    "--sample-seed": ("parsing", "sample_seed", int),
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

    options = {
        f"--{o.name.replace('_', '-')}": ("chunking", o.name, _boolean if o.kind is bool else o.kind)
        for o in STRATEGIES.options().values()
    }
    return {**FIXED_FLAGS, **options, **EXPERIMENT_FLAGS}


def _models():
    from chunkbench_core.run_config import section_models

    return section_models()


def add_run_settings(parser: argparse.ArgumentParser) -> None:
    from chunkbench_core.run_config import choices

    models = _models()
    group = parser.add_argument_group("settings (default: the run config defaults; see also --config)")
    group.add_argument(
        "--config",
        metavar="FILE",
        help="a JSON, YAML or TOML file with sections parsing, chunking, experiment (flags override it)",
    )
    for flag, (section, name, kind) in run_flags().items():
        field = models[section].model_fields[name]
        allowed = choices(field.annotation)
        group.add_argument(
            flag,
            dest=f"setting_{name}",
            type=kind,
            choices=allowed,
            metavar=None if allowed else name.upper(),
            help=(field.description or "").replace("%", "%%"),
        )
    group.add_argument(
        "--filter-by-document",
        dest="setting_filter_by_document",
        action="store_true",
        default=None,
        help=(models["experiment"].model_fields["filter_by_document"].description or ""),
    )
    group.add_argument(
        "--retriever",
        dest="setting_retrievers",
        action="append",
        default=None,
        metavar="RETRIEVER",
        help=(models["experiment"].model_fields["retrievers"].description or "")
        + " Repeat it to compare several (default: dense).",
    )


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
        raise ValueError(
            f"{path}: must hold an object with the sections {', '.join(SECTIONS)} "
            f"(found {', '.join(sorted(map(str, data))) if isinstance(data, dict) else type(data).__name__})"
        )
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ValueError(f"{path}: section {section} must be an object of settings")
    return {s: dict(data.get(s) or {}) for s in SECTIONS}


def run_settings(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The ``parsing`` / ``chunking`` / ``experiment`` settings given (file, then flags), validated.

    Raises ValueError with a message naming the setting and what is allowed.
    """
    from pydantic import ValidationError

    settings = read_config_file(args.config) if getattr(args, "config", None) else {s: {} for s in SECTIONS}
    for section, name, _ in run_flags().values():
        value = getattr(args, f"setting_{name}", None)
        if value is not None:
            settings[section][name] = value
    if getattr(args, "setting_filter_by_document", None):
        settings["experiment"]["filter_by_document"] = True
    if getattr(args, "setting_retrievers", None):
        settings["experiment"]["retrievers"] = list(args.setting_retrievers)
    models = _models()
    for section, values in settings.items():
        try:
            models[section](**values)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ValueError(f"{section} settings: {problems}") from None
    return settings
