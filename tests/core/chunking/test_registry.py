import pytest

from chunkbench_core.chunking import STRATEGIES, STRATEGY_NAMES, ModelWindow, make_chunker
from chunkbench_core.errors import ChunkingError

from .helpers import bag_of_words_embed, doc, words_counter

ALL = ("fixed_size", "recursive", "semantic", "semantic_parent_child", "contextual_retrieval", "structural",
       "cluster_semantic")


def test_every_strategy_of_issue_4_is_registered_in_partition_order():
    assert STRATEGY_NAMES == ALL
    assert {name for name, cls in STRATEGIES.items() if cls.needs_boundary_embeddings} == {
        "semantic", "semantic_parent_child", "structural", "cluster_semantic"}
    assert {name for name, cls in STRATEGIES.items() if cls.size_driven} == {
        "fixed_size", "recursive", "contextual_retrieval"}


@pytest.mark.parametrize("strategy", ALL)
@pytest.mark.parametrize("kwargs,message", [
    ({"chunk_size": 0}, "chunk_size must be a positive integer"),
    ({"chunk_size": "512"}, "chunk_size must be a positive integer"),
    ({"chunk_size": 10, "chunk_overlap": 10}, "must be smaller than chunk_size"),
    ({"chunk_size": 10, "chunk_overlap": -1}, "chunk_overlap must be an integer >= 0"),
])
def test_bad_sizes_are_rejected_at_construction_by_every_strategy(strategy, kwargs, message):
    with pytest.raises(ChunkingError, match=message):
        make_chunker(strategy, embed=bag_of_words_embed, **kwargs)


@pytest.mark.parametrize("strategy", ALL)
def test_one_call_shape_builds_every_strategy(strategy):
    window = ModelWindow(64, words_counter, model_id="fake")
    chunker = make_chunker(strategy, chunk_size=20, chunk_overlap=5, embed=bag_of_words_embed, window=window)
    chunks = chunker.chunk(doc("# A\n\nOne sentence here. Another one there.\n\nA second paragraph follows."))
    assert chunks and all(c.strategy == strategy for c in chunks)
    assert chunker.params()["chunk_size"] == 20


def test_unknown_parameters_name_the_accepted_ones():
    with pytest.raises(ChunkingError, match="fixed_size does not take threshold; it takes: chunk_size, chunk_overlap, window"):
        make_chunker("fixed_size", threshold=0.3)
