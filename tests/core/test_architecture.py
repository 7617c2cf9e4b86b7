"""chunkbench_core is a plain library: it never imports dagster."""

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "chunkbench_core"


def test_no_module_of_core_imports_dagster():
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(CORE)}: {n}" for n in names if n.split(".")[0].startswith("dagster")]
    assert offenders == []


def test_importing_every_core_module_loads_no_dagster():
    modules = sorted(
        ".".join(("chunkbench_core", *p.relative_to(CORE).with_suffix("").parts)).removesuffix(".__init__")
        for p in CORE.rglob("*.py")
    )
    code = "import importlib, sys\n" + "".join(f"importlib.import_module({m!r})\n" for m in modules) + \
        "print(sorted(m for m in sys.modules if m.startswith('dagster')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=CORE.parent).stdout.strip()
    assert out == "[]"
