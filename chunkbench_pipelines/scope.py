"""Each benchmark its own part of the asset graph: keys, groups, names and folders of one benchmark.

The code location builds every benchmark's assets, jobs, sensors and schedules from one factory
(benchmarks.py), each under the asset key prefix of its benchmark (``sample/leaderboard``,
``mine/leaderboard``), in a group named after it, tagged ``chunkbench/benchmark``. An asset body
takes its benchmark from its scope (the folders recorded for the benchmark, see
chunkbench_core.benchmarks), never from a global setting, so a run of one benchmark writes only
that benchmark's results and materializes only its assets.

There is no form without a benchmark: a test or a script that materializes one benchmark's assets
directly builds them through the same factory, so what it runs is what the UI shows.
"""

from __future__ import annotations

import hashlib
import keyword
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping

from dagster import AssetKey, AssetSelection

from chunkbench_core.benchmarks import Benchmark

if TYPE_CHECKING:
    from chunkbench_core.storage.results_db import ResultsDB

    from .resources import DuckDBResource, QdrantResource, WorkspaceResource

#: names a benchmark's Dagster name avoids: the stage groups its assets once had (a benchmark keeps its key prefix
#: across versions, so its history in the instance stays attached)
STAGE_GROUPS = ("documents", "chunks", "experiments", "reports", "questions")
#: names Dagster refuses for a definition: Python's keywords and the names its generated config code uses
RESERVED_NAMES = frozenset(keyword.kwlist) | {
    "arg_dict",
    "bool",
    "conf",
    "config",
    "context",
    "dict",
    "float",
    "input",
    "input_arg_dict",
    "int",
    "meta",
    "output",
    "output_arg_dict",
    "str",
    "type",
}


def dagster_name(benchmark: str, taken: Iterable[str] = ()) -> str:
    """The benchmark's name as Dagster allows in keys, groups and job names (letters, digits, ``_``): ``.`` and
    ``-`` become ``_``; a name that would clash with another benchmark's, or that Dagster reserves, gets a short
    hash of the real name."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", benchmark)
    if name in set(taken) or not name or name in RESERVED_NAMES or name in STAGE_GROUPS:
        name = f"{name}_{hashlib.sha1(benchmark.encode()).hexdigest()[:6]}"
    return name


@dataclass(frozen=True)
class Scope:
    """Where one benchmark's definitions live: its key prefix, its group, its job/sensor/schedule names."""

    benchmark: Benchmark
    prefix: str

    @classmethod
    def of(cls, benchmark: Benchmark, taken: Iterable[str] = ()) -> "Scope":
        return cls(benchmark, dagster_name(benchmark.name, taken))

    def key(self, name: str) -> AssetKey:
        """The asset key of ``name`` in this benchmark (``[prefix, name]``)."""
        return AssetKey([self.prefix, name])

    def keys(self, *names: str) -> list[AssetKey]:
        return [self.key(n) for n in names]

    def selection(self, *names: str) -> AssetSelection:
        """The named assets of this benchmark; no name: all of them."""
        if not names:
            return AssetSelection.key_prefixes([self.prefix])
        return AssetSelection.assets(*self.keys(*names))

    def name(self, name: str) -> str:
        """A job, sensor or schedule name in this benchmark (``<prefix>__<name>``)."""
        return f"{self.prefix}__{name}"

    def op(self, name: str) -> str:
        """The op name of this benchmark's asset ``name`` (the key under ``ops`` in a run config)."""
        return self.key(name).to_python_identifier()

    @property
    def group(self) -> str:
        """The asset group: every asset of the benchmark in one, named after it."""
        return self.prefix

    def tags(self) -> dict[str, str]:
        return {"chunkbench/benchmark": self.benchmark.name}

    def of_benchmark(self, text: str) -> str:
        """A job's, sensor's or schedule's description, naming its benchmark."""
        return f"Benchmark {self.benchmark.name}: {text}"

    def describe(self, text: str) -> str:
        """An asset's description, naming its benchmark and where its documents are."""
        return f"Benchmark {self.benchmark.name}: {text} Documents: {self.benchmark.corpus}."

    def metadata(self) -> Mapping[str, str]:
        return {"benchmark": self.benchmark.name}

    # -- the benchmark's folders, from the resources' shared settings -----------------------------
    def workspace(self, workspace: "WorkspaceResource") -> "WorkspaceResource":
        """The workspace of this benchmark (its name, documents and question sets)."""
        return workspace.of(self.benchmark)

    def results(self, duckdb: "DuckDBResource") -> "ResultsDB":
        return duckdb.results(self.benchmark.name)

    def qdrant(self, qdrant: "QdrantResource"):
        """The benchmark's vector store (a context manager)."""
        return qdrant.open(self.benchmark.name)
