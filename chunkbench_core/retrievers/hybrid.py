"""``hybrid``: the dense ranking fused with a keyword (BM25) ranking by reciprocal rank fusion.

Near-identical documents (four quarterly reports of one company) differ in a few exact words: a period
("April 1, 2023"), a figure. An embedding places their chunks side by side; a keyword ranking tells them
apart. Each question gets both rankings, ``DEPTH`` deep, over the chunks it may search; a chunk's fused
score is the sum over the rankings it is in of ``1 / (RRF_K + rank)``, and the ``top_k`` best are kept, ties
in chunk_id order, so the same inputs give the same hits.

The keyword index is bm25s (a maintained BM25 implementation on numpy sparse matrices) over the stored
chunks' text, built when the retriever is opened; its build time and size are the retriever's index figures.
Words are runs of Unicode letters and digits, lower-cased (:func:`words`): no stemming and no stop-word
list, which are English-only and would treat Persian text worse than English; BM25's inverse document
frequency already weighs down words every chunk has. Persian and Arabic-Indic digits read as ASCII digits
and the Arabic forms of yeh and kaf as the Persian ones, so "۱۴۰۲" matches "1402" as a reader expects.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Sequence

import numpy as np

from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.evaluation.retrieval import RetrievedChunk
from chunkbench_core.evaluation.search import document_key
from chunkbench_core.storage.vector_store import VectorStore

from .dense import DenseRetriever
from .registry import (
    Documents,
    IndexFigures,
    Retriever,
    SearchRequest,
    register_retriever,
)

#: the constant of reciprocal rank fusion (the value its authors found robust, used by most engines)
RRF_K = 60
#: how deep each ranking goes before fusion (a chunk below it adds less than 1 / (RRF_K + DEPTH) to a score)
DEPTH = 50

_WORD = re.compile(r"\w+", re.UNICODE)
_LETTERS = str.maketrans({"ي": "ی", "ى": "ی", "ك": "ک", "\u200c": " "})


def words(text: str) -> list[str]:
    """The words BM25 counts: NFKC-normalized, case-folded runs of letters and digits (any script; a zero-width
    non-joiner separates the parts of a Persian word); every Unicode decimal digit read as its ASCII digit."""
    normal = unicodedata.normalize("NFKC", text).casefold().translate(_LETTERS)
    out = []
    for word in _WORD.findall(normal):
        if not word.isascii():
            word = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in word)
        out.append(word)
    return out


@register_retriever(
    "hybrid",
    description="the dense ranking fused with a keyword (BM25) ranking by reciprocal "
    "rank fusion: exact words such as a period or a figure count",
)
class HybridRetriever(Retriever):
    def __init__(self, store: VectorStore, collection: str) -> None:
        import bm25s

        super().__init__(store, collection)
        self.dense = DenseRetriever(store, collection)
        started = time.perf_counter()
        # chunk_id order: the row order, and so the order ties keep, does not depend on the engine's
        payloads = sorted(store.payloads(collection), key=lambda p: str(p["chunk_id"]))
        self.payloads = payloads
        self.chunk_ids = [str(p["chunk_id"]) for p in payloads]
        rows: dict[str, list[int]] = {}
        for row, payload in enumerate(payloads):
            rows.setdefault(str(payload["document"]), []).append(row)
        self.rows_of: dict[str, np.ndarray] = {d: np.asarray(r, dtype=np.int64) for d, r in rows.items()}
        self.bm25 = bm25s.BM25()
        if payloads:
            self.bm25.index([words(str(p.get("text") or "")) or [""] for p in payloads], show_progress=False)
        arrays = [v for v in getattr(self.bm25, "scores", {}).values() if isinstance(v, np.ndarray)]
        vocabulary = sum(len(w.encode("utf-8")) + 8 for w in getattr(self.bm25, "vocab_dict", {}) or {})
        self.index = IndexFigures(time.perf_counter() - started, int(sum(a.nbytes for a in arrays)) + vocabulary)

    def keyword_ranking(self, text: str, documents: Documents, depth: int = DEPTH) -> list[tuple[int, float]]:
        """(row, BM25 score) of the best ``depth`` chunks the question may search that share a word with it, best
        first, ties in chunk_id order."""
        if not self.payloads:
            return []
        known = [w for w in dict.fromkeys(words(text)) if w in (self.bm25.vocab_dict or {})]
        if not known:
            return []
        scores = np.asarray(self.bm25.get_scores(known), dtype=np.float64)
        key = document_key(documents)
        rows = (
            np.arange(len(scores))
            if key is None
            else np.sort(
                np.concatenate(
                    [self.rows_of.get(d, np.empty(0, dtype=np.int64)) for d in key] or [np.empty(0, dtype=np.int64)]
                )
            )
        )
        rows = rows[scores[rows] > 0]
        order = np.lexsort((rows, -scores[rows]))[:depth]  # rows are in chunk_id order
        return [(int(rows[i]), float(scores[rows[i]])) for i in order]

    def fuse(
        self, dense: Sequence[RetrievedChunk], text: str, top_k: int, documents: Documents
    ) -> list[RetrievedChunk]:
        fused: dict[str, float] = {}
        chunks: dict[str, RetrievedChunk] = {}
        rows: dict[str, int] = {}  # a keyword hit's row: made a chunk only if it is kept
        for rank, hit in enumerate(dense, start=1):
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + 1.0 / (RRF_K + rank)
            chunks[hit.chunk_id] = hit
        for rank, (row, _) in enumerate(self.keyword_ranking(text, documents, max(DEPTH, top_k)), start=1):
            chunk_id = self.chunk_ids[row]
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
            rows[chunk_id] = row
        best = sorted(fused, key=lambda c: (-fused[c], c))[:top_k]
        out = []
        for rank, chunk_id in enumerate(best, start=1):
            hit = chunks.get(chunk_id) or RetrievedChunk.from_payload(self.payloads[rows[chunk_id]])
            out.append(
                RetrievedChunk(
                    rank=rank,
                    chunk_id=hit.chunk_id,
                    document=hit.document,
                    start=hit.start,
                    end=hit.end,
                    score=fused[chunk_id],
                    chunk_index=hit.chunk_index,
                    role="hit",
                    parent_id=hit.parent_id,
                    text=hit.text,
                )
            )
        return out

    def search_all(self, request: SearchRequest) -> list[list[RetrievedChunk] | ChunkbenchError]:
        deep = SearchRequest(
            request.texts, request.vectors, max(DEPTH, request.top_k), request.documents, request.settings
        )
        out: list[list[RetrievedChunk] | ChunkbenchError] = []
        for text, dense, documents in zip(request.texts, self.dense.search_all(deep), request.documents):
            out.append(
                dense if isinstance(dense, ChunkbenchError) else self.fuse(dense, text, request.top_k, documents)
            )
        return out

    def search_one(
        self, text: str, vector: np.ndarray, top_k: int, documents: Documents = None
    ) -> list[RetrievedChunk]:
        dense = self.dense.search_one(text, vector, max(DEPTH, top_k), documents)
        return self.fuse(dense, text, top_k, documents)
