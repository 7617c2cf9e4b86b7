"""Assets, one module per stage: documents -> chunks -> experiments -> reports."""

from .chunks import chunk_collections
from .documents import parsed_documents, source_documents
from .experiments import experiment_results, question_sets
from .questions import generated_questions
from .reports import benchmark_report, leaderboard

ALL_ASSETS = [source_documents, parsed_documents, chunk_collections, experiment_results, leaderboard, benchmark_report,
              generated_questions]  # generated_questions: on demand only, no job, sensor or schedule selects it
# reported by a sensor, never materialized by a run
EXTERNAL_ASSETS = [question_sets]

__all__ = ["ALL_ASSETS", "EXTERNAL_ASSETS", "benchmark_report", "chunk_collections", "experiment_results",
           "generated_questions", "leaderboard", "question_sets",
           "parsed_documents", "source_documents"]
