"""Evidence recall at an equal context budget: what the LLM could read in its first B tokens.

Recall of the retrieved chunks rewards size: a strategy that returns whole sections (or
whole documents) finds more evidence simply by sending more text. These metrics put every
configuration on the same footing by cutting its context at the same number of tokens.

The context of a question is every chunk the LLM receives, in the order retrieval returns
them (:func:`context_order`): each hit in rank order, followed by the neighbors it
brought in (nearest first, previous before next at equal distance) and its parent
section; a chunk already in the context keeps its first place. Each chunk is measured in
cl100k tokens of its own text (the separators and numbering a prompt adds are not counted).

- ``context_tokens = Σ_{c ∈ context} tokens(c)``.
- ``recall_at_B``: the evidence recall (:func:`.metrics.recall`) of the first ``B`` tokens
  of the context. Whole chunks are taken while they fit; the chunk that crosses the
  budget counts for the characters of its first ``r`` tokens, where ``r`` is the budget
  left (a character split between two tokens is left out). Chunks after it count for
  nothing. When the whole context fits, ``recall_at_B`` equals the recall of the context.
- ``budget_auc``: the normalised area under recall vs budget, with budgets on a log2
  axis (each doubling weighs the same), by the trapezoid rule between the smallest and
  the largest budget::

      budget_auc = Σ_i (r_i + r_{i+1}) / 2 · (log2 B_{i+1} − log2 B_i) / (log2 B_max − log2 B_min)

  It lies in [0, 1]; with one budget it is ``recall_at_B`` of that budget.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from chunkbench_core import metric_catalog
from chunkbench_core.metric_catalog import BUDGETS
from chunkbench_core.tokens import ID_TYPE, cl100k, encode_many
from chunkbench_core.errors import ConfigError

from . import evidence_arrays, metrics
from .questions import Span
from .retrieval import ExpansionNode, RetrievedChunk, ranking_order

DEFAULT_BUDGETS: tuple[int, ...] = BUDGETS  # the budgets of the listed recall_at_B metrics


def validate_budgets(budgets: Sequence[int]) -> tuple[int, ...]:
    """Budgets as a sorted tuple of distinct positive integers (a ConfigError otherwise)."""
    values = list(budgets)
    if not values:
        raise ConfigError("context budgets: give at least one budget in tokens, e.g. 256, 512, 1024, 2048")
    for value in values:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"context budgets must be positive whole numbers of tokens, got {value!r}")
    if len(set(values)) != len(values):
        raise ConfigError(f"context budgets must be distinct, got {values}")
    return tuple(sorted(values))


budget_column = metric_catalog.budget_column


def context_order(tree: Sequence[ExpansionNode]) -> list[RetrievedChunk]:
    """The context in retrieval order: hit, its neighbors nearest first, its parent; next hit ..."""
    return ranking_order(tree)


#: chunk texts whose tokens are remembered: 65,536 chunks of 250 tokens take about 70 MB, so a run over 65,000
#: chunks encodes each once
TOKENS_KEPT = 65536
_TOKEN_IDS: dict[str, np.ndarray] = {}


def token_ids(text: str) -> np.ndarray:
    """cl100k tokens of one chunk's text (remembered, 4 bytes a token: a chunk is in the context of many
    questions, and its count and its cut at a budget both need them)."""
    ids = _TOKEN_IDS.get(text)
    if ids is None:
        ids = _keep(text, cl100k().encode_ordinary(text))
    return ids


def _keep(text: str, ids: Sequence[int] | np.ndarray) -> np.ndarray:
    if len(_TOKEN_IDS) >= TOKENS_KEPT:
        del _TOKEN_IDS[next(iter(_TOKEN_IDS))]  # the oldest
    kept = _TOKEN_IDS[text] = np.asarray(ids, dtype=ID_TYPE)
    return kept


def encode_texts(texts: Sequence[str]) -> None:
    """Encode the texts whose tokens are not remembered yet (:func:`chunkbench_core.tokens.encode_many`: one
    thread per core)."""
    missing = [t for t in dict.fromkeys(texts) if t not in _TOKEN_IDS][:TOKENS_KEPT]
    for text, ids in zip(missing, encode_many(missing) if missing else ()):
        _keep(text, ids)


def remember_tokens(ids_by_text: Mapping[str, np.ndarray], texts: Iterable[str]) -> int:
    """Remember the given tokens of those of ``texts`` that ``ids_by_text`` holds (the ids a collection's build
    stored with its chunks, by chunk text), so :func:`encode_texts` leaves them out; returns how many it took.
    Only the texts asked for are kept (a context's chunks), within :data:`TOKENS_KEPT` as encoded ones are."""
    taken = 0
    for text in dict.fromkeys(texts):
        if text in _TOKEN_IDS:
            continue
        ids = ids_by_text.get(text)
        if ids is not None:
            _keep(text, ids)
            taken += 1
    return taken


def forget_tokens() -> None:
    """Forget every remembered chunk's tokens (a benchmark times their encoding)."""
    _TOKEN_IDS.clear()
    prefix_characters.cache_clear()


def token_count(text: str) -> int:
    """cl100k tokens of one chunk's text."""
    return len(token_ids(text))


@lru_cache(maxsize=16384)
def prefix_characters(text: str, tokens: int) -> int:
    """How many whole characters of ``text`` its first ``tokens`` cl100k tokens cover."""
    if tokens <= 0 or not text:
        return 0
    ids = token_ids(text)
    if tokens >= len(ids):
        return len(text)
    covered = len(cl100k().decode_bytes(ids[:tokens].tolist()))  # the tokens' bytes, as encoded
    return len(text.encode("utf-8")[:covered].decode("utf-8", errors="ignore"))


@dataclass(frozen=True)
class ContextPiece:
    """One chunk of the context: its span and its size in tokens."""

    span: Span
    text: str
    tokens: int


def context_pieces(chunks: Sequence[RetrievedChunk]) -> list[ContextPiece]:
    """The context's chunks with their token counts (text from the chunk; the span from its offsets)."""
    return [ContextPiece(c.span, c.text, token_count(c.text)) for c in chunks]


def spans_within_budget(pieces: Sequence[ContextPiece], budget: int) -> list[Span]:
    """The spans the first ``budget`` tokens of the context cover (the crossing chunk cut at a token)."""
    spans: list[Span] = []
    left = budget
    for piece in pieces:
        if left <= 0:
            break
        if piece.tokens <= left:
            spans.append(piece.span)
            left -= piece.tokens
            continue
        characters = prefix_characters(piece.text, left)
        if characters:
            spans.append(Span(piece.span.document, piece.span.start, piece.span.start + characters))
        break
    return spans


def recall_at_budget(pieces: Sequence[ContextPiece], references: Sequence[Span], budget: int) -> float:
    """recall_at_B = recall(first B tokens of the context, references)."""
    return metrics.recall(spans_within_budget(pieces, budget), references)


def budget_auc(recalls: Sequence[float], budgets: Sequence[int]) -> float:
    """Trapezoid area under recall vs log2(budget), divided by the log2 range (see the module docstring)."""
    if len(recalls) != len(budgets) or not budgets:
        raise ValueError("budget_auc needs one recall per budget")
    if len(budgets) == 1:
        return float(recalls[0])
    pairs = sorted(zip(budgets, recalls))
    logs = [math.log2(b) for b, _ in pairs]
    values = [r for _, r in pairs]
    area = 0.0
    for i in range(len(pairs) - 1):  # added left to right, as the batch's arrays add them
        area += (values[i] + values[i + 1]) / 2 * (logs[i + 1] - logs[i])
    return area / (logs[-1] - logs[0])


def budget_scores(
    chunks: Sequence[RetrievedChunk], references: Sequence[Span], budgets: Sequence[int] = DEFAULT_BUDGETS
) -> dict[str, float]:
    """``context_tokens``, ``recall_at_B`` for every budget and ``budget_auc`` of one question's context."""
    pieces = context_pieces(chunks)
    scores: dict[str, float] = {"context_tokens": float(sum(p.tokens for p in pieces))}
    recalls = [recall_at_budget(pieces, references, b) for b in budgets]
    for b, r in zip(budgets, recalls):
        scores[budget_column(b)] = r
    scores["budget_auc"] = budget_auc(recalls, budgets)
    return scores


def batch_budget_scores(
    contexts: Sequence[Sequence[RetrievedChunk]],
    references: Sequence[Sequence[Span]],
    budgets: Sequence[int] = DEFAULT_BUDGETS,
) -> list[dict[str, float]]:
    """:func:`budget_scores` of many questions at once (``contexts[i]`` against ``references[i]``): the chunks
    within each budget are found from running sums of their tokens (only the chunk crossing a budget is cut, at a
    token, as one question's is), and every recall comes from the arrays of :mod:`.evidence_arrays`; the same
    values."""
    budgets = tuple(budgets)
    if len(contexts) != len(references):
        raise ValueError(f"{len(contexts)} contexts and {len(references)} sets of references do not match")
    if not contexts:
        return []
    if not budgets:
        raise ValueError("budget_auc needs one recall per budget")
    chunks, owner = evidence_arrays.flatten(contexts)
    texts = [c.text for c in chunks]
    distinct = list(dict.fromkeys(texts))  # a chunk is in the context of many questions
    encode_texts(distinct)
    codes = evidence_arrays.DocumentCodes()
    context = evidence_arrays.Intervals.of_items(chunks, owner, codes)
    evidence = evidence_arrays.Intervals.of_groups(references, codes)
    counts = dict(zip(distinct, map(token_count, distinct)))
    tokens = np.fromiter(map(counts.__getitem__, texts), dtype=np.int64, count=len(texts))
    n, width = len(contexts), len(budgets)
    sizes = np.bincount(owner, minlength=n)
    running = np.cumsum(tokens)
    through = running - np.repeat(np.r_[0, running][np.cumsum(sizes) - sizes], sizes)  # tokens up to each chunk's end
    before = through - tokens
    within = []  # the spans within each budget, owned by question x budget
    for b, size in enumerate(budgets):
        whole = context.take((before < size) & (through <= size))
        crossing = np.flatnonzero((before < size) & (through > size))  # cut at the tokens left
        characters = np.fromiter(
            (
                prefix_characters(texts[j], left)
                for j, left in zip(crossing.tolist(), (size - before[crossing]).tolist())
            ),
            dtype=np.int64,
            count=len(crossing),
        )
        cut = context.take(crossing[characters > 0])
        cut = dataclasses.replace(cut, end=cut.start + characters[characters > 0])
        within += [dataclasses.replace(part, owner=part.owner * width + b) for part in (whole, cut)]
    arrays = evidence_arrays.EvidenceArrays(
        n * width,
        evidence_arrays.Intervals.joined(within),
        evidence_arrays.Intervals.joined(
            [dataclasses.replace(evidence, owner=evidence.owner * width + b) for b in range(width)]
        ),
        context.take(np.zeros(0, dtype=np.int64)),
        np.zeros(n * width, dtype=np.int64),
    )
    recalls = evidence_arrays.recall(arrays).reshape(n, width)
    columns = ["context_tokens", *(budget_column(b) for b in budgets), "budget_auc"]
    rows = zip(
        evidence_arrays.totals(owner, tokens, n).astype(np.float64).tolist(),
        *recalls.T.tolist(),
        _budget_aucs(recalls, budgets).tolist(),
    )
    return [dict(zip(columns, row)) for row in rows]


def _budget_aucs(recalls: np.ndarray, budgets: Sequence[int]) -> np.ndarray:
    """:func:`budget_auc` of each row of ``recalls`` (one column per budget), with the same float operations."""
    if len(set(budgets)) < len(budgets):  # ties of budgets are ordered by recall, row by row
        return np.array([budget_auc(row, budgets) for row in recalls.tolist()], dtype=np.float64)
    if len(budgets) == 1:
        return recalls[:, 0].copy()
    order = sorted(range(len(budgets)), key=lambda i: budgets[i])
    logs = [math.log2(budgets[i]) for i in order]
    values = recalls[:, order]
    area = np.zeros(len(recalls), dtype=np.float64)
    for i in range(len(order) - 1):
        area += (values[:, i] + values[:, i + 1]) / 2 * (logs[i + 1] - logs[i])
    return area / (logs[-1] - logs[0])
