"""What one question retrieves: the top-k hits, their neighbors and parents.

Neighbor expansion (``apply_neighbor_expansion``):

1. one expansion-tree node per top-k hit, in score order;
2. the chunk_index values needed: each hit's index - 1 .. - prev and + 1 .. + next
   (indices < 0 skipped);
3. the ones that are not hits are fetched from the collection (one call per document;
   an index past the last chunk simply does not come back);
4. each node's ``neighbors_prev`` / ``neighbors_next`` are filled (document order);
5. the flat list is hits + neighbors, de-duplicated by chunk_id preferring the hit,
   sorted by chunk_index (several documents: the document of the best hit first);
6. neighbors have role ``neighbor`` and score None.

It applies when the strategy is in ``ExpansionSettings.strategies`` (default: the strategies
registered with ``neighbor_expansion``, i.e. ``fixed_size``, whose windows cut running text
anywhere, so the chunks around a hit continue it) and prev or next > 0; otherwise the tree
holds the hits with empty neighbor lists and the flat list is the hits in rank order.

Parent context: for the strategies registered with ``parent_context`` (``semantic_parent_child``)
each hit's ``parent_id`` is fetched by chunk id and its text goes under the child in the prompt
context; the flat list is child, its parent (once, under its first child), next child, ...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.errors import ConfigError, VectorStoreError

from .questions import Span

NEIGHBOR_MAX = 5


def default_expansion_strategies() -> frozenset[str]:
    """The strategies neighbor expansion applies to unless told otherwise (capability ``neighbor_expansion``)."""
    return frozenset(STRATEGIES.with_capability("neighbor_expansion"))


def gives_parent_context(strategy: str | None) -> bool:
    """Whether retrieval hands each hit's parent chunk to the LLM (capability ``parent_context``)."""
    spec = STRATEGIES.get(strategy) if strategy else None
    return spec is not None and spec.capabilities.parent_context


@dataclass(frozen=True)
class ExpansionSettings:
    """Neighbor expansion knobs: prev/next in 0..5 and the strategies it applies to."""

    neighbor_prev: int = 0
    neighbor_next: int = 0
    strategies: frozenset[str] = field(default_factory=default_expansion_strategies)

    def __post_init__(self) -> None:
        for name in ("neighbor_prev", "neighbor_next"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= NEIGHBOR_MAX:
                raise ConfigError(f"{name} must be an integer from 0 to {NEIGHBOR_MAX}, got {value!r}")
        if isinstance(self.strategies, str) or not all(isinstance(s, str) for s in self.strategies):
            raise ConfigError(f"expansion strategies must be a set of strategy names, got {self.strategies!r}")
        object.__setattr__(self, "strategies", frozenset(self.strategies))

    def applies_to(self, strategy: str | None) -> bool:
        return strategy in self.strategies and (self.neighbor_prev > 0 or self.neighbor_next > 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "neighbor_prev": self.neighbor_prev,
            "neighbor_next": self.neighbor_next,
            "strategies": sorted(self.strategies),
        }


@dataclass
class RetrievedChunk:
    """One chunk in a question's context: a hit (rank, score), a neighbor or a parent (neither)."""

    rank: int | None
    chunk_id: str
    document: str
    start: int
    end: int
    score: float | None
    chunk_index: int | None = None
    role: str = "hit"  # hit | neighbor | parent
    parent_id: str | None = None
    text: str = field(default="", repr=False)
    #: the first and last page the chunk spans (1-based); None for a document without pages, or a collection
    #: built before chunks knew their pages
    page_start: int | None = None
    page_end: int | None = None

    @property
    def span(self) -> Span:
        return Span(self.document, self.start, self.end)

    def to_record(self) -> dict[str, Any]:
        """JSON-ready, without the text (question_results stores offsets, not copies)."""
        return {
            "rank": self.rank,
            "chunk_id": self.chunk_id,
            "document": self.document,
            "start": self.start,
            "end": self.end,
            "score": self.score,
            "chunk_index": self.chunk_index,
            "role": self.role,
            "parent_id": self.parent_id,
        }

    @classmethod
    def from_payload(
        cls, payload: Mapping[str, Any], rank: int | None = None, score: float | None = None, role: str = "hit"
    ) -> RetrievedChunk:
        """From a Qdrant payload (``start``/``end``) or a ``chunks`` table row (``start_offset``/``end_offset``)."""
        index = payload.get("chunk_index")
        start = payload["start"] if "start" in payload else payload["start_offset"]
        end = payload["end"] if "end" in payload else payload["end_offset"]
        return cls(
            rank=rank,
            chunk_id=str(payload["chunk_id"]),
            document=str(payload["document"]),
            start=int(start),
            end=int(end),
            score=score,
            chunk_index=int(index) if index is not None else None,
            role=role,
            parent_id=_id_or_none(payload.get("parent_id")),
            text=str(payload.get("text") or ""),
            page_start=_page_or_none(payload.get("page_start")),
            page_end=_page_or_none(payload.get("page_end")),
        )


def _page_or_none(raw: Any) -> int | None:
    """A page number, or None (missing, or NaN from a table row read through pandas)."""
    if raw is None or isinstance(raw, bool):
        return None
    try:
        page = int(raw)
    except (TypeError, ValueError, OverflowError):
        return None
    return page if page >= 1 else None


def _id_or_none(raw: Any) -> str | None:
    """An id, or None for a missing one (a table row read through pandas gives NaN, which is not JSON)."""
    return str(raw) if isinstance(raw, str) and raw else None


@dataclass
class ExpansionNode:
    """One hit of the expansion tree with the neighbors (and parent) it brought in."""

    hit: RetrievedChunk
    neighbors_prev: list[RetrievedChunk] = field(default_factory=list)
    neighbors_next: list[RetrievedChunk] = field(default_factory=list)
    parent: RetrievedChunk | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "hit": self.hit.chunk_id,
            "rank": self.hit.rank,
            "score": self.hit.score,
            "neighbors_prev": [c.chunk_id for c in self.neighbors_prev],
            "neighbors_next": [c.chunk_id for c in self.neighbors_next],
            "parent": self.parent.chunk_id if self.parent else None,
        }


class NeighborSource(Protocol):
    def fetch_by_indices(self, collection: str, document: str, indices: Iterable[int]) -> list[dict[str, Any]]: ...


def apply_neighbor_expansion(
    hits: Sequence[RetrievedChunk],
    store: NeighborSource,
    collection: str,
    strategy: str | None,
    settings: ExpansionSettings,
) -> tuple[list[RetrievedChunk], list[ExpansionNode]]:
    """The flat context list and the expansion tree of ``hits`` (rank order), steps of the module docstring."""
    tree = [ExpansionNode(hit) for hit in hits]
    if not settings.applies_to(strategy):
        return list(hits), tree
    known: dict[tuple[str, int], RetrievedChunk] = {
        (h.document, h.chunk_index): h for h in hits if h.chunk_index is not None
    }
    wanted: dict[str, set[int]] = {}
    for hit in hits:
        if hit.chunk_index is None:
            continue
        for offset in (*range(-settings.neighbor_prev, 0), *range(1, settings.neighbor_next + 1)):
            index = hit.chunk_index + offset
            if index >= 0 and (hit.document, index) not in known:
                wanted.setdefault(hit.document, set()).add(index)
    for document in sorted(wanted):
        for payload in store.fetch_by_indices(collection, document, sorted(wanted[document])):
            chunk = RetrievedChunk.from_payload(payload, role="neighbor")
            if chunk.chunk_index is not None:
                known.setdefault((chunk.document, chunk.chunk_index), chunk)
    for node in tree:
        index = node.hit.chunk_index
        if index is None:
            continue
        node.neighbors_prev = [
            known[(node.hit.document, i)]
            for i in range(index - settings.neighbor_prev, index)
            if (node.hit.document, i) in known
        ]
        node.neighbors_next = [
            known[(node.hit.document, i)]
            for i in range(index + 1, index + settings.neighbor_next + 1)
            if (node.hit.document, i) in known
        ]
    flat: dict[str, RetrievedChunk] = {h.chunk_id: h for h in hits}  # hits first: a hit wins over its neighbor copy
    for node in tree:
        for chunk in (*node.neighbors_prev, *node.neighbors_next):
            flat.setdefault(chunk.chunk_id, chunk)
    document_order: dict[str, int] = {}
    for hit in hits:
        document_order.setdefault(hit.document, len(document_order))
    ordered = sorted(
        flat.values(),
        key=lambda c: (
            document_order.get(c.document, len(document_order)),
            c.chunk_index if c.chunk_index is not None else -1,
        ),
    )
    return ordered, tree


def ranking_order(tree: Sequence[ExpansionNode]) -> list[RetrievedChunk]:
    """The expanded chunks as a ranking (for RR/nDCG after expansion).

    Each hit in score order, followed by its neighbors nearest first (prev before next
    at equal distance) and its parent; a chunk already listed keeps its first place.
    """
    seen: dict[str, RetrievedChunk] = {}
    for node in tree:
        seen.setdefault(node.hit.chunk_id, node.hit)
        prev = list(reversed(node.neighbors_prev))
        nxt = list(node.neighbors_next)
        for distance in range(max(len(prev), len(nxt))):
            for side in (prev, nxt):
                if distance < len(side):
                    seen.setdefault(side[distance].chunk_id, side[distance])
        if node.parent is not None:
            seen.setdefault(node.parent.chunk_id, node.parent)
    return list(seen.values())


def attach_parents(
    context: Sequence[RetrievedChunk],
    tree: Sequence[ExpansionNode],
    store: Any,
    collection: str,
    parents: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[RetrievedChunk]:
    """Look the parents of the hits up by chunk id; each goes under its first child.

    ``parents`` (parent chunk_id -> payload or ``chunks`` table row) is used when given
    (parents that are stored but not embedded are not in the collection); otherwise
    ``store.fetch_by_chunk_ids(collection, chunk_ids)``. A parent found nowhere is a
    VectorStoreError (it would silently shrink the context).
    """
    parent_ids = list(dict.fromkeys(n.hit.parent_id for n in tree if n.hit.parent_id))
    if not parent_ids:
        return list(context)
    if parents is not None:
        found = [parents[p] for p in parent_ids if p in parents]
    else:
        fetch = getattr(store, "fetch_by_chunk_ids", None)
        if fetch is None:
            raise VectorStoreError(
                "parent context (semantic_parent_child) needs the parent chunks: pass parents= or a store with "
                f"fetch_by_chunk_ids(collection, chunk_ids); {type(store).__name__} has none"
            )
        found = fetch(collection, parent_ids)
    by_id = {str(p["chunk_id"]): RetrievedChunk.from_payload(p, role="parent") for p in found}
    missing = [p for p in parent_ids if p not in by_id]
    if missing:
        raise VectorStoreError(f"{collection}: parent chunk(s) not found: {', '.join(missing[:5])}")
    for node in tree:
        node.parent = by_id.get(node.hit.parent_id) if node.hit.parent_id else None
    out: list[RetrievedChunk] = []
    placed: set[str] = set()
    for chunk in context:
        out.append(chunk)
        parent = by_id.get(chunk.parent_id) if chunk.parent_id else None
        if parent is not None and parent.chunk_id not in placed and chunk.chunk_id != parent.chunk_id:
            placed.add(parent.chunk_id)
            out.append(parent)
    return out
