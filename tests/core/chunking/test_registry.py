import pytest

from chunkbench_core.chunking import STRATEGIES, ModelWindow, make_chunker
from chunkbench_core.errors import ChunkingError

from .helpers import bag_of_words_embed, doc, words_counter

ALL = (
    "fixed_size",
    "recursive",
    "semantic",
    "semantic_parent_child",
    "contextual_retrieval",
    "structural",
    "cluster_semantic",
    "page",
    "element",
)


def test_every_shipped_strategy_is_registered_in_partition_order():
    assert STRATEGIES.names() == ALL
    assert set(STRATEGIES.with_capability("boundary_model")) == {
        "semantic",
        "semantic_parent_child",
        "structural",
        "cluster_semantic",
    }
    assert {s.name for s in STRATEGIES.values() if s.chunker.needs_boundary_embeddings} == set(
        STRATEGIES.with_capability("boundary_model")
    )
    assert {s.name for s in STRATEGIES.values() if s.chunker.size_driven} == {
        "fixed_size",
        "recursive",
        "contextual_retrieval",
    }
    assert STRATEGIES.with_capability("llm") == ("contextual_retrieval",)
    assert STRATEGIES.with_capability("parent_context") == ("semantic_parent_child",)
    assert STRATEGIES.with_capability("sweepable") == ("fixed_size", "recursive", "element")
    assert STRATEGIES.with_capability("neighbor_expansion") == ("fixed_size",)
    assert all(s.description and "\n" not in s.description for s in STRATEGIES.values())


@pytest.mark.parametrize("strategy", ALL)
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"chunk_size": 0}, "chunk_size must be a positive integer"),
        ({"chunk_size": "512"}, "chunk_size must be a positive integer"),
        ({"chunk_size": 10, "chunk_overlap": 10}, "must be smaller than chunk_size"),
        ({"chunk_size": 10, "chunk_overlap": -1}, "chunk_overlap must be an integer >= 0"),
    ],
)
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
    with pytest.raises(
        ChunkingError,
        match="fixed_size does not take threshold; it takes: chunk_size, chunk_overlap, document_context, window",
    ):
        make_chunker("fixed_size", threshold=0.3)


def test_options_are_declared_once_with_defaults_bounds_and_descriptions():
    options = STRATEGIES.options()
    assert options["threshold_mode"].defaults == {
        "semantic": "percentile",
        "semantic_parent_child": "percentile",
        "structural": "percentile",
    }
    assert options["threshold_mode"].choices == ("absolute", "percentile")
    assert options["percentile"].bounds == {"gt": 0.0, "lt": 100.0} and options["percentile"].kind is float
    assert options["base_chunker"].strategies == ("contextual_retrieval",)
    assert all(o.description for o in options.values())
    assert STRATEGIES["semantic"].options_taken(
        {"threshold": 0.5, "base_chunker": "recursive", "percentile": None}
    ) == {"threshold": 0.5}
    with pytest.raises(ChunkingError, match="percentile must be in \\(0, 100\\), got 150"):
        make_chunker("structural", chunk_size=20, chunk_overlap=0, embed=bag_of_words_embed, percentile=150)
    with pytest.raises(ChunkingError, match="unknown strategy 'nope'; choose one of: fixed_size, recursive"):
        STRATEGIES["nope"]


@pytest.mark.parametrize("strategy", ALL)
def test_every_strategy_gives_its_chunks_the_pages_they_span(strategy):
    from chunkbench_core.parsing.pages import page_span

    document = doc(
        "# A\n\nOne sentence here. Another one there.\n\nA second paragraph follows.\n\n"
        "# B\n\nThe third page has its own words and a closing sentence."
    )
    document.page_starts = [0, document.markdown.index("A second"), document.markdown.index("# B")]
    window = ModelWindow(64, words_counter, model_id="fake")
    chunker = make_chunker(strategy, chunk_size=20, chunk_overlap=5, embed=bag_of_words_embed, window=window)
    chunks = chunker.chunk(document)
    assert chunks
    for chunk in chunks:
        assert (chunk.page_start, chunk.page_end) == page_span(document.page_starts, chunk.start, chunk.end)
    assert {c.page_end for c in chunks} >= {3}
    document.page_starts = []
    assert all(c.page_start is None and c.page_end is None for c in chunker.chunk(document))
