"""Persistent defaults shared by every machine: per-model semantic thresholds, the boundary and corpus models.

They live in the results database (table ``defaults``, one row per setting), so a deployment whose
machines share the results folder shares them too. Each setting is its own atomically replaced
Parquet file, so concurrent writers of different settings never lose each other's changes and
readers never see half a file. A threshold not set here is the registry default. Changing one
changes the settings a collection is requested with, so the partitions it affects become stale (the
staleness sensor rebuilds them; an experiment refuses to score them until then).

:class:`SharedDefaults` reads and writes them for one results database (the one in force:
:func:`chunkbench_core.configuration.shared_defaults_of` takes it from the settings object). It only needs the
database's rows (:class:`DefaultsTable`), so the embedding code does not depend on the storage code. An older
``CHUNKBENCH_HOME/semantic_thresholds.json`` is moved into the database on first use.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from chunkbench_core.errors import ConfigError

from .registry import EmbeddingModelSpec, get_model


class DefaultsTable(Protocol):
    """What the shared defaults need of a results database (chunkbench_core.storage.results_db.ResultsDB): its
    keyed rows and a query."""

    def read(self, table: str, key: str) -> list[dict[str, Any]]: ...

    def write(self, table: str, key: str, rows: Any) -> Any: ...

    def delete(self, table: str, key: str) -> bool: ...

    def query(self, sql: str, params: Sequence[Any] | None = None) -> Any: ...


THRESHOLDS_FILE = "semantic_thresholds.json"  # the older per-machine file, migrated on first use
THRESHOLD_PREFIX = "semantic_threshold:"
BOUNDARY_MODEL_SETTING = "boundary_model"
CORPUS_MODEL_SETTING = "corpus_model"


def validate_threshold(value: object, what: str = "semantic threshold") -> float:
    """``value`` as a float in (0, 1], or ConfigError saying what is allowed."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 < value <= 1:
        raise ConfigError(
            f"{what} must be a number in (0, 1] (cosine similarity below which a cut is made), got {value!r}"
        )
    return float(value)


def _key(setting: str) -> str:
    return setting.replace(":", "__")


@dataclass(frozen=True)
class SharedDefaults:
    """The shared defaults of one results database.

    ``legacy_file``: the older per-machine overrides file, moved into the database on first use.
    ``registry``: the model registry in force (None: the shipped models).
    """

    results: DefaultsTable
    legacy_file: Path | None = None
    registry: Mapping[str, EmbeddingModelSpec] | None = None

    def _read(self, setting: str):
        rows = self.results.read("defaults", _key(setting))
        return json.loads(rows[0]["value"]) if rows else None

    def _write(self, setting: str, value) -> None:
        self.results.write(
            "defaults",
            _key(setting),
            [
                {
                    "setting": setting,
                    "value": json.dumps(value),
                    "changed_at": datetime.now(timezone.utc).replace(tzinfo=None),
                }
            ],
        )

    def _migrate_legacy(self) -> None:
        path = self.legacy_file
        if path is None or not path.exists():
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"{path}: cannot read the semantic threshold overrides: {exc} (fix or delete the file)"
            ) from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: must hold a JSON object {{model id: threshold}} (fix or delete the file)")
        for model, value in data.items():
            value = validate_threshold(value, f"{path}: threshold of {model!r}")
            if self._read(THRESHOLD_PREFIX + str(model)) is None:
                self._write(THRESHOLD_PREFIX + str(model), value)
        os.replace(path, path.with_name(path.name + ".migrated"))

    # -- semantic thresholds --------------------------------------------------------------------
    def thresholds(self) -> dict[str, float]:
        """Every persisted threshold, model id -> threshold."""
        self._migrate_legacy()
        frame = self.results.query(
            "SELECT setting, value FROM defaults WHERE starts_with(setting, ?)", [THRESHOLD_PREFIX]
        )
        return {str(r.setting).removeprefix(THRESHOLD_PREFIX): float(json.loads(r.value)) for r in frame.itertuples()}

    def threshold(self, model: str | EmbeddingModelSpec) -> float:
        """The threshold in force for ``model``: the persisted one, else the registry default."""
        spec = model if isinstance(model, EmbeddingModelSpec) else get_model(model, self.registry)
        self._migrate_legacy()
        value = self._read(THRESHOLD_PREFIX + spec.id)
        return spec.default_semantic_threshold if value is None else float(value)

    def threshold_source(self, model_id: str) -> str:
        """ "override" when a persisted threshold exists for ``model_id``, else "registry"."""
        self._migrate_legacy()
        return "override" if self._read(THRESHOLD_PREFIX + model_id) is not None else "registry"

    def set_threshold(self, model_id: str, value: float) -> float:
        """Persist ``value`` as ``model_id``'s threshold (the model must be registered); returns it."""
        spec = get_model(model_id, self.registry)
        threshold = validate_threshold(value, f"semantic threshold of {spec.id}")
        self._migrate_legacy()
        self._write(THRESHOLD_PREFIX + spec.id, threshold)
        return threshold

    def clear_threshold(self, model_id: str) -> bool:
        """Remove ``model_id``'s threshold (back to the registry default); True when there was one."""
        self._migrate_legacy()
        return self.results.delete("defaults", _key(THRESHOLD_PREFIX + model_id))

    # -- the boundary model ----------------------------------------------------------------------
    def boundary_model(self) -> str | None:
        """The boundary model set with ``chunkbench defaults set boundary_model ...``, or None."""
        value = self._read(BOUNDARY_MODEL_SETTING)
        return str(value) if value else None

    def set_boundary_model(self, model_id: str) -> str:
        spec = get_model(model_id, self.registry)
        self._write(BOUNDARY_MODEL_SETTING, spec.id)
        return spec.id

    def clear_boundary_model(self) -> bool:
        return self.results.delete("defaults", _key(BOUNDARY_MODEL_SETTING))

    # -- the corpus model ------------------------------------------------------------------------
    def corpus_model(self) -> str | None:
        """The corpus model set with ``chunkbench defaults set corpus_model ...`` (what ``ask``, ``queries``
        and ``sweep`` use when none is given), or None."""
        value = self._read(CORPUS_MODEL_SETTING)
        return str(value) if value else None

    def set_corpus_model(self, model_id: str) -> str:
        spec = get_model(model_id, self.registry)
        self._write(CORPUS_MODEL_SETTING, spec.id)
        return spec.id

    def clear_corpus_model(self) -> bool:
        return self.results.delete("defaults", _key(CORPUS_MODEL_SETTING))
