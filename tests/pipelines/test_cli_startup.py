"""The command line starts fast: its help and ``parse FILE`` import neither Dagster nor the embedding engines, pandas
or scipy (the commands that need them import them when they run)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("dagster", "onnxruntime", "pandas", "scipy")
PROBE = """
import sys
from chunkbench_pipelines.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
heavy = sorted({name.split('.')[0] for name in sys.modules} & set(%r))
print("HEAVY", ",".join(heavy), file=sys.stderr)
raise SystemExit(code or 0)
""" % (HEAVY,)


def loaded_by(*args: str, home: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CHUNKBENCH_HOME": str(home)},
    )
    [line] = [x for x in result.stderr.splitlines() if x.startswith("HEAVY")]
    return result, set(filter(None, line.removeprefix("HEAVY").strip().split(",")))


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["chunk", "--help"]])
def test_help_imports_no_dagster_engine_or_pandas(tmp_path, args):
    result, heavy = loaded_by(*args, home=tmp_path)
    assert result.returncode == 0 and "usage: chunkbench" in result.stdout
    assert heavy == set(), f"chunkbench {' '.join(args)} imported {sorted(heavy)}"


def test_parse_imports_no_dagster_engine_or_pandas(tmp_path):
    document = tmp_path / "note.md"
    document.write_text("# Note\n\nA paragraph.\n", encoding="utf-8")
    result, heavy = loaded_by("parse", str(document), "--text", home=tmp_path)
    assert result.returncode == 0 and result.stdout == "# Note\n\nA paragraph.\n"
    assert heavy == set(), f"chunkbench parse imported {sorted(heavy)}"


def test_the_command_that_needs_dagster_imports_it(tmp_path):
    """The probe sees an import when one happens (so the tests above cannot pass by never looking)."""
    result, heavy = loaded_by("init", home=tmp_path)
    assert result.returncode == 0 and "dagster" in heavy


def test_loading_the_code_location_imports_no_plotting_statistics_or_graph_library(tmp_path):
    """Every Dagster process (the code server, each run of a backfill) loads the definitions: matplotlib (drawn only
    by the reports), scipy (the intervals), onnx (the MiniLM graph) and ir-measures (the ranking metrics) are
    imported by what uses them, not by loading the code location."""
    probe = (
        "import sys\nimport chunkbench_pipelines.definitions\n"
        "print(','.join(sorted({n.split('.')[0] for n in sys.modules} & {'matplotlib', 'scipy', 'onnx', "
        "'ml_dtypes', 'ir_measures', 'dagster'})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CHUNKBENCH_HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "dagster", result.stdout  # dagster: the probe sees what is imported
