"""Evidence recall at equal context budgets, computed by hand on small contexts."""

from __future__ import annotations

import math

import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation.budget import (
    budget_auc,
    budget_scores,
    context_order,
    prefix_characters,
    validate_budgets,
)
from chunkbench_core.evaluation.questions import Span
from chunkbench_core.evaluation.retrieval import ExpansionNode, RetrievedChunk

TEXT = "one two three four five six seven eight"  # cl100k: one| two| three| four| five| six| seven| eight


def chunk(start: int, end: int, role: str = "hit", chunk_id: str | None = None, rank: int | None = 1) -> RetrievedChunk:
    return RetrievedChunk(
        rank=rank if role == "hit" else None,
        chunk_id=chunk_id or f"c{start}",
        document="d",
        start=start,
        end=end,
        score=None,
        role=role,
        text=TEXT[start:end],
    )


FIRST = chunk(0, 18)  # "one two three four": 4 tokens
SECOND = chunk(19, 39, chunk_id="c19", rank=2)  # "five six seven eight": 4 tokens
EVIDENCE = [Span("d", 8, 23)]  # "three four five": 15 characters


def test_prefix_characters_counts_whole_tokens():
    assert prefix_characters("one two three four", 0) == 0
    assert prefix_characters("one two three four", 3) == len("one two three")
    assert prefix_characters("one two three four", 99) == len("one two three four")


def test_a_chunk_cut_by_the_budget_counts_for_its_first_tokens():
    scores = budget_scores([FIRST, SECOND], EVIDENCE, budgets=(3, 6, 8))
    assert scores["context_tokens"] == 8
    # 3 tokens: "one two three" = [0, 13): evidence [8, 13) = 5 of 15 characters
    assert scores["recall_at_3"] == pytest.approx(5 / 15)
    # 6 tokens: the first chunk whole ([8, 18) = 10) and "five six" of the second ([19, 23) = 4)
    assert scores["recall_at_6"] == pytest.approx(14 / 15)
    # 8 tokens: everything; the space at 18 is in no chunk
    assert scores["recall_at_8"] == pytest.approx(14 / 15)


def test_order_decides_what_fits():
    later = budget_scores([SECOND, FIRST], EVIDENCE, budgets=(4,))
    assert later["recall_at_4"] == pytest.approx(len("five") / 15)  # the second chunk holds 4 evidence chars


def test_neighbors_come_after_their_hit_nearest_first_and_a_parent_after_its_child():
    hit = chunk(8, 13, chunk_id="hit")  # "three"
    previous = chunk(4, 7, role="neighbor", chunk_id="prev")  # "two"
    following = chunk(14, 18, role="neighbor", chunk_id="next")  # "four"
    parent = chunk(0, 39, role="parent", chunk_id="parent")
    node = ExpansionNode(hit, neighbors_prev=[previous], neighbors_next=[following], parent=parent)
    order = context_order([node])
    assert [c.chunk_id for c in order] == ["hit", "prev", "next", "parent"]
    scores = budget_scores(order, EVIDENCE, budgets=(1, 3, 4, 11))
    assert scores["recall_at_1"] == pytest.approx(5 / 15)  # "three" alone
    assert scores["recall_at_3"] == pytest.approx(9 / 15)  # + "two" (no evidence) + "four"
    # the parent's first token "one" adds nothing; 11 tokens take 8 of its 8: all evidence but the gap at 13
    assert scores["recall_at_4"] == pytest.approx(9 / 15)
    assert scores["recall_at_11"] == pytest.approx(1.0)
    assert scores["context_tokens"] == 1 + 1 + 1 + 8


def test_budget_auc_is_the_log_scale_trapezoid():
    assert budget_auc([0.2, 0.4, 0.6, 1.0], [256, 512, 1024, 2048]) == pytest.approx(
        ((0.2 + 0.4) / 2 + (0.4 + 0.6) / 2 + (0.6 + 1.0) / 2) / 3
    )
    assert budget_auc([0.5], [512]) == 0.5
    # uneven spacing is weighed by log2 distance
    assert budget_auc([0.0, 1.0, 1.0], [256, 512, 2048]) == pytest.approx((0.5 * 1 + 1.0 * 2) / 3)


def test_empty_context_scores_zero_and_budgets_are_validated():
    scores = budget_scores([], EVIDENCE, budgets=(256, 512))
    assert scores == {"context_tokens": 0.0, "recall_at_256": 0.0, "recall_at_512": 0.0, "budget_auc": 0.0}
    assert validate_budgets([512, 256]) == (256, 512)
    for bad in ([], [0], [256, 256], [1.5]):
        with pytest.raises(ConfigError):
            validate_budgets(bad)


def test_deterministic():
    first = budget_scores([FIRST, SECOND], EVIDENCE)
    assert first == budget_scores([FIRST, SECOND], EVIDENCE)
    assert not any(math.isnan(v) for v in first.values())
