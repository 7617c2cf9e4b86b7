import itertools

import numpy as np
import pytest

from chunkbench_core.chunking import make_chunker
from chunkbench_core.chunking.cluster_semantic import best_partition
from chunkbench_core.errors import ChunkingError

from .helpers import doc, topic_embed


def brute_force(vectors, sizes, max_tokens):
    n = len(sizes)
    v = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = v @ v.T
    mu = (sims.sum() - n) / (n * (n - 1))
    best, best_cuts = -np.inf, None
    for mask in itertools.product([0, 1], repeat=n - 1):
        bounds = [0] + [i + 1 for i, m in enumerate(mask) if m] + [n]
        ranges = list(zip(bounds, bounds[1:]))
        if any(sum(sizes[a:b]) > max_tokens for a, b in ranges):
            continue
        score = sum((sims[a:b, a:b].sum() - (b - a)) / 2 - mu * (b - a) * (b - a - 1) / 2 for a, b in ranges)
        if score > best + 1e-9:
            best, best_cuts = score, ranges
    return best, best_cuts


def score(vectors, ranges):
    v = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = v @ v.T
    n = len(v)
    mu = (sims.sum() - n) / (n * (n - 1))
    return sum((sims[a:b, a:b].sum() - (b - a)) / 2 - mu * (b - a) * (b - a - 1) / 2 for a, b in ranges)


@pytest.mark.parametrize("seed", range(12))
def test_dynamic_programming_finds_the_optimal_partition(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 10))
    vectors = rng.normal(size=(n, 5))
    sizes = [int(s) for s in rng.integers(1, 6, size=n)]
    max_tokens = int(rng.integers(5, 15))
    ranges = best_partition(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), sizes, max_tokens)
    best, _ = brute_force(vectors, sizes, max_tokens)
    assert ranges[0][0] == 0 and ranges[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(sum(sizes[a:b]) <= max_tokens for a, b in ranges)
    assert score(vectors, ranges) == pytest.approx(best)


def test_golden_topics_become_chunks():
    text = (
        "Cats purr softly at night. Cats nap in the warm sun. Cats hunt mice in the barn. "
        "Dogs bark at the postman. Dogs dig holes in the garden. Dogs fetch sticks in the park. "
        "Birds sing at dawn. Birds build nests in spring. Birds fly south for winter."
    )
    chunker = make_chunker(
        "cluster_semantic",
        chunk_size=40,
        chunk_overlap=0,
        piece_size=8,
        embed=topic_embed({"cat": 0, "dog": 1, "bird": 2}),
    )
    chunks = chunker.chunk(doc(text))
    assert [c.text for c in chunks] == [
        "Cats purr softly at night. Cats nap in the warm sun. Cats hunt mice in the barn.",
        "Dogs bark at the postman. Dogs dig holes in the garden. Dogs fetch sticks in the park.",
        "Birds sing at dawn. Birds build nests in spring. Birds fly south for winter.",
    ]
    assert all(c.token_count <= 40 for c in chunks)


def test_max_size_wins_over_similarity():
    text = " ".join(f"Cats purr number {i}." for i in range(30))
    chunks = make_chunker(
        "cluster_semantic", chunk_size=25, chunk_overlap=0, piece_size=6, embed=topic_embed({"cat": 0})
    ).chunk(doc(text))
    assert len(chunks) > 1 and all(c.token_count <= 25 for c in chunks)
    assert " ".join(c.text for c in chunks) == text


def test_piece_size_is_validated():
    with pytest.raises(ChunkingError, match=r"piece_size must be an integer between 1 and chunk_size \(40\)"):
        make_chunker("cluster_semantic", chunk_size=40, chunk_overlap=0, piece_size=50, embed=topic_embed({}))
