"""Dollars per question and per partition (evaluation.cost, stages.question_costs / partition_cost) on a real
results folder: index, captions, the question's embedding, answers and the judge, at known prices."""

from dataclasses import replace

import pytest

from chunkbench_core.evaluation.cost import CAPTION_INPUT_TOKENS, LLMPrices, caption_usd, llm_usd, question_usd
from chunkbench_core.embedding.registry import get_model
from chunkbench_core.parsing.captions import DEFAULT_PROMPT
from chunkbench_core.stages.documents import caption_counts
from chunkbench_core.stages.experiments import partition_cost, question_costs
from chunkbench_core.stages.spec import partition_rows_key
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.tokens import count_tokens

PRICES = LLMPrices(input_per_mtok=1.0, output_per_mtok=4.0)


def test_one_question_costs_its_embedding_answer_and_judge():
    cost = question_usd(10, 0.02, PRICES, answer_input=500, answer_output=50, judge_input=700, judge_output=30)
    assert cost["embedding_usd"] == pytest.approx(10 * 0.02 / 1e6)
    assert cost["answer_usd"] == pytest.approx((500 * 1 + 50 * 4) / 1e6)
    assert cost["judge_usd"] == pytest.approx((700 * 1 + 30 * 4) / 1e6)
    assert cost["cost_usd"] == pytest.approx((10 * 0.02 + 500 + 200 + 700 + 120) / 1e6)
    assert llm_usd(1000, 1000, LLMPrices()) == 0.0  # unknown prices count as 0


def test_question_rows_get_their_dollars_and_a_failed_question_no_embedding():
    spec = replace(get_model("all-minilm-l6-v2"), price_per_mtok=0.5)
    rows = [
        {
            "question": "How long is the warranty?",
            "error": None,
            "answer_prompt_tokens": 300,
            "answer_completion_tokens": 20,
            "judge_prompt_tokens": 400,
            "judge_completion_tokens": 10,
        },
        {"question": "Broken?", "error": "search failed", "answer_prompt_tokens": None},
    ]
    question_costs(rows, spec, PRICES)
    q = count_tokens("How long is the warranty?")
    assert rows[0]["embedding_usd"] == pytest.approx(q * 0.5 / 1e6)
    assert rows[0]["cost_usd"] == pytest.approx((q * 0.5 + 300 + 80 + 400 + 40) / 1e6)
    assert rows[1]["cost_usd"] == 0.0 and rows[1]["embedding_usd"] == 0.0


def test_captions_are_counted_from_the_parsed_units():
    parsed = {
        "units": [
            {"content_type": "paragraph", "text": "text"},
            {"content_type": "image_caption", "text": "A bar chart of sales per quarter."},
            {"content_type": "image_caption", "text": "A logo."},
        ]
    }
    assert caption_counts(parsed) == {
        "n_captions": 2,
        "caption_tokens": count_tokens("A bar chart of sales per quarter.") + count_tokens("A logo."),
    }
    assert caption_counts({}) == {"n_captions": 0, "caption_tokens": 0}


def test_a_partition_costs_its_index_the_captions_and_its_questions(tmp_path):
    db = ResultsDB(tmp_path)
    db.write(
        "index_costs",
        partition_rows_key("fixed_size", "m"),
        [{"strategy": "fixed_size", "corpus_model": "m", "index_usd": 0.25}],
    )
    db.write(
        "documents",
        "corpus",
        [
            {"document": "a.docx", "n_captions": 3, "caption_tokens": 90},
            {"document": "b.pdf", "n_captions": 0, "caption_tokens": 0},
            {"document": "c.txt", "status": "failed"},
        ],
    )
    rows = [
        {"cost_usd": 0.001, "answer_usd": 0.0006, "judge_usd": 0.0003},
        {"cost_usd": 0.002, "answer_usd": 0.0012, "judge_usd": 0.0007},
    ]
    cost = partition_cost(db, partition_rows_key("fixed_size", "m"), rows, PRICES)
    captions = (3 * (CAPTION_INPUT_TOKENS + count_tokens(DEFAULT_PROMPT)) * 1 + 90 * 4) / 1e6
    assert (
        cost["caption_usd"]
        == pytest.approx(captions)
        == pytest.approx(caption_usd(3, count_tokens(DEFAULT_PROMPT), 90, PRICES))
    )
    assert cost["questions_usd"] == pytest.approx(0.003)
    assert (cost["answer_usd"], cost["judge_usd"]) == pytest.approx((0.0018, 0.001))
    assert cost["cost_usd"] == pytest.approx(0.25 + captions + 0.003)
    # another partition (no collection built yet) still pays the captions and its questions
    assert partition_cost(db, partition_rows_key("recursive", "m"), rows, PRICES)["cost_usd"] == pytest.approx(
        captions + 0.003
    )
