"""The assets with the corpus_model dimension over chosen models.

The code location offers only the models runnable in its environment when it loads (see
chunkbench_pipelines/partitions.py); a test that points a resource at a local server for a
remote model builds the assets over that model too.
"""

from dagster import AssetsDefinition

from chunkbench_pipelines.assets import ALL_ASSETS
from chunkbench_pipelines.partitions import strategy_by_model


def assets_over_models(corpus_models: list[str]) -> list[AssetsDefinition]:
    partitions = strategy_by_model(corpus_models)
    return [a.map_asset_specs(lambda spec: spec.replace_attributes(partitions_def=partitions))
            if a.partitions_def is not None else a for a in ALL_ASSETS]
