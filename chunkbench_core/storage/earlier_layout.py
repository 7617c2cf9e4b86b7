"""Results that an earlier chunkbench kept at the top level of the home, found and brought along.

The oldest layout kept one set of results directly in ``CHUNKBENCH_HOME`` (or ``CHUNKBENCH_RESULTS_DIR``):
``chunkbench.duckdb`` and ``tables/`` (the results), ``parsed/`` (parsed documents), ``reports/`` and ``qdrant/``
(the embedded vector store). Each benchmark now has its folder ``benchmarks/<name>/`` holding the same names, and
nothing reads the top level any more, so such results would be ignored without a word.

:func:`find_earlier_layout` says whether a home holds them (every command asks, and prints
:meth:`EarlierLayout.notice`, one line, while they are there); :func:`bring_along` moves them, each under the
same name, into the folder of a benchmark that has none of them yet (``chunkbench --benchmark NAME doctor
--repair``). Moving is a rename on the same disk: nothing is copied, nothing is lost, and a move that fails
half way leaves every entry either where it was or where it goes.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from chunkbench_core.errors import ConfigError

#: what marks results of the oldest layout at the top of the results root (one is enough)
RESULTS_MARKS = ("tables", "chunkbench.duckdb")
#: what moves with them: under the results root, and under the vectors root (the home, by default)
RESULTS_ENTRIES = ("chunkbench.duckdb", "tables", "parsed", "reports")
VECTORS_ENTRIES = ("qdrant",)
#: the views file: made again from the tables whenever it is missing or stale
VIEWS_FILE = "chunkbench.duckdb"


#: what a command that only reads makes in an empty results folder: each table's empty schema
EMPTY_TABLE_FILE = "_schema.parquet"


def _holds_files(path: Path) -> bool:
    """Whether ``path`` holds results (a file other than the empty tables' schemas)."""
    if path.is_symlink() or path.is_file():
        return True
    return path.is_dir() and any(
        (p.is_file() or p.is_symlink()) and p.name != EMPTY_TABLE_FILE for p in path.rglob("*")
    )


@dataclass(frozen=True)
class EarlierLayout:
    """Entries of the oldest layout found (each with where it goes) and the benchmark that would take them."""

    benchmark: str
    moves: tuple[tuple[Path, Path], ...]

    @property
    def target(self) -> Path:
        return self.moves[0][1].parent

    def taken(self) -> list[Path]:
        """The destinations holding results already (the benchmark has results of its own: another name is
        needed). Empty folders (a command that only looked made them) and the views file (made again from the
        tables) do not count."""
        return [to for _, to in self.moves if to.name != VIEWS_FILE and _holds_files(to)]

    def notice(self) -> str:
        """One line: where they are, and how to bring them along."""
        names = ", ".join(f"{source.name}{'/' if source.is_dir() else ''}" for source, _ in self.moves)
        where = self.moves[0][0].parent
        if self.taken():
            how = (
                f"benchmark {self.benchmark!r} has results of its own, so name another one for them: "
                "chunkbench --benchmark earlier doctor --repair"
            )
        else:
            how = (
                f"to bring them into benchmark {self.benchmark!r} ({self.target}): chunkbench --benchmark "
                f"{self.benchmark} doctor --repair (or --benchmark ANOTHER_NAME)"
            )
        return (
            f"results of an earlier chunkbench are at the top level of {where} ({names}), where this version "
            f"no longer reads them; {how}"
        )


def find_earlier_layout(
    results_base: Path, vectors_base: Path, results_dir: Path, qdrant_dir: Path, benchmark: str
) -> EarlierLayout | None:
    """The oldest layout's entries under ``results_base`` / ``vectors_base`` (None when there are none), each
    paired with its place in the benchmark's folders ``results_dir`` / ``qdrant_dir``."""
    results_base, vectors_base = Path(results_base), Path(vectors_base)
    if not any((results_base / mark).exists() for mark in RESULTS_MARKS):
        return None
    moves = [
        (results_base / name, Path(results_dir) / name) for name in RESULTS_ENTRIES if (results_base / name).exists()
    ]
    moves += [(vectors_base / name, Path(qdrant_dir)) for name in VECTORS_ENTRIES if (vectors_base / name).is_dir()]
    return EarlierLayout(benchmark, tuple(moves))


def bring_along(layout: EarlierLayout) -> list[tuple[Path, Path]]:
    """Move every entry of ``layout`` to its place (a rename); the moves made. ConfigError, moving nothing, when
    the benchmark already holds one of them."""
    taken = layout.taken()
    if taken:
        raise ConfigError(
            f"benchmark {layout.benchmark!r} already has {', '.join(str(t) for t in taken)}: the "
            "earlier results are left where they are; bring them into a benchmark of another name "
            "(chunkbench --benchmark earlier doctor --repair)"
        )
    done: list[tuple[Path, Path]] = []
    for source, target in layout.moves:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir() and not _holds_files(target):
            shutil.rmtree(target)  # empty tables a command made while only looking
        elif target.name == VIEWS_FILE and target.is_file():
            target.unlink()  # views over the empty tables: the earlier file's views replace them
        os.replace(source, target)  # same disk: a rename, all or nothing for each entry
        done.append((source, target))
    return done
