"""Assets, one module per stage: documents -> chunks -> experiments -> reports.

The partitioned assets are built over a partitions definition (every registered strategy x the
corpus models runnable with the settings in force: :func:`build_assets`), so the definitions are made
from the settings object and the registries as they are when the code location loads.
"""

from dagster import AssetsDefinition, MultiPartitionsDefinition

from .chunks import build_chunk_collections
from .documents import parsed_documents, source_documents
from .experiments import build_experiment_results, question_sets
from .questions import generated_questions
from .reports import benchmark_report, build_leaderboard

# reported by a sensor, never materialized by a run
EXTERNAL_ASSETS = [question_sets]


def build_assets(partitions_def: MultiPartitionsDefinition) -> list[AssetsDefinition]:
    """Every materializable asset; ``chunk_collections`` and ``experiment_results`` over ``partitions_def``.

    ``generated_questions`` is on demand only: no job, sensor or schedule selects it.
    """
    return [source_documents, parsed_documents, build_chunk_collections(partitions_def),
            build_experiment_results(partitions_def), build_leaderboard(partitions_def), benchmark_report,
            generated_questions]


__all__ = ["EXTERNAL_ASSETS", "benchmark_report", "build_assets", "build_chunk_collections", "build_experiment_results",
           "build_leaderboard", "generated_questions", "parsed_documents", "question_sets", "source_documents"]
