"""A home written by the oldest layout (one set of results at the top level of CHUNKBENCH_HOME) is not ignored
without a word: every command says in one line where the results are and how to bring them along, and
`chunkbench --benchmark NAME doctor --repair` moves them into that benchmark, whose leaderboard is then theirs."""

from __future__ import annotations

import shutil

import pytest

from tests.pipelines.support.small_benchmark import make_world

OLDEST = ("chunkbench.duckdb", "tables", "parsed", "reports")


@pytest.mark.e2e  # a whole `chunkbench run` (make test-fast leaves it out)
def test_results_of_the_oldest_layout_are_named_then_brought_along_whole(tmp_path):
    world = make_world(tmp_path / "world")
    assert world.run_here().returncode == 0
    before = world.here("leaderboard")
    # the oldest layout: the results at the top level of the home, no benchmarks folder
    for name in OLDEST:
        shutil.move(str(world.results / name), str(world.home / name))
    shutil.move(str(world.results / "qdrant"), str(world.home / "qdrant"))
    shutil.rmtree(world.home / "benchmarks")

    seen = world.here("leaderboard")
    [line] = [x for x in seen.stderr.splitlines() if x.strip()]
    assert line.startswith(
        f"chunkbench: results of an earlier chunkbench are at the top level of {world.home} "
        "(chunkbench.duckdb, tables/, parsed/, reports/, qdrant/), where this version no longer "
        "reads them; to bring them into benchmark 'tiny'"
    )
    assert line.endswith("chunkbench --benchmark tiny doctor --repair (or --benchmark ANOTHER_NAME)")

    repaired = world.here("doctor", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert repaired.stdout.count("brought along: ") == 5
    after = world.here("leaderboard")
    assert after.stderr.strip() == "" and after.stdout == before.stdout
    assert not any((world.home / name).exists() for name in (*OLDEST, "qdrant"))
    assert world.here("doctor").returncode == 0
