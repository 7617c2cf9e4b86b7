"""Persistent defaults shared by every machine: per-model semantic thresholds and the boundary model.

They live in the results database (table ``defaults``, one row per setting, under
``CHUNKBENCH_RESULTS_DIR`` or ``CHUNKBENCH_HOME``), so a deployment whose machines share the
results folder shares them too. Each setting is its own atomically replaced Parquet file, so
concurrent writers of different settings never lose each other's changes and readers never see
half a file. A threshold not set here is the registry default. Changing one changes the settings
a collection is requested with, so the partitions it affects become stale (the staleness sensor
rebuilds them; an experiment refuses to score them until then).

An older ``CHUNKBENCH_HOME/semantic_thresholds.json`` is moved into the database on first use.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from chunkbench_core import settings
from chunkbench_core.errors import ConfigError

from .registry import EmbeddingModelSpec, get_model

THRESHOLDS_FILE = "semantic_thresholds.json"  # the older per-machine file, migrated on first use
THRESHOLD_PREFIX = "semantic_threshold:"
BOUNDARY_MODEL_SETTING = "boundary_model"


def thresholds_path(home: str | os.PathLike[str] | None = None) -> Path:
    """The older per-machine overrides file (read once, then moved into the results database)."""
    return settings.home_dir(home) / THRESHOLDS_FILE


def _results(home: str | os.PathLike[str] | None):
    from chunkbench_core.storage.results_db import ResultsDB

    return ResultsDB(settings.results_dir(None, settings.home_dir(home)))


def _key(setting: str) -> str:
    return setting.replace(":", "__")


def _read_setting(home, setting: str):
    rows = _results(home).read("defaults", _key(setting))
    return json.loads(rows[0]["value"]) if rows else None


def _write_setting(home, setting: str, value) -> None:
    _results(home).write("defaults", _key(setting), [{
        "setting": setting, "value": json.dumps(value),
        "changed_at": datetime.now(timezone.utc).replace(tzinfo=None)}])


def _migrate_legacy(home) -> None:
    path = thresholds_path(home)
    if not path.exists():
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the semantic threshold overrides: {exc} "
                          "(fix or delete the file)") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object {{model id: threshold}} (fix or delete the file)")
    for model, value in data.items():
        value = validate_threshold(value, f"{path}: threshold of {model!r}")
        if _read_setting(home, THRESHOLD_PREFIX + str(model)) is None:
            _write_setting(home, THRESHOLD_PREFIX + str(model), value)
    os.replace(path, path.with_name(path.name + ".migrated"))


def validate_threshold(value: object, what: str = "semantic threshold") -> float:
    """``value`` as a float in (0, 1], or ConfigError saying what is allowed."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 < value <= 1:
        raise ConfigError(f"{what} must be a number in (0, 1] (cosine similarity below which a cut is made), "
                          f"got {value!r}")
    return float(value)


def semantic_threshold_overrides(home: str | os.PathLike[str] | None = None) -> dict[str, float]:
    """Every persisted threshold, model id -> threshold."""
    _migrate_legacy(home)
    frame = _results(home).query("SELECT setting, value FROM defaults WHERE starts_with(setting, ?)",
                                 [THRESHOLD_PREFIX])
    return {str(r.setting).removeprefix(THRESHOLD_PREFIX): float(json.loads(r.value))
            for r in frame.itertuples()}


def semantic_threshold(model: str | EmbeddingModelSpec, home: str | os.PathLike[str] | None = None,
                       registry: Mapping[str, EmbeddingModelSpec] | None = None) -> float:
    """The threshold in force for ``model``: the persisted one, else the registry default."""
    spec = model if isinstance(model, EmbeddingModelSpec) else get_model(model, registry)
    _migrate_legacy(home)
    value = _read_setting(home, THRESHOLD_PREFIX + spec.id)
    return spec.default_semantic_threshold if value is None else float(value)


def threshold_source(model_id: str, home: str | os.PathLike[str] | None = None) -> str:
    """"override" when a persisted threshold exists for ``model_id``, else "registry"."""
    _migrate_legacy(home)
    return "override" if _read_setting(home, THRESHOLD_PREFIX + model_id) is not None else "registry"


def set_semantic_threshold(model_id: str, value: float, home: str | os.PathLike[str] | None = None,
                           registry: Mapping[str, EmbeddingModelSpec] | None = None) -> float:
    """Persist ``value`` as ``model_id``'s threshold (the model must be registered); returns it."""
    spec = get_model(model_id, registry)
    threshold = validate_threshold(value, f"semantic threshold of {spec.id}")
    _migrate_legacy(home)
    _write_setting(home, THRESHOLD_PREFIX + spec.id, threshold)
    return threshold


def clear_semantic_threshold(model_id: str, home: str | os.PathLike[str] | None = None) -> bool:
    """Remove ``model_id``'s threshold (back to the registry default); True when there was one."""
    _migrate_legacy(home)
    return _results(home).delete("defaults", _key(THRESHOLD_PREFIX + model_id))


def default_boundary_model(home: str | os.PathLike[str] | None = None) -> str | None:
    """The boundary model set with ``chunkbench defaults set boundary_model ...``, or None."""
    value = _read_setting(home, BOUNDARY_MODEL_SETTING)
    return str(value) if value else None


def set_default_boundary_model(model_id: str, home: str | os.PathLike[str] | None = None,
                               registry: Mapping[str, EmbeddingModelSpec] | None = None) -> str:
    spec = get_model(model_id, registry)
    _write_setting(home, BOUNDARY_MODEL_SETTING, spec.id)
    return spec.id


def clear_default_boundary_model(home: str | os.PathLike[str] | None = None) -> bool:
    return _results(home).delete("defaults", _key(BOUNDARY_MODEL_SETTING))
