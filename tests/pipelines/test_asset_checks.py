"""The blocking asset checks pass on a good collection and fail, with their reason, on a broken one.

The broken collection comes from a faulty chunker put in place of fixed_size for one test (fault
injection: its last chunk's text is not the markdown between its offsets). Everything else is real: the embedder, the
Qdrant store, the results tables, the Dagster run.
"""

import dataclasses
import io

import pytest
from dagster import DagsterInstance

from chunkbench_core.chunking import STRATEGIES, FixedSizeChunker
from tests.pipelines.support.partitions import environment_graph
from chunkbench_pipelines.partitions import partition_key
from chunkbench_pipelines.runner import RunConsole, run_everything
from tests.pipelines.support.environment import environment_settings

from .support.tides import MODEL, tides_benchmark, use_environment


class ShiftsItsLastChunk(FixedSizeChunker):
    name = "fixed_size"

    def chunk(self, document):
        chunks = super().chunk(document)
        chunks[-1].start += 1  # the text no longer matches markdown[start:end]
        return chunks


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    tides = tides_benchmark(tmp_path, benchmark="checks")  # results and collections: home/benchmarks/checks
    use_environment(monkeypatch, tides, "checks")
    return {"resources": tides.resources, "instance": DagsterInstance.ephemeral()}


def build(setup):
    key = partition_key("fixed_size", MODEL)
    assert (
        environment_graph()
        .materialize(["source_documents", "parsed_documents"], instance=setup["instance"], resources=setup["resources"])
        .success
    )
    return environment_graph().materialize(
        ["chunk_collections", "experiment_results"],
        partition_key=key,
        instance=setup["instance"],
        resources=setup["resources"],
        raise_on_error=False,
    )


def checks(result) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_checks_pass_on_a_good_collection(setup):
    result = build(setup)
    assert result.success
    assert checks(result) == {
        "vector_count_matches_chunks": True,
        "chunk_invariants": True,
        "metrics_within_unit_interval": True,
        "question_references_resolve": True,
    }
    # the time of the search is in the partition's metadata, as the index time is in its collection's
    graph = environment_graph()
    (built,) = result.asset_materializations_for_node(graph.op("chunk_collections"))
    (searched,) = result.asset_materializations_for_node(graph.op("experiment_results"))
    assert built.metadata["index_seconds"].value > 0 and searched.metadata["search_seconds"].value > 0


@pytest.fixture()
def broken_fixed_size():
    """fixed_size's chunker replaced by the faulty one for one test (the registry entry restored after)."""
    original = STRATEGIES["fixed_size"]
    STRATEGIES.add(dataclasses.replace(original, chunker=ShiftsItsLastChunk), replace=True)
    yield
    STRATEGIES.add(original, replace=True)


@pytest.mark.e2e
def test_checks_fail_on_a_broken_collection_with_their_reason(setup, broken_fixed_size):
    result = build(setup)
    assert not result.success
    assert checks(result) == {"vector_count_matches_chunks": True, "chunk_invariants": False}
    [failure] = [e for e in result.all_events if e.is_step_failure]
    reason = failure.step_failure_data.user_failure_data.description
    assert reason.startswith("chunk_invariants: 1 chunk whose markdown[start:end] is not its text")
    assert not [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]  # permanent
    assert "experiment_results" not in {e.step_key for e in result.all_events if e.is_step_success}

    out = io.StringIO()
    assert (
        run_everything(
            environment_settings(),
            strategies=["fixed_size"],
            corpus_models=[MODEL],
            console=RunConsole(out),
            instance=setup["instance"],
        )
        == 1
    )
    printed = out.getvalue()
    assert f"FAILED fixed_size|{MODEL}: chunk_invariants: 1 chunk whose markdown[start:end] is not its text" in printed
