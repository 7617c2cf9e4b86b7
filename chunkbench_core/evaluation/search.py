"""Exact search of every question of a run at once: the same hits as one search per question, in a fraction
of the time.

One search per question asks the vector store to score every chunk for that question alone. Here the
questions are scored against the collection's stored vectors in blocks (matrix products through numpy's
BLAS), and only the few chunks that can be in a question's top k are handed back to the store, which scores
them with its own arithmetic and returns their payloads:

1. the stored vectors (unit length: the engine normalizes them for cosine) and each point's document are read
   once;
2. a block of questions is scored against all chunks (or the chunks of the question's document when the
   search is filtered by document), at most ``block_mb`` MB of scores at a time, so memory never grows with
   questions x chunks;
3. a question's candidates are the chunks scoring within ``2 * margin`` of its k-th best score, found
   without sorting the row (the k-th best of 256 column groups' maxima bounds it from below, then the
   entries of the few groups whose maximum reaches that bound are compared with it); ``margin`` bounds the
   difference between a BLAS score and the store's score of the same pair (float32 rounding of a
   ``dimension``-term dot product on either side, and of the query's normalization), so every chunk the store
   could place in the top k, or tie with the k-th, is a candidate;
4. the store scores each question's candidates (one batched request for many questions) and they are
   ordered exactly as :func:`search_stable` orders a full search: score descending, then
   chunk_id.

So the hits, their ranks and their scores are those of the one-at-a-time search, ties included.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from chunkbench_core.errors import ChunkbenchError, ConfigError
from chunkbench_core.progress import Tracker
from chunkbench_core.storage.vector_store import SearchHit, VectorStore

from .retrieval import RetrievedChunk

DEFAULT_BLOCK_MB = 64
BLOCK_MB_MAX = 4096
#: column groups whose maxima bound a row's k-th best score from below: the more groups, the fewer entries read
#: after their maxima (256 read a quarter of 64's, finding a block's candidates in a quarter of the time; 512 gains
#: nothing more)
GROUPS = 256
#: questions whose candidates the store scores in one request
RESCORE_BATCH = 256


@dataclass(frozen=True)
class SearchSettings:
    """How the batched search runs: ``block_mb``, the most memory one block of scores takes (MB)."""

    block_mb: int = DEFAULT_BLOCK_MB

    def __post_init__(self) -> None:
        value = self.block_mb
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= BLOCK_MB_MAX:
            raise ConfigError(
                f"search block_mb must be a whole number of MB from 1 to {BLOCK_MB_MAX} (the memory "
                f"one block of question x chunk scores may take), got {value!r}"
            )

    @property
    def block_cells(self) -> int:
        return self.block_mb * 1024 * 1024 // 4  # float32 scores


def score_margin(dimension: int) -> float:
    """A bound on |BLAS score - store score| for unit vectors of ``dimension``: each side's float32 dot product
    is within ``dimension * 2**-24`` of the exact one, and the two normalizations of the query differ by less
    than that again; doubled for safety (it only adds candidates, rarely more than one)."""
    return 6.0 * max(dimension, 1) * 2.0**-24


class StoredVectors:
    """A collection's points as the batched search needs them: point ids, their vectors scaled to unit length,
    the rows of each document."""

    def __init__(self, point_ids: Sequence[str], vectors: np.ndarray, documents: Sequence[str]) -> None:
        self.point_ids = list(point_ids)
        self.vectors = np.ascontiguousarray(unit_rows(np.asarray(vectors, dtype=np.float32)))  # as cosine compares
        if self.vectors.ndim != 2 or len(self.vectors) != len(self.point_ids) or len(documents) != len(self.point_ids):
            raise ValueError(
                f"{len(self.point_ids)} point ids, {len(documents)} documents and vectors of shape "
                f"{self.vectors.shape} do not match"
            )
        order: dict[str, list[int]] = {}
        for row, document in enumerate(documents):
            order.setdefault(document, []).append(row)
        self.rows_of = {d: np.asarray(rows, dtype=np.int64) for d, rows in order.items()}

    @classmethod
    def read(cls, store: VectorStore, collection: str) -> "StoredVectors":
        return cls(*store.stored_vectors(collection))

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (as the store normalizes a cosine query); a zero row stays zero."""
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.size == 0:
        return rows.copy()
    # the squares summed in float64 row by row, without a float64 copy of the matrix (memory)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows, dtype=np.float64))[:, None]
    return (rows / np.where(norms > 0, norms, 1.0).astype(np.float32)).astype(np.float32, copy=False)


def candidates_of_block(scores: np.ndarray, k: int, margin: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, score) of every entry of ``scores`` within ``margin`` of or above its row's k-th best score
    (every entry when a row has k or fewer): a superset of each row's top k, without sorting a row."""
    n_rows, n_cols = scores.shape
    if n_cols <= k:
        rows, cols = np.divmod(np.arange(n_rows * n_cols), n_cols)
        return rows, cols, scores.reshape(-1).copy()  # a copy: the caller reuses the scores' memory
    groups = min(n_cols, max(GROUPS, 4 * k))
    if groups == n_cols:  # a narrow block: the k-th best itself
        lower = np.partition(scores, n_cols - k, axis=1)[:, n_cols - k]
        rows, cols = np.nonzero(scores >= (lower - margin)[:, None])
        return rows, cols, scores[rows, cols]
    # k groups' maxima are k distinct entries: the k-th best of the maxima is at most the row's k-th best
    width = math.ceil(n_cols / groups)
    starts = np.arange(0, n_cols, width)
    maxima = np.maximum.reduceat(scores, starts, axis=1)
    threshold = np.partition(maxima, maxima.shape[1] - k, axis=1)[:, maxima.shape[1] - k] - margin
    # only a group whose maximum reaches the threshold holds an entry that does (a few per row): those groups'
    # entries are read, not the whole row again
    pair_rows, pair_groups = np.nonzero(maxima >= threshold[:, None])
    columns = starts[pair_groups][:, None] + np.arange(width)  # each pair's group, one row of columns
    inside = columns < n_cols  # the last group may be narrower
    values = scores[pair_rows[:, None], np.minimum(columns, n_cols - 1)]
    keep = inside & (values >= threshold[pair_rows][:, None])
    return np.broadcast_to(pair_rows[:, None], keep.shape)[keep], columns[keep], values[keep]


def keep_near_top(
    rows: np.ndarray, cols: np.ndarray, values: np.ndarray, n_rows: int, k: int, margin: float
) -> list[np.ndarray]:
    """Per row, the columns within ``margin`` of or above the row's k-th best value among its entries, best first."""
    order = np.lexsort((cols, -values, rows))
    rows, cols, values = rows[order], cols[order], values[order]
    bounds = np.searchsorted(rows, np.arange(n_rows + 1))
    out: list[np.ndarray] = []
    for r in range(n_rows):
        begin, end = bounds[r], bounds[r + 1]
        if end - begin <= k:
            out.append(cols[begin:end])
            continue
        kth = values[begin + k - 1]
        out.append(cols[begin:end][values[begin:end] >= kth - margin])
    return out


def candidate_rows(
    queries: np.ndarray,
    matrix: np.ndarray,
    k: int,
    margin: float,
    cells: int,
    tracker: Tracker | None = None,
    done: int = 0,
) -> list[np.ndarray]:
    """For each query (unit rows), the rows of ``matrix`` that may be in its top k (see :func:`keep_near_top`),
    scoring at most ``cells`` query x row pairs at a time."""
    n_queries, n_rows = len(queries), len(matrix)
    if n_rows == 0:
        return [np.empty(0, dtype=np.int64) for _ in range(n_queries)]
    block_queries = max(1, min(n_queries, cells // n_rows))
    block_rows = n_rows if block_queries > 1 or n_rows <= cells else cells
    # one buffer for every block's scores: a fresh array per block is fresh memory the kernel must map and zero
    # (5 GB over 20,000 questions x 65,000 chunks, about a tenth of the search's time)
    buffer = np.empty(min(block_queries, n_queries) * min(block_rows, n_rows), dtype=np.float32)
    out: list[np.ndarray] = []
    for begin in range(0, n_queries, block_queries):
        part = queries[begin : begin + block_queries]
        found_rows, found_cols, found_values = [], [], []
        for first in range(0, n_rows, block_rows):
            columns = matrix[first : first + block_rows]
            scores = buffer[: len(part) * len(columns)].reshape(len(part), len(columns))
            np.matmul(part, columns.T, out=scores)
            rows, cols, values = candidates_of_block(scores, k, 2 * margin)
            found_rows.append(rows)
            found_cols.append(cols + first)
            found_values.append(values)
        out.extend(
            keep_near_top(
                np.concatenate(found_rows),
                np.concatenate(found_cols),
                np.concatenate(found_values),
                len(part),
                k,
                2 * margin,
            )
        )
        if tracker is not None:
            tracker.step(done + begin + len(part))
    return out


def document_key(documents: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """What a question may search, one way: None (every document) or the sorted names of its documents."""
    if documents is None:
        return None
    return (documents,) if isinstance(documents, str) else tuple(sorted(set(documents)))


def search_many(
    store: VectorStore,
    collection: str,
    vectors: np.ndarray,
    top_k: int,
    documents: Sequence[str | Sequence[str] | None] | None = None,
    settings: SearchSettings = SearchSettings(),
    stored: StoredVectors | None = None,
) -> list[list[SearchHit]]:
    """The ``top_k`` hits of each query vector (``documents[i]``: only that document's chunks, or those of the
    documents it names; None: all), best
    first with ties in chunk_id order: for each query, what :func:`search_stable` finds, with the
    store's own scores and payloads (module docstring). ``stored``: the collection's vectors when already read.
    A long search says how far it is (a progress line)."""
    if not isinstance(top_k, int) or isinstance(top_k, bool) or top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k!r}")
    raw = (
        np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
        if len(vectors)
        else np.empty((0, 0), dtype=np.float32)
    )
    queries = unit_rows(raw)
    wanted = [document_key(d) for d in documents] if documents is not None else [None] * len(queries)
    if len(wanted) != len(queries):
        raise ValueError(f"{len(queries)} query vectors but {len(wanted)} documents")
    stored = stored if stored is not None else StoredVectors.read(store, collection)
    tracker = Tracker("searching", len(queries), unit="questions", only_when_long=True)
    margin = score_margin(stored.dimension)
    groups: dict[tuple[str, ...] | None, list[int]] = {}
    for i, document in enumerate(wanted):
        groups.setdefault(document, []).append(i)
    candidates: list[np.ndarray] = [np.empty(0, dtype=np.int64)] * len(queries)
    done = 0
    for document, members in groups.items():
        rows = (
            np.arange(len(stored.point_ids))
            if document is None
            else np.sort(
                np.concatenate(
                    [stored.rows_of.get(d, np.empty(0, dtype=np.int64)) for d in document]
                    or [np.empty(0, dtype=np.int64)]
                )
            )
        )
        matrix = stored.vectors if document is None else stored.vectors[rows]
        found = candidate_rows(queries[members], matrix, top_k, margin, settings.block_cells, tracker, done)
        for i, columns in zip(members, found):
            candidates[i] = rows[columns]
        done += len(members)
    asked = [i for i in range(len(queries)) if len(candidates[i])]
    scored: dict[int, list[tuple[str, float]]] = {}
    for begin in range(0, len(asked), RESCORE_BATCH):
        part = asked[begin : begin + RESCORE_BATCH]
        # the vectors as given: the store normalizes them as it does in a search of its own
        scored.update(
            zip(
                part,
                store.score_candidates(
                    collection, raw[part], [[stored.point_ids[r] for r in candidates[i]] for i in part]
                ),
            )
        )
    # each hit point's payload read once (one dict shared by every question that finds it); its chunk_id breaks
    # ties of scores, as a search of its own orders them
    payloads = store.payloads_of_points(collection, (p for pairs in scored.values() for p, _ in pairs))
    hits: list[list[SearchHit]] = [[] for _ in queries]
    for i, pairs in scored.items():
        known = [(score, payloads[p]) for p, score in pairs if p in payloads]
        ordered = sorted(known, key=lambda h: (-h[0], str(h[1]["chunk_id"])))[:top_k]
        hits[i] = [SearchHit(rank=r, score=score, payload=payload) for r, (score, payload) in enumerate(ordered, 1)]
    tracker.step(len(queries))
    return hits


#: hits asked beyond top_k in one search, to see whether the score at rank k is tied with those below it
TIE_MARGIN = 8


def search_stable(
    store: VectorStore, collection: str, vector: np.ndarray, top_k: int, document: str | Sequence[str] | None = None
) -> list[RetrievedChunk]:
    """The ``top_k`` hits with ties broken by chunk_id, whatever order the engine returns ties in.

    Chunks with identical text (repeated boilerplate: 306 texts in 721 chunks of the Chroma
    corpora at recursive 250/125) have identical vectors and scores; a vector engine orders
    such ties arbitrarily, differently from one collection build to the next, which would
    change top-k sets and metrics between two runs on the same inputs. So more hits are
    asked for until the score at rank k is not tied with the last one returned, then hits
    are ordered by (score descending, chunk_id) and cut at k. ``document``: only that document's chunks, or
    those of the documents it names (each searched, the hits merged: the top k of the union is among them).
    """
    if document is not None and not isinstance(document, str):
        merged = [h for d in document_key(document) or () for h in search_stable(store, collection, vector, top_k, d)]
        ordered_hits = sorted(merged, key=lambda h: (-(h.score or 0.0), h.chunk_id))[:top_k]
        return [replace(h, rank=i) for i, h in enumerate(ordered_hits, start=1)]
    want = top_k + TIE_MARGIN
    while True:
        hits = store.search(collection, vector, want, document=document)
        if len(hits) < want or len(hits) <= top_k or hits[-1].score != hits[top_k - 1].score:
            break
        want *= 2
    ordered = sorted(hits, key=lambda h: (-h.score, str(h.payload["chunk_id"])))[:top_k]
    return [RetrievedChunk.from_payload(h.payload, rank=i, score=h.score) for i, h in enumerate(ordered, start=1)]


def search_all(
    store: VectorStore,
    collection: str,
    vectors: np.ndarray,
    top_k: int,
    documents: Sequence[str | Sequence[str] | None],
    settings: SearchSettings,
    sampled: Sequence[float],
) -> tuple[list[list[RetrievedChunk] | ChunkbenchError], list[float]]:
    """Every question's hits (:func:`search_many`: those of one search per question, in one batched
    pass) and each question's search time (the mean of the ``sampled`` single searches). When the batched pass
    fails, each question is searched alone, so a failure stays on the questions it concerns."""
    batched = None
    # qdrant-client's local mode scores with numpy, a few units in the 8th digit apart between a filtered and a
    # full search: its runs search one question at a time, so their scores stay those of a search of its own
    if getattr(store, "engine", "edge") != "client":
        try:
            batched = search_many(store, collection, vectors, top_k, documents, settings)
        except ChunkbenchError:
            batched = None
    if batched is not None:
        each = float(np.mean(sampled)) if sampled else 0.0
        read: dict[int, RetrievedChunk] = {}  # a payload's chunk read once (payloads are shared between hits)

        def hit(h: SearchHit) -> RetrievedChunk:
            c = read.get(id(h.payload))
            if c is None:
                c = read[id(h.payload)] = RetrievedChunk.from_payload(h.payload)
            return RetrievedChunk(
                h.rank,
                c.chunk_id,
                c.document,
                c.start,
                c.end,
                h.score,
                c.chunk_index,
                c.role,
                c.parent_id,
                c.text,
                c.page_start,
                c.page_end,
            )

        return [[hit(h) for h in hits] for hits in batched], [each] * len(vectors)
    found: list[list[RetrievedChunk] | ChunkbenchError] = []
    times: list[float] = []
    for vector, document in zip(vectors, documents):
        started = time.perf_counter()
        try:
            found.append(search_stable(store, collection, vector, top_k, document))
        except ChunkbenchError as exc:
            found.append(exc)
        times.append((time.perf_counter() - started) * 1000)
    return found, times
