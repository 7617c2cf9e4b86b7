"""What a configuration costs: to build its index, to answer questions, to store it.

Dollars come from prices per million tokens: an embedding model's ``price_per_mtok`` in the
model registry (0 for local and self-hosted models) and the LLM's input/output prices
(settings; unknown prices count as 0 and are said to be unknown). Formulas, with token
counts in cl100k tokens unless the provider reports its own:

- ``index_usd = embedding_usd + context_usd``: ``embedding_usd = chunk_tokens · p_corpus / 10⁶
  + boundary_tokens · p_boundary / 10⁶`` (the chunks embedded with the corpus model; the
  sentences a semantic strategy embeds with its boundary model) and ``context_usd = (i · p_llm_in
  + o · p_llm_out) / 10⁶`` over contextual_retrieval's LLM calls (``i`` the prompt tokens, ``o``
  the context tokens it wrote);
- ``caption_usd = (n · (CAPTION_INPUT_TOKENS + prompt) · p_llm_in + caption tokens · p_llm_out) / 10⁶``
  over the images captioned while parsing (an image's own tokens are estimated: the parser
  never sees what the provider counted);
- per question, ``cost_usd = q · p_corpus / 10⁶ + (a_in + j_in) · p_llm_in / 10⁶ + (a_out + j_out)
  · p_llm_out / 10⁶`` (the question embedded, then the answer and the judge calls with the
  token counts the LLM reported);
- per partition, ``cost_usd = index_usd + caption_usd + Σ question cost_usd``: what the
  configuration cost in this benchmark, counted as if nothing were cached (the caches make
  a re-run cheaper, never the figure different);
- ``projected_usd = index_usd + query_usd_per_1000``: what it would cost to build the index and
  answer 1,000 questions in use (no judge), the cost the recommendation and the frontier use;
- ``query_usd_per_1000 = 1000 · (q · p_corpus + (c + q + o) · p_llm_in + a · p_llm_out) / 10⁶``
  with ``q`` the mean question tokens, ``c`` the mean context tokens, ``o`` the prompt's
  fixed overhead (:data:`PROMPT_OVERHEAD_TOKENS`) and ``a`` the mean answer tokens (the
  answer budget when no answer was generated);

Local and self-hosted models cost 0; an LLM whose prices are unknown counts as 0 and the
run records ``llm_priced = false``.

The cost-quality frontier (:func:`pareto_frontier`) keeps every configuration that no other
one beats on both quality (higher) and cost (lower).

"Cheaper" (:func:`compare_costs`, :func:`cheapest`) compares dollars (``projected_usd``), then
context tokens per question, then the warm query time, then the index build time; two values
within a tolerance of each other (5% of the larger by default) are equal and the next cost
decides, so 0.9 fewer tokens never outweighs a query 20 times slower.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: the instructions and labels an answer prompt adds around the question and the context
PROMPT_OVERHEAD_TOKENS = 60


def usd(tokens: float, price_per_mtok: float | None) -> float:
    """Dollars for ``tokens`` at ``price_per_mtok`` USD per million (0 when the price is unknown)."""
    if not price_per_mtok or not tokens or math.isnan(tokens):
        return 0.0
    return float(tokens) * float(price_per_mtok) / 1_000_000


def embedding_usd(
    chunk_tokens: float, corpus_price: float | None, boundary_tokens: float = 0.0, boundary_price: float | None = None
) -> float:
    """embedding_usd = chunk_tokens · p_corpus / 10⁶ + boundary_tokens · p_boundary / 10⁶."""
    return usd(chunk_tokens, corpus_price) + usd(boundary_tokens, boundary_price)


@dataclass(frozen=True)
class LLMPrices:
    """USD per million input / output tokens of the answering LLM (None: unknown)."""

    input_per_mtok: float | None = None
    output_per_mtok: float | None = None

    @property
    def known(self) -> bool:
        return self.input_per_mtok is not None and self.output_per_mtok is not None


def llm_usd(input_tokens: float, output_tokens: float, llm: LLMPrices) -> float:
    """llm_usd = input_tokens · p_llm_in / 10⁶ + output_tokens · p_llm_out / 10⁶ (0 when a price is unknown)."""
    return usd(input_tokens, llm.input_per_mtok) + usd(output_tokens, llm.output_per_mtok)


def question_usd(
    question_tokens: float,
    corpus_price: float | None,
    llm: LLMPrices,
    answer_input: float = 0,
    answer_output: float = 0,
    judge_input: float = 0,
    judge_output: float = 0,
) -> dict[str, float]:
    """One question's dollars: ``embedding_usd`` (the question embedded), ``answer_usd``, ``judge_usd`` and
    ``cost_usd``, their sum: q · p_corpus / 10⁶ + (a_in + j_in) · p_llm_in / 10⁶ + (a_out + j_out) · p_llm_out / 10⁶."""
    parts = {
        "embedding_usd": usd(question_tokens, corpus_price),
        "answer_usd": llm_usd(answer_input, answer_output, llm),
        "judge_usd": llm_usd(judge_input, judge_output, llm),
    }
    return {**parts, "cost_usd": sum(parts.values())}


def caption_usd(n_captions: int, prompt_tokens: float, caption_tokens: float, llm: LLMPrices) -> float:
    """caption_usd = (n · (CAPTION_INPUT_TOKENS + prompt) · p_llm_in + caption tokens · p_llm_out) / 10⁶."""
    return llm_usd(n_captions * (CAPTION_INPUT_TOKENS + prompt_tokens), caption_tokens, llm)


def query_usd_per_1000(
    question_tokens: float, context_tokens: float, corpus_price: float | None, llm: LLMPrices, answer_tokens: float
) -> float:
    """query_usd_per_1000 = 1000 · (q · p_corpus + (c + q + o) · p_llm_in + a · p_llm_out) / 10⁶."""
    one = (
        usd(question_tokens, corpus_price)
        + usd(context_tokens + question_tokens + PROMPT_OVERHEAD_TOKENS, llm.input_per_mtok)
        + usd(answer_tokens, llm.output_per_mtok)
    )
    return 1000 * one


def pareto_frontier(
    points: Mapping[str, tuple[float, float]],
    costs: Mapping[str, Mapping[str, Any]] | None = None,
    tolerance: float | None = None,
    quality_tie: float = 1e-9,
) -> set[str]:
    """Names on the frontier of (quality: higher is better, cost: lower is better).

    A point is dominated when another has quality >= and cost <= with at least one strict;
    NaN qualities are never on the frontier. Equal points are all kept. With ``costs`` (name -> cost
    columns), qualities within ``quality_tie`` are equal and costs compare as the ranking compares them
    (:func:`compare_costs`: within ``tolerance`` equal, then the next cost decides), so of two configurations
    tied on score and tokens the one the ranking puts first is the one on the frontier.
    """
    clean = {n: (q, c) for n, (q, c) in points.items() if not (math.isnan(q) or math.isnan(c))}
    tolerance = DEFAULT_COST_TOLERANCE if tolerance is None else tolerance

    def beats(other: str, name: str) -> bool:
        (q2, c2), (q, c) = clean[other], clean[name]
        if costs is None:
            return (q2 >= q and c2 <= c) and (q2 > q or c2 < c)
        order = compare_costs(costs.get(other, {}), costs.get(name, {}), tolerance)
        return q2 >= q - quality_tie and order <= 0 and (q2 > q + quality_tie or order < 0)

    frontier = set()
    for name in clean:
        dominated = any(beats(other, name) for other in clean if other != name)
        if not dominated:
            frontier.add(name)
    return frontier


#: the cost columns in the order the recommendation compares them (lower first wins)
COST_ORDER: tuple[str, ...] = ("projected_usd", "context_tokens", "query_ms", "index_seconds")
#: how each cost column is named for people
COST_WORDS: dict[str, str] = {
    "projected_usd": "dollars to build the index and answer 1,000 questions",
    "context_tokens": "context tokens per question",
    "query_ms": "ms per query (warm)",
    "index_seconds": "seconds to build the index",
}
#: two costs closer than this share of the larger one count as equal (timings and token counts are noisy)
DEFAULT_COST_TOLERANCE = 0.05


def cost_axis(rows: Sequence[Mapping[str, float]]) -> str:
    """The cost the frontier is drawn against: projected dollars when any configuration costs money, else
    context tokens per question."""
    if any((r.get("projected_usd") or 0) > 0 for r in rows):
        return "projected_usd"
    return "context_tokens"


def cost_value(row: Mapping[str, Any], name: str) -> float:
    """One cost of a configuration; unknown (missing, NaN) counts as infinitely expensive."""
    raw = row.get(name)
    if raw is None:
        return math.inf
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(value) else value


def cost_key(row: Mapping[str, Any]) -> tuple[float, ...]:
    """Dollars, context tokens per question, query and index time (unknown = infinite): the raw costs in the
    order they are compared. Compare two of them with :func:`compare_costs`, which treats near-equal values
    as equal; sorting by this key alone would let 0.9 tokens outweigh a 20x slower query."""
    return tuple(cost_value(row, name) for name in COST_ORDER)


def costs_equal(a: float, b: float, tolerance: float = DEFAULT_COST_TOLERANCE) -> bool:
    """``a`` and ``b`` are equal within ``tolerance`` of the larger: |a - b| <= tolerance · max(|a|, |b|).

    Two unknown (infinite) costs are equal; an unknown one never equals a known one."""
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= tolerance * max(abs(a), abs(b))


def deciding_cost(
    a: Mapping[str, Any], b: Mapping[str, Any], tolerance: float = DEFAULT_COST_TOLERANCE
) -> tuple[str, float, float] | None:
    """The first cost (in :data:`COST_ORDER`) on which ``a`` and ``b`` differ by more than ``tolerance``:
    (column, a's value, b's value); None when they cost the same on every one."""
    for name in COST_ORDER:
        x, y = cost_value(a, name), cost_value(b, name)
        if not costs_equal(x, y, tolerance):
            return name, x, y
    return None


def compare_costs(a: Mapping[str, Any], b: Mapping[str, Any], tolerance: float = DEFAULT_COST_TOLERANCE) -> int:
    """-1 when ``a`` is cheaper than ``b``, 1 when dearer, 0 when they cost the same within ``tolerance``:
    dollars decide unless they are equal within the tolerance, then context tokens, then query time, then
    index time."""
    decided = deciding_cost(a, b, tolerance)
    if decided is None:
        return 0
    _, x, y = decided
    return -1 if x < y else 1


def cheapest_group(
    names: Sequence[str], costs: Mapping[str, Mapping[str, Any]], tolerance: float = DEFAULT_COST_TOLERANCE
) -> list[str]:
    """The cheapest of ``names`` (at least one), all of them when several cost the same: keep those whose
    dollars are within ``tolerance`` of the fewest, then, of them, those within ``tolerance`` of the fewest
    context tokens, then of the fastest query, then of the fastest index build. Each step compares with the
    smallest value of the configurations still in, so the answer never depends on the order of ``names``."""
    if not names:
        raise ValueError("cheapest() needs at least one configuration")
    left = sorted(names)
    for name in COST_ORDER:
        values = {n: cost_value(costs.get(n, {}), name) for n in left}
        low = min(values.values())
        left = [n for n in left if costs_equal(values[n], low, tolerance)]
        if len(left) == 1:
            break
    return left


def cheapest(
    names: Sequence[str],
    costs: Mapping[str, Mapping[str, Any]],
    tolerance: float = DEFAULT_COST_TOLERANCE,
    means: Mapping[str, float] | None = None,
) -> str:
    """The cheapest of ``names`` (:func:`cheapest_group`); of several that cost the same, the highest mean
    (``means``), then the first name."""
    left = cheapest_group(names, costs, tolerance)
    scores = means or {}
    return min(left, key=lambda n: (-_finite(scores.get(n)), n))


def _finite(value: float | None) -> float:
    return -math.inf if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def cost_order(
    names: Sequence[str],
    costs: Mapping[str, Mapping[str, Any]],
    tolerance: float = DEFAULT_COST_TOLERANCE,
    means: Mapping[str, float] | None = None,
) -> list[str]:
    """``names`` from the cheapest to the dearest: :func:`cheapest` of what is left, again and again."""
    left, order = list(names), []
    while left:
        first = cheapest(left, costs, tolerance, means)
        order.append(first)
        left.remove(first)
    return order


#: tokens an LLM writes for one contextual_retrieval context line (an estimate)
CONTEXT_OUTPUT_TOKENS = 60
#: the most document text one contextual call reads (the chunker cuts longer documents)
CONTEXT_DOCUMENT_CAP = 8000
#: a vision call per image: prompt and image tokens in, caption out (estimates)
CAPTION_INPUT_TOKENS = 900
CAPTION_OUTPUT_TOKENS = 120


@dataclass(frozen=True)
class IndexEstimate:
    """Before building: embedding tokens and LLM calls of every collection, and their dollars."""

    corpus_model: str
    n_strategies: int
    embedding_tokens: float
    embedding_usd: float
    context_calls: int
    context_input_tokens: float
    context_output_tokens: float
    context_usd: float

    def summary(self) -> str:
        text = (
            f"{self.corpus_model}: {self.n_strategies} collection(s), about {self.embedding_tokens:,.0f} tokens "
            f"to embed (${self.embedding_usd:,.4f})"
        )
        if self.context_calls:
            text += (
                f"; contextual_retrieval: {self.context_calls:,} LLM calls, about "
                f"{self.context_input_tokens:,.0f} input / {self.context_output_tokens:,.0f} output tokens "
                f"(${self.context_usd:,.4f})"
            )
        return text


@dataclass(frozen=True)
class IndexShape:
    """What builds a corpus model's collections: ``n_strategies`` of them, cut at ``chunk_size`` tokens with
    ``overlap``, and whether contextual_retrieval has an LLM write its chunks' contexts (``contextual``)."""

    n_strategies: int
    chunk_size: int
    overlap: int
    contextual: bool = False


def estimate_index(
    document_tokens: Sequence[int], corpus_model: str, corpus_price: float, shape: IndexShape, llm: LLMPrices
) -> IndexEstimate:
    """Tokens and dollars to build ``n_strategies`` collections of a corpus with one corpus model.

    Embedding: every document's tokens once per strategy, plus the overlap repeated
    (``· (1 + overlap / chunk_size)``). contextual_retrieval with an LLM: one call per chunk
    (``⌈tokens / chunk_size⌉`` per document), reading the document (at most
    :data:`CONTEXT_DOCUMENT_CAP` tokens) and the chunk, writing :data:`CONTEXT_OUTPUT_TOKENS`.
    The embedding and context caches make a re-run cost only what changed; this is the
    cost of a first build.
    """
    n_strategies, chunk_size, overlap, contextual = (
        shape.n_strategies,
        shape.chunk_size,
        shape.overlap,
        shape.contextual,
    )
    total = float(sum(document_tokens))
    embedding_tokens = total * n_strategies * (1 + overlap / chunk_size if chunk_size else 1)
    calls, context_in = 0, 0.0
    if contextual:
        for tokens in document_tokens:
            n = max(1, math.ceil(tokens / chunk_size)) if tokens else 0
            calls += n
            context_in += n * (min(tokens, CONTEXT_DOCUMENT_CAP) + chunk_size)
    context_out = float(calls * CONTEXT_OUTPUT_TOKENS)
    return IndexEstimate(
        corpus_model,
        n_strategies,
        embedding_tokens,
        usd(embedding_tokens, corpus_price),
        calls,
        context_in,
        context_out,
        usd(context_in, llm.input_per_mtok) + usd(context_out, llm.output_per_mtok),
    )


def estimate_captions(n_images: int, llm: LLMPrices) -> tuple[int, float]:
    """(vision calls, dollars) to caption ``n_images`` images once (captions are stored with the parse)."""
    return n_images, usd(n_images * CAPTION_INPUT_TOKENS, llm.input_per_mtok) + usd(
        n_images * CAPTION_OUTPUT_TOKENS, llm.output_per_mtok
    )
