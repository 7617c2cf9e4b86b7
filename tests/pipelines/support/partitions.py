"""The assets over chosen corpus models, for tests that materialize them directly.

The code location builds its assets over the models runnable with the settings in force (see
chunkbench_pipelines/partitions.py); a test builds them over the models it needs: the local ones,
or a remote model it points a resource at (a local server standing in for the provider).
"""

from dagster import AssetsDefinition

from chunkbench_pipelines.assets import build_assets
from chunkbench_core.settings import Settings
from chunkbench_pipelines.partitions import runnable_corpus_models, strategy_by_model


def assets_over_models(corpus_models: list[str]) -> list[AssetsDefinition]:
    return build_assets(strategy_by_model(corpus_models))


def local_models() -> list[str]:
    """The models that run with no provider configured (the local engines)."""
    return runnable_corpus_models(Settings())


#: every asset over every registered strategy x the local models
LOCAL_ASSETS = assets_over_models(local_models())
