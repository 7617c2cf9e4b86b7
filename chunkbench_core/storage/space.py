"""Disk space: check it before a write that could run out, and turn a full disk into one clear line.

Why a check *before* writing: the embedded Qdrant engine writes vectors, payloads and its write-ahead log
through memory-mapped files. When the disk fills up under a memory-mapped write the kernel sends SIGBUS,
which kills the process with no message and cannot be caught (opening a collection on a full disk does the
same: the engine replays and extends its log). So the free space of the collection's folder is compared
with an estimate of what the partition will write, with a margin, before the engine is touched.

What the engine writes (qdrant-edge 0.9, measured with a disk-usage sampler on tmpfs, 2,000 to 60,000
points of 384 and 1,536 dimensions, payloads of about 1.4 KB of JSON):

* an empty collection: about 5 MB (configuration, payload indexes, the first log pages);
* opening an existing collection: nothing on a disk filesystem (ext4: 8 KB less, measured), but on a
  memory filesystem (tmpfs) the engine's read-ahead of its memory maps fills every sparse file: 44 MB for a
  collection of 200 points. The estimate is the files' holes there, nothing elsewhere;
* each point, at the peak of a fresh build (before the final flush truncates the log): 2.15 to 2.17 times
  its vector (dimension x 4 bytes) plus its payload JSON, since each point is written to the log and to
  the segment; rebuilding a collection in place adds 1.4 to 1.6 times that on top of what it holds.

The estimate is therefore ``5 MB + 2.2 x points x (dimension x 4 + payload bytes)``, plus a margin of 10%
and 16 MB; the Parquet rows of the partition are estimated from their text (uncompressed: an upper bound,
and the old file stays until the new one replaces it).

Any ``ENOSPC``/``EDQUOT``/``EIO`` met while writing (Parquet, the DuckDB views, the SQLite caches, parsed
records, the vector store) becomes :class:`StorageFullError` or :class:`StorageError`: typed, permanent
(never retried) and one line naming the folder, the space needed and the space free.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from chunkbench_core.errors import StorageError, StorageFullError

MiB = 1 << 20

#: an empty embedded collection: configuration, payload indexes, first log pages (5.3 MB measured)
EDGE_EMPTY_BYTES = 6 * MiB
#: what opening an existing collection may write besides filling holes on a memory filesystem
EDGE_OPEN_BYTES = 2 * MiB
#: filesystems whose pages are memory: reading a sparse file's hole through a memory map allocates it
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "shm", "devtmpfs"})
#: bytes written per byte of vector + payload at the peak of a build (2.15 to 2.17 measured)
EDGE_WRITE_FACTOR = 2.2
#: what a point costs besides its vector and payload JSON (id tracker, payload index entries, versions)
EDGE_POINT_OVERHEAD = 200
#: margin on every estimate: this fraction plus a fixed amount
MARGIN_FRACTION = 0.10
MARGIN_BYTES = 16 * MiB
#: a Parquet row's fixed cost besides its text (column values, page and footer overhead), an upper bound
PARQUET_ROW_BYTES = 512

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_FULL_TEXT = (
    "no space left on device",
    "os error 28",
    "disk quota exceeded",
    "database or disk is full",
    "sqlite_full",
)
_IO_TEXT = ("input/output error", "os error 5", "disk i/o error")


def human_bytes(size: int | float | None) -> str:
    """``12 MB``, ``1.4 GB``: what a person reads in a message (rounded, decimal units like ``df -h --si``)."""
    if size is None:
        return "unknown"
    size = float(size)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if abs(size) < 1000 or unit == "TB":
            if unit == "bytes":
                return f"{int(size)} bytes"
            return f"{size:.1f} {unit}" if abs(size) < 10 else f"{size:.0f} {unit}"
        size /= 1000
    return f"{size:.0f} TB"  # pragma: no cover


def existing_folder(path: str | os.PathLike[str]) -> Path:
    """``path`` if it is a folder, else its nearest existing parent (where it will be created)."""
    folder = Path(path).absolute()
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    return folder


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes an unprivileged process may still write on the filesystem holding ``path`` (or its nearest
    existing parent)."""
    stats = os.statvfs(existing_folder(path))
    return int(stats.f_bavail) * int(stats.f_frsize)


def with_margin(needed: int) -> int:
    """``needed`` plus the margin every check adds."""
    return int(needed * (1 + MARGIN_FRACTION)) + MARGIN_BYTES


def full_message(folder: str | os.PathLike[str], what: str, needed: int | None, free: int | None) -> str:
    """The one line a full disk gives."""
    need = f"about {human_bytes(needed)} needed, " if needed is not None else ""
    return (
        f"not enough free space in {folder} for {what}: {need}{human_bytes(free)} free; "
        "free some space there (or move the chunkbench state to a larger disk) and run again: "
        "what was stored before is unchanged"
    )


def ensure_space(folder: str | os.PathLike[str], needed: int, what: str, margin: bool = True) -> int:
    """Raise :class:`StorageFullError` unless the filesystem of ``folder`` has ``needed`` bytes free (plus the
    margin). Returns the free bytes."""
    wanted = with_margin(needed) if margin else int(needed)
    where = existing_folder(folder)
    free = free_bytes(where)
    if free < wanted:
        raise StorageFullError(full_message(Path(folder), what, wanted, free), str(folder), wanted, free)
    return free


def ensure_spaces(needs: Mapping[str | os.PathLike[str], int], what: str) -> None:
    """:func:`ensure_space` for several folders, adding up what goes to one filesystem (a results folder and a
    collection folder on one disk share its free space)."""
    by_device: dict[int, tuple[Path, int]] = {}
    for folder, needed in needs.items():
        where = existing_folder(folder)
        device = os.stat(where).st_dev
        first, total = by_device.get(device, (Path(folder), 0))
        by_device[device] = (first, total + int(needed))
    for folder, needed in by_device.values():
        ensure_space(folder, needed, what)


def filesystem_type(path: str | os.PathLike[str]) -> str | None:
    """The type of the filesystem holding ``path`` (``ext4``, ``tmpfs`` ...) from /proc/self/mountinfo; None
    where that is not available."""
    target = os.path.realpath(existing_folder(path))
    best, kind = "", None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            for line in handle:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) < 5 or not right:
                    continue
                mount = fields[4].replace("\\040", " ")
                inside = target == mount or target.startswith(mount.rstrip("/") + "/") or mount == "/"
                if inside and len(mount) >= len(best):
                    best, kind = mount, right.split()[0]
    except OSError:
        return None
    return kind


def sparse_bytes(folder: str | os.PathLike[str], keep: Callable[[str], bool] = lambda relative: True) -> int:
    """The holes of the files under ``folder`` (their size minus what they take on disk), of the files whose
    path relative to ``folder`` ``keep`` accepts."""
    total = 0
    root = str(folder)
    for directory, _, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(directory, name)
            if not keep(os.path.relpath(full, root).replace(os.sep, "/")):
                continue
            try:
                st = os.stat(full)
            except OSError:
                continue
            total += max(0, st.st_size - st.st_blocks * 512)
    return total


def _read_ahead(relative: str) -> bool:
    """The files qdrant-edge 0.9 reads ahead when it opens a collection (measured on tmpfs): the vectors'
    chunks and the payload indexes' pages and trackers. Its log and payload pages are not."""
    name = relative.rsplit("/", 1)[-1]
    if "/vector_storage/vectors/chunk_" in f"/{relative}":
        return True
    return "/payload_index/" in f"/{relative}" and (name == "tracker.dat" or name.startswith("page_"))


def edge_open_bytes(folder: str | os.PathLike[str]) -> int:
    """What opening the existing collection in ``folder`` may write: on a memory filesystem the holes of the
    files the engine reads ahead (reading a hole through a memory map fills it there), a little elsewhere."""
    kind = filesystem_type(folder)
    return EDGE_OPEN_BYTES + (sparse_bytes(folder, _read_ahead) if kind in MEMORY_FILESYSTEMS else 0)


# -- estimates -------------------------------------------------------------------------------------
def json_bytes(value: Any) -> int:
    """The UTF-8 size of ``value`` as compact JSON (a payload)."""
    import json

    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8"))


def edge_points_bytes(points: int, dimension: int, payload_bytes: int) -> int:
    """What writing ``points`` (vectors of ``dimension``, payloads of ``payload_bytes`` JSON all together) into
    an open collection takes at its peak in the embedded engine, without the margin."""
    return int(EDGE_WRITE_FACTOR * (points * (dimension * 4 + EDGE_POINT_OVERHEAD) + payload_bytes))


def edge_collection_bytes(
    points: int, dimension: int, payload_bytes: int, folder: str | os.PathLike[str] | None = None
) -> int:
    """What building a collection of ``points`` takes, without the margin: creating it (``folder`` None or
    missing) or opening the one in ``folder``, then writing the points."""
    if folder is not None and Path(folder).is_dir():
        fixed = edge_open_bytes(folder)
    else:
        fixed = EDGE_EMPTY_BYTES
    return fixed + edge_points_bytes(points, dimension, payload_bytes)


def parquet_rows_bytes(rows: Iterable[Mapping[str, Any]]) -> int:
    """An upper bound of the Parquet file of ``rows``: their text, uncompressed, plus a fixed cost per row."""
    total = 0
    for row in rows:
        total += PARQUET_ROW_BYTES
        for value in row.values():
            if isinstance(value, str):
                total += len(value.encode("utf-8", errors="replace"))
            elif isinstance(value, (bytes, bytearray)):
                total += len(value)
    return total


def chunk_rows_bytes(texts: Iterable[tuple[str, str | None]]) -> int:
    """The Parquet rows of a partition's chunks from ``(text, embedded_text)`` pairs, and their token ids' rows
    (4 bytes a cl100k token, which spans about 4 characters: counted as many bytes as the text's)."""
    total = 0
    for text, embedded in texts:
        total += 2 * (PARQUET_ROW_BYTES + len(text.encode("utf-8", errors="replace")))
        if embedded:
            total += len(embedded.encode("utf-8", errors="replace"))
    return total


# -- errors met while writing ----------------------------------------------------------------------
def _errno_of(exc: BaseException) -> int | None:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno is not None:
            return exc.errno
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]  # None ends the loop
    return None


def storage_error(exc: BaseException, path: str | os.PathLike[str], what: str) -> StorageError | None:
    """The :class:`StorageError` an exception met while writing ``path`` stands for (a full disk, an I/O
    error, a read-only disk), or None when it is something else."""
    if isinstance(exc, StorageError):
        return exc
    code = _errno_of(exc)
    text = str(exc).lower()
    folder = existing_folder(Path(path).parent if not Path(path).is_dir() else path)
    try:
        free: int | None = free_bytes(folder)
    except OSError:
        free = None
    full = code in _FULL_ERRNOS or any(t in text for t in _FULL_TEXT)
    if (
        not full
        and isinstance(exc, sqlite3.Error)
        and "disk i/o error" in text
        and free is not None
        and free < MARGIN_BYTES
    ):
        full = True  # SQLite reports a write into a full WAL index as an I/O error
    if full:
        return StorageFullError(full_message(folder, what, None, free), str(folder), None, free)
    if code == errno.EIO or any(t in text for t in _IO_TEXT):
        return StorageError(
            f"the disk reported an input/output error while writing {path} ({what}); check the "
            "disk (the system log names the device) and run again: what was stored before is "
            "unchanged",
            str(path),
        )
    if code == errno.EROFS or "read-only file system" in text:
        return StorageError(
            f"{folder} is on a read-only filesystem: cannot write {what} there; point the "
            "chunkbench state at a writable folder",
            str(path),
        )
    return None


@contextmanager
def guard_writes(path: str | os.PathLike[str], what: str, cleanup: Iterable[Path] = ()) -> Iterator[None]:
    """Turn a full disk or an I/O error met in the body into :class:`StorageFullError`/:class:`StorageError`
    (one line, permanent); ``cleanup``: temporary files to remove when the body fails (a half-written
    temporary file would keep the space it took)."""
    try:
        yield
    except BaseException as exc:
        for leftover in cleanup:
            try:
                Path(leftover).unlink(missing_ok=True)
            except OSError:
                pass
        translated = storage_error(exc, path, what) if isinstance(exc, Exception) else None
        if translated is not None and translated is not exc:
            raise translated from exc
        raise
