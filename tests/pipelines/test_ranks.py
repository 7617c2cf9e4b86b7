"""Rank and class reported on experiment partitions (what the leaderboard asset calls), on a real instance."""

import pytest
from dagster import AssetExecutionContext, AssetKey, AssetRecordsFilter, DagsterInstance, asset, materialize

from chunkbench_pipelines.partitions import strategy_by_model
from chunkbench_pipelines.ranks import rank_observation, report_ranks_on_partitions

MODEL = "all-minilm-l6-v2"
ROWS = [
    {
        "strategy": "recursive",
        "corpus_model": MODEL,
        "rank": 1,
        "class": "best",
        "experiment_run_id": "run-a",
        "verdict": "recommended",
        "rank_metric": "recall_at_512",
        "rank_mean": 0.91234,
        "margin": 0.02,
    },
    {
        "strategy": "fixed_size",
        "corpus_model": MODEL,
        "rank": 2,
        "class": "undecided",
        "verdict": "undecided",
        "lower_bound_vs_best": -0.08123,
        "margin": 0.02,
    },
    {"strategy": "fixed_size", "corpus_model": "a-model-gone-from-this-deployment", "rank": 3, "class": "worse"},
]


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_each_ranked_row_becomes_an_observation_of_its_experiment_partition(tmp_path):
    @asset
    def ranking(context: AssetExecutionContext) -> None:
        assert report_ranks_on_partitions(context, ROWS, strategy_by_model([MODEL])) == 2

    with DagsterInstance.local_temp(str(tmp_path)) as instance:
        assert materialize([ranking], instance=instance).success
        records = instance.fetch_observations(
            AssetRecordsFilter(asset_key=AssetKey("experiment_results")), limit=10
        ).records
        seen = {r.partition_key: {k: v.value for k, v in r.asset_observation.metadata.items()} for r in records}
        described = {r.partition_key: r.asset_observation.description for r in records}
    assert seen == {
        f"{MODEL}|recursive": {
            "rank": 1,
            "class": "best",
            "verdict": "recommended",
            "recall_at_512": 0.912,
            "compared_experiment_run_id": "run-a",
        },
        f"{MODEL}|fixed_size": {"rank": 2, "class": "undecided", "verdict": "undecided", "lower_bound_vs_best": -0.081},
    }
    assert described[f"{MODEL}|fixed_size"] == (
        "rank 2 on the leaderboard, undecided: might be as good, cannot tell yet"
    )


def test_a_row_without_rank_or_class_is_refused_with_the_field_named():
    with pytest.raises(ValueError, match="needs class"):
        rank_observation({"strategy": "recursive", "corpus_model": MODEL, "rank": 1, "class": None})
