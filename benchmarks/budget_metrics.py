"""Which metric should rank configurations? Chunk size against recall@5 and the budgeted metrics.

    python benchmarks/budget_metrics.py [--data DIR] [--sizes 128,256,512,1024] [--halves 200]

On the Chroma general-evaluation corpora (472 questions, the report's protocol: one
collection, no document filter, 5 chunks per question, MiniLM), fixed_size chunks of
128, 256, 512 and 1,024 cl100k tokens (no overlap) are scored with the pipeline's own
code. Printed side by side, per chunk size: recall@5, the context tokens the LLM would
read, recall_at_256/512/1024/2048 and budget_auc. recall@5 rises with chunk size simply
because bigger chunks hold more text; a budgeted metric compares every size at the same
number of context tokens.

Then rank stability: for each candidate metric, the configurations are ranked on random
halves of the questions (``--halves`` draws, seeded) and compared with the ranking on all
questions: the mean Kendall tau and how often the half's winner is the overall winner.
The default ranking metric is the budgeted one that is stable AND does not reward size
alone (README, "Choosing the ranking metric").
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.chunking import make_chunker
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.evaluation.chroma import DEFAULT_DATA, load_corpora, load_questions
from chunkbench_core.evaluation.experiment import RetrievalOptions, collection_chunks, run_retrieval
from chunkbench_core.storage.embedding_cache import EmbeddingCache
from chunkbench_core.storage.vector_store import VectorStore

CANDIDATES = ("recall", "recall_at_256", "recall_at_512", "recall_at_1024", "recall_at_2048", "budget_auc")
LABELS = {"recall": "recall@5"}


def per_question(outcomes) -> dict[str, np.ndarray]:
    values: dict[str, list[float]] = {m: [] for m in (*CANDIDATES, "context_tokens")}
    for o in outcomes:
        merged = {**o.scores, **o.budget_scores}
        for m in values:
            values[m].append(float(merged.get(m, float("nan"))))
    return {m: np.asarray(v) for m, v in values.items()}


def stability(table: dict[str, dict[str, np.ndarray]], metric: str, halves: int, seed: int = 0) -> tuple[float, float]:
    """(mean Kendall tau of half rankings vs the full ranking, share of halves whose winner is the full winner)."""
    configs = list(table)
    n = len(next(iter(table.values()))[metric])
    full = np.asarray([np.nanmean(table[c][metric]) for c in configs])
    rng = np.random.default_rng(seed)
    taus, same = [], 0
    for _ in range(halves):
        half = rng.choice(n, n // 2, replace=False)
        means = np.asarray([np.nanmean(table[c][metric][half]) for c in configs])
        tau = stats.kendalltau(full, means).statistic
        taus.append(0.0 if np.isnan(tau) else tau)
        same += int(np.argmax(means) == np.argmax(full))
    return float(np.mean(taus)), same / halves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sizes", default="128,256,512,1024")
    parser.add_argument("--halves", type=int, default=200)
    parser.add_argument("--limit", type=int, help="first N questions only (a quick slice, not comparable)")
    args = parser.parse_args(argv)
    if not (args.data / "corpora").is_dir():
        print(f"no Chroma data at {args.data}")
        return 1
    sizes = [int(s) for s in args.sizes.split(",")]
    documents = load_corpora(args.data)
    questions = load_questions(args.data, documents, args.limit)
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "cache.sqlite")
        embedder = Embedder(get_model("all-minilm-l6-v2"), cache=cache)
        table: dict[str, dict[str, np.ndarray]] = {}
        with VectorStore(local_root=str(Path(tmp) / "qdrant")) as store:
            for size in sizes:
                started = time.perf_counter()
                chunker = make_chunker("fixed_size", chunk_size=size, chunk_overlap=0)
                chunks = [c for d in documents for c in chunker.chunk(d)]
                name = f"budget_fixed_{size}"
                store.ensure_collection(name, embedder.spec.dimension)
                store.replace_points(name, chunks, embedder.embed([c.text_to_embed for c in chunks], "document"))
                outcomes = run_retrieval(
                    questions,
                    embedder,
                    store,
                    name,
                    RetrievalOptions(top_k=5, strategy="fixed_size", chunks=collection_chunks(chunks)),
                )
                table[f"fixed_size {size}"] = per_question(outcomes)
                print(f"  fixed_size {size}: {len(chunks)} chunks, {time.perf_counter() - started:.0f} s", flush=True)
    print(f"\nChroma general evaluation: {len(questions)} questions, 5 chunks per question, MiniLM\n")
    header = ["configuration", "context tokens", *(LABELS.get(m, m) for m in CANDIDATES)]
    rows = [
        [name, f"{np.nanmean(v['context_tokens']):,.0f}", *(f"{np.nanmean(v[m]):.3f}" for m in CANDIDATES)]
        for name, v in table.items()
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    smallest, largest = list(table)[0], list(table)[-1]
    print(
        f"\nratio {largest} / {smallest}: "
        + ", ".join(
            f"{LABELS.get(m, m)} {np.nanmean(table[largest][m]) / max(np.nanmean(table[smallest][m]), 1e-9):.2f}x"
            for m in CANDIDATES
        )
    )
    print(f"\nrank stability over {args.halves} random halves of the questions (seeded):")
    for m in CANDIDATES:
        tau, same = stability(table, m, args.halves)
        means = [np.nanmean(table[c][m]) for c in table]
        winner = list(table)[int(np.argmax(means))]
        rises = all(b >= a for a, b in zip(means, means[1:]))
        print(
            f"  {LABELS.get(m, m):15s} Kendall tau {tau:.2f}, same winner {same:.0%}, winner {winner}"
            + (", rises with size" if rises else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
