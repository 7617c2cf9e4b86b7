"""The reports' JavaScript and CSS are real files of the package, linted by ESLint and inlined into every report.

ESLint (pinned in .tools/package.json) is installed by scripts/install-test-tools.sh (``make tools``) into
.tools/node_modules: without it the lint tests skip on a laptop and fail in CI (tests/conftest.py).
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from chunkbench_core.reporting import ReportPaths
from chunkbench_core.reporting.webfiles import read
from tests.conftest import require_tool

ROOT = Path(__file__).resolve().parents[3]
STATIC = ROOT / "chunkbench_core" / "reporting" / "static"
#: every folder of the package that holds page scripts (the reports', the review page of located evidence)
SCRIPT_FOLDERS = (STATIC, ROOT / "chunkbench_core" / "evaluation" / "review_page")
TOOLS = ROOT / ".tools"
ESLINT = TOOLS / "node_modules" / ".bin" / "eslint"
CONFIG = TOOLS / "eslint.config.mjs"


def eslint(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    require_tool(
        ESLINT.exists() and shutil.which("node") is not None,
        "eslint in .tools/node_modules (scripts/install-test-tools.sh installs it with npm ci)",
    )
    return subprocess.run(
        [str(ESLINT), "--config", str(CONFIG), "--max-warnings", "0", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.tools
def test_the_page_scripts_pass_eslint() -> None:
    assert sorted(p.name for p in STATIC.glob("*.js")) == ["board.js", "by_group.js", "dom.js", "inspector.js"]
    scripts = {p for folder in SCRIPT_FOLDERS for p in folder.glob("*.js")}
    assert {p for p in (ROOT / "chunkbench_core").rglob("*.js")} == scripts  # no page script left out
    done = eslint("--format", "json", *(str(folder) for folder in SCRIPT_FOLDERS))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    linted = {Path(r["filePath"]) for r in json.loads(done.stdout)}
    assert linted == scripts  # every file was linted, none ignored


@pytest.mark.tools
@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ('(function () { "use strict"; document.body.innerHTML = "<b>x</b>"; })();', "no-restricted-properties"),
        ('(function () { "use strict"; undefinedHelper(); })();', "no-undef"),
        ('(function () { "use strict"; var unused = 1; })();', "no-unused-vars"),
        ('(function () { "use strict"; if (chunkbench.uniq([]).length == 0) { return; } })();', "eqeqeq"),
        ("var leaked = 1;", "no-implicit-globals"),
    ],
)
def test_eslint_catches_what_the_pages_must_not_do(source: str, rule: str) -> None:
    done = eslint("--stdin", "--stdin-filename", str(STATIC / "probe.js"), stdin=source)
    assert done.returncode == 1 and rule in done.stdout, done.stdout + done.stderr


def test_every_report_inlines_the_shared_helpers_and_its_own_files(any_reports: ReportPaths) -> None:
    pages = {
        "managerial": ("by_group.js", "by_group.css"),
        "technical": ("inspector.js", "inspector.css"),
        "decision_board": ("board.js", "board.css"),
    }
    for name, path in any_reports.as_dict().items():
        html = path.read_text(encoding="utf-8")
        script, stylesheet = pages[name]
        if name == "decision_board" and "<script>" not in html:
            continue  # no run yet: nothing to draw
        assert f"<script>{read('dom.js')}</script><script>{read(script)}</script>" in html, name
        assert read("report.css") in html and read(stylesheet) in html, name
        assert 'src="http' not in html and "<link" not in html  # nothing loaded from elsewhere


def test_the_static_files_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["chunkbench_core"]
    for path in STATIC.iterdir():
        relative = path.relative_to(ROOT / "chunkbench_core").as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative
