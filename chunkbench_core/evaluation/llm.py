"""LLM metrics: answer generation and an LLM judge, through any OpenAI-compatible chat endpoint.

Works with OpenAI, Ollama, vLLM and llama.cpp servers: every function takes an
``openai.OpenAI``-like client (``client.chat.completions.create``) and an
:class:`LLMSettings`. Per question:

1. the context is built from the retrieved chunks (after neighbor expansion, parents
   under their children), cut at ``max_context_tokens`` cl100k tokens;
2. the answer is generated at temperature 0 (``generate_answer``);
3. the judge scores it in JSON mode (``judge``) with these keys (one object, so a reply is checked
   whole and a missing key is a failed cell rather than a silent default):
   context_relevance 1-10, answer_similarity 1-10, faithfulness 1-10, hallucination
   bool, reasoning. A reply cut at max_tokens is asked again with twice the budget; an
   invalid reply is asked again with the parse error; after ``judge_attempts`` tries
   the cell is recorded as failed.

Every request goes through :func:`chunkbench_core.provider_faults.call`: transport failures
(timeouts, 429, 5xx, connection errors, malformed replies) are retried with backoff within the
retry budget (``LLMSettings.retry_budget_seconds``), a refusal (401, 403, 404, a quota used up)
is not; what still fails becomes a one-line error string on that question (the server, what it
said, what was tried, what to do) and marks the result ``fatal``: the endpoint failed for good,
so the partition's remaining questions are skipped. ``evaluate_question`` and
``run_llm_evaluation`` never raise for one question's failure: an experiment never crashes
because of the LLM.

``estimate_cost`` is the dry run: number of calls, token upper bounds and a
USD estimate, computed before any call is made.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from chunkbench_core.errors import ConfigError, ProviderError
from chunkbench_core.metric_catalog import CATALOG
from chunkbench_core.provider_faults import (
    DEFAULT_BUDGET_SECONDS,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    MalformedResponse,
    RetryPolicy,
    Server,
    call,
)
from chunkbench_core.redaction import describe_error, redact, register_secret
from chunkbench_core.tokens import cl100k, count_tokens

if TYPE_CHECKING:  # pragma: no cover
    from .questions import Question


class ContextChunk(Protocol):
    """What the prompt context reads of a retrieved chunk (a ``retrieval.RetrievedChunk``). Named by its shape, not
    imported: the contextual strategy calls this module's chat request, and retrieval imports the strategies."""

    role: str
    document: str
    text: str


#: the judge's 1-10 scores, named as their metrics in the list of metrics (the prompt below asks for each)
JUDGE_SCORES = tuple(CATALOG.judge_scores())
JUDGE_KEYS = (*JUDGE_SCORES, "hallucination", "reasoning")

ANSWER_SYSTEM = (
    "You answer questions using only the context you are given. If the context does not contain the answer, "
    "say that you do not know. Answer concisely."
)
JUDGE_SYSTEM = (
    "You are an impartial evaluator of a retrieval-augmented answer. Read the question, the expected answer, "
    "the retrieved context and the generated answer, then reply with ONE JSON object and nothing else, with "
    "exactly these keys:\n"
    '  "context_relevance": integer 1-10, how relevant the retrieved context is to the question;\n'
    '  "answer_similarity": integer 1-10, how close the generated answer is in meaning to the expected answer;\n'
    '  "faithfulness": integer 1-10, how fully every claim of the generated answer is supported by the context;\n'
    '  "hallucination": true if the generated answer states facts that are not in the context, else false;\n'
    '  "reasoning": one or two sentences explaining the scores.'
)

#: USD per 1M tokens (input, output), OpenAI list prices (openai.com/api/pricing, 2025). A model
#: not listed needs prices in LLMSettings; a local server is free: set both prices to 0.
KNOWN_PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
}

# chat-template overhead per message, added to every token estimate
_MESSAGE_OVERHEAD_TOKENS = 8


@dataclass(frozen=True)
class LLMSettings:
    """The chat model and its budgets. Prices are USD per 1M tokens (None: look up KNOWN_PRICES_PER_MTOK)."""

    model: str
    answer_max_tokens: int = 256
    judge_max_tokens: int = 384
    judge_max_tokens_cap: int = 1536
    judge_attempts: int = 3
    max_context_tokens: int = 3000
    temperature: float = 0.0
    # one request's timeout; all the attempts of one request, waits included (provider_faults.RetryPolicy)
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    retry_budget_seconds: float = DEFAULT_BUDGET_SECONDS
    max_retries: int = DEFAULT_MAX_RETRIES
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    # chat templates without a system role (llama.cpp's "gemma" format drops it): send it as user text
    system_prompt_as_user: bool = False
    # a partition's LLM work ends after this many seconds in total (the questions left are recorded as
    # skipped), and after this many questions in a row failed on the endpoint (a circuit breaker)
    deadline_seconds: float = 3600.0
    breaker_failures: int = 5

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(f"LLM model must be a non-empty string, got {self.model!r}")
        for name in (
            "answer_max_tokens",
            "judge_max_tokens",
            "judge_max_tokens_cap",
            "judge_attempts",
            "max_context_tokens",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"LLM setting {name} must be a positive integer, got {value!r}")
        if not self.timeout_seconds > 0:
            raise ConfigError(f"LLM setting timeout_seconds must be > 0, got {self.timeout_seconds!r}")
        self.retry_policy()  # a bad budget or retry count is refused here, naming it
        if (
            isinstance(self.deadline_seconds, bool)
            or not isinstance(self.deadline_seconds, (int, float))
            or not self.deadline_seconds > 0
        ):
            raise ConfigError(f"LLM setting deadline_seconds must be > 0, got {self.deadline_seconds!r}")
        if (
            isinstance(self.breaker_failures, bool)
            or not isinstance(self.breaker_failures, int)
            or self.breaker_failures < 1
        ):
            raise ConfigError(f"LLM setting breaker_failures must be a positive integer, got {self.breaker_failures!r}")

    def retry_policy(self, timeout_seconds: float | None = None) -> RetryPolicy:
        """How one request is retried (``timeout_seconds``: a shorter timeout for what is left of a deadline)."""
        timeout = self.timeout_seconds if timeout_seconds is None else timeout_seconds
        return RetryPolicy(
            max_retries=self.max_retries, timeout_seconds=timeout, budget_seconds=self.retry_budget_seconds
        )

    def prices(self) -> tuple[float, float] | None:
        if self.input_price_per_mtok is not None and self.output_price_per_mtok is not None:
            return self.input_price_per_mtok, self.output_price_per_mtok
        return KNOWN_PRICES_PER_MTOK.get(self.model)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def make_client(
    base_url: str | None, api_key: str | None = None, timeout_seconds: float = 60.0, max_retries: int = 2
) -> Any:
    """An ``openai.OpenAI`` client; it retries timeouts, 429 and 5xx ``max_retries`` times with backoff for the
    callers that use it directly. This module's own calls turn those retries off and retry through
    ``provider_faults.call`` (the budget, Retry-After, the one-line error)."""
    import openai

    register_secret(api_key)  # its key never reaches an error text
    return openai.OpenAI(
        api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_seconds, max_retries=max_retries
    )


# -- results --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Judgement:
    context_relevance: float
    answer_similarity: float | None  # None when the question has no expected answer
    faithfulness: float
    hallucination: bool
    reasoning: str


class JudgeParseError(ValueError):
    """The judge's reply is not the JSON object the judge prompt asks for (JUDGE_KEYS)."""

    def __init__(self, reason: str, truncated: bool = False) -> None:
        self.reason = reason
        self.truncated = truncated
        super().__init__(reason + (" (reply cut at max_tokens)" if truncated else ""))


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, usage: Any) -> None:
        if usage is None:
            return
        self.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)


@dataclass
class LLMResult:
    """What the LLM stage adds to one question; errors are strings, never exceptions."""

    answer: str | None = None
    answer_error: str | None = None
    judgement: Judgement | None = None
    judge_error: str | None = None
    judge_attempts: int = 0
    generate_ms: float = 0.0
    judge_ms: float = 0.0
    answer_usage: Usage = field(default_factory=Usage)
    judge_usage: Usage = field(default_factory=Usage)
    context_tokens: int = 0
    context_truncated: bool = False
    #: the endpoint failed for good (a refusal, or retries spent): the partition's other questions would fail alike
    fatal: bool = False
    #: a request to the endpoint failed (no answer, or the judge's request), as opposed to an unusable judge reply
    endpoint_failed: bool = False

    @property
    def failed(self) -> bool:
        return self.judgement is None

    def row(self) -> dict[str, Any]:
        """question_results columns."""
        j = self.judgement
        return {
            "answer": self.answer,
            "answer_error": self.answer_error,
            "judge_error": self.judge_error,
            "judge_attempts": self.judge_attempts,
            # the verdict's fields, each named as its judge metric in the list of metrics
            **{m.name: getattr(j, m.name) if j else None for m in CATALOG.values(source="judge")},
            "judge_reasoning": j.reasoning if j else None,
            "generate_ms": self.generate_ms,
            "judge_ms": self.judge_ms,
            "answer_prompt_tokens": self.answer_usage.prompt_tokens,
            "answer_completion_tokens": self.answer_usage.completion_tokens,
            "judge_prompt_tokens": self.judge_usage.prompt_tokens,
            "judge_completion_tokens": self.judge_usage.completion_tokens,
            "llm_context_tokens": self.context_tokens,  # what the prompt carried (cut at max_context_tokens)
            "context_truncated": self.context_truncated,
        }


#: the question_results columns of LLMResult.row() (None when no LLM ran)
LLM_COLUMNS: tuple[str, ...] = tuple(LLMResult().row())


# -- context -------------------------------------------------------------------------------
def build_context(chunks: Sequence[ContextChunk], max_tokens: int) -> tuple[str, int, bool]:
    """The prompt context: numbered chunks in context order, parents under their child.

    Returns (text, cl100k tokens, truncated). Chunks are added until ``max_tokens``; the
    chunk that crosses the budget is cut at a token boundary.
    """
    parts: list[str] = []
    used = 0
    truncated = False
    number = 0
    for chunk in chunks:
        if chunk.role == "parent":
            header = f"(parent section of [{number}], {chunk.document})\n"
        else:
            number += 1
            header = f"[{number}] {chunk.document}\n"
        block = header + chunk.text.strip() + "\n"
        size = count_tokens(block)
        if used + size > max_tokens:
            room = max_tokens - used
            if room > 0:
                parts.append(cl100k().decode(cl100k().encode_ordinary(block)[:room]))
                used = max_tokens
            truncated = True
            break
        parts.append(block)
        used += size
    return "\n".join(parts), used, truncated


def answer_messages(question: str, context: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": f"Context:\n{context}\n\nQuestion: {question}"},
    ]


def judge_messages(question: str, expected_answer: str, context: str, answer: str) -> list[dict[str, str]]:
    expected = expected_answer.strip() or "(none given: score answer_similarity 1)"
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {
            "role": "user",
            "content": (
                f"Question: {question}\n\nExpected answer: {expected}\n\nRetrieved context:\n{context}\n\n"
                f"Generated answer: {answer}\n\nReply with the JSON object only."
            ),
        },
    ]


# -- calls ---------------------------------------------------------------------------------
def _complete(
    client: Any, settings: LLMSettings, messages: list[dict[str, str]], max_tokens: int, json_mode: bool
) -> tuple[str, str | None, Any, float]:
    extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
    if settings.system_prompt_as_user and messages and messages[0]["role"] == "system":
        system, first, *rest = messages
        messages = [{"role": "user", "content": f"{system['content']}\n\n{first['content']}"}, *rest]
    started = time.perf_counter()
    # provider_faults.call retries: the client's own retries would multiply the attempts and hide the waits
    once = client.with_options(max_retries=0) if hasattr(client, "with_options") else client

    def request(timeout: float) -> tuple[str, str | None, Any]:
        response = once.chat.completions.create(
            model=settings.model,
            messages=messages,
            temperature=settings.temperature,
            max_tokens=max_tokens,
            timeout=timeout,
            **extra,
        )
        try:
            choice = response.choices[0]
            content = choice.message.content
        except Exception as exc:  # noqa: BLE001 - any shape the API does not have
            raise MalformedResponse(f"no choices: {type(exc).__name__}") from None
        if content is not None and not isinstance(content, str):
            raise MalformedResponse(f"message content is {type(content).__name__}, not text")
        return content or "", getattr(choice, "finish_reason", None), getattr(response, "usage", None)

    text, finish, usage = call(llm_server(client, settings.model), settings.retry_policy(), request)
    elapsed = (time.perf_counter() - started) * 1000
    return text, finish, usage, elapsed


def llm_server(client: Any, model: str) -> Server:
    """The chat endpoint as the user configured it (its URL, model and variables), for the one-line errors."""
    url = getattr(client, "base_url", None)
    url = str(url).rstrip("/") if url else None
    if url and "api.openai.com" in url:
        url = None
    return Server("LLM", url, model, "CHUNKBENCH_LLM_API_KEY (else OPENAI_API_KEY)", "CHUNKBENCH_LLM_BASE_URL")


def generate_answer(client: Any, settings: LLMSettings, question: str, context: str, result: LLMResult) -> str:
    """Generate the answer at temperature 0; fills usage and latency in ``result``. Raises on API errors."""
    text, _, usage, elapsed = _complete(
        client, settings, answer_messages(question, context), settings.answer_max_tokens, json_mode=False
    )
    result.generate_ms += elapsed
    result.answer_usage.add(usage)
    return text.strip()


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or value is None:
        raise JudgeParseError(f"{key} must be a number from 1 to 10, got {value!r}")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise JudgeParseError(f"{key} must be a number from 1 to 10, got {value!r}") from None
    if not isinstance(value, (int, float)) or math.isnan(value) or not 1 <= value <= 10:
        raise JudgeParseError(f"{key} must be a number from 1 to 10, got {value!r}")
    return float(value)


def _boolean(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    raise JudgeParseError(f"{key} must be true or false, got {value!r}")


def _unclosed(text: str) -> bool:
    """True when ``text`` opens a JSON object or string it never closes (a reply cut short)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return in_string or depth > 0


def parse_judgement(text: str, truncated: bool = False) -> Judgement:
    """The judgement in ``text`` (the JUDGE_KEYS object), or JudgeParseError saying what is wrong.

    Accepts the object alone, inside a ```json fence, or with stray text around it.
    ``truncated`` (finish_reason "length") marks a parse failure as a cut reply; a JSON
    error at the very end of the text is treated the same way.
    """
    body = _FENCE.sub("", (text or "").strip()).strip()
    if not body:
        raise JudgeParseError("empty reply", truncated)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        first, last = body.find("{"), body.rfind("}")
        data = None
        if 0 <= first < last:
            try:
                data = json.loads(body[first : last + 1])
            except json.JSONDecodeError:
                data = None
        if data is None:
            cut = truncated or _unclosed(body)
            raise JudgeParseError(f"invalid JSON: {exc.msg} at character {exc.pos}", cut) from None
    if not isinstance(data, dict):
        raise JudgeParseError(f"expected a JSON object, got {type(data).__name__}", truncated)
    missing = [k for k in JUDGE_KEYS[:-1] if k not in data]
    if missing:
        raise JudgeParseError(f"missing keys: {', '.join(missing)}", truncated)
    reasoning = data.get("reasoning", "")
    return Judgement(
        context_relevance=_number(data["context_relevance"], "context_relevance"),
        answer_similarity=_number(data["answer_similarity"], "answer_similarity"),
        faithfulness=_number(data["faithfulness"], "faithfulness"),
        hallucination=_boolean(data["hallucination"], "hallucination"),
        reasoning=reasoning if isinstance(reasoning, str) else json.dumps(reasoning),
    )


def judge(
    client: Any,
    settings: LLMSettings,
    question: str,
    expected_answer: str,
    context: str,
    answer: str,
    result: LLMResult,
) -> Judgement:
    """Ask the judge (JSON mode, temperature 0); retry cut or invalid replies; raise JudgeParseError at the end.

    API errors (after the client's own retries) propagate to the caller.
    """
    messages = judge_messages(question, expected_answer, context, answer)
    max_tokens = settings.judge_max_tokens
    last: JudgeParseError | None = None
    for _ in range(settings.judge_attempts):
        result.judge_attempts += 1
        text, finish, usage, elapsed = _complete(client, settings, messages, max_tokens, json_mode=True)
        result.judge_ms += elapsed
        result.judge_usage.add(usage)
        try:
            return parse_judgement(text, truncated=finish == "length")
        except JudgeParseError as exc:
            last = exc
            if exc.truncated:
                max_tokens = min(max_tokens * 2, settings.judge_max_tokens_cap)
            else:
                messages = [
                    *judge_messages(question, expected_answer, context, answer),
                    {"role": "assistant", "content": text},
                    {
                        "role": "user",
                        "content": f"That reply is not usable ({exc.reason}). Reply with only the "
                        "JSON object with the five keys.",
                    },
                ]
    assert last is not None
    raise JudgeParseError(f"no valid judgement after {settings.judge_attempts} attempts; last: {last}", last.truncated)


def _describe(exc: BaseException, result: LLMResult | None = None) -> str:
    """An error as the question's row keeps it: a provider's own one line, else the error described, redacted;
    marks ``result`` when the endpoint failed."""
    if result is not None:
        result.endpoint_failed = True
        result.fatal = result.fatal or isinstance(exc, ProviderError)
    if isinstance(exc, ProviderError):
        return redact(str(exc))
    return describe_error(exc)


def evaluate_question(
    client: Any, settings: LLMSettings, question: Question, context_chunks: Sequence[ContextChunk]
) -> LLMResult:
    """Answer and judge one question. Never raises: failures are recorded in the result."""
    result = LLMResult()
    context, result.context_tokens, result.context_truncated = build_context(
        context_chunks, settings.max_context_tokens
    )
    try:
        result.answer = generate_answer(client, settings, question.question, context, result)
    except Exception as exc:  # noqa: BLE001 - one question's failure must not stop the experiment
        result.answer_error = f"answer: {_describe(exc, result)}"
        result.judge_error = "judge: skipped, no answer"
        return result
    try:
        judgement = judge(client, settings, question.question, question.expected_answer, context, result.answer, result)
        if not question.expected_answer.strip():  # nothing to compare with
            judgement = replace(judgement, answer_similarity=None)
        result.judgement = judgement
    except JudgeParseError as exc:
        result.judge_error = f"judge: {redact(str(exc))}"
    except Exception as exc:  # noqa: BLE001 - recorded as a failed cell, never raised
        result.judge_error = f"judge: {_describe(exc, result)}"
    return result


# -- dry run ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CostEstimate:
    n_questions: int
    n_configurations: int
    answer_calls: int
    judge_calls: int
    max_judge_calls: int
    input_tokens: int
    output_tokens: int
    embedding_tokens: int
    usd: float | None
    max_usd: float | None
    price_note: str

    def summary(self) -> str:
        cost = (
            f"about ${self.usd:.2f} (at most ${self.max_usd:.2f} if every judge reply is retried)"
            if self.usd is not None
            else "unknown"
        )
        return (
            f"dry run: {self.n_questions} questions × {self.n_configurations} configurations (strategy × corpus model) -> "
            f"{self.answer_calls} answer calls + {self.judge_calls} judge calls (up to {self.max_judge_calls} with "
            f"retries); at most {self.input_tokens:,} input and {self.output_tokens:,} output tokens, "
            f"{self.embedding_tokens:,} query-embedding tokens; estimated cost {cost}. {self.price_note}"
        )


@dataclass(frozen=True)
class DryRunShape:
    """What the dry run prices: the configurations (``n_strategies`` x ``n_corpus_models``), each question's
    context (``top_k`` chunks of ``chunk_size`` tokens, each with its ``neighbor_prev`` / ``neighbor_next``
    neighbors), and the query embeddings' price per million tokens (0 for a local corpus model)."""

    n_strategies: int
    n_corpus_models: int = 1
    top_k: int = 5
    chunk_size: int = 512
    neighbor_prev: int = 0
    neighbor_next: int = 0
    embedding_price_per_mtok: float = 0.0


def estimate_cost(questions: Sequence[Question], settings: LLMSettings, shape: DryRunShape) -> CostEstimate:
    """The dry run: calls, token upper bounds and USD before anything is spent.

    Per question x configuration: one answer call (input: instructions + question +
    context, the context being top_k x (1 + prev + next) chunks of ``chunk_size`` tokens
    capped at ``max_context_tokens``; output: ``answer_max_tokens``) and one judge call
    (input: instructions + question + expected answer + context + answer; output:
    ``judge_max_tokens``). Query embeddings: the question tokens once per configuration
    (0 for a local corpus model: ``embedding_price_per_mtok=0``).
    """
    n_strategies, n_corpus_models, top_k, chunk_size = (
        shape.n_strategies,
        shape.n_corpus_models,
        shape.top_k,
        shape.chunk_size,
    )
    neighbor_prev, neighbor_next, embedding_price_per_mtok = (
        shape.neighbor_prev,
        shape.neighbor_next,
        shape.embedding_price_per_mtok,
    )
    if n_strategies < 0 or n_corpus_models < 0:
        raise ConfigError("n_strategies and n_corpus_models must be >= 0")
    configurations = n_strategies * n_corpus_models
    n = len(questions)
    context = min(top_k * (1 + neighbor_prev + neighbor_next) * chunk_size, settings.max_context_tokens)
    answer_overhead = count_tokens(ANSWER_SYSTEM) + 2 * _MESSAGE_OVERHEAD_TOKENS + 10
    judge_overhead = count_tokens(JUDGE_SYSTEM) + 2 * _MESSAGE_OVERHEAD_TOKENS + 30
    question_tokens = sum(count_tokens(q.question) for q in questions)
    expected_tokens = sum(count_tokens(q.expected_answer) for q in questions)
    answer_in = n * (answer_overhead + context) + question_tokens
    judge_in = n * (judge_overhead + context + settings.answer_max_tokens) + question_tokens + expected_tokens
    input_tokens = configurations * (answer_in + judge_in)
    output_tokens = configurations * n * (settings.answer_max_tokens + settings.judge_max_tokens)
    embedding_tokens = configurations * question_tokens
    calls = configurations * n
    max_judge_calls = calls * settings.judge_attempts
    prices = settings.prices()
    if prices is None:
        usd = max_usd = None
        note = (
            f"No price known for model {settings.model!r}: set input_price_per_mtok/output_price_per_mtok "
            "(0 for a local server)."
        )
    else:
        price_in, price_out = prices
        usd = (input_tokens * price_in + output_tokens * price_out + embedding_tokens * embedding_price_per_mtok) / 1e6
        retry_in = configurations * (judge_in + n * settings.judge_max_tokens) * (settings.judge_attempts - 1)
        retry_out = configurations * n * settings.judge_max_tokens_cap * (settings.judge_attempts - 1)
        max_usd = usd + (retry_in * price_in + retry_out * price_out) / 1e6
        note = f"Prices: ${price_in}/1M input, ${price_out}/1M output tokens."
    return CostEstimate(
        n,
        configurations,
        calls,
        calls,
        max_judge_calls,
        input_tokens,
        output_tokens,
        embedding_tokens,
        usd,
        max_usd,
        note,
    )


def judged_values(results: Sequence[LLMResult | None]) -> Mapping[str, list[float | None]]:
    """Per-question judge values (None where the judge failed or did not run) for aggregation."""
    out: dict[str, list[float | None]] = {k: [] for k in (*JUDGE_SCORES, "hallucination")}
    for r in results:
        j = r.judgement if r is not None else None
        for k in JUDGE_SCORES:
            out[k].append(getattr(j, k) if j else None)
        out["hallucination"].append((1.0 if j.hallucination else 0.0) if j else None)
    return out
