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


def _module_imports() -> dict[str, set[str]]:
    """Imports between chunkbench_core modules, wherever they are written (module level, under
    ``if TYPE_CHECKING``, or deferred inside a function to dodge a loop at import: a loop all the same)."""
    graph: dict[str, set[str]] = {}
    for path in CORE.rglob("*.py"):
        parts = ("chunkbench_core", *path.relative_to(CORE).with_suffix("").parts)
        module = ".".join(parts).removesuffix(".__init__")
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("chunkbench_core")}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                if base.startswith("chunkbench_core"):
                    found.add(base)
                    found |= {f"{base}.{a.name}" for a in node.names}
        graph[module] = found
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def _cycle_through(graph: dict[str, set[str]], start: str) -> list[str] | None:
    stack = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in graph.get(node, ()):
            if nxt == start:
                return path + [start]
            if nxt not in seen and not nxt.endswith("__init__"):
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


def test_no_import_loops_inside_chunking_and_evaluation():
    graph = _module_imports()
    # packages import their modules (__init__ re-exports): only module-to-module edges count
    graph = {m: {d for d in deps if not (d in ("chunkbench_core.chunking", "chunkbench_core.evaluation"))}
             for m, deps in graph.items()}
    loops = [_cycle_through(graph, m) for m in graph
             if m.startswith(("chunkbench_core.chunking.", "chunkbench_core.evaluation."))]
    assert [loop for loop in loops if loop] == []


def test_token_counting_sits_below_chunking_embedding_and_evaluation():
    graph = _module_imports()
    assert not any(d.startswith(("chunkbench_core.chunking", "chunkbench_core.embedding", "chunkbench_core.evaluation"))
                   for d in graph["chunkbench_core.tokens"])
    users = [m for m, deps in graph.items() if "chunkbench_core.tokens" in deps]
    assert any(m.startswith("chunkbench_core.chunking.") for m in users)
    assert any(m.startswith("chunkbench_core.evaluation.") for m in users)
