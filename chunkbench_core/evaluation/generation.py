"""Question sets generated from the parsed documents, every excerpt provably in the text.

1. Passages are cut from the parsed units (consecutive units of one kind under one heading,
   about ``min_chars``..``max_chars``) and sampled stratified by document and unit kind
   (prose, table rows, Q&A pairs, spreadsheet rows, image captions), seeded: round-robin
   over the strata in a seeded order, a seeded pick inside each.
2. The configured OpenAI-compatible chat model is asked, in JSON mode, for
   ``{"question", "answer", "excerpts"}`` about the passage, in the passage's language. An
   invalid reply is asked again with the reason (``attempts`` in all), then counted.
3. A question is kept only if every excerpt is found verbatim in the document's parsed text,
   after the same normalisation references get (:func:`.questions.locate_reference`); its
   references are the exact parsed text at those offsets. Dropped too: questions whose
   excerpts cover more than ``max_coverage`` of their document, and near-duplicates (cosine
   similarity of the questions' embeddings above ``duplicate_threshold``, local MiniLM).
4. The file records the generator model, the prompt version and the seed.

``plan_generation`` is the dry run (calls, tokens, cost, nothing sent); ``draft_question_set``
writes a skeleton whose references are exact passages, for a person to write the questions.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import random
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chunkbench_core.tokens import count_tokens
from chunkbench_core.errors import ConfigError, ProviderError, QuestionSetError
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.redaction import describe_error, redact

from .llm import LLMSettings, Usage, _complete
from .questions import Reference, locate_reference

PROMPT_VERSION = "generate-v1"
DEFAULT_DUPLICATE_THRESHOLD = 0.92
DEFAULT_MAX_COVERAGE = 0.5
DEFAULT_ATTEMPTS = 2
DEFAULT_MAX_TOKENS = 512
TRIES_PER_QUESTION = 3  # passages tried at most per wanted question

GENERATE_SYSTEM = (
    "You write one question for evaluating a search system, about a passage of a document. Reply with ONE "
    "JSON object and nothing else, with exactly these keys:\n"
    '  "question": a question a reader of the document might ask, answerable from the passage alone;\n'
    '  "answer": the answer, in one or two sentences;\n'
    '  "excerpts": a list of one to three short spans of the passage that hold the evidence for the answer, '
    "each copied exactly, character for character, from the passage (no paraphrase, no ellipsis).\n"
    "Write the question and the answer in the language of the passage."
)


def _language_hint(text: str) -> str:
    letters = [c for c in text if c.isalpha()]
    arabic_script = sum(1 for c in letters if "ARABIC" in unicodedata.name(c, ""))
    if letters and arabic_script / len(letters) > 0.3:
        return " The passage is in Persian: write the question and the answer in Persian."
    return ""


def generation_messages(document: str, passage: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": GENERATE_SYSTEM},
        {
            "role": "user",
            "content": f"Document: {document}\n\nPassage:\n{passage}\n\n"
            f"Reply with the JSON object only.{_language_hint(passage)}",
        },
    ]


# -- passages ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Passage:
    document: str
    kind: str  # prose | table_row | spreadsheet_row | qa_pair | image_caption
    start: int
    end: int
    text: str


SPREADSHEET_PARSERS = ("xlsx", "csv")


def unit_kind(document: ParsedDocument, content_type: str) -> str:
    if content_type == "table_row":
        return "spreadsheet_row" if document.parser in SPREADSHEET_PARSERS else "table_row"
    if content_type in ("qa_pair", "image_caption"):
        return content_type
    return "prose"


def document_passages(document: ParsedDocument, min_chars: int = 200, max_chars: int = 1200) -> list[Passage]:
    """Consecutive units of one kind under one heading, joined until ``min_chars`` (never past ``max_chars``)."""
    out: list[Passage] = []
    group: list[Any] = []

    def flush() -> None:
        if group:
            start, end = group[0].start, group[-1].end
            text = document.markdown[start:end]
            if sum(c.isalnum() for c in text) >= 20:
                out.append(Passage(document.document, unit_kind(document, group[0].content_type), start, end, text))
            group.clear()

    for unit in document.units:
        if group and (
            unit_kind(document, unit.content_type) != unit_kind(document, group[0].content_type)
            or unit.heading_path != group[0].heading_path
            or unit.end - group[0].start > max_chars
        ):
            flush()
        group.append(unit)
        if group[-1].end - group[0].start >= min_chars:
            flush()
    flush()
    return out


def select_documents(documents: Sequence[ParsedDocument], pattern: str | None) -> list[ParsedDocument]:
    if not pattern:
        return list(documents)
    chosen = [d for d in documents if fnmatch.fnmatch(d.document, pattern)]
    if not chosen:
        names = ", ".join(sorted(d.document for d in documents)) or "none"
        raise ConfigError(f"--documents {pattern!r} matches no parsed document (parsed: {names})")
    return chosen


def sample_passages(documents: Sequence[ParsedDocument], n: int, seed: int) -> list[Passage]:
    """Up to ``n`` passages, stratified by (document, kind): round-robin over the strata in a seeded order."""
    rng = random.Random(seed)
    strata: dict[tuple[str, str], list[Passage]] = {}
    for document in sorted(documents, key=lambda d: d.document):
        for passage in document_passages(document):
            strata.setdefault((passage.document, passage.kind), []).append(passage)
    order = sorted(strata)
    rng.shuffle(order)
    for key in order:
        rng.shuffle(strata[key])
    picked: list[Passage] = []
    while len(picked) < n and any(strata.values()):
        for key in order:
            if strata[key] and len(picked) < n:
                picked.append(strata[key].pop())
    return picked


# -- replies ---------------------------------------------------------------------------------------
class ReplyError(ValueError):
    """The model's reply is not the JSON object asked for."""


def parse_reply(text: str) -> tuple[str, str, list[str]]:
    body = (text or "").strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ReplyError(f"invalid JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(data, dict):
        raise ReplyError(f"expected a JSON object, got {type(data).__name__}")
    question, answer, excerpts = data.get("question"), data.get("answer", ""), data.get("excerpts")
    if not isinstance(question, str) or not question.strip():
        raise ReplyError("question must be a non-empty string")
    if not isinstance(answer, str):
        raise ReplyError("answer must be a string")
    if not isinstance(excerpts, list) or not excerpts or not all(isinstance(e, str) and e.strip() for e in excerpts):
        raise ReplyError("excerpts must be a non-empty list of non-empty strings")
    return question.strip(), answer.strip(), excerpts


# -- generation ------------------------------------------------------------------------------------
@dataclass
class GenerationReport:
    requested: int
    tried: int = 0
    kept: int = 0
    calls: int = 0
    dropped: Counter = field(default_factory=Counter)  # reason -> count
    details: list[str] = field(default_factory=list)  # one line per dropped passage
    usage: Usage = field(default_factory=Usage)
    evidence_tokens: list[int] = field(default_factory=list)  # each kept question's evidence length in tokens
    #: the LLM endpoint's failure for good (a ProviderError's one line): generation stopped there
    stopped: str | None = None

    def lengths(self, chunk_sizes: Sequence[float] = ()) -> tuple[str, str | None]:
        """The kept questions' evidence-length distribution against ``chunk_sizes`` (default: the bucket bounds, 64
        to 512 tokens), and a warning when it favours one size (:mod:`.evidence_length`)."""
        from .evidence_length import BUCKETS, favours_one_size, length_report

        sizes = list(chunk_sizes) or [upper for upper, _ in BUCKETS[:-1]]
        report = length_report(self.evidence_tokens, sizes)
        return report.sentence(), favours_one_size(report)

    def summary(self) -> str:
        reasons = "; ".join(f"{n} {reason}" for reason, n in sorted(self.dropped.items())) or "none"
        why = "the LLM failed" if self.stopped else "the passages ran out"
        short = f" (fewer than the {self.requested} asked: {why})" if self.kept < self.requested else ""
        return (
            f"{self.tried} passage(s) tried, {self.kept} question(s) kept{short}, "
            f"{self.tried - self.kept} dropped: {reasons}. {self.calls} LLM call(s), "
            f"{self.usage.prompt_tokens} prompt + {self.usage.completion_tokens} completion tokens."
        )


def _question_id(prefix: str, document: str, start: int, text: str) -> str:
    return f"{prefix}-" + hashlib.sha256(f"{document}\x1f{start}\x1f{text}".encode()).hexdigest()[:10]


def _covered(spans: Sequence[tuple[int, int]]) -> int:
    total, last = 0, -1
    for start, end in sorted(spans):
        start = max(start, last)
        if end > start:
            total += end - start
        last = max(last, end)
    return total


def _ask_model(
    client: Any, settings: LLMSettings, passage: Passage, attempts: int, max_tokens: int, report: GenerationReport
) -> tuple[str, str, list[str]]:
    messages = generation_messages(passage.document, passage.text)
    last: ReplyError | None = None
    for _ in range(attempts):
        report.calls += 1
        text, _finish, usage, _ms = _complete(client, settings, messages, max_tokens, json_mode=True)
        report.usage.add(usage)
        try:
            return parse_reply(text)
        except ReplyError as exc:
            last = exc
            messages = [
                *generation_messages(passage.document, passage.text),
                {"role": "assistant", "content": text},
                {
                    "role": "user",
                    "content": f"That reply is not usable ({exc}). Reply with only the JSON "
                    "object with question, answer and excerpts.",
                },
            ]
    raise ReplyError(f"no valid reply after {attempts} attempt(s); last: {last}")


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate: ``n`` questions from passages sampled with ``seed`` out of the documents matching
    ``documents_pattern`` (all when None), as the question set ``name``; a question is dropped as a near-duplicate
    above ``duplicate_threshold`` (cosine) or when its excerpts cover more than ``max_coverage`` of the passage;
    each passage is asked at most ``attempts`` times for at most ``max_tokens`` of reply, and at most ``max_tries``
    passages are tried (default 3 x n). Checked here, where it is built."""

    n: int
    seed: int = 0
    name: str = "generated"
    documents_pattern: str | None = None
    duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD
    max_coverage: float = DEFAULT_MAX_COVERAGE
    attempts: int = DEFAULT_ATTEMPTS
    max_tokens: int = DEFAULT_MAX_TOKENS
    max_tries: int | None = None

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"--n must be at least 1, got {self.n}")
        if not 0 < self.duplicate_threshold <= 1 or not 0 < self.max_coverage <= 1:
            raise ConfigError("duplicate_threshold and max_coverage must be in (0, 1]")

    @property
    def tries(self) -> int:
        """How many passages are sampled to try."""
        return self.max_tries or self.n * TRIES_PER_QUESTION


def generate_question_set(
    documents: Sequence[ParsedDocument],
    client: Any,
    settings: LLMSettings,
    embed: Callable[[list[str]], np.ndarray],
    request: GenerationRequest,
) -> tuple[dict[str, Any], GenerationReport]:
    """Generate up to ``request.n`` grounded questions; returns the question set JSON and the report.

    ``embed`` maps question texts to vectors (near-duplicates). Passages are tried in sampled
    order until ``n`` questions are kept or ``request.tries`` passages were tried.
    Requests go through ``provider_faults.call`` (``settings``' timeout and retry budget); when the endpoint
    fails for good (a ProviderError: a refusal, or retries spent), generation stops at once with the questions
    kept so far and ``report.stopped`` holds the error's one line.
    """
    n, seed, name, documents_pattern = request.n, request.seed, request.name, request.documents_pattern
    duplicate_threshold, max_coverage = request.duplicate_threshold, request.max_coverage
    attempts, max_tokens = request.attempts, request.max_tokens
    chosen = select_documents(documents, documents_pattern)
    texts = {d.document: d.markdown for d in chosen}
    passages = sample_passages(chosen, request.tries, seed)
    report = GenerationReport(requested=n)
    questions: list[dict[str, Any]] = []
    kept_vectors: list[np.ndarray] = []
    kept_ids: list[str] = []
    for passage in passages:
        if report.kept >= n:
            break
        report.tried += 1
        where = f"{passage.document} [{passage.start}:{passage.end}]"

        def drop(reason: str, detail: str, where: str = where) -> None:
            report.dropped[reason] += 1
            report.details.append(f"{where}: {reason}: {detail}")

        try:
            question, answer, excerpts = _ask_model(client, settings, passage, attempts, max_tokens, report)
        except ReplyError as exc:
            drop("invalid reply", str(exc))
            continue
        except ProviderError as exc:
            # refused, or retried until the budget ran out: every other passage would fail alike
            report.tried -= 1
            report.stopped = redact(str(exc))
            break
        except Exception as exc:  # noqa: BLE001 - one failed call must not stop the others
            drop("LLM call failed", describe_error(exc))
            continue
        qid = _question_id("gen", passage.document, passage.start, question)
        references: list[dict[str, Any]] = []
        try:
            for i, excerpt in enumerate(excerpts):
                span = locate_reference(
                    Reference(passage.document, excerpt), texts[passage.document], "generated", qid, f"excerpts[{i}]"
                )
                references.append(
                    {
                        "document": passage.document,
                        "content": texts[passage.document][span.start : span.end],
                        "start": span.start,
                        "end": span.end,
                    }
                )
        except QuestionSetError:
            drop("excerpt not verbatim", f"{excerpt[:80]!r} is not in the parsed text")
            continue
        coverage = _covered([(r["start"], r["end"]) for r in references]) / max(1, len(texts[passage.document]))
        if coverage > max_coverage:
            drop("excerpts cover most of the document", f"{coverage:.0%} of {passage.document}")
            continue
        vector = np.asarray(embed([question]), dtype=np.float32)[0]
        vector = vector / (np.linalg.norm(vector) or 1.0)
        if kept_vectors:
            similarities = np.stack(kept_vectors) @ vector
            best = int(np.argmax(similarities))
            if similarities[best] > duplicate_threshold:
                drop("near-duplicate", f"{question[:60]!r} is {similarities[best]:.2f} similar to {kept_ids[best]}")
                continue
        kept_vectors.append(vector)
        kept_ids.append(qid)
        report.kept += 1
        report.evidence_tokens.append(sum(count_tokens(r["content"]) for r in references))
        questions.append(
            {
                "id": qid,
                "question": question,
                "expected_answer": answer,
                "category": passage.kind,
                "references": references,
                "metadata": {"passage": {"document": passage.document, "start": passage.start, "end": passage.end}},
            }
        )
    data = {
        "name": name,
        "description": f"generated by {settings.model} from passages of the parsed documents; every reference is "
        "verbatim parsed text",
        "generator": {
            "model": settings.model,
            "prompt_version": PROMPT_VERSION,
            "seed": seed,
            "documents": documents_pattern or "*",
            "duplicate_threshold": duplicate_threshold,
            "max_coverage": max_coverage,
            "requested": n,
        },
        "questions": questions,
    }
    return data, report


# -- dry run and draft ----------------------------------------------------------------------------
@dataclass(frozen=True)
class GenerationPlan:
    n: int
    passages: int
    min_calls: int
    max_calls: int
    input_tokens: int
    max_input_tokens: int
    max_output_tokens: int
    usd: float | None
    max_usd: float | None
    model: str | None

    def summary(self) -> str:
        cost = (
            f"about ${self.usd:.4f}, at most ${self.max_usd:.4f}"
            if self.usd is not None
            else "unknown (no price known for this model: set the prices, 0 for a local server)"
        )
        return (
            f"dry run: {self.n} question(s) wanted from {self.passages} sampled passage(s) available; "
            f"{self.min_calls} to {self.max_calls} LLM call(s) ({self.model or 'no model configured'}); about "
            f"{self.input_tokens:,} input tokens (at most {self.max_input_tokens:,}) and at most "
            f"{self.max_output_tokens:,} output tokens; estimated cost {cost}. Nothing was sent."
        )


def plan_generation(
    documents: Sequence[ParsedDocument], request: GenerationRequest, settings: LLMSettings | None
) -> GenerationPlan:
    """What generating ``request`` would send and cost, with nothing sent."""
    n, attempts, max_tokens = request.n, request.attempts, request.max_tokens
    passages = sample_passages(select_documents(documents, request.documents_pattern), request.tries, request.seed)

    def tokens(p: Passage) -> int:
        return sum(count_tokens(m["content"]) + 8 for m in generation_messages(p.document, p.text))

    first = sum(tokens(p) for p in passages[:n])
    every = sum(tokens(p) for p in passages) * attempts
    max_calls = len(passages) * attempts
    max_output = max_calls * max_tokens
    prices = settings.prices() if settings else None
    usd = max_usd = None
    if prices is not None:
        usd = (first * prices[0] + min(n, len(passages)) * max_tokens * prices[1]) / 1e6
        max_usd = (every * prices[0] + max_output * prices[1]) / 1e6
    return GenerationPlan(
        n,
        len(passages),
        min(n, len(passages)),
        max_calls,
        first,
        every,
        max_output,
        usd,
        max_usd,
        settings.model if settings else None,
    )


def draft_question_set(
    documents: Sequence[ParsedDocument],
    n: int,
    *,
    seed: int = 0,
    name: str = "draft",
    documents_pattern: str | None = None,
) -> dict[str, Any]:
    """A skeleton of ``n`` questions whose references are exact passages; ``question`` is left empty to write."""
    if n < 1:
        raise ConfigError(f"--n must be at least 1, got {n}")
    passages = sample_passages(select_documents(documents, documents_pattern), n, seed)
    return {
        "name": name,
        "description": "Draft: write a question and its expected answer for each reference (exact text of the parsed "
        "document); shorten a reference to the evidence if you like, it must stay exact text. "
        "`chunkbench questions check` lists the questions still empty.",
        "generator": {"model": None, "prompt_version": "draft", "seed": seed, "documents": documents_pattern or "*"},
        "questions": [
            {
                "id": _question_id("draft", p.document, p.start, p.text),
                "question": "",
                "expected_answer": "",
                "category": p.kind,
                "references": [{"document": p.document, "content": p.text, "start": p.start, "end": p.end}],
            }
            for p in passages
        ],
    }


def local_question_embed() -> Callable[[list[str]], np.ndarray]:
    """Question vectors from the local MiniLM model (no network, no key), for near-duplicates."""
    from chunkbench_core.embedding import Embedder, get_model

    embedder = Embedder(get_model("all-minilm-l6-v2"))
    return lambda texts: embedder.embed(list(texts), "query")


NO_LLM_MESSAGE = (
    "no LLM configured: set CHUNKBENCH_LLM_MODEL (and CHUNKBENCH_LLM_BASE_URL for a local server such as Ollama, "
    "vLLM or llama.cpp, CHUNKBENCH_LLM_API_KEY when it needs one); or write the questions yourself from exact "
    "passages: chunkbench questions draft --n N --out FILE"
)
