"""The work behind each pipeline asset, one module per stage, as plain functions (no Dagster here).

- :mod:`.documents`: parse the corpus (``parsed_documents``);
- :mod:`.spec`: what a collection is (a request resolved into a frozen ``CollectionSpec``);
- :mod:`.collections`: chunk, embed and store a collection (``chunk_collections``);
- :mod:`.experiments`: retrieve and score every question against a collection (``experiment_results``);
- :mod:`.comparison`: rank, class, price and recommend the latest runs (``leaderboard``).

Each stage takes a typed request and returns a typed summary; what it records goes through the results
store (``ResultsDB.record_*``). The Dagster layer only reads its partition and config, resolves the
collection and calls these.

The names below are the stages' public functions, importable from the package as well (loaded when
first used, so importing one stage does not load the others).
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "ParseRequest": "documents",
    "ParseSummary": "documents",
    "caption_counts": "documents",
    "load_parsed_corpus": "documents",
    "parse_corpus": "documents",
    "CorpusParse": "documents",
    "read_or_parse": "documents",
    "parse_options_in_force": "documents",
    "CollectionRequest": "spec",
    "CollectionSpec": "spec",
    "SpecContext": "spec",
    "chunking_params": "spec",
    "default_chunk_size": "spec",
    "model_token_counter": "spec",
    "model_window": "spec",
    "partition_collection": "spec",
    "partition_rows_key": "spec",
    "request_of_build": "spec",
    "resolve_collection": "spec",
    "shared_chunk_size": "spec",
    "variant_label": "spec",
    "BuildRequest": "collections",
    "CollectionSummary": "collections",
    "build_chunker": "collections",
    "build_collection": "collections",
    "read_build_chunks": "collections",
    "read_build_tokens": "collections",
    "read_collection": "collections",
    "ExperimentRequest": "experiments",
    "ExperimentSummary": "experiments",
    "LLMUse": "experiments",
    "partition_cost": "experiments",
    "query_cost": "experiments",
    "question_costs": "experiments",
    "resolve_llm_prices": "experiments",
    "run_experiment": "experiments",
    "Ranking": "comparison",
    "compare_latest_runs": "comparison",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
