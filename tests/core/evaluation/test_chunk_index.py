"""The pool of a question holds only the chunks touching its evidence (found through a sorted index, not by walking
every chunk of the document): the pool-based metrics are the same as over every chunk (its speed on a document of
tens of thousands of chunks: benchmarks/big_inputs.py)."""

import random

from chunkbench_core.evaluation import metrics
from chunkbench_core.evaluation.experiment import ChunkIndex, CollectionChunk
from chunkbench_core.evaluation.questions import Span


def _chunks(rng, document, n, overlap):
    out, start = [], 0
    for i in range(n):
        length = rng.randint(50, 400)
        out.append(CollectionChunk(f"{document}-{i}", document, start, start + length))
        start = max(start + 1, start + length - (rng.randint(0, 60) if overlap else 0))
    return out


def test_touching_chunks_give_the_same_pool_metrics_as_every_chunk():
    rng = random.Random(7)
    for trial in range(200):
        chunks = {"a.md": _chunks(rng, "a.md", 60, overlap=trial % 2 == 0), "b.md": _chunks(rng, "b.md", 5, False)}
        index = ChunkIndex(chunks)
        end = chunks["a.md"][-1].end
        references = []
        for _ in range(rng.randint(1, 3)):
            start = rng.randint(0, end - 1)
            references.append(Span("a.md", start, min(end, start + rng.randint(0, 900))))
        if trial % 5 == 0:  # a reference ending exactly where a chunk starts: touching counts
            references = [Span("a.md", chunks["a.md"][3].start - 20, chunks["a.md"][3].start)]
        everything = [c.span for c in chunks["a.md"]]
        touching = [c.span for c in index.touching("a.md", references)]
        assert metrics.precision_omega(touching, references) == metrics.precision_omega(everything, references)
        gains = {c.chunk_id: metrics.evidence_characters(c.span, references) for c in chunks["a.md"]}
        kept = {c.chunk_id for c in index.touching("a.md", references)}
        assert {k for k, g in gains.items() if g > 0} <= kept
        order = [c.chunk_id for c in chunks["a.md"] if c.chunk_id in kept]
        assert [c.chunk_id for c in index.touching("a.md", references)] == order  # the collection's order
    assert index.touching("missing.md", references) == []
