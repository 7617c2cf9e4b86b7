"""Assets, one module per stage: documents -> chunks -> experiments -> reports."""

from .chunks import chunk_collections
from .documents import parsed_documents, source_documents
from .experiments import experiment_results
from .questions import generated_questions
from .reports import benchmark_report, leaderboard

ALL_ASSETS = [source_documents, parsed_documents, chunk_collections, experiment_results, leaderboard, benchmark_report,
              generated_questions]  # on demand only: no job, sensor or schedule selects it

__all__ = ["ALL_ASSETS", "benchmark_report", "chunk_collections", "experiment_results", "generated_questions",
           "leaderboard",
           "parsed_documents", "source_documents"]
