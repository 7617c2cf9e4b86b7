"""Derived files that cannot be read are moved aside and rebuilt; they never block the tool.

Everything under a benchmark's folder and in the shared caches is derived from the corpus and the
question files: a results table of a partition (Parquet), the views file (``chunkbench.duckdb``), a parsed
record and the parsed manifest (JSON), a collection (a Qdrant folder), a cache (SQLite). Where such a file
is read it is checked; one that cannot be read is renamed ``<name>.corrupt-<UTC time>`` beside itself, with
a warning naming it and the step that rebuilds it, and the reader carries on as if it were missing, so the
same run makes it again. Nothing is deleted: the moved file stays for a person to look at (``chunkbench
doctor`` lists them), and a moved file is never read again (its name matches no pattern chunkbench reads).

Two processes that find one bad file at once move it once: the move happens under a lock of the folder,
and only when the file is still the one that was found bad (same inode, size and modification time), so
a file another process has just rebuilt is never moved.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

from .locks import setup_lock

log = logging.getLogger("chunkbench")
T = TypeVar("T")

CORRUPT_MARK = ".corrupt-"
REPAIR_LOCK = ".chunkbench-repair.lock"
PARQUET_MAGIC = b"PAR1"
SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of a DuckDB database file

# what SQLite and DuckDB say when a file is damaged (not busy, not locked, not full)
_SQLITE_CORRUPT = (
    "file is not a database",
    "database disk image is malformed",
    "malformed database schema",
    "file is encrypted or is not a database",
    "database corruption",
    "unsupported file format",
)


@dataclass(frozen=True)
class Identity:
    """What makes a file the same file: inode, size, modification time."""

    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str | os.PathLike[str], inode_only: bool = False) -> "Identity | None":
        """The identity of ``path`` now (None when it does not exist); ``inode_only`` for a file that is
        written in place while it stays the same file (a SQLite database)."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        return cls(st.st_ino, -1, -1) if inode_only else cls(st.st_ino, st.st_size, st.st_mtime_ns)

    def same(self, other: "Identity | None") -> bool:
        if other is None or other.inode != self.inode:
            return False
        return self.size < 0 or other.size < 0 or (self.size, self.mtime_ns) == (other.size, other.mtime_ns)


def is_quarantined(name: str) -> bool:
    """True for a file or folder moved aside (``*.corrupt-<time>``)."""
    return CORRUPT_MARK in name


def utc_stamp(now: dt.datetime | None = None) -> str:
    return (now or dt.datetime.now(dt.timezone.utc)).strftime("%Y%m%dT%H%M%SZ")


def corrupt_path(path: Path, stamp: str) -> Path:
    """``<name>.corrupt-<stamp>``, with ``-2``, ``-3`` ... when that name is taken."""
    target = path.with_name(f"{path.name}{CORRUPT_MARK}{stamp}")
    n = 2
    while target.exists() or target.is_symlink():
        target = path.with_name(f"{path.name}{CORRUPT_MARK}{stamp}-{n}")
        n += 1
    return target


def quarantine(
    path: str | os.PathLike[str],
    problem: str,
    rebuilt_by: str,
    *,
    found: Identity | None = None,
    companions: Sequence[str | os.PathLike[str]] = (),
    logger: logging.Logger | None = None,
) -> Path | None:
    """Move the unreadable ``path`` (a file or a folder) aside as ``<name>.corrupt-<UTC time>`` and warn.

    ``problem``: what is wrong; ``rebuilt_by``: what makes it again (said in the warning). ``found``: the
    identity of the file when it was found bad; when the file at ``path`` is no longer that one (another
    process moved or rebuilt it meanwhile) nothing is moved. ``companions``: files that belong to it (a
    SQLite file's ``-wal`` and ``-shm``), moved with it. Returns where it went, or None when nothing moved.
    """
    path = Path(path)
    logger = logger or log
    with setup_lock(path.parent, f"moving {path.name} aside", lock_name=REPAIR_LOCK):
        if not (path.exists() or path.is_symlink()):
            return None
        if found is not None and not found.same(Identity.of(path)):
            return None  # rebuilt (or moved) by another process since it was found bad
        stamp = utc_stamp()
        target = corrupt_path(path, stamp)
        os.rename(path, target)
        for companion in companions:
            companion = Path(companion)
            if companion.exists():
                os.rename(companion, corrupt_path(companion, stamp))
    logger.warning("%s cannot be read (%s): moved aside to %s; %s", path, problem, target.name, rebuilt_by)
    return target


def quarantined_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Every ``*.corrupt-*`` file or folder under ``folder`` (not inside one)."""
    root = Path(folder)
    found: list[Path] = []
    if not root.is_dir():
        return found
    for directory, dirnames, filenames in os.walk(root):
        for name in list(dirnames):
            if is_quarantined(name):
                found.append(Path(directory) / name)
                dirnames.remove(name)
        found.extend(Path(directory) / n for n in filenames if is_quarantined(n))
    return sorted(found)


def size_on_disk(path: Path) -> int:
    if path.is_file():
        return path.stat().st_blocks * 512
    total = 0
    for directory, _, filenames in os.walk(path):
        for name in filenames:
            try:
                total += os.stat(os.path.join(directory, name)).st_blocks * 512
            except OSError:
                pass
    return total


# -- Parquet -----------------------------------------------------------------------------------------
class ProcessDuckDB:
    """One in-memory DuckDB per process, for reading Parquet files: a new connection costs about 25 ms of CPU,
    a cursor well under 1 ms (and a run reads a few hundred files). Nothing read is cached between reads.

    A forked child makes its own on first use: the parent's connection is kept referenced there (never used,
    never closed) and its lock replaced, since a thread the child does not have may have held it."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._connection: Any = None
        self._inherited: list[Any] = []

    def cursor(self) -> Any:
        """A cursor on this process's connection; close it after use."""
        if self._pid != os.getpid():  # the first use in a forked child
            if self._connection is not None:
                self._inherited.append(self._connection)
            self._lock, self._connection = threading.Lock(), None
            self._pid = os.getpid()
        with self._lock:
            if self._connection is None:
                import duckdb

                self._connection = duckdb.connect()
                self._connection.execute("SET enable_external_file_cache = false")
            return self._connection.cursor()


_PROCESS_DUCKDB = ProcessDuckDB()


def memory_cursor() -> Any:
    """A cursor on this process's one in-memory DuckDB (:class:`ProcessDuckDB`). Close it after use."""
    return _PROCESS_DUCKDB.cursor()


def execute_on_frame(cursor: Any, frame: Any, sql: str) -> None:
    """Run ``sql`` on ``cursor`` with the pandas ``frame`` registered as ``frame`` (on this cursor only), then
    close the cursor."""
    try:
        cursor.register("frame", frame)
        cursor.execute(sql)
    finally:
        cursor.close()


def parquet_problem(path: str | os.PathLike[str], deep: bool = False) -> str | None:
    """What is wrong with a Parquet file, or None. The quick check reads the magic bytes and the footer
    (what every reader needs first); ``deep`` reads every value of every column too."""
    path = Path(path)
    if not path.exists():
        return "does not exist"
    problem = _footer_problem(path)
    if problem is not None:
        return problem
    import duckdb

    con = memory_cursor()
    try:
        if deep:
            con.execute("SELECT bit_xor(hash(COLUMNS(*))) FROM read_parquet(?)", [path.as_posix()]).fetchall()
        else:
            con.execute("SELECT count(*) FROM parquet_metadata(?)", [path.as_posix()]).fetchall()
    except duckdb.Error as exc:
        return f"DuckDB cannot read it: {one_line(exc)}"
    finally:
        con.close()
    return None


def read_parquet_rows(path: str | os.PathLike[str], rebuilt_by: str) -> list[dict[str, Any]] | None:
    """The rows of one Parquet file; None when it does not exist, or could not be read and was moved aside
    (a warning names it). An error that is not the file's fault is raised."""
    rows: list[dict[str, Any]] | None = _read_parquet(path, rebuilt_by, None)
    return rows


def read_parquet_values(
    path: str | os.PathLike[str], rebuilt_by: str, columns: Sequence[str]
) -> list[tuple[Any, ...]] | None:
    """``columns`` of every row of one Parquet file as tuples (no frame: tens of thousands of rows read in a few
    milliseconds; every file of the table must have them); None as :func:`read_parquet_rows`."""
    values: list[tuple[Any, ...]] | None = _read_parquet(path, rebuilt_by, columns)
    return values


def _read_parquet(path: str | os.PathLike[str], rebuilt_by: str, columns: Sequence[str] | None) -> Any:
    """Rows as dicts (``columns`` None) or the columns' tuples; None when missing or moved aside."""
    import duckdb

    path = Path(path)
    found = Identity.of(path)
    if found is None:
        return None
    con = memory_cursor()
    try:
        if columns is None:
            return con.execute("SELECT * FROM read_parquet(?)", [path.as_posix()]).df().to_dict("records")
        listed = ", ".join(f'"{c}"' for c in columns)
        return con.execute(f"SELECT {listed} FROM read_parquet(?)", [path.as_posix()]).fetchall()
    except duckdb.Error as exc:
        error: Exception = exc
    finally:
        con.close()
    if not path.exists():
        return None  # replaced or removed while being read
    problem = parquet_problem(path, deep=True)
    if problem is None:
        raise error
    quarantine(path, problem, rebuilt_by, found=found)
    return None


# -- JSON --------------------------------------------------------------------------------------------
def json_problem(path: str | os.PathLike[str], required: Iterable[str] = ()) -> str | None:
    """What is wrong with a JSON object file, or None."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return f"is not UTF-8 text (byte offset {exc.start})"
    except json.JSONDecodeError as exc:
        return f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} (truncated or garbled)"
    except RecursionError:
        return "is not valid JSON (nested too deeply)"
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not an object"
    missing = [k for k in required if k not in data]
    if missing:
        return f"lacks {', '.join(repr(k) for k in missing)}"
    return None


def load_json_object(
    path: str | os.PathLike[str], rebuilt_by: str, required: Iterable[str] = ()
) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it does not exist, or is unreadable and was moved aside."""
    path = Path(path)
    found = Identity.of(path)
    if found is None:
        return None
    required = tuple(required)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and all(k in data for k in required):
            return data
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError):
        pass
    problem = json_problem(path, required)
    if problem is None:  # rewritten by another process meanwhile: read that
        return load_json_object(path, rebuilt_by, required)
    quarantine(path, problem, rebuilt_by, found=found)
    return None


# -- SQLite ------------------------------------------------------------------------------------------
def is_sqlite_corruption(exc: BaseException) -> bool:
    """True when SQLite says the file itself is damaged (not busy, locked, full or unwritable)."""
    return isinstance(exc, sqlite3.DatabaseError) and any(t in str(exc).lower() for t in _SQLITE_CORRUPT)


def sqlite_companions(path: Path) -> list[Path]:
    return [path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def sqlite_problem(path: str | os.PathLike[str], full: bool = False) -> str | None:
    """What is wrong with a SQLite file, or None (``full``: ``PRAGMA integrity_check`` instead of
    ``quick_check``). A missing or empty file is fine (a new database)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size == 0:
            return None
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if head != SQLITE_MAGIC:
        return "is not a SQLite database (its header is garbled)"
    try:
        con = sqlite3.connect(f"file:{path.as_posix()}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error as exc:
        return f"SQLite cannot open it: {exc}"
    try:
        rows = con.execute("PRAGMA integrity_check" if full else "PRAGMA quick_check").fetchall()
    except sqlite3.Error as exc:
        if is_sqlite_corruption(exc):
            return f"SQLite: {exc}"
        return None  # busy or locked: not the file's fault
    finally:
        con.close()
    messages = [
        line
        for r in rows
        for line in str(r[0]).splitlines()
        if line.strip() and line.lower() != "ok" and not line.startswith("***")
    ]
    if messages:
        more = f" (and {len(messages) - 1} more)" if len(messages) > 1 else ""
        return f"SQLite's check failed: {one_line(messages[0], 150)}{more}"
    return None


# -- DuckDB ------------------------------------------------------------------------------------------
def is_duckdb_lock(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text or "lock on file" in text)


def duckdb_problem(path: str | os.PathLike[str]) -> str | None:
    """What is wrong with a DuckDB database file, or None (missing is fine; held by another process is not
    a problem of the file)."""
    import duckdb

    path = Path(path)
    if not path.exists():
        return None
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        if is_duckdb_lock(exc):
            return None
        return f"DuckDB cannot open it: {one_line(exc)}"
    try:
        con.execute("SELECT count(*) FROM duckdb_views()").fetchall()
    except duckdb.Error as exc:
        return f"DuckDB cannot read its catalog: {one_line(exc)}"
    finally:
        con.close()
    return None


def one_line(exc: BaseException | str, limit: int = 300) -> str:
    """An exception's message (or a message) on one line, cut at ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the results folder ------------------------------------------------------------------------------
_PARSE = "parsed_documents writes it again (chunkbench run does)"
_COLLECTION = "its chunk_collections partition writes it again (chunkbench run does)"
_EXPERIMENT = "its experiment_results partition writes it again (chunkbench run does)"
_LEADERBOARD = "the leaderboard writes it again (chunkbench run does)"
#: what writes each results table again after one of its files was moved aside
TABLE_REBUILT_BY = {
    "documents": _PARSE,
    "chunks": _COLLECTION,
    "chunk_tokens": _COLLECTION,  # until then the runs encode the chunks' tokens, with the same values
    "collections": _COLLECTION,
    "index_costs": _COLLECTION,
    "embedding_usage": "the partition that wrote it writes it again (chunkbench run does)",
    "question_results": _EXPERIMENT,  # wide files of older versions (results_db.SCORED_TABLES)
    "experiment_metrics": _EXPERIMENT,
    "question_rows": _EXPERIMENT,
    "question_scores": _EXPERIMENT,
    "experiment_runs": _EXPERIMENT,
    "run_scores": _EXPERIMENT,
    "question_errors": _EXPERIMENT,
    "parse_ceiling": _EXPERIMENT,
    "comparison": _LEADERBOARD,
    "recommendation": _LEADERBOARD,
    "diagnostics": _LEADERBOARD,
    # not derived: what a person decided. Unreadable, it cannot be used either; say how to decide again
    "run_exclusions": "it held which runs were set aside: set them aside again (chunkbench runs exclude)",
    "defaults": "it held shared defaults (boundary model, semantic thresholds): set them again "
    "(chunkbench defaults set, chunkbench thresholds set)",
}
VIEWS_REBUILT_BY = "the views file only holds views over the Parquet tables: it is created again now"


def table_rebuilt_by(path: Path) -> str:
    """What writes the results file ``tables/<table>/<key>.parquet`` again."""
    if path.name.startswith("_schema"):
        return "the empty schema file is written again now"
    return TABLE_REBUILT_BY.get(path.parent.name, "the step that wrote it writes it again (chunkbench run does)")


def repair_results_tables(tables_dir: str | os.PathLike[str], level: str = "footer") -> list[Path]:
    """Check every Parquet file under a results folder's ``tables/`` and move the unreadable ones aside (a
    warning names each and what writes it again). One bad file would fail every view that reads its
    table. ``level``: ``footer`` (magic bytes and footer length, no DuckDB: cheap enough for every
    connection), ``metadata`` (DuckDB reads the footer) or ``deep`` (every value). Returns the files moved."""
    moved: list[Path] = []
    root = Path(tables_dir)
    if not root.is_dir():
        return moved
    for path in sorted(root.glob("*/*.parquet")):
        found = Identity.of(path)
        problem = _footer_problem(path) if level == "footer" else parquet_problem(path, deep=level == "deep")
        if problem is not None and quarantine(path, problem, table_rebuilt_by(path), found=found) is not None:
            moved.append(path)
    return moved


def _footer_problem(path: Path) -> str | None:
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(4)
            if size < 12:
                return f"{size} bytes: too short for a Parquet file (truncated)"
            handle.seek(size - 8)
            tail = handle.read(8)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if head != PARQUET_MAGIC:
        return "does not start like a Parquet file (overwritten or garbled)"
    if tail[4:] != PARQUET_MAGIC:
        return "does not end like a Parquet file (truncated or garbled)"
    footer = int.from_bytes(tail[:4], "little")
    if footer <= 0 or footer > size - 12:
        return f"its footer claims {footer} bytes in a file of {size} (truncated or garbled)"
    return None


def replace_views_file(path: str | os.PathLike[str], problem: str) -> Path | None:
    """Move an unreadable views file (``chunkbench.duckdb``) aside; the caller creates it again."""
    path = Path(path)
    return quarantine(
        path,
        problem,
        VIEWS_REBUILT_BY,
        found=Identity.of(path, inode_only=True),
        companions=[path.with_name(path.name + ".wal")],
    )


def with_table_repair(tables_dir: str | os.PathLike[str], action: Callable[[], T]) -> T:
    """``action()``; when DuckDB fails on a results table (a file damaged where only a full read sees it),
    every table file is read, the unreadable ones are moved aside, and ``action()`` runs once more."""
    import duckdb

    try:
        return action()
    except duckdb.Error:
        if not repair_results_tables(tables_dir, level="deep"):
            raise
    return action()
