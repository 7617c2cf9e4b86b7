"""Assets, one module per stage: documents -> chunks -> experiments -> reports.

Every benchmark has its own copy of these assets (:func:`build_assets` with its
:class:`~chunkbench_pipelines.scope.Scope`: keys under the benchmark's prefix, in the benchmark's group).
The partitioned assets are built over a partitions definition (every registered strategy x the corpus
models runnable with the settings in force), so the definitions are made from the settings object and the
registries as they are when the code location loads.
"""

from dagster import AssetsDefinition, AssetSpec, MultiPartitionsDefinition

from ..scope import UNSCOPED, Scope
from .chunks import build_chunk_collections
from .documents import build_document_assets, parsed_documents, source_documents
from .experiments import build_experiment_results, question_sets, question_sets_spec
from .questions import build_generated_questions, generated_questions
from .reports import benchmark_report, build_benchmark_report, build_leaderboard

# reported by a sensor, never materialized by a run (the unscoped one; a benchmark's: external_assets(scope))
EXTERNAL_ASSETS = [question_sets]


def build_assets(partitions_def: MultiPartitionsDefinition, scope: Scope = UNSCOPED) -> list[AssetsDefinition]:
    """Every materializable asset of one benchmark; ``chunk_collections`` and ``experiment_results`` over
    ``partitions_def``.

    ``generated_questions`` is on demand only: no job, sensor or schedule selects it.
    """
    source, parsed = build_document_assets(scope) if scope.scoped else (source_documents, parsed_documents)
    if not scope.scoped:
        return [source, parsed, build_chunk_collections(partitions_def), build_experiment_results(partitions_def),
                build_leaderboard(partitions_def), benchmark_report, generated_questions]
    return [source, parsed, build_chunk_collections(partitions_def, scope),
            build_experiment_results(partitions_def, scope), build_leaderboard(partitions_def, scope),
            build_benchmark_report(scope), build_generated_questions(scope)]


def external_assets(scope: Scope = UNSCOPED) -> list[AssetSpec]:
    """The benchmark's assets that a sensor reports (its question sets)."""
    return [question_sets_spec(scope)] if scope.scoped else EXTERNAL_ASSETS


__all__ = ["EXTERNAL_ASSETS", "benchmark_report", "build_assets", "build_chunk_collections", "build_experiment_results",
           "build_leaderboard", "external_assets", "generated_questions", "parsed_documents", "question_sets",
           "source_documents"]
