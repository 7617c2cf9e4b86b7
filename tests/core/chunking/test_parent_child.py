import pytest

from chunkbench_core.chunking import ModelWindow, make_chunker
from chunkbench_core.errors import ChunkingError

from .helpers import doc, topic_embed, words_counter

TEXT = (
    "# Cats\n\nCats purr at night.\n\nCats nap all day.\n\n"
    "# Dogs\n\nDogs bark at strangers.\n\nDogs dig holes in gardens."
)


def chunker(**kwargs):
    params = {"chunk_size": 10, "chunk_overlap": 0, "embed": topic_embed({"cat": 0, "dog": 1}), "min_chunk_size": 1}
    params.update(kwargs)
    return make_chunker("semantic_parent_child", **params)


def test_golden_parents_and_children():
    chunks = chunker().chunk(doc(TEXT, name="pets.md"))
    roles = [(c.role, c.text, c.parent_id) for c in chunks]
    assert roles == [
        ("parent", "# Cats\n\nCats purr at night.\n\nCats nap all day.", None),
        ("child", "# Cats\n\nCats purr at night.", "semantic_parent_child_pets_md_e5d3251b1d_000000"),
        ("child", "Cats nap all day.", "semantic_parent_child_pets_md_e5d3251b1d_000000"),
        ("parent", "# Dogs\n\nDogs bark at strangers.\n\nDogs dig holes in gardens.", None),
        ("child", "# Dogs\n\nDogs bark at strangers.", "semantic_parent_child_pets_md_e5d3251b1d_000003"),
        ("child", "Dogs dig holes in gardens.", "semantic_parent_child_pets_md_e5d3251b1d_000003"),
    ]
    assert [c.chunk_index for c in chunks] == list(range(6))
    # children link to children, parents to parents
    assert chunks[2].next_chunk_id == chunks[4].chunk_id
    assert chunks[0].next_chunk_id == chunks[3].chunk_id
    assert not chunks[0].is_retrieved and chunks[1].is_retrieved


def test_paragraphs_are_embedded_once_in_one_call():
    embed = topic_embed({"cat": 0, "dog": 1})
    chunker(embed=embed).chunk(doc(TEXT))
    assert len(embed.calls) == 1 and len(embed.calls[0]) == 4


def test_children_fit_the_model_window_parents_do_not_have_to():
    window = ModelWindow(max_tokens=5, count_tokens=words_counter)
    chunks = chunker(chunk_size=50, window=window).chunk(doc(TEXT))
    children = [c for c in chunks if c.role == "child"]
    assert all(words_counter([c.text])[0] <= 5 for c in children)
    assert any(words_counter([c.text])[0] > 5 for c in chunks if c.role == "parent")


def test_parent_size_is_capped():
    chunks = chunker(chunk_size=4, parent_chunk_size=8, min_chunk_size=1, embed=topic_embed({"cat": 0})).chunk(
        doc(TEXT)
    )
    assert all(c.token_count <= 8 for c in chunks if c.role == "parent")


def test_parent_chunk_size_smaller_than_children_is_rejected():
    with pytest.raises(ChunkingError, match=r"parent_chunk_size must be an integer >= chunk_size \(10\)"):
        chunker(parent_chunk_size=5)
