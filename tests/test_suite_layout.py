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
    return re.search(rf"^{name}: install( lint)?\n\t(.*)$", makefile, re.M).group(2)


def _inner_pytest(folder: Path, files: dict[str, str], *options: str):
    """A pytest run of its own in ``folder`` (with ``files`` written there first) that imports this checkout's
    ``tests`` package; the outer run's options (``PYTEST_ADDOPTS``) are not this one's."""
    import subprocess
    import sys

    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "."],
        cwd=folder,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


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
        # timed and recorded for the docs when it passes; pytest itself under eatmydata when installed
        assert command.startswith("$(RECORD_TIME) "), target
        assert "-- $(NO_FSYNC) $(BIN)/python -m pytest " in command, target


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


class _Item:
    """What tests/conftest.py reads of a collected test: its node id and its markers."""

    def __init__(self, nodeid: str, *markers):
        self.nodeid, self.markers = nodeid, {m.name: m for m in markers}

    def get_closest_marker(self, name):
        return self.markers.get(name)


def test_workers_start_with_the_longest_chains_and_end_with_the_quick_modules():
    import pytest

    shared = _Item("tests/pipelines/test_ui.py::test_a", pytest.mark.xdist_group("dagster_dev").mark)
    faults = _Item(
        "tests/pipelines/test_faults_cli.py::test_a", pytest.mark.xdist_group("faults_cli").mark, pytest.mark.slow.mark
    )
    slow = _Item("tests/core/test_x.py::test_a", pytest.mark.slow.mark)
    quick = _Item("tests/core/test_x.py::test_b")
    alone = _Item("tests/core/test_y.py::test_a")
    ranks = [
        conftest._rank(shared, ["dagster_dev"]),
        conftest._rank(faults, []),
        conftest._rank(slow, []),
        conftest._rank(alone, []),
    ]
    assert ranks == sorted(ranks) and len(set(ranks)) == 4
    assert conftest._scope(faults) == "group faults_cli" and conftest._scope(quick) == "tests/core/test_x.py"
    assert conftest._scope(slow) == conftest._scope(quick)  # one unit: a module moves as a whole


def test_a_shared_server_stops_after_the_last_test_that_uses_it_and_starts_again_if_asked(tmp_path):
    done = _inner_pytest(
        tmp_path,
        {
            "conftest.py": "import pytest\n"
            "from tests.conftest import pytest_runtest_teardown  # noqa: F401 - the hook under test\n"
            "EVENTS = []\n"
            "@pytest.fixture(scope='session')\n"
            "def postgres_server():\n"
            "    EVENTS.append('start')\n"
            "    yield\n"
            "    EVENTS.append('stop')\n",
            "test_order.py": "from conftest import EVENTS\n"
            "def test_1(postgres_server): assert EVENTS == ['start']\n"
            "def test_2(postgres_server): assert EVENTS == ['start']\n"
            "def test_3(): assert EVENTS == ['start', 'stop']\n"
            "def test_4(postgres_server): assert EVENTS == ['start', 'stop', 'start']\n",
        },
        "-p",
        "no:xdist",
    )
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout + done.stderr


def test_a_module_fixture_is_built_once_when_its_module_is_spread_over_three_workers(tmp_path):
    """--dist loadgroup hands ungrouped tests out one by one; a module whose tests use a module fixture is grouped
    by the conftest, so three workers build it once (without the hook, more than once: the control)."""
    tests = {
        "test_built.py": "import os, pytest\n"
        "@pytest.fixture(scope='module')\n"
        "def clean_run():\n"
        "    with open('builds.txt', 'a') as f:\n"
        "        f.write(os.environ.get('PYTEST_XDIST_WORKER', '-') + '\\n')\n"
        + "".join(f"def test_{i}(clean_run): pass\n" for i in range(9)),
        "test_quick.py": "".join(f"def test_{i}(): pass\n" for i in range(9)),
    }
    builds = {}
    for hook in ("from tests.conftest import pytest_collection_modifyitems  # noqa: F401 - the hook under test\n", ""):
        (tmp_path / "builds.txt").unlink(missing_ok=True)
        done = _inner_pytest(tmp_path, {**tests, "conftest.py": hook}, "-n", "3", "--dist", "loadgroup")
        assert done.returncode == 0 and "18 passed" in done.stdout, done.stdout + done.stderr
        builds[bool(hook)] = (tmp_path / "builds.txt").read_text(encoding="utf-8").split()
    assert len(builds[True]) == 1, builds
    assert len(builds[False]) > 1, builds  # the control: without the grouping, more than one worker built it


def test_make_test_lints_and_type_checks_first():
    """The linter and the type checker run before the suite (make lint), with their settings in pyproject.toml."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: install lint$", makefile, re.M)
    lint = re.search(r"^lint: install\n((?:\t.*\n)+)", makefile, re.M).group(1)
    assert "ruff check ." in lint and "mypy" in lint
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "[tool.ruff.lint]" in pyproject and "[tool.mypy]" in pyproject


def _python_files():
    for folder in ("chunkbench_core", "chunkbench_pipelines", "tests", "benchmarks", "scripts"):
        yield from (ROOT / folder).rglob("*.py")


def test_every_silenced_finding_says_why_on_its_line():
    """A ``# noqa`` or ``# type: ignore`` with nothing after its codes leaves the next reader to guess whether the
    finding was wrong or the code is; each says why (``# noqa: F401  (re-exported)``)."""
    bare = re.compile(r"#\s*(noqa|type:\s*ignore)(\[[^]]*\]|:\s*[A-Z0-9, ]+)?\s*$")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _python_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if bare.search(line)
    ]
    assert found == []


def test_no_comment_cites_a_design_document_or_an_issue():
    """Comments and docstrings give the reason itself: a reader of the code cannot open a design document's
    section or an issue's item."""
    citation = re.compile(r"\bADR-?\d+|\bLLD\b|\bHLD\b|\b[Ii]ssue #?\d+|\bbrief item\b|\bdesign card\b")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _python_files()
        if path.name != "test_suite_layout.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if citation.search(line)
    ]
    assert found == []


def test_the_timeline_names_each_test_once_with_its_worker_and_the_script_reads_it(tmp_path):
    """make test writes one line per test (--timeline); scripts/test_timeline.py tells from it which worker ran
    what and when."""
    import importlib.util
    import json

    assert "--timeline $(TIMELINE)" in _target("test")
    hooks = "pytest_addoption, pytest_configure, pytest_runtest_protocol, pytest_unconfigure"
    done = _inner_pytest(
        tmp_path,
        {
            "conftest.py": f"from tests.conftest import {hooks}  # noqa: F401 - the hooks under test\n",
            "test_a.py": "import pytest, time\n"
            "@pytest.mark.xdist_group('slow_pair')\n"
            "def test_slow(): time.sleep(0.3)\n"
            "@pytest.mark.xdist_group('slow_pair')\n"
            "def test_slow_too(): sum(range(2_000_000))\n" + "".join(f"def test_{i}(): pass\n" for i in range(6)),
        },
        "-n",
        "2",
        "--dist",
        "loadgroup",
        "--timeline",
        "out/timeline.jsonl",
    )
    assert done.returncode == 0 and "8 passed" in done.stdout, done.stdout + done.stderr
    rows = [json.loads(line) for line in (tmp_path / "out" / "timeline.jsonl").read_text().splitlines()]
    assert sorted(r["test"] for r in rows) == sorted(
        ["test_a.py::test_slow@slow_pair", "test_a.py::test_slow_too@slow_pair"]
        + [f"test_a.py::test_{i}" for i in range(6)]
    )
    assert {r["worker"] for r in rows} <= {"gw0", "gw1"}
    slow = {r["test"]: r for r in rows if "slow" in r["test"]}
    assert len({r["worker"] for r in slow.values()}) == 1  # a group runs on one worker
    first = slow["test_a.py::test_slow@slow_pair"]
    assert first["end"] - first["start"] >= 0.3 and first["cpu"] < 0.3  # asleep: wall time, little CPU
    assert all(r["start"] <= r["end"] and r["cpu"] >= 0 for r in rows)

    spec = importlib.util.spec_from_file_location("test_timeline", ROOT / "scripts" / "test_timeline.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.unit("test_a.py::test_slow@slow_pair") == "group slow_pair"
    assert script.unit("test_a.py::test_x[a@b]") == "test_a.py"  # an @ inside the parameters names no group
    text = script.report(script.read(tmp_path / "out" / "timeline.jsonl"))
    assert text.startswith("8 tests in ") and "group slow_pair" in text
    assert sum(1 for line in text.splitlines() if line.startswith(("gw0", "gw1"))) == len({r["worker"] for r in rows})
