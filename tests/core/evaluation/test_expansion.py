"""Neighbor expansion and parent context edge cases, with an in-memory store."""

from __future__ import annotations

import pytest

from chunkbench_core.errors import ConfigError, VectorStoreError
from chunkbench_core.evaluation.retrieval import (
    ExpansionSettings,
    RetrievedChunk,
    apply_neighbor_expansion,
    attach_parents,
    ranking_order,
)


def payload(document: str, index: int, parent_id: str | None = None) -> dict:
    return {
        "chunk_id": f"fixed_size_{document}_{index:06d}",
        "document": document,
        "chunk_index": index,
        "start": index * 10,
        "end": index * 10 + 10,
        "text": f"{document} chunk {index}",
        "parent_id": parent_id,
    }


class FakeStore:
    """``fetch_by_indices`` over documents of n chunks each; records every call."""

    def __init__(self, sizes: dict[str, int], parents: dict[str, dict] | None = None) -> None:
        self.sizes = sizes
        self.calls: list[tuple[str, list[int]]] = []
        self.parents = parents or {}

    def fetch_by_indices(self, collection, document, indices):
        wanted = sorted(set(indices))
        self.calls.append((document, wanted))
        return [payload(document, i) for i in wanted if 0 <= i < self.sizes[document]]

    def fetch_by_chunk_ids(self, collection, chunk_ids):
        return [self.parents[c] for c in chunk_ids if c in self.parents]


def hit(document: str, index: int, rank: int, score: float, parent_id: str | None = None) -> RetrievedChunk:
    return RetrievedChunk.from_payload(payload(document, index, parent_id), rank=rank, score=score)


def ids(chunks):
    return [c.chunk_id.rsplit("_", 1)[-1].lstrip("0") or "0" for c in chunks]


def test_first_chunk_has_no_previous_neighbors():
    store = FakeStore({"d": 10})
    flat, tree = apply_neighbor_expansion([hit("d", 0, 1, 0.9)], store, "c", "fixed_size", ExpansionSettings(2, 2))
    assert store.calls == [("d", [1, 2])]  # indices < 0 are never asked for
    assert tree[0].neighbors_prev == []
    assert ids(tree[0].neighbors_next) == ["1", "2"]
    assert ids(flat) == ["0", "1", "2"]
    assert [c.role for c in flat] == ["hit", "neighbor", "neighbor"]
    assert [c.score for c in flat] == [0.9, None, None]


def test_last_chunk_has_no_next_neighbors():
    store = FakeStore({"d": 5})
    flat, tree = apply_neighbor_expansion([hit("d", 4, 1, 0.8)], store, "c", "fixed_size", ExpansionSettings(1, 3))
    assert ids(tree[0].neighbors_prev) == ["3"]
    assert tree[0].neighbors_next == []  # 5, 6, 7 do not exist
    assert ids(flat) == ["3", "4"]


def test_overlapping_neighbors_of_two_hits_are_deduplicated_and_the_hit_wins():
    store = FakeStore({"d": 20})
    hits = [hit("d", 7, 1, 0.9), hit("d", 5, 2, 0.7)]
    flat, tree = apply_neighbor_expansion(hits, store, "c", "fixed_size", ExpansionSettings(2, 2))
    # 7 needs 5,6,8,9; 5 needs 3,4,6,7; 5 and 7 are hits, so only 3,4,6,8,9 are fetched
    assert store.calls == [("d", [3, 4, 6, 8, 9])]
    assert ids(flat) == ["3", "4", "5", "6", "7", "8", "9"]  # sorted by chunk_index
    roles = {c.chunk_index: c.role for c in flat}
    assert roles[5] == "hit" and roles[7] == "hit" and roles[6] == "neighbor"
    assert [c.score for c in flat if c.chunk_index in (5, 7)] == [0.7, 0.9]
    # the tree keeps each hit's own view; hit 7's previous neighbors include hit 5 itself
    assert ids(tree[0].neighbors_prev) == ["5", "6"] and tree[0].neighbors_prev[0].role == "hit"
    assert ids(tree[1].neighbors_next) == ["6", "7"]
    assert [n.hit.rank for n in tree] == [1, 2]  # score order
    # ranking order: hit 7, then its neighbors nearest first, then hit 5 (already placed) and its own
    assert ids(ranking_order(tree)) == ["7", "6", "8", "5", "9", "4", "3"]


def test_hits_in_several_documents_keep_the_best_documents_first():
    store = FakeStore({"a": 3, "b": 3})
    flat, _ = apply_neighbor_expansion(
        [hit("b", 1, 1, 0.9), hit("a", 1, 2, 0.5)], store, "c", "fixed_size", ExpansionSettings(1, 0)
    )
    assert [(c.document, c.chunk_index) for c in flat] == [("b", 0), ("b", 1), ("a", 0), ("a", 1)]


@pytest.mark.parametrize(
    "strategy, settings",
    [
        ("recursive", ExpansionSettings(2, 2)),  # not in the default set {"fixed_size"}
        ("fixed_size", ExpansionSettings(0, 0)),  # nothing to expand
    ],
)
def test_no_expansion_returns_hits_and_an_empty_tree(strategy, settings):
    store = FakeStore({"d": 10})
    hits = [hit("d", 4, 1, 0.9), hit("d", 2, 2, 0.5)]
    flat, tree = apply_neighbor_expansion(hits, store, "c", strategy, settings)
    assert flat == hits and store.calls == []
    assert [(n.hit.chunk_id, n.neighbors_prev, n.neighbors_next) for n in tree] == [(h.chunk_id, [], []) for h in hits]


def test_the_strategies_set_is_a_setting():
    store = FakeStore({"d": 10})
    settings = ExpansionSettings(1, 1, strategies=frozenset({"fixed_size", "recursive"}))
    flat, _ = apply_neighbor_expansion([hit("d", 4, 1, 0.9)], store, "c", "recursive", settings)
    assert ids(flat) == ["3", "4", "5"]


@pytest.mark.parametrize(
    "kwargs", [{"neighbor_prev": -1}, {"neighbor_next": 6}, {"neighbor_prev": True}, {"strategies": "fixed_size"}]
)
def test_bad_settings_name_the_knob(kwargs):
    with pytest.raises(ConfigError):
        ExpansionSettings(**kwargs)


def test_parent_context_goes_under_its_first_child_once():
    parent = {"chunk_id": "P1", "document": "d", "chunk_index": None, "start": 0, "end": 100, "text": "parent text"}
    store = FakeStore({"d": 10}, parents={"P1": parent})
    hits = [hit("d", 2, 1, 0.9, parent_id="P1"), hit("d", 3, 2, 0.8, parent_id="P1"), hit("d", 9, 3, 0.1)]
    flat, tree = apply_neighbor_expansion(hits, store, "c", "semantic_parent_child", ExpansionSettings())
    context = attach_parents(flat, tree, store, "c")
    assert [c.chunk_id for c in context] == [hits[0].chunk_id, "P1", hits[1].chunk_id, hits[2].chunk_id]
    assert context[1].role == "parent" and context[1].score is None
    assert tree[0].parent.chunk_id == "P1" and tree[1].parent.chunk_id == "P1" and tree[2].parent is None


def test_parent_context_needs_fetch_by_chunk_ids():
    class NoParents:
        def fetch_by_indices(self, *args):
            return []

    hits = [hit("d", 2, 1, 0.9, parent_id="P1")]
    flat, tree = apply_neighbor_expansion(hits, NoParents(), "c", "semantic_parent_child", ExpansionSettings())
    with pytest.raises(VectorStoreError, match="fetch_by_chunk_ids"):
        attach_parents(flat, tree, NoParents(), "c")


def test_parents_from_chunks_table_rows_and_a_missing_parent_is_an_error():
    from chunkbench_core.evaluation.experiment import split_chunk_rows

    rows = [
        {
            "chunk_id": "P1",
            "document": "d",
            "chunk_index": 0,
            "start_offset": 0,
            "end_offset": 80,
            "role": "parent",
            "text": "parent",
        },
        {
            "chunk_id": "C1",
            "document": "d",
            "chunk_index": 0,
            "start_offset": 0,
            "end_offset": 40,
            "role": "child",
            "parent_id": "P1",
        },
        {
            "chunk_id": "C2",
            "document": "d",
            "chunk_index": 1,
            "start_offset": 40,
            "end_offset": 80,
            "role": "child",
            "parent_id": "P1",
        },
    ]
    chunks, parents = split_chunk_rows(rows)
    assert [c.chunk_id for c in chunks["d"]] == ["C1", "C2"] and list(parents) == ["P1"]
    store = FakeStore({"d": 2})  # its fetch_by_chunk_ids knows no parent: the rows are used
    hits = [hit("d", 0, 1, 0.9, parent_id="P1")]
    flat, tree = apply_neighbor_expansion(hits, store, "c", "semantic_parent_child", ExpansionSettings())
    context = attach_parents(flat, tree, store, "c", parents)
    assert [(c.chunk_id, c.role, c.start, c.end) for c in context][1] == ("P1", "parent", 0, 80)
    with pytest.raises(VectorStoreError, match="not found: P1"):
        attach_parents(flat, tree, store, "c", {})


def test_a_missing_parent_id_read_through_pandas_is_stored_as_null_json():
    """A chunks-table row read with pandas has NaN where parent_id is missing; the stored JSON must stay valid."""
    import json

    chunk = RetrievedChunk.from_payload({**payload("d", 1), "parent_id": float("nan")}, rank=1, score=0.5)
    record = json.dumps(chunk.to_record(), allow_nan=False)  # raises on NaN
    assert json.loads(record)["parent_id"] is None
