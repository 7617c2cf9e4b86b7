"""Shared test helpers.

``require_tool`` skips a test when an external tool (soffice, chromium, a local
LLM server, ...) is missing on a developer laptop. CI sets
``CHUNKBENCH_REQUIRE_TOOLS=1`` (see .ci/run), which turns every such skip into a
failure, so nothing is silently skipped in CI.
"""

from __future__ import annotations

import os
import shutil

import pytest

STRICT_TOOLS = os.environ.get("CHUNKBENCH_REQUIRE_TOOLS", "") not in ("", "0", "false")


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


@pytest.fixture(autouse=True)
def no_leftover_dagster_state_storage():
    """Each test starts without a current Dagster defs-state storage.

    Entering an instance (``with DagsterInstance...() as instance``) sets the current storage, and
    Dagster 1.13's ``__exit__`` disposes the instance without unsetting it; once that instance is
    garbage-collected, the next ``materialize`` in the same process fails with "Attempted to resolve
    undefined DagsterInstance weakref" (which test hits it depends on the order and the collector).
    """
    from dagster._core.storage.defs_state.base import _current_storage

    token = _current_storage.set(None)
    yield
    _current_storage.reset(token)
