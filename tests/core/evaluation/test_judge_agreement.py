"""Judge agreement: the LLM judge's scores against the evidence metrics, with a scripted judge on 127.0.0.1.

The judge is asked for real through the OpenAI client (evaluation.llm.judge) by a scripted chat server; its
context_relevance scores are then set against the questions' evidence recall and hits. Spearman's correlation is
checked against scipy.stats.spearmanr, Cohen's kappa against its formula worked by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from chunkbench_core.evaluation.judge_agreement import JUDGE_HIT, agreement, judge_agreements
from chunkbench_core.evaluation.llm import LLMResult, LLMSettings, judge, make_client
from tests.core.evaluation.chat_server import ScriptedChatServer

SETTINGS = LLMSettings(model="scripted-judge", input_price_per_mtok=0, output_price_per_mtok=0)
# per question: the evidence recall, whether a top-k chunk held evidence, and the judge's context relevance
RECALL = [1.0, 0.9, 0.8, 0.0, 0.5, 0.0, 1.0, 0.2, 0.7, 0.0]
HIT = [True, True, True, False, True, False, True, True, True, False]
RELEVANCE = [9, 8, 9, 2, 5, 3, 10, 6, 7, 1]


def verdict(relevance: int) -> str:
    return json.dumps(
        {
            "context_relevance": relevance,
            "answer_similarity": 5,
            "faithfulness": 7,
            "hallucination": False,
            "reasoning": "scripted",
        }
    )


def judged_rows() -> list[dict]:
    with ScriptedChatServer([verdict(r) for r in RELEVANCE]) as server:
        client = make_client(server.base_url)
        scores = [
            judge(
                client, SETTINGS, f"question {i}?", "an answer", "some context", "an answer", LLMResult()
            ).context_relevance
            for i in range(len(RELEVANCE))
        ]
    assert scores == RELEVANCE  # the judge's replies came back through the client
    return [
        {
            "strategy": "s",
            "corpus_model": "m",
            "question_set": "q",
            "question_id": f"q{i}",
            "error": None,
            "context_relevance": float(score),
            "recall_at_512": recall,
            "hit": hit,
        }
        for i, (score, recall, hit) in enumerate(zip(scores, RECALL, HIT))
    ]


def test_agreement_of_a_scripted_judge_with_the_evidence():
    [found] = judge_agreements(judged_rows(), "recall_at_512")
    assert found.configuration == "s|m" and found.n_questions == 10
    assert found.judge_metric == "context_relevance" and found.evidence_metric == "recall_at_512"
    assert found.spearman == pytest.approx(stats.spearmanr(RELEVANCE, RECALL).statistic, abs=1e-12)
    # hits: the judge (6 or more) says hit on 6 questions, the evidence on 7; they differ on q4 alone (5, a hit)
    judged = [r >= JUDGE_HIT for r in RELEVANCE]
    observed = np.mean([a == b for a, b in zip(judged, HIT)])
    pa, pb = np.mean(judged), np.mean(HIT)
    expected = pa * pb + (1 - pa) * (1 - pb)
    assert found.agreement == pytest.approx(0.9)
    assert found.kappa == pytest.approx((observed - expected) / (1 - expected), abs=1e-12)
    assert found.kappa == pytest.approx((0.9 - 0.54) / 0.46)  # chance: 0.6 x 0.7 + 0.4 x 0.3
    assert found.spearman_ci_low <= found.spearman <= found.spearman_ci_high <= 1
    assert found.kappa_ci_low <= found.kappa <= found.kappa_ci_high <= 1
    assert "on hit or miss they agree on 90%" in found.sentence()


def test_no_judge_no_agreement_and_too_few_questions():
    rows = [{"strategy": "s", "corpus_model": "m", "recall_at_512": 0.5, "hit": True, "context_relevance": None}] * 5
    assert judge_agreements(rows, "recall_at_512") == []
    assert agreement("s|m", [8, 2], [1.0, 0.0], [True, False]) is None


def test_a_judge_that_says_the_opposite_disagrees():
    found = agreement(
        "s|m", [1, 2, 9, 10, 8, 3], [1.0, 0.9, 0.0, 0.1, 0.2, 0.8], [True, True, False, False, False, True]
    )
    assert found.spearman == pytest.approx(
        -1.0 * abs(stats.spearmanr([1, 2, 9, 10, 8, 3], [1.0, 0.9, 0.0, 0.1, 0.2, 0.8]).statistic)
    )
    assert found.kappa == pytest.approx(-1.0) and found.agreement == 0.0


def test_the_technical_report_shows_each_configurations_agreement():
    from types import SimpleNamespace

    from chunkbench_core.reporting.technical import _judge_agreement

    [found] = judge_agreements(judged_rows(), "recall_at_512")
    html = _judge_agreement(SimpleNamespace(judge_agreement=[{**found.to_row(), "configuration": "s × m"}]))
    assert "Judge and evidence agreement" in html and "s × m" in html
    assert f"{found.kappa:.2f}<span class='ci'>{found.kappa_ci_low:.2f} to {found.kappa_ci_high:.2f}</span>" in html
    assert ">90%<" in html
    assert _judge_agreement(SimpleNamespace(judge_agreement=[])) == ""
