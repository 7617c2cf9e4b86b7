import numpy as np
import pytest

from chunkbench_core.chunking import ModelWindow, make_chunker
from chunkbench_core.chunking.boundaries import CutRule, group_units
from chunkbench_core.errors import ChunkingError

from .helpers import doc, topic_embed, words_counter

CATS_DOGS = "Cats purr. Cats nap. Cats hunt. Dogs bark. Dogs run. Dogs dig."
TOPICS = {"cat": 0, "dog": 1, "bird": 2}


def semantic(**kwargs):
    params = {"chunk_size": 100, "chunk_overlap": 0, "embed": topic_embed(TOPICS), "min_chunk_size": 3}
    params.update(kwargs)
    return make_chunker("semantic", **params)


@pytest.mark.parametrize("mode", ["absolute", "percentile"])
def test_golden_cut_between_topics(mode):
    chunks = semantic(threshold_mode=mode, threshold=0.5).chunk(doc(CATS_DOGS))
    assert [c.text for c in chunks] == ["Cats purr. Cats nap. Cats hunt.", "Dogs bark. Dogs run. Dogs dig."]
    assert [(c.start, c.end) for c in chunks] == [(0, 31), (32, 62)]
    assert [c.chunk_id for c in chunks] == ["semantic_doc_md_07d3004957_000000", "semantic_doc_md_07d3004957_000001"]
    assert chunks[0].next_chunk_id == chunks[1].chunk_id and chunks[1].previous_chunk_id == chunks[0].chunk_id


def test_each_sentence_is_embedded_once_in_one_call():
    embed = topic_embed(TOPICS)
    semantic(embed=embed).chunk(doc(CATS_DOGS))
    assert embed.calls == [["Cats purr.", "Cats nap.", "Cats hunt.", "Dogs bark.", "Dogs run.", "Dogs dig."]]


def test_min_chunk_size_blocks_a_cut_that_would_leave_a_short_group():
    text = "Cats purr. Cats nap. Dogs bark. Dogs run. Dogs dig. Dogs sleep."
    assert [c.text for c in semantic(min_chunk_size=3).chunk(doc(text))] == [text]
    assert [c.text for c in semantic(min_chunk_size=2).chunk(doc(text))] == [
        "Cats purr. Cats nap.",
        "Dogs bark. Dogs run. Dogs dig. Dogs sleep.",
    ]


def test_absolute_threshold_is_the_boundary_models_value():
    # birds and cats at cosine 0.6: cut with a 0.7 threshold (nomic-like), not with 0.3 (cloud default)
    def embed(texts):
        table = {"cat": [1.0, 0.0], "bird": [0.6, 0.8]}
        return np.array([next(v for k, v in table.items() if k in t.lower()) for t in texts])

    text = "Cats purr. Cats nap. Cats hunt. Birds sing. Birds fly. Birds nest."
    strict = make_chunker("semantic", chunk_size=100, chunk_overlap=0, embed=embed, threshold=0.7)
    loose = make_chunker("semantic", chunk_size=100, chunk_overlap=0, embed=embed, threshold=0.3)
    assert len(strict.chunk(doc(text))) == 2
    assert len(loose.chunk(doc(text))) == 1
    assert strict.params()["threshold"] == 0.7 and strict.params()["threshold_mode"] == "absolute"


def test_percentile_mode_cuts_only_the_largest_distances():
    rule = CutRule("percentile", percentile=50)
    masks = rule.cut_masks([np.array([0.9, 0.1, 0.8]), np.array([0.2])])
    assert [m.tolist() for m in masks] == [[False, True, False], [True]]


def test_size_ceiling_closes_a_group_before_chunk_size_tokens():
    text = " ".join(f"Cats number {i} purr." for i in range(12))
    chunks = semantic(chunk_size=12).chunk(doc(text))
    assert len(chunks) > 1
    assert all(c.token_count <= 12 for c in chunks)
    assert " ".join(c.text for c in chunks) == text


def test_group_units_rule():
    cuts = np.array([False, True, False, True, False])
    assert group_units([5] * 6, cuts, 1, 100) == [(0, 2), (2, 4), (4, 6)]
    assert group_units([5] * 6, cuts, 3, 100) == [(0, 6)]
    assert group_units([5] * 6, np.zeros(5, bool), 1, 12) == [(0, 2), (2, 4), (4, 6)]


def test_groups_longer_than_the_model_window_are_split():
    window = ModelWindow(max_tokens=8, count_tokens=words_counter, model_id="fake")
    text = "Cats purr loudly at night. Cats nap all day long. Cats hunt small mice outside."
    chunks = semantic(window=window).chunk(doc(text))
    assert all(words_counter([c.text])[0] <= 8 for c in chunks)
    assert len(chunks) > 1
    for c in chunks:
        assert text[c.start : c.end] == c.text


def test_persian_semantic_golden():
    text = "گربه می‌خوابد. گربه بازی می‌کند. گربه غذا می‌خورد؟ سگ پارس می‌کند. سگ می‌دود. سگ بازی می‌کند."
    embed = topic_embed({"گربه": 0, "سگ": 1})
    chunks = make_chunker("semantic", chunk_size=200, chunk_overlap=0, embed=embed).chunk(doc(text))
    assert [c.text for c in chunks] == [
        "گربه می‌خوابد. گربه بازی می‌کند. گربه غذا می‌خورد؟",
        "سگ پارس می‌کند. سگ می‌دود. سگ بازی می‌کند.",
    ]


def test_real_minilm_finds_the_topic_change(minilm):
    text = (
        "Boil the pasta in plenty of salted water. Drain the pasta when it is al dente. "
        "Toss the pasta with tomato sauce and basil. "
        "The central bank raised interest rates by half a point. Bond yields rose after the rate decision. "
        "Stock markets fell as investors priced in higher rates."
    )
    for mode in ("absolute", "percentile"):
        chunker = make_chunker(
            "semantic",
            chunk_size=200,
            chunk_overlap=0,
            embed=minilm.embed,
            threshold_mode=mode,
            threshold=0.3,
            percentile=50,
            min_chunk_size=2,
        )
        chunks = chunker.chunk(doc(text))
        assert [c.text.split(".")[0] for c in chunks] == [
            "Boil the pasta in plenty of salted water",
            "The central bank raised interest rates by half a point",
        ]


# -- failures: no fallback ----------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["semantic", "semantic_parent_child", "cluster_semantic", "structural"])
def test_strategies_without_boundary_embeddings_fail_at_construction(strategy):
    with pytest.raises(ChunkingError, match="needs boundary embeddings: pass embed="):
        make_chunker(strategy, chunk_size=50, chunk_overlap=0)


@pytest.mark.parametrize("strategy", ["semantic", "semantic_parent_child", "cluster_semantic", "structural"])
@pytest.mark.parametrize(
    "bad,message",
    [
        (lambda texts: np.zeros((len(texts) + 1, 4)), r"shape \(\d+, 4\), expected \(\d+, dim\)"),
        (lambda texts: np.zeros(len(texts)), "one vector per unit"),
        (lambda texts: np.full((len(texts), 3), np.nan), "NaN or infinite"),
        (lambda texts: None, "returned nothing"),
        (lambda texts: 1 / 0, "boundary embedding of .* failed: ZeroDivisionError"),
    ],
)
def test_mismatched_or_failing_boundary_embeddings_fail_hard(strategy, bad, message):
    chunker = make_chunker(strategy, chunk_size=50, chunk_overlap=0, embed=bad)
    text = "# T\n\nCats purr. Cats nap.\n\nDogs bark. Dogs run.\n\nBirds sing. Birds fly."
    with pytest.raises(ChunkingError, match=message):
        chunker.chunk(doc(text))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"threshold_mode": "relative"}, "threshold_mode must be one of absolute, percentile"),
        ({"threshold": 1.5}, r"threshold must be a cosine similarity in \[-1, 1\]"),
        ({"percentile": 100}, r"percentile must be in \(0, 100\)"),
        ({"min_chunk_size": 0}, "min_chunk_size .* must be an integer >= 1"),
        ({"chunk_size": 0}, "chunk_size must be a positive integer"),
        ({"embed": "not callable"}, "embed must be a callable"),
        ({"nonsense": 1}, "semantic does not take nonsense; it takes: chunk_size, chunk_overlap, embed"),
    ],
)
def test_bad_semantic_settings_are_rejected_at_construction(kwargs, message):
    params = {"chunk_size": 50, "chunk_overlap": 0, "embed": topic_embed(TOPICS), **kwargs}
    with pytest.raises(ChunkingError, match=message):
        make_chunker("semantic", **params)
