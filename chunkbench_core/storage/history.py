"""Collection builds kept side by side, so every experiment run can be inspected chunk by chunk later.

A collection (strategy x corpus model x variant) is rebuilt whenever its settings or the parsed corpus
change. Its vector store collection holds only the latest build's points, but the ``chunks`` results
table keeps every build's rows: each build is written under its own key (the partition's key plus the
build, :func:`build_rows_key`), so a rebuild with other settings adds a build instead of replacing the
old one, and a rebuild with the same settings from the same corpus replaces its own rows (no duplicates).
Each experiment run records the build it retrieved from (its provenance and its question rows), which
is how its report finds the exact texts and offsets of the chunks it retrieved, their neighbors and
their parent sections. Rows written before builds were kept have no build: each collection's such rows
count as one build (the legacy build, ``build`` None).

Nothing is removed unless asked: :func:`plan_prune` keeps the N most recent builds of every collection
and every build a run still shown in the reports retrieved from (the latest run of each configuration
that is not excluded); :func:`prune` deletes the rest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Iterable

import duckdb

from chunkbench_core.errors import ConfigError
from chunkbench_core.storage import integrity
from chunkbench_core.storage.results_db import SCHEMA_FILE, ResultsDB, sql_string
from chunkbench_core.wording import plural

BUILD_SEPARATOR = "__build-"

CollectionKey = tuple[str, str, str]  # strategy, corpus_model, variant ('' = default sizes)


def build_rows_key(partition_key: str, build: str | None) -> str:
    """The results key of one build's chunk rows (the partition's own key for the legacy build)."""
    return f"{partition_key}{BUILD_SEPARATOR}{build}" if build else partition_key


def run_build(provenance: Any) -> str | None:
    """The build an experiment run retrieved from, from its provenance (JSON text or dict); None: legacy."""
    if isinstance(provenance, str):
        try:
            provenance = json.loads(provenance)
        except ValueError:
            return None
    build = provenance.get("build") if isinstance(provenance, dict) else None
    return build if isinstance(build, str) and build else None


@dataclass
class Build:
    """One build of a collection as the ``chunks`` table holds it."""

    strategy: str
    corpus_model: str
    variant: str
    build: str | None  # None: rows written before builds were kept
    built_at: Any
    n_chunks: int
    files: list[Path] = field(default_factory=list)

    @property
    def collection(self) -> CollectionKey:
        return (self.strategy, self.corpus_model, self.variant)

    @property
    def label(self) -> str:
        from chunkbench_core.labels import configuration_label

        return (
            f"{configuration_label(self.strategy, self.corpus_model, variant=self.variant)}, "
            f"build {self.build or 'before builds were kept'}"
        )


def list_builds(results: ResultsDB) -> list[Build]:
    """Every build kept in the ``chunks`` table, newest first within each collection. A damaged chunk file is
    moved aside first (with a warning naming it and what writes it again), as every reader of the results does."""
    folder = results.tables_dir / "chunks"
    integrity.repair_results_tables(results.tables_dir)

    def read() -> list[tuple]:
        files = sorted(p for p in folder.glob("*.parquet") if p.name != SCHEMA_FILE) if folder.exists() else []
        if not files:
            return []
        listing = "[" + ", ".join(sql_string(p.as_posix()) for p in files) + "]"
        con = duckdb.connect()
        try:
            con.execute(f"CREATE VIEW kept AS SELECT * FROM read_parquet({listing}, union_by_name=true, filename=true)")
            columns = {row[0] for row in con.execute("DESCRIBE kept").fetchall()}
            build = "build" if "build" in columns else "NULL::VARCHAR"
            return con.execute(
                f"""SELECT strategy, corpus_model, coalesce(variant, '') AS variant, {build} AS build,
                           max(materialized_at) AS built_at, count(*) AS n, list(DISTINCT filename) AS files
                    FROM kept GROUP BY ALL
                    ORDER BY strategy, corpus_model, variant, built_at DESC NULLS LAST, build DESC NULLS LAST"""
            ).fetchall()
        finally:
            con.close()

    rows = integrity.with_table_repair(results.tables_dir, read)  # damage only a full read sees: once more
    return [
        Build(str(s), str(m), str(v), b if b else None, at, int(n), sorted(Path(f) for f in fs))
        for s, m, v, b, at, n, fs in rows
    ]


def referenced_builds(results: ResultsDB, excluded: Collection[str] = ()) -> set[tuple[str, str, str, str]]:
    """(strategy, corpus_model, variant, build or '') of the latest run of every configuration (strategy x
    corpus model x variant x neighbors, as ``leaderboard_by_setting``), runs in ``excluded`` left out."""
    frame = results.query(
        """SELECT experiment_run_id, strategy, corpus_model, coalesce(variant, '') AS variant, provenance
           FROM experiment_metrics
           WHERE NOT list_contains(?, experiment_run_id)
           QUALIFY row_number() OVER (PARTITION BY strategy, corpus_model, coalesce(variant, ''),
                                                   coalesce(neighbor_prev, 0), coalesce(neighbor_next, 0)
                                      ORDER BY created_at DESC, experiment_run_id DESC) = 1""",
        [sorted(str(r) for r in excluded)],
    )
    return {
        (str(r.strategy), str(r.corpus_model), str(r.variant), run_build(r.provenance) or "")
        for r in frame.itertuples()
    }


@dataclass
class PrunePlan:
    keep: int
    kept: list[Build]
    removed: list[Build]
    #: builds kept only because a run shown in the reports retrieved from them
    kept_for_runs: list[Build] = field(default_factory=list)


def plan_prune(results: ResultsDB, keep: int, excluded: Collection[str] = ()) -> PrunePlan:
    """Which builds ``prune`` would remove: all but the ``keep`` most recent builds of each collection and the
    builds the latest non-excluded run of each configuration retrieved from."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ConfigError(
            f"--keep must be a whole number of at least 1 (the latest build of every collection is "
            f"what the next experiment reads), got {keep!r}"
        )
    referenced = referenced_builds(results, excluded)
    kept: list[Build] = []
    removed: list[Build] = []
    for_runs: list[Build] = []
    seen: dict[CollectionKey, int] = {}
    for build in list_builds(results):  # newest first within each collection
        position = seen.get(build.collection, 0)
        seen[build.collection] = position + 1
        if position < keep:
            kept.append(build)
        elif (*build.collection, build.build or "") in referenced:
            kept.append(build)
            for_runs.append(build)
        else:
            removed.append(build)
    return PrunePlan(keep, kept, removed, for_runs)


def prune(results: ResultsDB, plan: PrunePlan) -> list[Path]:
    """Delete the chunk files of the builds ``plan`` removes, and their token ids beside; returns the files
    deleted."""
    deleted = []
    for build in plan.removed:
        for path in build.files:
            if path.parent == results.tables_dir / "chunks" and path.exists():
                for file in (results.tables_dir / "chunk_tokens" / path.name, path):  # the ids first, as written
                    if file.exists():
                        file.unlink()
                        deleted.append(file)
    return deleted


def describe_plan(plan: PrunePlan, dry_run: bool) -> Iterable[str]:
    """What a prune removes (or would remove, ``dry_run``), one line per build, then the totals."""
    verb = "would remove" if dry_run else "removed"
    for build in plan.removed:
        yield f"{verb}: {build.label}: {plural(build.n_chunks, 'chunk row')}, built {_when(build.built_at)}"
    for build in plan.kept_for_runs:
        yield f"kept (a run in the reports retrieved from it): {build.label}"
    rows = sum(b.n_chunks for b in plan.removed)
    yield (
        f"{verb} {plural(len(plan.removed), 'build')} ({plural(rows, 'chunk row')}); kept {len(plan.kept)} "
        f"(the {'most recent build' if plan.keep == 1 else f'{plan.keep} most recent builds'} of each collection, and every "
        f"build a run in the reports retrieved from)"
    )


def _when(stamp: Any) -> str:
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC") if hasattr(stamp, "strftime") else str(stamp)
