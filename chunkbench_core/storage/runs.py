"""Experiment runs: list them, set one aside for good (and bring it back), read the results of chosen runs.

An experiment run is one ``experiment_metrics`` row's ``experiment_run_id`` (the Dagster run that
materialized the partition). A *batch* is the runs launched together: one ``chunkbench run``
(its ``chunkbench/batch`` tag, recorded in the run's provenance as ``batch_id``) or one Dagster
backfill (``dagster/backfill``, recorded as ``backfill_id``).

Excluding a run writes one ``run_exclusions`` row (keyed by the run id); nothing of the run's
results is deleted. The ``leaderboard`` and ``leaderboard_by_setting`` views leave excluded runs
out, so a configuration's previous run becomes its latest again (or the configuration drops out).

:class:`RunScope` reads the results as if only the chosen runs existed (a past run's report), with
the ``comparison``, ``recommendation`` and ``diagnostics`` tables kept in memory: a comparison of
those runs never replaces the one of the latest runs.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Sequence

import duckdb
import pandas as pd

from chunkbench_core.errors import ChunkbenchError, ConfigError
from chunkbench_core.metric_catalog import CATALOG

from chunkbench_core.labels import configuration_label

from . import integrity
from .results_db import SCORED_TABLES, TABLES, ResultsDB

DEFAULT_SETTINGS = "coalesce(variant, '') = '' AND coalesce(neighbor_prev, 0) = 0 AND coalesce(neighbor_next, 0) = 0"
LATEST_ORDER = "ORDER BY created_at DESC"

#: provenance keys naming the batch a run belongs to: ``chunkbench run`` (batch_id), a Dagster backfill (backfill_id)
BATCH_KEYS = ("batch_id", "backfill_id")
#: tables a RunScope keeps in memory (what compare_latest_runs writes)
MEMORY_TABLES = (
    "comparison",
    "recommendation",
    "diagnostics",
    "variance_decomposition",
    "question_evidence",
    "judge_agreement",
)
#: what the wide views question_results and experiment_metrics are made of (narrowed to the chosen runs)
SCORED_PARTS = frozenset(part for t in SCORED_TABLES.values() for part in (t.base, t.scores, f"legacy_{t.name}"))


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _provenance(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def batch_of(provenance: dict[str, Any]) -> str | None:
    """The batch a run's provenance names (``batch_id``, else ``backfill_id``), or None."""
    return next((str(provenance[k]) for k in BATCH_KEYS if provenance.get(k)), None)


def batch_provenance(tags: dict[str, str]) -> dict[str, str]:
    """What an experiment records of its Dagster run's tags: the ``chunkbench run`` batch and the backfill."""
    out = {}
    if tags.get("chunkbench/batch"):
        out["batch_id"] = tags["chunkbench/batch"]
    if tags.get("dagster/backfill"):
        out["backfill_id"] = tags["dagster/backfill"]
    return out


# -- exclusions ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Exclusion:
    experiment_run_id: str
    excluded: bool
    reason: str
    excluded_at: datetime | None
    included_at: datetime | None


def exclusions(results: ResultsDB) -> dict[str, Exclusion]:
    """Every run ever excluded (``excluded`` false once included again), by run id."""
    frame = results.query("SELECT * FROM run_exclusions")
    out = {}
    for row in frame.to_dict("records"):

        def stamp(value: Any) -> datetime | None:
            return None if value is None or pd.isna(value) else pd.Timestamp(value).to_pydatetime()

        out[str(row["experiment_run_id"])] = Exclusion(
            str(row["experiment_run_id"]),
            bool(row["excluded"]),
            str(row.get("reason") or ""),
            stamp(row.get("excluded_at")),
            stamp(row.get("included_at")),
        )
    return out


#: the shortest run id prefix accepted for a run id (the Dagster UI shows the first 8 characters)
MIN_RUN_ID_PREFIX = 8


def resolve_run_id(results: ResultsDB, run_id: str) -> str:
    """The full experiment run id that ``run_id`` names: the id itself, or a prefix of at least 8 characters
    (the short id the Dagster UI shows) that starts exactly one run's id.

    ConfigError when no run matches, when the prefix is shorter than 8 characters, or when it is ambiguous
    (the candidates listed)."""
    given = (run_id or "").strip()
    if not given:
        raise ConfigError("no run id given (see `chunkbench runs list`)")
    exact = results.query("SELECT count(*) AS n FROM experiment_metrics WHERE experiment_run_id = ?", [given])
    if int(exact["n"].iat[0]):
        return given
    if len(given) < MIN_RUN_ID_PREFIX:
        raise ConfigError(
            f"no experiment run {given!r} in {results.root}: give the full run id or its first "
            f"{MIN_RUN_ID_PREFIX} characters or more (see `chunkbench runs list`)"
        )
    found = results.query(
        "SELECT DISTINCT experiment_run_id FROM experiment_metrics "
        "WHERE starts_with(lower(experiment_run_id), lower(?)) ORDER BY experiment_run_id",
        [given],
    )
    candidates = [str(r) for r in found["experiment_run_id"]]
    if not candidates:
        raise ConfigError(f"no experiment run {given!r} in {results.root} (see `chunkbench runs list`)")
    if len(candidates) > 1:
        raise ConfigError(
            f"run id {given!r} is ambiguous: it starts {len(candidates)} runs ("
            + ", ".join(candidates[:10])
            + (", ..." if len(candidates) > 10 else "")
            + "); give more characters"
        )
    return candidates[0]


def _known_run(results: ResultsDB, run_id: str) -> str:
    return resolve_run_id(results, run_id)


def exclude_run(results: ResultsDB, run_id: str, reason: str) -> Exclusion:
    """Set a run aside for good (left out of the leaderboard, the comparison and the reports).

    Idempotent: excluding an excluded run keeps its first time and takes the new reason.
    """
    reason = (reason or "").strip()
    if not reason:
        raise ConfigError(
            "a reason is needed to exclude a run (--reason TEXT), e.g. 'the embedding server was overloaded'"
        )
    run_id = _known_run(results, run_id)
    before = exclusions(results).get(run_id)
    since = before.excluded_at if before is not None and before.excluded and before.excluded_at else _now()
    row = Exclusion(run_id, True, reason, since, None)
    results.write("run_exclusions", run_id, [asdict(row)])
    return row


def include_run(results: ResultsDB, run_id: str) -> Exclusion | None:
    """Bring an excluded run back (None when it was never excluded). Idempotent."""
    run_id = _known_run(results, run_id)
    before = exclusions(results).get(run_id)
    if before is None:
        return None
    if not before.excluded:
        return before
    row = Exclusion(run_id, False, before.reason, before.excluded_at, _now())
    results.write("run_exclusions", run_id, [asdict(row)])
    return row


# -- listing -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunInfo:
    """One ``experiment_metrics`` row as ``chunkbench runs list`` shows it."""

    experiment_run_id: str
    strategy: str
    corpus_model: str
    variant: str
    neighbor_prev: int
    neighbor_next: int
    n_questions: int | None
    metric: str
    metric_value: float | None
    created_at: datetime | None
    batch: str | None
    corpus_fingerprint: str | None
    settings_fingerprint: str | None
    excluded: bool
    reason: str
    label: str = ""  # the one label of the configuration (labels.configuration_label)

    @property
    def setting(self) -> str:
        """'default', or the sweep step (chunk-size variant, neighbors ±P/N)."""
        parts = [self.variant] if self.variant else []
        if self.neighbor_prev or self.neighbor_next:
            parts.append(f"±{self.neighbor_prev}/{self.neighbor_next}")
        return " ".join(parts) or "default"


def _int(value: Any, default: int | None = 0) -> int | None:
    try:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return default
        return int(value)
    except (TypeError, ValueError):
        return default


def list_runs(results: ResultsDB, metric: str = "recall") -> list[RunInfo]:
    """Every experiment run row, oldest first, with its ranking metric's value and whether it is excluded."""
    column = CATALOG.run_name_of(metric)  # a per-question name or alias: its mean's column (reciprocal_rank -> mrr)
    frame = results.query(
        "SELECT * FROM experiment_metrics ORDER BY created_at, experiment_run_id, strategy, corpus_model, variant"
    )
    excluded = exclusions(results)
    out = []
    for row in frame.to_dict("records"):
        provenance = _provenance(row.get("provenance"))
        value = row.get(column)
        state = excluded.get(str(row["experiment_run_id"]))
        created = row.get("created_at")
        out.append(
            RunInfo(
                experiment_run_id=str(row["experiment_run_id"]),
                strategy=str(row["strategy"]),
                corpus_model=str(row["corpus_model"]),
                variant=str(row.get("variant") or provenance.get("variant") or ""),
                neighbor_prev=_int(row.get("neighbor_prev")) or 0,
                neighbor_next=_int(row.get("neighbor_next")) or 0,
                n_questions=_int(row.get("n_questions"), None),
                metric=metric,
                metric_value=None if value is None or pd.isna(value) else float(value),
                created_at=None if created is None or pd.isna(created) else pd.Timestamp(created).to_pydatetime(),
                batch=batch_of(provenance),
                corpus_fingerprint=provenance.get("corpus_fingerprint"),
                settings_fingerprint=provenance.get("settings_fingerprint"),
                excluded=bool(state and state.excluded),
                reason=state.reason if state and state.excluded else "",
                label=configuration_label(row["strategy"], row["corpus_model"], provenance),
            )
        )
    return out


# -- choosing runs for a report -----------------------------------------------------------------
@dataclass(frozen=True)
class RunSelection:
    """The runs a report shows: one experiment run, or one batch."""

    kind: str  # run | batch
    ident: str
    run_ids: tuple[str, ...]

    @property
    def folder_name(self) -> str:
        return f"{self.kind}-{self.ident}"


def select_run(results: ResultsDB, run_id: str) -> RunSelection:
    """The one run ``run_id`` names (the full id or a prefix of 8 characters or more)."""
    run_id = _known_run(results, run_id)
    return RunSelection("run", run_id, (run_id,))


def select_batch(results: ResultsDB, batch: str, tagged: Sequence[str] = ()) -> RunSelection:
    """The runs whose provenance names ``batch`` (a ``chunkbench run`` batch or a backfill id), and those of
    ``tagged`` (run ids the Dagster instance lists with that tag: runs made before batches were recorded)."""
    every = list_runs(results)
    known = {r.experiment_run_id for r in every}
    runs = sorted({r.experiment_run_id for r in every if r.batch == batch} | (set(tagged) & known))
    if not runs:
        batches = sorted({r.batch for r in every if r.batch})
        hint = f"; known batches: {', '.join(batches[-5:])}" if batches else "; no run records a batch yet"
        raise ConfigError(f"no experiment run belongs to batch {batch!r}{hint} (see `chunkbench runs list`)")
    return RunSelection("batch", batch, tuple(runs))


class RunScope(ResultsDB):
    """The results as if only ``run_ids`` existed: every view reads those runs only, none is excluded, and
    the comparison, recommendation and diagnostics written to it stay in memory (never on disk)."""

    shares_views = False  # its views read this object's chosen runs and in-memory tables

    def __init__(self, results: ResultsDB, run_ids: Sequence[str]) -> None:
        super().__init__(results.root, results.database_path.name)
        self.run_ids = tuple(run_ids)
        self._memory: dict[str, pd.DataFrame] = {
            t: pd.DataFrame(columns=[c for c, _ in TABLES[t]]) for t in MEMORY_TABLES
        }

    def _table_view(self, table: str, pattern: str) -> str:
        files = f"read_parquet({pattern}, union_by_name=true)"
        if table in MEMORY_TABLES:
            casts = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in TABLES[table])
            return f"SELECT {casts} FROM memory_{table}"
        if table == "run_exclusions":  # a run chosen on purpose is shown even when it is excluded
            return f"SELECT * FROM {files} WHERE false"
        if table in SCORED_PARTS:  # the runs' question rows and means, and their scores
            return f"SELECT * FROM {files} WHERE experiment_run_id IN (SELECT experiment_run_id FROM chosen_runs)"
        return super()._table_view(table, pattern)

    def _view_sql(self, relative: bool = False) -> list[str]:
        """The views of the chosen runs; a configuration chosen only in a sweep step (a chunk-size variant,
        neighbors) is shown by that step in the leaderboard (its default-settings row first when chosen too)."""
        statements = super()._view_sql(relative)
        head = "CREATE OR REPLACE VIEW leaderboard AS "
        out = []
        for statement in statements:
            if statement.startswith(head):
                if DEFAULT_SETTINGS not in statement or LATEST_ORDER not in statement:
                    raise ChunkbenchError("the leaderboard view changed: RunScope cannot narrow it")
                statement = statement.replace(f"WHERE {DEFAULT_SETTINGS}", "WHERE true", 1).replace(
                    LATEST_ORDER, f"ORDER BY ({DEFAULT_SETTINGS}) DESC, created_at DESC", 1
                )
            out.append(statement)
        return out

    def _add_tables(self, con: duckdb.DuckDBPyConnection) -> None:
        """The chosen run ids and the in-memory tables, as tables of the views' DuckDB (its cursors see them,
        unlike registered frames); a write to an in-memory table replaces its table there."""
        self._store_frame(con, "chosen_runs", pd.DataFrame({"experiment_run_id": list(self.run_ids)}, dtype=object))
        for table, frame in self._memory.items():
            self._store_memory_table(con, table, frame)

    @staticmethod
    def _store_frame(con: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame) -> None:
        """``frame`` as the table ``name`` of ``con``'s database (seen by its cursors, unlike a registered frame)."""
        integrity.execute_on_frame(con.cursor(), frame, f'CREATE OR REPLACE TABLE "{name}" AS SELECT * FROM frame')

    def _store_memory_table(self, con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame) -> None:
        self._store_frame(con, f"memory_{table}", frame.reindex(columns=[c for c, _ in TABLES[table]]).astype(object))

    def write(self, table: str, key: str, rows: Sequence[dict[str, Any]] | pd.DataFrame):  # also takes a DataFrame
        if table not in MEMORY_TABLES:
            raise ChunkbenchError(f"the results of chosen runs are read-only (tried to write {table!r})")
        self._memory[table] = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
        with self._views_lock:
            if self._views is not None and self._views[0] == os.getpid():
                self._store_memory_table(self._views[2], table, self._memory[table])
        return None

    def ensure_database(self, attempts: int = 20) -> None:
        raise ChunkbenchError("the results of chosen runs are read-only (they have no DuckDB file of their own)")


def clear_comparison(results: ResultsDB) -> None:
    """Empty the comparison, recommendation and diagnostics tables (no run is left to compare)."""
    for table in MEMORY_TABLES:
        results.write(table, "latest", [])
