"""Asset jobs that sensors, schedules and backfills launch: one set per benchmark, over its own assets only
(named ``<benchmark>__<job>``), so a run of one benchmark never materializes another's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dagster import define_asset_job

from .scope import Scope

#: what define_asset_job returns (a job resolved against the assets when the Definitions are built); Dagster does not
#: export its class, so it is typed loosely here
AssetJob = Any

PARSE_DOCUMENTS = "parse_documents"
CHUNK_AND_EVALUATE = "chunk_and_evaluate"
EVALUATE = "evaluate"
REFRESH_REPORTS = "refresh_reports"
BENCHMARK_EVERYTHING = "benchmark_everything"

EVERYTHING = (
    "source_documents",
    "parsed_documents",
    "chunk_collections",
    "experiment_results",
    "leaderboard",
    "benchmark_report",
)


@dataclass(frozen=True)
class BenchmarkJobs:
    """The asset jobs of one benchmark."""

    parse_documents: AssetJob
    chunk_and_evaluate: AssetJob
    evaluate: AssetJob
    refresh_reports: AssetJob
    benchmark_everything: AssetJob

    def all(self) -> list[AssetJob]:
        return [
            self.parse_documents,
            self.chunk_and_evaluate,
            self.evaluate,
            self.refresh_reports,
            self.benchmark_everything,
        ]


def build_jobs(scope: Scope) -> BenchmarkJobs:
    """The asset jobs of the benchmark of ``scope``."""
    of = scope.of_benchmark("")
    tags = scope.tags()
    return BenchmarkJobs(
        define_asset_job(
            scope.name(PARSE_DOCUMENTS),
            selection=scope.selection("source_documents", "parsed_documents"),
            tags=tags,
            description=of + "Scan the corpus folder and parse new or changed documents.",
        ),
        define_asset_job(
            scope.name(CHUNK_AND_EVALUATE),
            selection=scope.selection("chunk_collections", "experiment_results"),
            tags=tags,
            description=of + "Chunk, embed and evaluate one strategy × corpus model partition.",
        ),
        define_asset_job(
            scope.name(EVALUATE),
            selection=scope.selection("experiment_results"),
            tags=tags,
            description=of + "Evaluate one partition's existing collection (new question sets).",
        ),
        define_asset_job(
            scope.name(REFRESH_REPORTS),
            selection=scope.selection("leaderboard", "benchmark_report"),
            tags=tags,
            description=of + "Rebuild the leaderboard view and the HTML report.",
        ),
        define_asset_job(
            scope.name(BENCHMARK_EVERYTHING),
            selection=scope.selection(*EVERYTHING),
            tags=tags,
            description=of + "The whole benchmark: what `chunkbench run` and `make demo` launch, one run "
            "per step and partition (tags chunkbench/benchmark, chunkbench/batch and "
            "chunkbench/trigger).",
        ),
    )
