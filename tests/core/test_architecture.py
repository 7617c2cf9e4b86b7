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


def test_no_module_of_core_reads_or_writes_the_environment():
    """The settings object is built at the edges (the Dagster definitions, the CLI's main) and passed down; the
    one reading of the process's environment is ``Settings.from_environment``, in settings.py."""
    offenders = []
    for path in CORE.rglob("*.py"):
        if path == CORE / "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" \
                    and node.attr in ("environ", "environb", "getenv", "putenv", "unsetenv"):
                offenders.append(f"{path.relative_to(CORE)}:{node.lineno}: os.{node.attr}")
            elif isinstance(node, ast.ImportFrom) and node.module == "os":
                offenders += [f"{path.relative_to(CORE)}:{node.lineno}: from os import {a.name}" for a in node.names
                              if a.name in ("environ", "environb", "getenv", "putenv", "unsetenv")]
    assert offenders == []


def test_the_core_reads_settings_only_from_the_mapping_it_is_given(tmp_path):
    from chunkbench_core.settings import Settings

    loaded = Settings.load({"CHUNKBENCH_HOME": str(tmp_path), "CHUNKBENCH_BENCHMARK": "b", "OPENAI_API_KEY": "sk-x1234"},
                           {"benchmark": "flagged"})
    assert loaded.home == tmp_path and loaded.benchmark == "flagged" and loaded.results_dir == tmp_path / "benchmarks" / "flagged"
    assert loaded.source("home") == "environment CHUNKBENCH_HOME" and loaded.source("benchmark") == "flag --benchmark"
    assert loaded.source("llm_api_key") == "environment OPENAI_API_KEY" and "sk-x1234" not in repr(loaded)
    assert Settings.load({}).benchmark == "sample" and Settings.load({}).source("corpus") == "default"
