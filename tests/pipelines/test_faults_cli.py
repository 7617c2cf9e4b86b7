"""Faults with a way out, through `chunkbench` as a user runs it: a full disk, and damaged state files.

One clean run of the smallest benchmark is shared by the module; each case works on a copy of its home.
- A full disk (a real small tmpfs; mounting needs root, so skipped on a laptop without it and a failure in
  CI): the run stops with one line naming the folder, the space needed and the space free, exit 1 (never a
  signal), its Dagster run marked failed; what was stored before stays readable; after space is freed the
  next run gives the clean run's leaderboard.
- Each of 13 single-file corruptions (11 derived files, 2 source files): the next run exits 0 with the clean
  run's leaderboard, or, for a source file, exits 1 with one line naming the file and the fix. No Python
  traceback in any output. The derived files are damaged in two copies of the clean state, five or six files
  each, never two files of one store in the same copy (one collection, one table, one cache), so no repair can
  stand in for another: each case still asserts its own file's warning. Each source file gets a copy of its own
  (a damaged source stops the run).

The runs on a full disk are real subprocesses (a full disk must end the process with exit 1, never a signal); the
clean run, the run after space is freed, the damaged copies' runs and the doctor's commands are called in the test
process (``World.here``: the exit status and both streams as a subprocess gives them, without starting Python,
Dagster and the engines again for each of them; a first run on an empty home as a process of its own is tested by
test_concurrent_first_runs.py and test_run_control.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from chunkbench_core.storage.vector_store import collection_name
from tests.support import calibration
from tests.support.damage import checkpoint, damage, garble, garble_sqlite_pages, truncate
from tests.support.tmpfs import fill, resize, tmpfs

from .support.small_benchmark import (
    MODEL,
    STRATEGY,
    WORD_DOCUMENT,
    World,
    make_world,
    no_traceback,
    output,
    run_statuses,
)

# one worker runs the whole module (--dist loadgroup): its module fixtures (the clean run, then every damaged
# copy run again) are built once, not once per worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("faults_cli")]


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The state after one clean run of the smallest benchmark, and its leaderboard."""
    world = make_world(tmp_path_factory.mktemp("clean") / "world")
    calibration.give_measured(world.home)  # MiniLM's rate as this worker measured it (tests/support/calibration.py)
    calibration.give_graph(world.home)  # and its fused graph, kept as a first run keeps it
    result = world.run_here()
    assert result.returncode == 0 and no_traceback(result), output(result)
    board = world.leaderboard()
    assert [(r[1], r[2], r[3]) for r in board] == [(STRATEGY, MODEL, 4)], board
    return world, board


# -- a full disk -------------------------------------------------------------------------------------
@pytest.fixture
def small_disk(tmp_path):
    """A 12 MB tmpfs: room for the Dagster instance, the results folder and the parsed documents, not for a
    collection; unmounted afterwards."""
    with tmpfs(tmp_path / "disk", 12) as disk:
        yield disk


def the_full_disk_line(result: subprocess.CompletedProcess, folder: Path) -> str:
    """The one line a full disk gives (exit 1, never a signal, no traceback)."""
    assert result.returncode == 1, output(result)
    assert no_traceback(result), output(result)
    lines = [line for line in (result.stdout + result.stderr).splitlines() if "not enough free space in" in line]
    assert len(lines) == 1, output(result)
    line = lines[0]
    assert str(folder) in line and " needed, " in line and " free; free some space there" in line, line
    return line


def test_a_full_disk_stops_the_run_with_one_line_and_after_freeing_space_the_rerun_equals_a_clean_run(
    clean, small_disk
):
    _, clean_board = clean
    world = make_world(small_disk)  # the home, the corpus and the questions on the small disk
    calibration.give_measured(world.home)  # MiniLM's rate as this worker measured it, not timed again here

    first = world.run()
    line = the_full_disk_line(first, world.home)
    assert "about " in line and "MB needed" in line
    statuses = run_statuses(world.dagster_home)
    assert "STARTED" not in statuses and "FAILURE" in statuses, statuses  # never left as if still running

    resize(small_disk, 300)
    second = world.run_here()  # a run after space was freed: in this process (the full disk's runs are subprocesses)
    assert second.returncode == 0 and no_traceback(second), output(second)
    assert world.leaderboard() == clean_board

    # the disk fills up again: the next run stops before writing, and what was stored stays readable
    filler = fill(small_disk, 4 << 20)
    third = world.run()
    the_full_disk_line(third, world.home)
    shown = world.here("leaderboard")
    assert shown.returncode == 0 and no_traceback(shown) and "fixed_size" in shown.stdout, output(shown)
    assert world.leaderboard() == clean_board
    assert "STARTED" not in run_statuses(world.dagster_home)

    # no byte left: even Dagster's own database refuses the write, which SQLite calls an I/O error
    filler.unlink()
    filler = fill(small_disk, 0)
    fourth = world.run()
    assert fourth.returncode == 1 and no_traceback(fourth), output(fourth)
    lines = fourth.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"chunkbench run: error: not enough free space in {world.home}")
    assert lines[0].endswith(
        "free some space there (or move the chunkbench state to a larger disk) and run again: "
        "what was stored before is unchanged"
    ), output(fourth)
    filler.unlink()
    assert world.leaderboard() == clean_board


# -- damaged state files --------------------------------------------------------------------------------
def table_file(world: World, table: str) -> Path:
    files = sorted(p for p in (world.results / "tables" / table).glob("*.parquet") if not p.name.startswith("_"))
    assert files, f"no {table} file"
    return files[0]


def collection(world: World) -> Path:
    return world.results / "qdrant" / collection_name(STRATEGY, MODEL)


def record_file(world: World) -> Path:
    manifest = json.loads((world.results / "parsed" / "manifest.json").read_text(encoding="utf-8"))
    entry = next(e for e in manifest["documents"] if e["document"] == "rivers.md")
    return world.results / "parsed" / entry["record"]


def embedding_cache(world: World) -> Path:
    path = world.home / "embedding_cache.sqlite"
    checkpoint(path)  # the WAL into the file, as a closed cache is: the damage hits what is read
    return path


#: derived files: the next run repairs them and gives the clean run's leaderboard
DERIVED = {
    "experiment metrics truncated": damage(truncate, lambda w: table_file(w, "experiment_runs")),
    "run scores truncated": damage(truncate, lambda w: table_file(w, "run_scores")),
    "chunks truncated": damage(truncate, lambda w: table_file(w, "chunks")),
    "question rows garbled inside": damage(garble, lambda w: table_file(w, "question_rows")),
    "collections table truncated": damage(truncate, lambda w: table_file(w, "collections")),
    "documents table garbled footer": damage(lambda p: garble(p, 0.9, 1.0, 8), lambda w: table_file(w, "documents")),
    "views file garbled": damage(lambda p: garble(p, 0.0, 1.0, 256), lambda w: w.results / "chunkbench.duckdb"),
    "embedding cache garbled": damage(lambda p: garble_sqlite_pages(p, at_least=8192), embedding_cache),
    "collection vectors truncated": damage(
        lambda p: truncate(p, 0.0001),
        lambda w: next(collection(w).glob("segments/*/vector_storage/vectors/chunk_0.mmap")),
    ),
    "collection id mappings garbled": damage(
        lambda p: garble(p, 0.0, 1.0, 2000),
        lambda w: next(collection(w).glob("segments/*/mutable_id_tracker.mappings")),
    ),
    "parsed record truncated": damage(truncate, record_file),
}
#: files the run writes again (atomically) before anything reads them: the damaged file is simply replaced
REWRITTEN_BEFORE_READ = {"chunks truncated", "collections table truncated", "documents table garbled footer"}
#: source files: never moved or changed; the run names them and the fix
SOURCE = {
    "corpus document truncated": damage(lambda p: truncate(p, 0.3), lambda w: w.corpus / WORD_DOCUMENT),
    "question file truncated": damage(lambda p: truncate(p, 0.6), lambda w: w.questions / "set.json"),
}
#: the fix each source case's line gives
SOURCE_FIX = {
    "corpus document truncated": "fix or replace the file, or remove it from the corpus",
    "question file truncated": "fix the file (chunkbench questions check says what is wrong)",
}
CASES = {**DERIVED, **SOURCE}
#: the copies the derived cases share: never two files of one store (the collection, a table, a cache) in a copy
DERIVED_COPIES = (
    (
        "experiment metrics truncated",
        "run scores truncated",
        "question rows garbled inside",
        "views file garbled",
        "embedding cache garbled",
        "collection vectors truncated",
    ),
    (
        "chunks truncated",
        "collections table truncated",
        "documents table garbled footer",
        "collection id mappings garbled",
        "parsed record truncated",
    ),
)


def test_each_derived_case_is_damaged_in_exactly_one_copy():
    cases = [case for copy in DERIVED_COPIES for case in copy]
    assert sorted(cases) == sorted(DERIVED), cases
    for copy in DERIVED_COPIES:
        assert not {"collection vectors truncated", "collection id mappings garbled"} <= set(copy)


@pytest.fixture(scope="module")
def damaged_runs(clean, tmp_path_factory):
    """{case: (the copied world, the damaged file, its bytes after the damage, the next run)}: one copy and one
    run (in this process) per entry of DERIVED_COPIES and per source case, one after the other."""
    pristine, _ = clean
    runs = {}
    for cases in (*DERIVED_COPIES, *((case,) for case in sorted(SOURCE))):
        world = pristine.copy(tmp_path_factory.mktemp(cases[0].replace(" ", "-")) / "world")
        damaged = {case: CASES[case](world) for case in cases}
        assert len(set(damaged.values())) == len(cases), damaged  # a file of its own for each case
        before = {case: path.read_bytes() for case, path in damaged.items()}
        result = world.run_here()
        runs.update({case: (world, damaged[case], before[case], result) for case in cases})
    return runs


@pytest.mark.parametrize("case", sorted(DERIVED))
def test_a_damaged_derived_file_is_repaired_by_the_next_run_with_the_clean_leaderboard(case, clean, damaged_runs):
    _, clean_board = clean
    world, damaged, _, result = damaged_runs[case]
    assert result.returncode == 0, output(result)
    assert no_traceback(result), output(result)
    assert world.leaderboard() == clean_board
    if case not in REWRITTEN_BEFORE_READ:  # moved aside, with a warning naming it
        named = collection(world) if damaged.is_relative_to(collection(world)) else damaged
        warned = [line for line in result.stderr.splitlines() if str(named) in line]
        assert warned and "moved aside" in warned[0], output(result)


@pytest.mark.parametrize("case", sorted(SOURCE))
def test_a_damaged_source_file_is_named_in_one_line_with_the_fix_and_never_changed(case, damaged_runs):
    world, damaged, before, result = damaged_runs[case]
    assert result.returncode == 1, output(result)
    assert no_traceback(result), output(result)
    named = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if str(damaged) in line and line.endswith(SOURCE_FIX[case])
    ]
    assert named, output(result)
    assert damaged.read_bytes() == before  # a source file is never moved or changed
    assert not [p for p in damaged.parent.iterdir() if ".corrupt-" in p.name]


def test_doctor_names_damaged_files_and_repairs_them_and_the_leaderboard_reads_a_damaged_views_file(clean, tmp_path):
    pristine, clean_board = clean
    world = pristine.copy(tmp_path / "world")
    views = DERIVED["views file garbled"](world)
    table = DERIVED["experiment metrics truncated"](world)

    shown = world.here("leaderboard")  # never a DuckDB traceback: the damaged table is moved aside, with a warning
    assert shown.returncode == 0 and no_traceback(shown), output(shown)
    assert str(table) in shown.stderr and "moved aside" in shown.stderr, output(shown)

    found = world.here("doctor")
    assert found.returncode == 1 and no_traceback(found), output(found)
    assert str(views) in found.stdout and "to repair them: chunkbench doctor --repair" in found.stdout, output(found)
    repaired = world.here("doctor", "--repair")
    assert repaired.returncode == 0 and no_traceback(repaired), output(repaired)
    assert "repaired" in repaired.stdout, output(repaired)
    again = world.here("doctor")
    assert again.returncode == 0 and "no problem found" in again.stdout, output(again)
    rerun = world.run_here()
    assert rerun.returncode == 0 and no_traceback(rerun), output(rerun)
    assert world.leaderboard() == clean_board
