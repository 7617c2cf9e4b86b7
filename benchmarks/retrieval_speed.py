"""Retrieval latency against a 20,000-chunk collection, with a document filter (target: median <= 5 ms).

    python benchmarks/retrieval_speed.py [--chunks 20000] [--documents 200] [--dim 384] [--queries 500]
                                         [--compare-client] [--keep DIR]

Builds a collection of ``--chunks`` points (``--documents`` documents, realistic
payloads: ~1 KB of text each, headings, offsets) with the embedded default store
(``VectorStore(local_root=...)``, Qdrant's engine in-process), then times
``VectorStore.search(collection, vector, top_k=5, document=...)`` — the call the
experiment makes — for ``--queries`` queries, each filtered to one document. Prints
the median and p95 per query, the same without a filter, build time, and checks the
filtered results against an exact numpy search (recall must be 1.0).
``--compare-client`` also times qdrant-client's local mode on the same data (slow: it
filters in Python). Exits 1 when the filtered median misses the target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.storage.vector_store import VectorStore, collection_name

TARGET_MS = 5.0
TOP_K = 5
WORDS = (
    "harbour lava sourdough insurance premium policy volcano bakery starter claim river "
    "village contract clause payment annual rye flour eruption wall island"
).split()


def make_corpus(n_chunks: int, n_documents: int, dim: int, seed: int = 7) -> tuple[list[Chunk], np.ndarray]:
    """Chunks spread over documents, with clustered unit vectors (chunks of a document are related)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_documents, dim)).astype(np.float32)
    chunks: list[Chunk] = []
    vectors = np.empty((n_chunks, dim), dtype=np.float32)
    per_doc = int(np.ceil(n_chunks / n_documents))
    for i in range(n_chunks):
        doc, index = divmod(i, per_doc)
        name = f"document_{doc:04d}.docx"
        text = " ".join(rng.choice(WORDS, size=170))
        chunks.append(
            Chunk(
                make_chunk_id("fixed_size", name, index),
                name,
                "fixed_size",
                index,
                index * 1100,
                index * 1100 + len(text),
                text,
                250,
                heading_path=[f"Chapter {index // 10}"],
            )
        )
        vectors[i] = centres[doc] + 0.8 * rng.standard_normal(dim)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return chunks, vectors


def time_queries(store: VectorStore, name: str, queries: np.ndarray, documents: list[str | None]) -> list[float]:
    times = []
    for vector, document in zip(queries, documents, strict=True):
        started = time.perf_counter()
        store.search(name, vector, TOP_K, document=document)
        times.append((time.perf_counter() - started) * 1000)
    return times


def describe(label: str, times: list[float]) -> str:
    p95 = float(np.percentile(times, 95))
    return f"{label:<44} median {statistics.median(times):8.3f} ms   p95 {p95:8.3f} ms   (n={len(times)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384, help="vector size (384 = the default model, MiniLM)")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--compare-client", action="store_true", help="also time qdrant-client's local mode")
    parser.add_argument("--keep", type=Path, help="build the store in this folder and keep it")
    args = parser.parse_args(argv)
    for name in ("chunks", "documents", "dim", "queries"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1")

    chunks, vectors = make_corpus(args.chunks, args.documents, args.dim)
    rng = np.random.default_rng(11)
    picks = rng.integers(0, len(chunks), size=args.queries)
    queries = vectors[picks] + 0.3 * rng.standard_normal((args.queries, args.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    filters = [chunks[i].document for i in picks]
    name = collection_name("fixed_size", "all-minilm-l6-v2")
    doc_of = np.array([c.document for c in chunks])

    workdir = args.keep or Path(tempfile.mkdtemp(prefix="chunkbench-retrieval-"))
    engines = ["edge", "client"] if args.compare_client else ["edge"]
    medians: dict[str, float] = {}
    print(f"collection: {len(chunks):,} chunks, {args.documents} documents, dimension {args.dim}, top_k {TOP_K}")
    for engine in engines:
        with VectorStore(local_root=workdir / engine, local_engine=engine) as store:  # type: ignore[arg-type]  # each engine name the store accepts
            started = time.perf_counter()
            store.ensure_collection(name, args.dim)
            store.replace_points(name, chunks, vectors)
            build = time.perf_counter() - started
            label = "embedded Qdrant (qdrant-edge)" if engine == "edge" else "qdrant-client local mode"
            print(f"\n[{label}] built in {build:.1f} s ({store.count(name):,} points)")
            store.search(name, queries[0], TOP_K, document=filters[0])  # warm-up
            n = args.queries if engine == "edge" else min(args.queries, 30)
            filtered = time_queries(store, name, queries[:n], filters[:n])
            unfiltered = time_queries(store, name, queries[:n], [None] * n)
            print(describe("search with document filter", filtered))
            print(describe("search without filter", unfiltered))
            medians[engine] = statistics.median(filtered)
            # exactness: the filtered hits are the exact top-k of that document
            misses = 0
            for q, document in list(zip(queries, filters, strict=True))[:50]:
                rows = np.flatnonzero(doc_of == document)
                exact = rows[np.argsort(-(vectors[rows] @ q))[:TOP_K]]
                got = [h.chunk_id for h in store.search(name, q, TOP_K, document=document)]
                misses += len(set(chunks[i].chunk_id for i in exact) - set(got))
            print(f"{'recall vs exact numpy search (50 queries)':<44} {1 - misses / (50 * TOP_K):.3f}")

    verdict = "PASS" if medians["edge"] <= TARGET_MS else "FAIL"
    print(
        f"\ntarget: median <= {TARGET_MS} ms per filtered query on the embedded default -> "
        f"{medians['edge']:.3f} ms {verdict}"
    )
    if "client" in medians:
        print(
            f"qdrant-client local mode for comparison: {medians['client']:.1f} ms "
            f"({medians['client'] / medians['edge']:.0f}x slower)"
        )
    if args.keep is None:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())
