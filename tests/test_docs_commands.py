"""Every command shown in README.md and docs/*.md runs, and prints what the page shows.

The pages mark the commands to run with fenced ``console`` blocks (see ``scripts/doc_commands.py`` for the
convention). Each block runs in its own scratch copy of a clone's layout (the repository's folders linked,
``questions/`` copied, ``.chunkbench`` the test's home), one bash session per block so that ``cd`` and
``export`` carry over between its commands, with a throwaway ``CHUNKBENCH_HOME`` and none of the variables
that would reach a remote service: the offline defaults. Its ``chunkbench`` commands are run by the test process
(a stand-in on the session's ``PATH`` hands them over, see tests/support/command_stand_in.py), each with the
environment, folder and output a process would have: starting Python and Dagster again for each was most of the
module's CPU time. Blocks whose commands read finished results share
one run of the smallest benchmark (fixed_size × all-minilm-l6-v2 on the sample), made once for the module;
they are marked slow and e2e, as are the blocks whose own commands run the graph (``chunkbench run``,
``chunkbench sweep``). The other tests check the README's size, that every relative link of the pages
resolves (anchors included), that every fence says what it holds, and that the reference pages name every
command and every environment variable the code has.
"""

from __future__ import annotations

import doctest
import importlib.util
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.support import command_stand_in

ROOT = Path(__file__).resolve().parent.parent
#: a newcomer reads the README in a few minutes: reference text belongs in docs/
README_LIMIT_BYTES = 8_000
#: the first word after `chunkbench` of the commands that read a finished run
READS_RESULTS = {"ask", "leaderboard", "report", "runs", "collections"}
#: the first word after `chunkbench` of the commands that run the asset graph
MATERIALIZES = {"run", "sweep"}
#: one block's commands together may take this long
BLOCK_TIMEOUT_S = 900


def _script():
    spec = importlib.util.spec_from_file_location("doc_commands", ROOT / "scripts" / "doc_commands.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("doc_commands", module)
    spec.loader.exec_module(module)
    return module


DOCS = _script()


def _reads_results(block) -> bool:
    for command in block.commands:
        words = command.text.split()
        if "chunkbench.duckdb" in command.text or ".chunkbench/benchmarks" in command.text:
            return True
        if "chunkbench" in words:
            rest = [w for w in words[words.index("chunkbench") + 1 :] if not w.startswith("-")]
            if rest and rest[0] in READS_RESULTS and "--help" not in words:
                return True
    return False


def _materializes(block) -> bool:
    """A command of the block materializes the asset graph: `chunkbench run` or `chunkbench sweep`."""
    for command in block.commands:
        words = command.text.split()
        if "chunkbench" in words and "--help" not in words:
            rest = [w for w in words[words.index("chunkbench") + 1 :] if not w.startswith("-")]
            if rest and rest[0] in MATERIALIZES:
                return True
    return False


def _block_params():
    params = []
    for page in DOCS.pages():
        for block in DOCS.blocks(page):
            marks = []
            if _reads_results(block):
                # the shared run materializes the asset graph; one worker makes it once (make test: --dist loadgroup)
                marks = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.xdist_group("docs_finished_run")]
            elif _materializes(block):
                # the block's own commands run the asset graph (a benchmark run, a sweep job)
                marks = [pytest.mark.slow, pytest.mark.e2e]
            elif any("reproduce" in c.text for c in block.commands):
                marks = [pytest.mark.slow]
            params.append(pytest.param(block, id=block.name, marks=marks))
    return params


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """The module's home, with the fused MiniLM graph a first run keeps (what the pages show is not that first
    load: every block's processes would rewrite the graph otherwise, about 1 s of CPU each)."""
    from tests.support import calibration

    folder = tmp_path_factory.mktemp("docs-home")
    calibration.give_graph(folder)
    return folder


def _environment(home: Path) -> dict[str, str]:
    env = DOCS.help_environment()
    env["CHUNKBENCH_HOME"] = str(home)
    env["HOME"] = str(home.parent)  # nothing of the user's own configuration
    return env


def _workspace(home: Path, tmp_path: Path) -> Path:
    """A clone's layout: the repository's entries linked, questions/ copied (commands write into it),
    .chunkbench the test's home."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for entry in ROOT.iterdir():
        if entry.name in (".git", ".venv", ".chunkbench", "questions") or entry.name.startswith(".pytest"):
            continue
        (clone / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "questions", clone / "questions")
    (clone / ".chunkbench").symlink_to(home)
    return clone


@pytest.fixture(scope="module")
def finished_run(home) -> Path:
    """One run of the smallest benchmark in the module's home, for the blocks that read results (given this
    worker's measured MiniLM rate: timing the engine is not what these pages show)."""
    from tests.pipelines.support.cli import chunkbench
    from tests.support import calibration

    calibration.give_measured(home)
    # in this process, as the blocks' commands are
    done = chunkbench(
        ["run", "--strategy", "fixed_size", "--corpus-model", "all-minilm-l6-v2"], _environment(home), cwd=home
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return home


def _run_block(block, home: Path, cwd: Path) -> list[tuple[int, str, str]]:
    """Each command's exit status, standard output and standard error, in one bash session."""
    out = cwd.parent / "outputs"
    out.mkdir()
    script = ["cd " + _quote(str(cwd))]
    for i, command in enumerate(block.commands):
        script.append(
            f"{{\n{command.text}\n}} </dev/null >{_quote(str(out / f'{i}.out'))} 2>{_quote(str(out / f'{i}.err'))}"
        )
        script.append(f"echo $? >{_quote(str(out / f'{i}.status'))}")
    # the block's `chunkbench` commands are served by this process (tests/support/command_stand_in.py)
    done = command_stand_in.run_script(["bash", "-c", "\n".join(script)], _environment(home), BLOCK_TIMEOUT_S)
    assert done.returncode == 0 or (out / f"{len(block.commands) - 1}.status").exists(), done.stderr
    results = []
    for i in range(len(block.commands)):
        status = (out / f"{i}.status").read_text().strip()
        results.append(
            (
                int(status),
                *((out / f"{i}.{kind}").read_text(encoding="utf-8", errors="replace") for kind in ("out", "err")),
            )
        )
    return results


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@pytest.mark.parametrize("block", _block_params())
def test_every_command_shown_runs_and_prints_what_the_page_shows(block, home, tmp_path, request):
    if _reads_results(block):
        request.getfixturevalue("finished_run")
    cwd = _workspace(home, tmp_path)
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    for command, (status, stdout, stderr) in zip(block.commands, _run_block(block, home, cwd)):
        where = f"{block.page.relative_to(ROOT)}:{command.line}: $ {command.text}"
        assert status == 0, f"{where}\nexit status {status}\n{stdout[-3000:]}\n{stderr[-3000:]}"
        # what the page shows is the standard output, or both streams (their interleaving is not kept)
        output = stdout
        if command.expected and not checker.check_output(command.expected, stdout, flags):
            output = (
                stdout + stderr if checker.check_output(command.expected, stdout + stderr, flags) else stderr + stdout
            )
        if command.expected:
            assert checker.check_output(command.expected, output, flags), (
                f"{where}\nprinted something else than the page shows"
                + (
                    " (python scripts/doc_commands.py --write-help rewrites help texts)"
                    if DOCS.is_help(command)
                    else ""
                )
                + ":\n"
                + checker.output_difference(doctest.Example(command.text, command.expected), output, flags)
            )


def test_the_readme_is_short_enough_to_read_in_ten_minutes():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= README_LIMIT_BYTES, f"README.md is {size:,} bytes; move reference text to docs/"


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    inside = {f.line + j for f in DOCS.fences(text) for j in range(len(f.body) + 2)}
    return {
        _slug(m.group(2))
        for n, line in enumerate(text.splitlines(), 1)
        if n not in inside and (m := re.match(r"^(#{1,6}) (.*)$", line))
    }


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_every_relative_link_of_the_pages_resolves_with_its_anchor():
    broken = []
    for page in DOCS.pages():
        text = page.read_text(encoding="utf-8")
        fenced = "\n".join("\n".join(f.body) for f in DOCS.fences(text))
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target) or target in fenced:
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_fence_says_what_it_holds_and_every_console_block_starts_with_a_command():
    unmarked = []
    for page in DOCS.pages():
        for fence in DOCS.fences(page.read_text(encoding="utf-8")):
            if not fence.info:
                unmarked.append(f"{page.relative_to(ROOT)}:{fence.line}")
            elif fence.info == "console":
                assert DOCS.commands(fence), f"{page.relative_to(ROOT)}:{fence.line}: a console block without a command"
    assert not unmarked, "fences without a kind (console, text, json, ...): " + ", ".join(unmarked)


def test_the_readme_links_every_page_of_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if f"(docs/{p.name}" not in readme]
    assert not missing, f"pages the README's 'Read more' list does not link: {missing}"


def test_the_settings_page_names_every_environment_variable():
    from chunkbench_core.settings import VARIABLES

    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    missing = [v.name for v in VARIABLES if f"`{v.name}`" not in page]
    assert not missing, f"docs/settings.md does not describe {missing}"


def _leaf_commands(parser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    import argparse

    leaves = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                leaves += _leaf_commands(sub, prefix + (name,)) or [prefix + (name,)]
    return leaves


def test_the_commands_page_shows_the_help_of_each_command_the_parser_has():
    from chunkbench_pipelines.cli import build_parser

    page = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    shown = {c.text for b in DOCS.blocks(ROOT / "docs" / "commands.md") for c in b.commands}
    missing = [" ".join(c) for c in _leaf_commands(build_parser()) if f"chunkbench {' '.join(c)} --help" not in shown]
    assert page and not missing, f"docs/commands.md shows no `$ chunkbench ... --help` for: {missing}"


def test_the_results_page_names_every_table_and_view_of_the_results_database(tmp_path):
    from chunkbench_core.storage.results_db import ResultsDB

    names = ResultsDB(tmp_path).query("SELECT table_name FROM information_schema.tables")["table_name"].tolist()
    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    missing = sorted(n for n in names if f"`{n}`" not in page)
    assert names and not missing, f"docs/results.md does not describe {missing}"


def test_the_statistics_page_names_every_registered_metric():
    from chunkbench_core.evaluation.metric_registry import METRICS

    page = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
    missing = sorted(
        {m.name for m in METRICS.values() if not m.name.endswith("_expanded") and f"`{m.name}`" not in page}
        | {m.run_name for m in METRICS.values() if not m.name.endswith("_expanded") and f"`{m.run_name}`" not in page}
    )
    assert not missing, f"docs/statistics.md does not describe the metrics {missing}"


def test_the_results_page_lists_every_column_as_the_results_database_has_it():
    page = DOCS.RESULTS_PAGE.read_text(encoding="utf-8")
    assert DOCS.page_columns_block(page) == DOCS.columns_block(), (
        "the list of columns in docs/results.md is not the results database's: "
        "python scripts/doc_commands.py --write-columns"
    )
