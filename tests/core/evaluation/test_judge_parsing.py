"""Judge replies (the JSON object of the judge prompt): valid, invalid, truncated; and the retry loop with a scripted
client."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation.llm import (
    JudgeParseError,
    LLMResult,
    LLMSettings,
    DryRunShape,
    estimate_cost,
    judge,
    parse_judgement,
)
from chunkbench_core.evaluation.questions import Question

VALID = (
    '{"context_relevance": 8, "answer_similarity": 7, "faithfulness": 9, "hallucination": false, '
    '"reasoning": "Supported by chunk 1."}'
)


def test_valid_reply():
    j = parse_judgement(VALID)
    assert (j.context_relevance, j.answer_similarity, j.faithfulness, j.hallucination) == (8, 7, 9, False)
    assert j.reasoning == "Supported by chunk 1."


@pytest.mark.parametrize(
    "text",
    [
        "```json\n" + VALID + "\n```",
        "Here is my evaluation: " + VALID + " Thanks.",
        VALID.replace("false", '"false"').replace(": 8", ': "8"'),
    ],
)
def test_tolerated_wrappers_and_string_values(text):
    assert parse_judgement(text).context_relevance == 8


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty reply"),
        ("The answer is good.", "invalid JSON"),
        ("[1, 2, 3]", "expected a JSON object"),
        ('{"context_relevance": 8}', "missing keys: answer_similarity, faithfulness, hallucination"),
        (VALID.replace(": 8", ": 11"), "context_relevance must be a number from 1 to 10"),
        (VALID.replace(": 7", ": true"), "answer_similarity must be a number"),
        (VALID.replace("false", '"maybe"'), "hallucination must be true or false"),
    ],
)
def test_invalid_replies_say_what_is_wrong(text, message):
    with pytest.raises(JudgeParseError, match=message) as info:
        parse_judgement(text)
    assert not info.value.truncated


def test_truncated_reply_is_recognised():
    cut = VALID[:40]
    with pytest.raises(JudgeParseError) as info:
        parse_judgement(cut)
    assert info.value.truncated
    with pytest.raises(JudgeParseError) as info:  # finish_reason "length" marks it even if it parses badly elsewhere
        parse_judgement("{'single quotes': 1}", truncated=True)
    assert info.value.truncated


class ScriptedClient:
    """An OpenAI-like client that replies from a script and records max_tokens."""

    def __init__(self, replies: list[tuple[str, str]]) -> None:
        self.replies = list(replies)
        self.max_tokens: list[int] = []
        self.messages: list[list[dict]] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(self, **kwargs):
        self.max_tokens.append(kwargs["max_tokens"])
        self.messages.append(kwargs["messages"])
        assert kwargs["temperature"] == 0 and kwargs["response_format"] == {"type": "json_object"}
        text, finish = self.replies.pop(0)
        return SimpleNamespace(
            choices=[SimpleNamespace(message=SimpleNamespace(content=text), finish_reason=finish)],
            usage=SimpleNamespace(prompt_tokens=100, completion_tokens=20),
        )


def test_truncated_then_valid_doubles_the_budget():
    client = ScriptedClient([(VALID[:30], "length"), (VALID, "stop")])
    result = LLMResult()
    j = judge(client, LLMSettings(model="m", judge_max_tokens=50), "q", "e", "ctx", "a", result)
    assert j.faithfulness == 9
    assert client.max_tokens == [50, 100]
    assert result.judge_attempts == 2 and result.judge_usage.prompt_tokens == 200


def test_invalid_then_valid_tells_the_model_what_was_wrong():
    client = ScriptedClient([("not json", "stop"), (VALID, "stop")])
    result = LLMResult()
    judge(client, LLMSettings(model="m"), "q", "e", "ctx", "a", result)
    assert "invalid JSON" in client.messages[1][-1]["content"]


def test_three_bad_replies_fail_with_the_last_reason():
    client = ScriptedClient([("no", "stop")] * 3)
    with pytest.raises(JudgeParseError, match="after 3 attempts"):
        judge(client, LLMSettings(model="m"), "q", "e", "ctx", "a", LLMResult())


def test_cost_estimate_counts_calls_and_prices():
    questions = [
        Question(id=f"q{i}", question="How long is parental leave?", expected_answer="26 weeks.") for i in range(10)
    ]
    est = estimate_cost(questions, LLMSettings(model="gpt-4o-mini"), DryRunShape(3, top_k=5, chunk_size=200))
    assert est.answer_calls == est.judge_calls == 30
    assert est.max_judge_calls == 90
    assert est.input_tokens > 30 * 2 * 1000  # context 5 x 200 tokens in both calls
    assert est.usd == pytest.approx((est.input_tokens * 0.15 + est.output_tokens * 0.60) / 1e6)
    assert est.max_usd > est.usd
    assert "60 judge" not in est.summary() and "30 answer calls" in est.summary()
    unknown = estimate_cost(questions, LLMSettings(model="llama-local"), DryRunShape(1))
    assert unknown.usd is None and "No price known" in unknown.summary()
    free = estimate_cost(
        questions, LLMSettings(model="llama-local", input_price_per_mtok=0, output_price_per_mtok=0), DryRunShape(1)
    )
    assert free.usd == 0.0


def test_settings_are_validated():
    with pytest.raises(ConfigError, match="judge_attempts"):
        LLMSettings(model="m", judge_attempts=0)
    with pytest.raises(ConfigError, match="model"):
        LLMSettings(model=" ")
