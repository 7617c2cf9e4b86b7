"""The patch of Dagster internals in tests/pipelines/conftest.py fails loudly on another Dagster release."""

import dagster
import pytest
from dagster._core.storage.defs_state.base import DefsStateStorage

from .conftest import PATCHED_DAGSTER_VERSION, check_patched_dagster_version


def test_the_patch_guard_fails_on_another_dagster_release():
    with pytest.raises(pytest.fail.Exception) as failed:
        check_patched_dagster_version("1.14.0")
    message = str(failed.value)
    assert PATCHED_DAGSTER_VERSION in message and "1.14.0" in message and "PATCHED_DAGSTER_VERSION" in message


def test_the_installed_dagster_is_the_patched_release():
    assert dagster.__version__ == PATCHED_DAGSTER_VERSION
    check_patched_dagster_version()


def test_the_patch_is_in_force_in_pipeline_tests():
    assert DefsStateStorage.get.__func__.__name__ == "current"  # the conftest's replacement, not Dagster's own
    assert DefsStateStorage.get() is None


def test_the_tests_backfill_daemon_turns_every_3_s_and_dagster_still_reads_the_pause_at_each_turn():
    """The quick-backfills folder (support/quick_backfills) sets Dagster's daemon pause in the processes of the tests'
    dagster dev and cluster; it only works while the backfill loop reads that constant at each turn."""
    import inspect
    import os
    import subprocess
    import sys

    from dagster._daemon import backfill, controller

    from .support.dagster_server import with_quick_backfills
    from .support.quick_backfills.sitecustomize import BACKFILL_INTERVAL_SECONDS

    assert controller.DEFAULT_DAEMON_INTERVAL_SECONDS == 30  # this process: Dagster's own
    loop = inspect.getsource(backfill.execute_backfill_iteration_loop)
    assert "from dagster._daemon.controller import DEFAULT_DAEMON_INTERVAL_SECONDS" in loop  # read at each call
    assert "DEFAULT_DAEMON_INTERVAL_SECONDS - loop_duration" in loop  # ... as the pause between turns
    probe = "import dagster._daemon.controller as c; print(c.DEFAULT_DAEMON_INTERVAL_SECONDS)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    patched = subprocess.run(
        [sys.executable, "-c", probe], env=with_quick_backfills(env), capture_output=True, text=True, check=True
    )
    plain = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert (patched.stdout.strip(), plain.stdout.strip()) == (str(BACKFILL_INTERVAL_SECONDS), "30")
    assert patched.stderr == "", patched.stderr  # the start-up hook raised nothing
