"""Which benchmarks exist: each one a name, its documents folder and its question sets folder.

A benchmark is registered when it is run (``chunkbench run`` writes ``benchmark.json`` into the
benchmark's results folder, ``<results root or home>/benchmarks/<name>/``), so the benchmarks of a
home are the folders there holding that file, plus the benchmark of the settings in force (even
before its first run). The Dagster code location builds one set of assets, jobs, sensors and
schedules per benchmark from this list when it loads: a benchmark registered later appears after a
reload of the code location.
"""

from __future__ import annotations

import json
from pathlib import Path

from chunkbench_core.errors import ConfigError

# the record (its file name, its reader) sits with the settings, which read it for a benchmark's folders
from chunkbench_core.settings import BENCHMARK_FILE, Benchmark, Settings, benchmark_dir, read_benchmark

__all__ = [
    "BENCHMARK_FILE",
    "Benchmark",
    "benchmark_results_dir",
    "find_benchmarks",
    "read_benchmark",
    "register_benchmark",
]


def register_benchmark(settings: Settings) -> Path:
    """Record the benchmark of ``settings`` in its results folder (idempotent); returns the file written.

    Written when the content changes only, so a shared results folder is not rewritten by every run.
    """
    benchmark = Benchmark.of(settings)
    path = settings.results_dir / BENCHMARK_FILE
    text = json.dumps(benchmark.to_json(), indent=2, sort_keys=True) + "\n"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
    return path


def find_benchmarks(settings: Settings) -> tuple[list[Benchmark], list[str]]:
    """(the benchmarks, problems): every registered benchmark of the settings' results root, sorted by name, with
    the benchmark of ``settings`` itself first (its folders as the settings give them). A record that cannot be
    read is a problem (one line naming the file), never a failure: the other benchmarks still load."""
    configured = Benchmark.of(settings)
    found: dict[str, Benchmark] = {configured.name: configured}
    problems: list[str] = []
    root = settings.results_base / "benchmarks"
    for path in sorted(root.glob(f"*/{BENCHMARK_FILE}")) if root.is_dir() else []:
        if path.parent.name == configured.name:
            continue
        try:
            found[path.parent.name] = read_benchmark(path)
        except ConfigError as exc:
            problems.append(str(exc))
    return list(found.values()), problems


def benchmark_results_dir(settings: Settings, name: str) -> Path:
    """The results folder of benchmark ``name`` under the results root of ``settings``."""
    return benchmark_dir(settings.results_base, name)
