"""Semantic thresholds: the registry default per model, with a persisted per-model override.

The overrides are a small JSON file, ``CHUNKBENCH_HOME/semantic_thresholds.json``
(``{"model id": threshold}``). It is rewritten atomically (temporary file, then
rename) under an exclusive lock, so concurrent writers never lose each other's
changes and readers never see half a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Iterator, Mapping

from chunkbench_core import settings
from chunkbench_core.errors import ConfigError

from .registry import EmbeddingModelSpec, get_model

THRESHOLDS_FILE = "semantic_thresholds.json"


def thresholds_path(home: str | os.PathLike[str] | None = None) -> Path:
    return settings.home_dir(home) / THRESHOLDS_FILE


def validate_threshold(value: object, what: str = "semantic threshold") -> float:
    """``value`` as a float in (0, 1], or ConfigError saying what is allowed."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 < value <= 1:
        raise ConfigError(f"{what} must be a number in (0, 1] (cosine similarity below which a cut is made), "
                          f"got {value!r}")
    return float(value)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read(path: Path) -> dict[str, float]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the semantic threshold overrides: {exc} "
                          "(fix or delete the file)") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a JSON object {{model id: threshold}} (fix or delete the file)")
    return {str(k): validate_threshold(v, f"{path}: threshold of {k!r}") for k, v in data.items()}


def _write(path: Path, data: Mapping[str, float]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(dict(sorted(data.items())), handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def semantic_threshold_overrides(home: str | os.PathLike[str] | None = None) -> dict[str, float]:
    """Every persisted override, model id -> threshold."""
    return _read(thresholds_path(home))


def semantic_threshold(model: str | EmbeddingModelSpec, home: str | os.PathLike[str] | None = None,
                       registry: Mapping[str, EmbeddingModelSpec] | None = None) -> float:
    """The threshold in force for ``model``: the persisted override, else the registry default."""
    spec = model if isinstance(model, EmbeddingModelSpec) else get_model(model, registry)
    return semantic_threshold_overrides(home).get(spec.id, spec.default_semantic_threshold)


def threshold_source(model_id: str, home: str | os.PathLike[str] | None = None) -> str:
    """"override" when a persisted override exists for ``model_id``, else "registry"."""
    return "override" if model_id in semantic_threshold_overrides(home) else "registry"


def set_semantic_threshold(model_id: str, value: float, home: str | os.PathLike[str] | None = None,
                           registry: Mapping[str, EmbeddingModelSpec] | None = None) -> float:
    """Persist ``value`` as ``model_id``'s threshold (the model must be registered); returns it."""
    spec = get_model(model_id, registry)
    threshold = validate_threshold(value, f"semantic threshold of {spec.id}")
    path = thresholds_path(home)
    with _locked(path):
        data = _read(path)
        data[spec.id] = threshold
        _write(path, data)
    return threshold


def clear_semantic_threshold(model_id: str, home: str | os.PathLike[str] | None = None) -> bool:
    """Remove ``model_id``'s override (back to the registry default); True when there was one."""
    path = thresholds_path(home)
    with _locked(path):
        data = _read(path)
        if model_id not in data:
            return False
        del data[model_id]
        _write(path, data)
    return True
