"""How the suite is split and run: the markers of make test-fast, the workers of make test, one home per worker,
and the Dagster patch kept to the pipeline tests."""

import os
import re
import tempfile
import tomllib
from pathlib import Path

from tests import conftest

ROOT = Path(__file__).resolve().parents[1]
FAST_LEAVES_OUT = {"slow", "e2e", "browser", "tools"}


def _target(name: str) -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return re.search(rf"^{name}: install\n\t(.*)$", makefile, re.M).group(1)


def test_every_marker_given_by_a_fixture_is_registered_and_left_out_of_make_test_fast():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    registered = {line.split(":")[0] for line in config["markers"]}
    given = {marker for markers in conftest.FIXTURE_MARKERS.values() for marker in markers}
    assert given <= registered and FAST_LEAVES_OUT <= registered
    fast = _target("test-fast")
    expression = re.search(r'-m "([^"]+)"', fast).group(1)
    assert expression == " and ".join(f"not {m}" for m in ("slow", "e2e", "browser", "tools"))
    assert set(conftest.SHARED_FIXTURES) <= set(conftest.FIXTURE_MARKERS)  # a shared server is never in the fast loop


def test_make_test_runs_on_workers_that_keep_shared_servers_together():
    for target in ("test", "test-fast"):
        command = _target(target)
        assert "-n $(TEST_WORKERS)" in command and "--dist loadgroup" in command, target
        assert "--no-loadscope-reorder" in command, target  # the server groups (sorted first) start first


def test_this_process_has_a_throwaway_home_of_its_own():
    home = Path(os.environ["CHUNKBENCH_HOME"])
    assert home.is_dir() and home.name.startswith("chunkbench-test-home-")
    assert home.parent == Path(tempfile.gettempdir()) and ROOT not in home.parents
    assert "DAGSTER_HOME" not in os.environ


def test_dagster_internals_are_patched_only_in_the_pipeline_tests():
    from dagster._core.storage.defs_state.base import DefsStateStorage

    assert DefsStateStorage.get.__func__.__name__ == "get"  # Dagster's own here, outside tests/pipelines
    shared = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert "from dagster" not in shared and "import dagster" not in shared
