"""One benchmark's part of the code location, for tests that materialize its assets directly.

The code location builds its assets over the models runnable with the settings in force (see
chunkbench_pipelines/partitions.py); a test builds them over the models it needs: the local ones,
or a remote model it points a resource at (a local server standing in for the provider). Either way through the
code location's own factory (chunkbench_pipelines/benchmarks.py), with the benchmark's keys, op names and folders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import dagster

from dagster import AssetKey, AssetsDefinition, Definitions

from chunkbench_core.benchmarks import Benchmark
from chunkbench_core.settings import Settings
from chunkbench_pipelines.benchmarks import benchmark_definitions
from chunkbench_pipelines.partitions import runnable_corpus_models, strategy_by_model
from chunkbench_pipelines.scope import Scope


@dataclass(frozen=True)
class BenchmarkGraph:
    """The assets of one benchmark and how a test names them (keys, op names for a run config)."""

    scope: Scope
    definitions: Definitions

    @property
    def assets(self) -> list[AssetsDefinition]:
        return [a for a in self.definitions.assets or [] if isinstance(a, AssetsDefinition)]

    def key(self, name: str) -> AssetKey:
        return self.scope.key(name)

    def keys(self, *names: str) -> list[AssetKey]:
        return self.scope.keys(*names)

    def op(self, name: str) -> str:
        """The op name of asset ``name``: the key of its config under ``ops`` in a run config."""
        return self.scope.op(name)

    def asset(self, name: str) -> AssetsDefinition:
        return next(a for a in self.assets if a.key == self.key(name))

    def materialize(self, names: list[str], run_config: Optional[dict] = None, **kwargs: Any):
        """``dagster.materialize`` of the benchmark's assets ``names``; ``run_config``'s ``ops`` may name each asset
        by its name (its config goes to the benchmark's op)."""
        config = dict(run_config or {})
        if "ops" in config:
            config["ops"] = {
                self.op(name) if self.scope.key(name) in self.definitions_keys() else name: value
                for name, value in config["ops"].items()
            }
        return dagster.materialize(self.assets, selection=self.keys(*names), run_config=config, **kwargs)

    def definitions_keys(self) -> set[AssetKey]:
        return {a.key for a in self.assets}


def benchmark_graph(settings: Settings, corpus_models: Optional[list[str]] = None) -> BenchmarkGraph:
    """The assets (jobs, sensors, schedules) of the benchmark of ``settings`` over strategy x ``corpus_models``
    (default: the local models)."""
    scope = Scope.of(Benchmark.of(settings))
    partitions = strategy_by_model(corpus_models or local_models())
    return BenchmarkGraph(scope, benchmark_definitions(scope, settings, partitions))


def environment_graph(corpus_models: Optional[list[str]] = None) -> BenchmarkGraph:
    """The graph of the benchmark the test's environment names (its settings read now, as a code location would)."""
    return benchmark_graph(Settings.from_environment(), corpus_models)


def tides_graph(tides: Any, benchmark: str) -> BenchmarkGraph:
    """The graph of a test benchmark made by tests/pipelines/support/tides.py (its own folders)."""
    scope = Scope.of(Benchmark(benchmark, tides.corpus, tides.questions))
    return BenchmarkGraph(scope, benchmark_definitions(scope, Settings(), strategy_by_model(local_models())))


def local_models() -> list[str]:
    """The models that run with no provider configured (the local engines)."""
    return runnable_corpus_models(Settings())
