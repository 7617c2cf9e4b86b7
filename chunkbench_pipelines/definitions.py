"""The Dagster code location: ``dagster dev -w workspace.yaml`` loads ``defs`` from here."""

from __future__ import annotations

import os

from dagster import Definitions, EnvVar, in_process_executor

from .assets import ALL_ASSETS, EXTERNAL_ASSETS
from .jobs import ALL_JOBS
from .schedules import ALL_SCHEDULES
from .sensors import ALL_SENSORS
from .resources import (EMBEDDING_ENV, DuckDBResource, EmbeddingResource, LLMResource, QdrantResource, RankingResource,
                        WorkspaceResource)


def build_resources(resolve: bool = False) -> dict[str, object]:
    """The resources, configured from environment variables.

    For Dagster (``resolve=False``) each set variable becomes an ``EnvVar``, resolved by Dagster
    at run time and shown by name only; the command line outside Dagster (``resolve=True``)
    reads the values directly.
    """

    def _env(name: str):
        value = os.environ.get(name)
        if not value:
            return None
        return value if resolve else EnvVar(name)

    def _env_int(name: str, default: int):
        value = os.environ.get(name)
        if not value:
            return default
        return int(value) if resolve else EnvVar.int(name)

    pool_limit = _env_int("CHUNKBENCH_PROVIDER_POOL_LIMIT", 2)
    benchmark = _env("CHUNKBENCH_BENCHMARK")  # unset: settings.benchmark_name() decides (sample, or the corpus folder)

    return {
        "workspace": WorkspaceResource(home=_env("CHUNKBENCH_HOME"), corpus=_env("CHUNKBENCH_CORPUS"),
                                       questions=_env("CHUNKBENCH_QUESTIONS"), results=_env("CHUNKBENCH_RESULTS_DIR"),
                                       benchmark=benchmark, reports_url=_env("CHUNKBENCH_REPORTS_URL")),
        "duckdb": DuckDBResource(folder=_env("CHUNKBENCH_RESULTS_DIR") or _env("CHUNKBENCH_HOME"), benchmark=benchmark),
        "qdrant": QdrantResource(url=_env("QDRANT_URL"), api_key=_env("QDRANT_API_KEY"), benchmark=benchmark),
        "embeddings": EmbeddingResource(**{field: _env(name) for field, name in EMBEDDING_ENV.items()},
                                        pool_limit=pool_limit),
        "llm": LLMResource(model=_env("CHUNKBENCH_LLM_MODEL"), base_url=_env("CHUNKBENCH_LLM_BASE_URL"),
                           api_key=_env("CHUNKBENCH_LLM_API_KEY") or _env("OPENAI_API_KEY"),
                           vision_model=_env("CHUNKBENCH_VISION_MODEL"), pool_limit=pool_limit,
                           input_price_per_mtok=_env("CHUNKBENCH_LLM_PRICE_INPUT"),
                           output_price_per_mtok=_env("CHUNKBENCH_LLM_PRICE_OUTPUT")),
        "ranking": RankingResource(rank_metric=_env("CHUNKBENCH_RANK_METRIC"),
                                   recommendation_rule=_env("CHUNKBENCH_RECOMMENDATION_RULE"),
                                   budgets=_env("CHUNKBENCH_BUDGETS"), margin=_env("CHUNKBENCH_MARGIN"),
                                   cost_tolerance=_env("CHUNKBENCH_COST_TOLERANCE")),
    }


# Runs execute in one process: the steps of a partition are sequential anyway, and one process
# per run (not per step) loads the embedding model once. Parallelism comes from running
# several partitions at once (the run queue, backfills).
defs = Definitions(assets=[*ALL_ASSETS, *EXTERNAL_ASSETS], jobs=ALL_JOBS, sensors=ALL_SENSORS, schedules=ALL_SCHEDULES,
                   resources=build_resources(), executor=in_process_executor)
