"""What a configuration costs: to build its index, to answer questions, to store it.

Dollars come from prices per million tokens: an embedding model's ``price_per_mtok`` in the
model registry (0 for local and self-hosted models) and the LLM's input/output prices
(settings; unknown prices count as 0 and are said to be unknown). Formulas, with token
counts in cl100k tokens unless the provider reports its own:

- ``index_usd = chunk_tokens · p_corpus / 10⁶ + boundary_tokens · p_boundary / 10⁶``
  (the chunks embedded with the corpus model; the sentences a semantic strategy embeds
  with its boundary model);
- ``query_usd_per_1000 = 1000 · (q · p_corpus + (c + q + o) · p_llm_in + a · p_llm_out) / 10⁶``
  with ``q`` the mean question tokens, ``c`` the mean context tokens, ``o`` the prompt's
  fixed overhead (:data:`PROMPT_OVERHEAD_TOKENS`) and ``a`` the mean answer tokens (the
  answer budget when no answer was generated);
- ``cost_usd = index_usd + query_usd_per_1000``: what the configuration costs to build
  and to answer 1,000 questions (0 for local models with no LLM price).

The cost-quality frontier (:func:`pareto_frontier`) keeps every configuration that no other
one beats on both quality (higher) and cost (lower).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: the instructions and labels an answer prompt adds around the question and the context
PROMPT_OVERHEAD_TOKENS = 60


def usd(tokens: float, price_per_mtok: float | None) -> float:
    """Dollars for ``tokens`` at ``price_per_mtok`` USD per million (0 when the price is unknown)."""
    if not price_per_mtok or not tokens or math.isnan(tokens):
        return 0.0
    return float(tokens) * float(price_per_mtok) / 1_000_000


def index_usd(chunk_tokens: float, corpus_price: float | None, boundary_tokens: float = 0.0,
              boundary_price: float | None = None) -> float:
    """index_usd = chunk_tokens · p_corpus / 10⁶ + boundary_tokens · p_boundary / 10⁶."""
    return usd(chunk_tokens, corpus_price) + usd(boundary_tokens, boundary_price)


@dataclass(frozen=True)
class LLMPrices:
    """USD per million input / output tokens of the answering LLM (None: unknown)."""

    input_per_mtok: float | None = None
    output_per_mtok: float | None = None

    @property
    def known(self) -> bool:
        return self.input_per_mtok is not None and self.output_per_mtok is not None


def query_usd_per_1000(question_tokens: float, context_tokens: float, corpus_price: float | None,
                       llm: LLMPrices, answer_tokens: float) -> float:
    """query_usd_per_1000 = 1000 · (q · p_corpus + (c + q + o) · p_llm_in + a · p_llm_out) / 10⁶."""
    one = (usd(question_tokens, corpus_price)
           + usd(context_tokens + question_tokens + PROMPT_OVERHEAD_TOKENS, llm.input_per_mtok)
           + usd(answer_tokens, llm.output_per_mtok))
    return 1000 * one


def pareto_frontier(points: Mapping[str, tuple[float, float]]) -> set[str]:
    """Names on the frontier of (quality: higher is better, cost: lower is better).

    A point is dominated when another has quality >= and cost <= with at least one strict;
    NaN qualities are never on the frontier. Equal points are all kept.
    """
    clean = {n: (q, c) for n, (q, c) in points.items() if not (math.isnan(q) or math.isnan(c))}
    frontier = set()
    for name, (quality, cost) in clean.items():
        dominated = any(
            (q2 >= quality and c2 <= cost) and (q2 > quality or c2 < cost)
            for other, (q2, c2) in clean.items() if other != name
        )
        if not dominated:
            frontier.add(name)
    return frontier


#: the cost columns in the order the recommendation compares them (lower first wins)
COST_ORDER: tuple[str, ...] = ("cost_usd", "context_tokens", "query_ms", "index_seconds")


def cost_axis(rows: Sequence[Mapping[str, float]]) -> str:
    """The cost the frontier is drawn against: dollars when any configuration costs money, else context tokens."""
    if any((r.get("cost_usd") or 0) > 0 for r in rows):
        return "cost_usd"
    return "context_tokens"


def cost_key(row: Mapping[str, float]) -> tuple[float, ...]:
    """Sort key for "cheapest": dollars, then context tokens per question, then query and index time."""
    def value(name: str) -> float:
        raw = row.get(name)
        return math.inf if raw is None or (isinstance(raw, float) and math.isnan(raw)) else float(raw)

    return tuple(value(name) for name in COST_ORDER)
