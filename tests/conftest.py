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
def no_leftover_dagster_state_storage(monkeypatch):
    """Each test starts without a current Dagster defs-state storage, and never sees a dangling one.

    The current storage is a context variable set when an instance is entered. In the full suite, a
    storage whose instance had already been garbage-collected was still current when a later
    ``materialize`` loaded its definitions, which then failed with "Attempted to resolve undefined
    DagsterInstance weakref" (twice in CI, never when the test ran alone). A storage without a live
    instance counts as none here, which is what Dagster does when no instance was entered.
    """
    from dagster._core.storage.defs_state.base import DefsStateStorage, _current_storage

    def current(cls):
        storage = _current_storage.get()
        weakref = getattr(storage, "_instance_weakref", None) if storage is not None else None
        return storage if weakref is not None and weakref() is not None else None

    monkeypatch.setattr(DefsStateStorage, "get", classmethod(current))
    token = _current_storage.set(None)
    yield
    _current_storage.reset(token)
