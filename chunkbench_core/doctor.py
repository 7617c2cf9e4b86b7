"""``chunkbench doctor``: check every state file of a benchmark and the shared caches; repair on request.

What is checked, and what repairing does:

* the results tables (``tables/<table>/*.parquet``): every value read; an unreadable file is moved aside
  and written again by the step that makes it (the views would fail on it);
* the views file (``chunkbench.duckdb``): opened and its catalog read; an unreadable one is moved aside
  and created again (it holds views only);
* the parsed store: the manifest and every parsed record; an unreadable one is moved aside (the next parse
  makes it again); a document whose parse failed is a problem of the source file: named, never touched;
* the embedded collections (``qdrant/<collection>``): every point, payload and vector read in a child
  process, and the point count compared with what the build stored; a damaged collection is moved aside
  (its chunk_collections partition builds it again); one another process has open is skipped, and said so;
* the caches: SQLite's integrity check of each cache file (moved aside when it fails: the cache starts
  again empty), stored vectors whose length disagrees with their dimension (deleted), in SQLite and in
  PostgreSQL;
* temporary files left by writers that died (deleted);
* the source files: corpus entries that are refused (a link leading outside the corpus), question files
  that cannot be read: named with the fix, never moved or changed.

Files moved aside earlier (``*.corrupt-<time>``) are listed with their size, for a person to delete.
Nothing here reads the environment: the caller passes the folders.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from chunkbench_core.errors import ChunkbenchError, VectorStoreError
from chunkbench_core.storage import integrity
from chunkbench_core.storage.space import human_bytes

DERIVED = "derived"
SOURCE = "source"
CACHE = "cache"
LEFTOVER = "leftover"
MOVED = "moved aside"
PENDING = "pending"  # missing, and made again by the next run on its own: nothing to do
_NOTES = (MOVED, PENDING)

_TMP = re.compile(r"^\..+\.(\d+)\.tmp$")


@dataclass
class Finding:
    """One problem: the file, what is wrong, what repairing does (or did), and whether it was repaired."""

    path: str
    kind: str  # derived | source | cache | leftover | moved aside | pending
    problem: str
    repair: str
    repaired: bool = False

    @property
    def needs_action(self) -> bool:
        """Still a problem: not repaired, and not only a note (a file moved aside earlier)."""
        return self.kind not in _NOTES and not self.repaired

    def line(self) -> str:
        state = "repaired: " if self.repaired else ("" if self.kind in _NOTES else "repair: ")
        return f"{self.path}: {self.problem} -> {state}{self.repair}"


@dataclass
class DoctorReport:
    findings: list[Finding] = field(default_factory=list)
    checked: int = 0  # files and collections checked
    skipped: list[str] = field(default_factory=list)  # what could not be checked now, and why

    @property
    def healthy(self) -> bool:
        return not any(f.needs_action for f in self.findings)

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def lines(self) -> list[str]:
        out = [f.line() for f in self.findings]
        out += [f"not checked: {s}" for s in self.skipped]
        problems = [f for f in self.findings if f.kind not in _NOTES]
        repaired = sum(1 for f in problems if f.repaired)
        left = sum(1 for f in problems if not f.repaired)
        summary = f"checked {self.checked} state file(s) and collection(s): "
        if not problems:
            summary += "no problem found"
        else:
            summary += f"{len(problems)} problem(s)"
            if repaired:
                summary += f", {repaired} repaired"
            if left:
                derived_left = any(f.kind != SOURCE for f in problems if not f.repaired)
                summary += (
                    f", {left} left (see above{'; run with repair to fix the derived ones' if derived_left else ''})"
                )
        out.append(summary)
        return out


def doctor(
    results_dir: str | os.PathLike[str],
    *,
    qdrant_dir: str | os.PathLike[str] | None = None,
    corpus_dir: str | os.PathLike[str] | None = None,
    questions_dir: str | os.PathLike[str] | None = None,
    caches: Sequence[Any] = (),
    repair: bool = False,
    lock_timeout_seconds: float = 0.0,
) -> DoctorReport:
    """Check a benchmark's state (``results_dir``: its results folder, with ``tables/``, ``chunkbench.duckdb``
    and ``parsed/``; ``qdrant_dir``: its embedded collections), the shared ``caches`` (SQLite file paths, or
    cache objects: ``EmbeddingCache``, ``ContextCache``, ``PostgresEmbeddingCache``) and the source folders;
    ``repair``: move unreadable derived files aside (and create the views file again), delete damaged cache
    rows and dead writers' temporary files. Source files are only named."""
    report = DoctorReport()
    root = Path(results_dir)
    _results(root, report, repair)
    _parsed(root / "parsed", report, repair)
    if qdrant_dir is not None:
        _collections(Path(qdrant_dir), root, report, repair, lock_timeout_seconds)
    for cache in caches:
        _cache(cache, report, repair)
    _leftovers([root / "tables", root / "parsed"], report, repair)
    moved: set[Path] = set(integrity.quarantined_files(root))
    if qdrant_dir is not None:
        moved.update(integrity.quarantined_files(qdrant_dir))
    for cache_file in (p for p in (_cache_path(c) for c in caches) if p is not None):
        moved.update(cache_file.parent.glob(f"{cache_file.name}*{integrity.CORRUPT_MARK}*"))
    for path in sorted(moved):
        report.add(
            Finding(
                str(path),
                MOVED,
                f"moved aside earlier ({human_bytes(integrity.size_on_disk(path))})",
                "delete it when you no longer need it (chunkbench does not read it)",
            )
        )
    if corpus_dir is not None:
        _corpus(Path(corpus_dir), report)
    if questions_dir is not None:
        _questions(Path(questions_dir), report)
    report.findings.sort(key=lambda f: (f.kind in _NOTES, f.path))
    return report


# -- the results folder ----------------------------------------------------------------------------
def _results(root: Path, report: DoctorReport, repair: bool) -> None:
    tables = root / "tables"
    if tables.is_dir():
        for path in sorted(tables.glob("*/*.parquet")):
            report.checked += 1
            found = integrity.Identity.of(path)
            problem = integrity.parquet_problem(path, deep=True)
            if problem is None:
                continue
            rebuilt = integrity.table_rebuilt_by(path)
            finding = Finding(str(path), DERIVED, problem, f"move it aside; {rebuilt}")
            if repair:
                finding.repaired = integrity.quarantine(path, problem, rebuilt, found=found) is not None
            report.add(finding)
    database = root / "chunkbench.duckdb"
    if database.exists():
        report.checked += 1
        problem = integrity.duckdb_problem(database)
        if problem is not None:
            finding = Finding(str(database), DERIVED, problem, "move it aside and create the views again")
            if repair:
                from chunkbench_core.storage.results_db import ResultsDB

                integrity.replace_views_file(database, problem)
                ResultsDB(root).ensure_database()
                finding.repaired = integrity.duckdb_problem(database) is None
            report.add(finding)


# -- the parsed store ------------------------------------------------------------------------------
_REPARSED = "the next parse makes it again (materialize parsed_documents; chunkbench run does)"


def _parsed(folder: Path, report: DoctorReport, repair: bool) -> None:
    if not folder.is_dir():
        return
    manifest_path = folder / "manifest.json"
    manifest: dict[str, Any] | None = None
    if manifest_path.exists():
        report.checked += 1
        problem = integrity.json_problem(manifest_path, ("documents",))
        if problem is None:
            import json

            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            entries = manifest.get("documents")
            if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("record"), str) and isinstance(e.get("document"), str)
                for e in entries
            ):
                problem, manifest = "its document list is incomplete", None
        if problem is not None:
            finding = Finding(str(manifest_path), DERIVED, problem, f"move it aside; {_REPARSED}")
            if repair:
                finding.repaired = integrity.quarantine(manifest_path, problem, _REPARSED) is not None
            report.add(finding)
    listed = {e["record"]: e for e in (manifest or {}).get("documents", [])}
    damaged: set[str] = set()
    from chunkbench_core.estimate.plan import TOKENS_FILE  # the estimate's token counts beside the records

    for path in sorted(folder.glob("*.json")):
        if path.name in ("manifest.json", TOKENS_FILE):
            continue
        report.checked += 1
        problem = integrity.json_problem(path, ("status",))
        record: dict[str, Any] | None = None
        if problem is None:
            import json

            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("status") == "parsed" and not (
                isinstance(record.get("parsed"), dict) and isinstance(record["parsed"].get("markdown"), str)
            ):
                problem = "its parsed document is missing or incomplete"
        entry = listed.get(path.name)
        document = entry["document"] if entry else path.name
        if problem is not None:
            finding = Finding(
                str(path),
                DERIVED,
                f"the parsed record of {document} {problem}" if not problem.startswith("the parsed") else problem,
                f"move it aside; {_REPARSED}",
            )
            if repair:
                finding.repaired = integrity.quarantine(path, problem, _REPARSED) is not None
            report.add(finding)
            damaged.add(path.name)
        elif entry is not None and record is not None and record.get("status") == "failed":
            source = entry.get("path") or document
            reason = record.get("reason") or record.get("error") or "it could not be parsed"
            report.add(
                Finding(
                    str(source),
                    SOURCE,
                    f"the document cannot be parsed: {reason}",
                    "fix or replace the file (or remove it from the corpus); chunkbench never changes it",
                )
            )
    for name, entry in listed.items():
        if name not in damaged and not (folder / name).exists():
            report.add(
                Finding(str(folder / name), PENDING, f"the parsed record of {entry['document']} is missing", _REPARSED)
            )


# -- collections -----------------------------------------------------------------------------------
def _expected_points(results_root: Path) -> dict[str, int]:
    """{collection: points its latest build stored} from the index_costs table."""
    from chunkbench_core.storage.results_db import ResultsDB

    try:
        frame = ResultsDB(results_root).query(
            "SELECT collection, points FROM index_costs WHERE collection IS NOT NULL AND points IS NOT NULL "
            "QUALIFY row_number() OVER (PARTITION BY collection ORDER BY built_at DESC) = 1"
        )
    except Exception:  # no table yet, or unreadable: the count is then not compared
        return {}
    return {str(c): int(p) for c, p in zip(frame["collection"], frame["points"])}


def _collections(folder: Path, results_root: Path, report: DoctorReport, repair: bool, lock_timeout: float) -> None:
    from chunkbench_core.storage.vector_probe import ProbeError, probe_collection
    from chunkbench_core.storage.vector_store import REBUILT_BY, VectorStore, _EdgeCollection

    if not folder.is_dir():
        return
    expected = _expected_points(results_root)
    names = VectorStore(local_root=folder).list_collections()
    for name in names:
        path = folder / name
        if not _EdgeCollection.folder_exists(path):
            continue  # qdrant-client's local mode, or not a collection: not the embedded engine's files
        report.checked += 1
        holder = _EdgeCollection(path, lock_timeout)
        try:
            holder._hold("check")
        except VectorStoreError:
            report.skipped.append(f"{path}: another process has it open")
            continue
        try:
            try:
                points, problem = probe_collection(path)
            except ProbeError as exc:
                report.skipped.append(str(exc))
                continue
            if problem is None and name in expected and points != expected[name]:
                problem = f"it holds {points} points where its build stored {expected[name]}"
            if problem is None:
                holder._set_state({"state": "closed", "signature": _EdgeCollection.signature(path)})
                continue
            finding = Finding(str(path), DERIVED, problem, f"move it aside; {REBUILT_BY}")
            if repair:
                finding.repaired = holder.condemn(problem) is not None
            report.add(finding)
        finally:
            holder.close(clean=False)


# -- caches ----------------------------------------------------------------------------------------
def _cache_path(cache: Any) -> Path | None:
    if isinstance(cache, (str, os.PathLike)):
        return Path(cache)
    path = getattr(cache, "path", None)
    return Path(path) if path is not None else None


def _cache(cache: Any, report: DoctorReport, repair: bool) -> None:
    path = _cache_path(cache)
    if path is None:  # a shared cache in PostgreSQL
        damaged = getattr(cache, "damaged_rows", None)
        if damaged is None:
            return
        report.checked += 1
        try:
            count = damaged(repair=False)
        except ChunkbenchError as exc:
            report.skipped.append(f"{cache}: {exc}")
            return
        if count:
            finding = Finding(
                str(cache),
                CACHE,
                f"{count} stored vector(s) whose length disagrees with their dimension",
                "delete them (they are embedded again when next needed)",
            )
            if repair:
                finding.repaired = damaged(repair=True) >= 0
            report.add(finding)
        return
    if not path.exists():
        return
    report.checked += 1
    problem = integrity.sqlite_problem(path, full=True)
    if problem is not None:
        finding = Finding(
            str(path), CACHE, problem, "move it aside (with its -wal and -shm files); the cache starts again empty"
        )
        if repair:
            found = integrity.Identity.of(path, inode_only=True)
            finding.repaired = (
                integrity.quarantine(
                    path,
                    problem,
                    "the cache starts again empty",
                    found=found,
                    companions=integrity.sqlite_companions(path),
                )
                is not None
            )
        report.add(finding)
        return
    bad = _damaged_sqlite_vectors(path, repair=False)
    if bad:
        finding = Finding(
            str(path),
            CACHE,
            f"{bad} stored vector(s) whose length disagrees with their dimension",
            "delete them (they are embedded again when next needed)",
        )
        if repair:
            finding.repaired = _damaged_sqlite_vectors(path, repair=True) >= 0
        report.add(finding)


def _damaged_sqlite_vectors(path: Path, repair: bool) -> int:
    con = sqlite3.connect(str(path), timeout=60, isolation_level=None)
    try:
        has = con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'").fetchone()
        if not has:
            return 0
        condition = "length(vector) <> 4 * dimension"
        if repair:
            return int(con.execute(f"DELETE FROM vectors WHERE {condition}").rowcount)
        return int(con.execute(f"SELECT count(*) FROM vectors WHERE {condition}").fetchone()[0])
    finally:
        con.close()


# -- leftovers -------------------------------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _leftovers(folders: Iterable[Path], report: DoctorReport, repair: bool) -> None:
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob(".*.tmp")):
            match = _TMP.match(path.name)
            if not match or _alive(int(match.group(1))):
                continue
            finding = Finding(
                str(path),
                LEFTOVER,
                f"a temporary file of a writer that died ({human_bytes(path.stat().st_size)})",
                "delete it",
            )
            if repair:
                path.unlink(missing_ok=True)
                finding.repaired = True
            report.add(finding)


# -- sources ---------------------------------------------------------------------------------------
def _corpus(folder: Path, report: DoctorReport) -> None:
    from chunkbench_core.storage.corpus import scan_corpus_report

    try:
        scan = scan_corpus_report(folder)
    except (OSError, FileNotFoundError) as exc:
        report.add(Finding(str(folder), SOURCE, str(exc), "point the corpus setting at a folder of documents"))
        return
    for document, reason in scan.refused.items():
        report.add(
            Finding(
                str(folder / document),
                SOURCE,
                reason,
                "replace the link with the file itself, or remove it; chunkbench never changes it",
            )
        )


def _questions(folder: Path, report: DoctorReport) -> None:
    from chunkbench_core.evaluation.questions import load_question_sets

    _, errors = load_question_sets(folder)
    for error in errors:
        if error.question_id is not None or error.field is not None:
            continue  # a question's own problem: `chunkbench questions check` lists those
        report.add(
            Finding(
                error.file,
                SOURCE,
                error.reason,
                "fix the file (chunkbench questions check tells what is wrong); chunkbench never changes it",
            )
        )
