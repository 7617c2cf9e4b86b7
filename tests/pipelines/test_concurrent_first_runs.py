"""Three `chunkbench run` started at once on an empty CHUNKBENCH_HOME: the Dagster instance, the results
folder and the caches are made once, under a lock; the others wait (and say so), then all three finish,
and the instance is sound afterwards (a fourth run works, each database has one schema version)."""

from __future__ import annotations

import pytest

from chunkbench_core.storage.locks import setup_lock

from .support.small_benchmark import alembic_rows, make_world, no_traceback, output, run_statuses

pytestmark = pytest.mark.slow


def test_three_runs_at_once_on_an_empty_home_all_finish_and_leave_a_sound_instance(tmp_path):
    world = make_world(tmp_path / "world")
    # the lock is held here for a moment first, so every run must wait for it (and say so) before it sets up
    with setup_lock(world.home, "the test"):
        runs = [world.start("run", "--strategy", "fixed_size", "--corpus-model", "all-minilm-l6-v2") for _ in range(3)]
        waiting = [run.stderr.readline() for run in runs]  # each says so after 2 s, before anything else
    outputs = [run.communicate(timeout=600) for run in runs]
    for run, line, (stdout, stderr) in zip(runs, waiting, outputs):
        shown = f"exit {run.returncode}\n{line}{stderr}\n{stdout}"
        assert line.startswith("waiting for another chunkbench process to finish setting up "), shown
        assert str(world.home) in line, shown
        assert run.returncode == 0, shown
        assert "Traceback" not in line + stderr + stdout, shown
        assert "fixed_size" in stdout and "all-minilm-l6-v2" in stdout, shown

    versions = alembic_rows(world.dagster_home)
    assert versions and set(versions.values()) == {1}, versions  # one schema version per database, none doubled
    assert "schedules.db" in " ".join(versions), versions
    board = world.leaderboard()
    assert [(r[1], r[2], r[3]) for r in board] == [("fixed_size", "all-minilm-l6-v2", 4)], board

    fourth = world.run_here()  # in this process: the point is the instance the three left, not a fourth start-up
    assert fourth.returncode == 0 and no_traceback(fourth), output(fourth)
    assert "waiting for another" not in fourth.stderr  # nobody holds the lock now: no wait
    assert world.leaderboard() == board
    statuses = run_statuses(world.dagster_home)
    assert statuses and set(statuses) == {"SUCCESS"}, statuses  # 4 runs x (documents, partition, reports)
    assert len(statuses) == 12, statuses
