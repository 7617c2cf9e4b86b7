"""Assets, one module per stage: documents -> chunks -> experiments -> reports.

Every benchmark has its own copy of these assets (:func:`build_assets` with its
:class:`~chunkbench_pipelines.scope.Scope`: keys under the benchmark's prefix, in the benchmark's group).
The partitioned assets are built over a partitions definition (every registered strategy x the corpus
models runnable with the settings in force), so the definitions are made from the settings object and the
registries as they are when the code location loads.
"""

from dagster import AssetsDefinition, AssetSpec, MultiPartitionsDefinition

from ..scope import Scope
from .chunks import build_chunk_collections
from .documents import build_document_assets
from .experiments import build_experiment_results, question_sets_spec
from .questions import build_generated_questions
from .reports import build_benchmark_report, build_leaderboard


def build_assets(partitions_def: MultiPartitionsDefinition, scope: Scope) -> list[AssetsDefinition]:
    """Every materializable asset of one benchmark; ``chunk_collections`` and ``experiment_results`` over
    ``partitions_def``.

    ``generated_questions`` is on demand only: no job, sensor or schedule selects it.
    """
    source, parsed = build_document_assets(scope)
    return [
        source,
        parsed,
        build_chunk_collections(partitions_def, scope),
        build_experiment_results(partitions_def, scope),
        build_leaderboard(partitions_def, scope),
        build_benchmark_report(scope),
        build_generated_questions(scope),
    ]


def external_assets(scope: Scope) -> list[AssetSpec]:
    """The benchmark's assets that a sensor reports (its question sets)."""
    return [question_sets_spec(scope)]


__all__ = [
    "build_assets",
    "build_benchmark_report",
    "build_chunk_collections",
    "build_document_assets",
    "build_experiment_results",
    "build_generated_questions",
    "build_leaderboard",
    "external_assets",
]
