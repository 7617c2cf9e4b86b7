"""Each benchmark its own part of the asset graph: keys, groups, names and folders of one benchmark.

The code location builds every benchmark's assets, jobs, sensors and schedules from one factory
(definitions.py), each under the asset key prefix of its benchmark (``sample/leaderboard``,
``mine/leaderboard``), in a group named after it, tagged ``chunkbench/benchmark``. An asset body
takes its benchmark from its scope (the folders recorded for the benchmark, see
chunkbench_core.benchmarks), never from a global setting, so a run of one benchmark writes only
that benchmark's results and materializes only its assets.

The unscoped form (no benchmark, no prefix) builds one benchmark's assets with plain keys, reading
the benchmark the resources are configured for: what a test or a single-benchmark script
materializes directly.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Mapping, Optional

from dagster import AssetKey, AssetSelection
from dagster._core.definitions.utils import is_valid_name

from chunkbench_core.benchmarks import Benchmark

if TYPE_CHECKING:
    from chunkbench_core.storage.results_db import ResultsDB

    from .resources import DuckDBResource, QdrantResource, WorkspaceResource

#: the stage groups of the unscoped form (a scoped benchmark's assets share one group: its own)
STAGE_GROUPS = ("documents", "chunks", "experiments", "reports", "questions")


def dagster_name(benchmark: str, taken: Iterable[str] = ()) -> str:
    """The benchmark's name as Dagster allows in keys, groups and job names (letters, digits, ``_``): ``.`` and
    ``-`` become ``_``; a name that would clash with another benchmark's, or that Dagster reserves, gets a short
    hash of the real name."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", benchmark)
    if name in set(taken) or not is_valid_name(name) or name in STAGE_GROUPS:
        name = f"{name}_{hashlib.sha1(benchmark.encode()).hexdigest()[:6]}"
    return name


@dataclass(frozen=True)
class Scope:
    """Where one benchmark's definitions live: its key prefix, its group, its job/sensor/schedule names."""

    benchmark: Optional[Benchmark] = None
    prefix: Optional[str] = None

    @classmethod
    def of(cls, benchmark: Benchmark, taken: Iterable[str] = ()) -> "Scope":
        return cls(benchmark, dagster_name(benchmark.name, taken))

    @property
    def scoped(self) -> bool:
        return self.benchmark is not None

    def key(self, name: str) -> AssetKey:
        """The asset key of ``name`` in this benchmark (``[prefix, name]``)."""
        return AssetKey([self.prefix, name] if self.prefix else [name])

    def keys(self, *names: str) -> list[AssetKey]:
        return [self.key(n) for n in names]

    def selection(self, *names: str) -> AssetSelection:
        """The named assets of this benchmark; no name: all of them."""
        if not names:
            return AssetSelection.key_prefixes([self.prefix]) if self.prefix else AssetSelection.all()
        return AssetSelection.assets(*self.keys(*names))

    def name(self, name: str) -> str:
        """A job, sensor or schedule name in this benchmark (``<prefix>__<name>``)."""
        return f"{self.prefix}__{name}" if self.prefix else name

    def group(self, stage: str) -> str:
        """The asset group: the benchmark's own, or the stage's when unscoped."""
        return self.prefix or stage

    def tags(self) -> dict[str, str]:
        return {"chunkbench/benchmark": self.benchmark.name} if self.benchmark else {}

    def describe(self, text: str) -> str:
        """An asset's description, naming its benchmark and where its documents are."""
        if not self.benchmark:
            return text
        return f"Benchmark {self.benchmark.name}: {text} Documents: {self.benchmark.corpus}."

    def metadata(self) -> Mapping[str, str]:
        return {"benchmark": self.benchmark.name} if self.benchmark else {}

    # -- the benchmark's folders, from the resources' shared settings -----------------------------
    def workspace(self, workspace: "WorkspaceResource") -> "WorkspaceResource":
        """The workspace of this benchmark (its name, documents and question sets)."""
        return workspace.of(self.benchmark) if self.benchmark else workspace

    def results(self, duckdb: "DuckDBResource") -> "ResultsDB":
        return duckdb.results(self.benchmark.name if self.benchmark else None)

    def qdrant(self, qdrant: "QdrantResource"):
        """The benchmark's vector store (a context manager)."""
        return qdrant.open(self.benchmark.name if self.benchmark else None)


UNSCOPED = Scope()
