"""Embedding throughput of the pipeline code vs the raw ONNX session, the cache, and peak memory.

    python benchmarks/embedding_speed.py [--data PATH] [--rounds 2] [--batch-size 64]

On the Chroma corpora chunked by ``fixed_size`` 250/0 (``make_chunker``), in one run:

1. **overhead**: ``Embedder.embed`` (MiniLM int8 ONNX: prefixing, hashing, cache
   lookups and writes into a cold cache, batching) vs the raw ONNX session on the same
   texts with the same batch size and the same batches (texts sorted by length, as
   the pipeline does). Rounds alternate raw / pipeline; the best round of each is
   compared. Target: pipeline / raw <= 1.15. The vectors must be identical.
2. **cache**: the partition's work (``stages.collections.build_collection``: chunk, embed, replace
   the Qdrant collection, write the chunks table) first with an empty cache, then
   re-run unchanged. Target: the re-run >= 10x faster; the hit rate is printed.
3. **memory**: peak RSS of this whole process (``getrusage``). Target: < 1.5 GB.

Without ``--data`` the data folder is $CHUNKBENCH_CHROMA_DATA or
the copy shipped in chunkbench_core/datasets/chroma_general_evaluation; when it is missing
the script says so and exits 0. The data is read in place, never copied. Exits 1 when
a target is missed.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.chunking import make_chunker
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.embedding.local import MEMO
from chunkbench_core.embedding.local_onnx import shared_minilm
from chunkbench_core.parsing import parse
from chunkbench_core.storage.embedding_cache import EmbeddingCache

MODEL = "all-minilm-l6-v2"
RATIO_TARGET = 1.15
CACHE_TARGET = 10.0
MEMORY_TARGET_MB = 1536.0


def default_data() -> Path:
    from chunkbench_core.datasets import CHROMA_DIR

    return Path(os.environ.get("CHUNKBENCH_CHROMA_DATA") or CHROMA_DIR)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def raw_onnx(texts: list[str], batch_size: int) -> np.ndarray:
    """The floor: tokenize, run the session, mean-pool, normalise; same order and batches as the pipeline."""
    model = shared_minilm()
    tokenizer, session = model.tokenizer, model.session
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for begin in range(0, len(order), batch_size):
        rows = order[begin : begin + batch_size]
        encodings = tokenizer.encode_batch([texts[i] for i in rows])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, e in enumerate(encodings):
            ids[r, : len(e.ids)] = e.ids
            mask[r, : len(e.ids)] = 1
        (hidden,) = session.run(
            ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        out[rows] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=None, help="the chroma-general-evaluation folder")
    parser.add_argument("--rounds", type=int, default=2, help="raw/pipeline rounds (best of each is compared)")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the registry's batch size (64)")
    args = parser.parse_args(argv)
    data = args.data or default_data()
    corpora = sorted((data / "corpora").glob("*.md"))
    if not corpora:
        print(f"no Chroma corpora under {data / 'corpora'}: pass --data PATH (skipping)")
        return 0
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")

    spec = get_model(MODEL)
    batch_size = args.batch_size or spec.batch_size
    if batch_size != spec.batch_size:
        from dataclasses import replace

        spec = replace(spec, batch_size=batch_size)
    documents = [parse(str(p)) for p in corpora]
    chunker = make_chunker("fixed_size", chunk_size=250, chunk_overlap=0)
    texts = [c.text_to_embed for d in documents for c in chunker.chunk(d)]
    print(
        f"{len(texts)} chunks (fixed_size 250/0) from {len(corpora)} corpora in {data}; model {MODEL}, "
        f"batch size {batch_size}"
    )
    shared_minilm().run_batch(texts[:8])  # load and warm the session outside the timings
    rss_before = peak_rss_mb()

    # 1. pipeline overhead against the raw session, same texts, same batches
    raw_times, pipe_times = [], []
    with tempfile.TemporaryDirectory(prefix="chunkbench-embed-") as tmp:
        for round_ in range(args.rounds):
            started = time.perf_counter()
            raw = raw_onnx(texts, batch_size)
            raw_times.append(time.perf_counter() - started)
            with EmbeddingCache(Path(tmp) / f"cold-{round_}.sqlite") as cache:
                embedder = Embedder(spec, cache=cache)
                MEMO.clear()  # cold: nothing remembered from the previous round
                started = time.perf_counter()
                piped = embedder.embed(texts, "document")
                pipe_times.append(time.perf_counter() - started)
            print(f"round {round_ + 1}: raw ONNX {raw_times[-1]:.2f} s, pipeline (cold cache) {pipe_times[-1]:.2f} s")
        difference = float(np.abs(raw - piped).max())
        ratio = min(pipe_times) / min(raw_times)
        usage = embedder.last_usage
        print(
            f"pipeline / raw = {ratio:.3f} (best {min(pipe_times):.2f} s vs {min(raw_times):.2f} s; "
            f"{len(texts) / min(pipe_times):.0f} chunks/s; {usage.prompt_tokens:,} word pieces, "
            f"{usage.truncated} chunks truncated at {spec.max_input_tokens}); max |difference| {difference:.2e}"
        )

        # 2. a partition materialized, then re-materialized unchanged
        from dataclasses import replace

        from chunkbench_core.embedding import builtin_registry
        from chunkbench_core.stages.collections import BuildRequest, build_collection
        from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
        from chunkbench_core.storage.results_db import ResultsDB
        from chunkbench_core.storage.vector_store import VectorStore

        collection = replace(
            resolve_collection(
                CollectionRequest("fixed_size", MODEL, chunk_size=250, chunk_overlap=0), SpecContext(builtin_registry())
            ),
            model=spec,
        )
        runs = []
        with (
            EmbeddingCache(Path(tmp) / "partition.sqlite") as cache,
            VectorStore(local_root=Path(tmp) / "qdrant") as store,
        ):
            for label in ("first materialization", "re-materialization"):
                embedder = Embedder(spec, cache=cache)
                MEMO.clear()  # the re-run's speed comes from the embedding cache alone
                started = time.perf_counter()
                summary = build_collection(
                    BuildRequest(collection, documents), embedder, None, store, ResultsDB(Path(tmp) / "results")
                )
                runs.append(time.perf_counter() - started)
                print(
                    f"{label}: {runs[-1]:.2f} s ({summary.n_chunks} chunks, {summary.upserted} points upserted, "
                    f"{summary.removed} removed; cache hit rate {embedder.usage.hit_rate:.1%}, "
                    f"{embedder.usage.embedded} embedded)"
                )
        speedup = runs[0] / runs[1]
        hit_rate = embedder.usage.hit_rate

    peak = peak_rss_mb()
    print(f"re-run speed-up {speedup:.1f}x, hit rate {hit_rate:.1%}")
    print(f"peak RSS of the whole run {peak:.0f} MB (after loading data and model: {rss_before:.0f} MB)")
    checks = [
        (f"pipeline / raw ONNX <= {RATIO_TARGET}", ratio <= RATIO_TARGET, f"{ratio:.3f}"),
        ("vectors identical to the raw session", difference < 1e-5, f"{difference:.1e}"),
        (f"cached re-run >= {CACHE_TARGET:.0f}x faster", speedup >= CACHE_TARGET, f"{speedup:.1f}x"),
        (f"peak memory < {MEMORY_TARGET_MB / 1024:.1f} GB", peak < MEMORY_TARGET_MB, f"{peak:.0f} MB"),
    ]
    print()
    for label, ok, value in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {label}: {value}")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
