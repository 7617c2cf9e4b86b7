"""The corpus model's input window as a hard fact (no chunk longer than the model reads, 512 tokens at most).

An embedding model reads at most ``max_tokens`` of ITS OWN tokens (256 word pieces
for MiniLM as packaged, 512 for nomic-embed-text-v2-moe and multilingual-e5-small)
and silently drops the rest. cl100k counts are only a proxy for that, so every text
the corpus model embeds - the chunk, any contextual prefix and the model's task
prefix - is counted with the model's own tokenizer through a
``count_model_tokens(texts) -> list[int]`` callable (for MiniLM:
``shared_minilm().count_word_pieces``, which includes [CLS]/[SEP]).

Every strategy given a window fits what it embeds into it by construction: units that
are not cut by size (structural units, semantic groups, cluster groups, parent-child
children) and size-driven chunks alike are split with :func:`fit_spans` when longer
than the window (cl100k sizes are only a proxy: Persian text runs to far more
MiniLM word pieces than cl100k tokens), and ``contextual_retrieval`` counts its
context prefix too (:meth:`ModelWindow.with_prefix`). The blocking check
:func:`chunkbench_core.chunking.checks.check_chunks` then guards. A run that allows
truncation knowingly (``overflow: truncate``) gives size-driven chunkers no window.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from chunkbench_core.errors import ChunkingError

from chunkbench_core.tokens import TokenIndex

from .cascade import recursive_spans

CountModelTokens = Callable[[list[str]], Sequence[int]]


def model_token_counts(count_model_tokens: CountModelTokens, texts: list[str]) -> list[int]:
    """``count_model_tokens(texts)`` checked: one non-negative integer per text, or ChunkingError."""
    if not texts:
        return []
    try:
        counts = list(count_model_tokens(texts))
    except ChunkingError:
        raise
    except Exception as exc:
        raise ChunkingError(f"count_model_tokens failed: {type(exc).__name__}: {exc}") from exc
    if len(counts) != len(texts):
        raise ChunkingError(
            f"count_model_tokens returned {len(counts)} counts for {len(texts)} texts; it must return one per text"
        )
    out = []
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, (int,)) and not hasattr(n, "__index__"):
            raise ChunkingError(f"count_model_tokens returned a non-integer count {n!r}")
        n = int(n)
        if n < 0:
            raise ChunkingError(f"count_model_tokens returned a negative count {n}")
        out.append(n)
    return out


#: texts counted per call of a model's tokenizer
COUNT_SLICE = 512


@dataclass(frozen=True)
class ModelWindow:
    """How many of its own tokens the corpus model reads, and how to count them.

    ``task_prefix`` is the model's document prefix (e.g. ``"search_document: "``):
    it is part of every embedded text and so of every count.
    """

    max_tokens: int
    count_tokens: CountModelTokens
    task_prefix: str = ""
    model_id: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ChunkingError(f"model window max_tokens must be a positive integer, got {self.max_tokens!r}")
        if not callable(self.count_tokens):
            raise ChunkingError("model window count_tokens must be a callable count_model_tokens(texts) -> list[int]")

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_id, "max_tokens": self.max_tokens, "task_prefix": self.task_prefix}

    def with_prefix(self, prefix: str) -> "ModelWindow":
        """This window for texts embedded after ``prefix`` (a contextual prefix): the prefix is counted too."""
        return ModelWindow(self.max_tokens, self.count_tokens, self.task_prefix + prefix, self.model_id)

    def counts(self, texts: list[str]) -> list[int]:
        """Model tokens of each text as embedded (task prefix included), counted :data:`COUNT_SLICE` texts at a
        time: a tokenizer keeps every text's encoding of a call (ids, offsets, masks), hundreds of MB for the
        tens of thousands of chunks of one big document."""
        out: list[int] = []
        for begin in range(0, len(texts), COUNT_SLICE):
            out += model_token_counts(
                self.count_tokens, [self.task_prefix + t for t in texts[begin : begin + COUNT_SLICE]]
            )
        return out


def fit_spans(
    text: str, tokens: TokenIndex, spans: list[tuple[int, int]], window: ModelWindow | None
) -> list[tuple[int, int]]:
    """``spans`` with every span whose embedded text exceeds the window split to fit.

    A span over the window is cut with the recursive cascade (headings -> blank line
    -> newline -> sentence -> space -> token windows) at a cl100k budget scaled by
    the span's model/cl100k ratio; parts still over are cut again at 3/4 of that
    budget, until all fit. All spans are counted in one batch call.
    """
    if window is None or not spans:
        return list(spans)
    counts = window.counts([text[s:e] for s, e in spans])
    out: list[tuple[int, int]] = []
    for (start, end), n in zip(spans, counts):
        if n <= window.max_tokens:
            out.append((start, end))
        else:
            out.extend(_split_to_fit(text, tokens, start, end, n, window))
    return out


def fit_pieces(text: str, tokens: TokenIndex, pieces: list, window: ModelWindow | None) -> list:
    """``pieces`` (chunking.base.Piece, no parents) with every piece over the window split to fit.

    A split piece's parts keep its content type, heading path and role; their token counts are recounted.
    """
    if window is None or not pieces:
        return list(pieces)
    counts = window.counts([text[p.start : p.end] for p in pieces])
    out = []
    for piece, n in zip(pieces, counts):
        if n <= window.max_tokens:
            out.append(piece)
            continue
        for start, end in _split_to_fit(text, tokens, piece.start, piece.end, n, window):
            out.append(replace(piece, start=start, end=end, token_count=None))
    return out


def fit_span_groups(
    text: str, tokens: TokenIndex, groups: list[list[tuple[int, int]]], window: ModelWindow | None
) -> list[list[tuple[int, int]]]:
    """:func:`fit_spans` over several lists of spans at once (one counting call), lists kept apart."""
    if window is None:
        return [list(g) for g in groups]
    flat = [span for group in groups for span in group]
    if not flat:
        return [[] for _ in groups]
    counts = window.counts([text[s:e] for s, e in flat])
    out: list[list[tuple[int, int]]] = []
    position = 0
    for group in groups:
        fitted: list[tuple[int, int]] = []
        for start, end in group:
            n = counts[position]
            position += 1
            if n <= window.max_tokens:
                fitted.append((start, end))
            else:
                fitted.extend(_split_to_fit(text, tokens, start, end, n, window))
        out.append(fitted)
    return out


def _split_to_fit(
    text: str, tokens: TokenIndex, start: int, end: int, n_model: int, window: ModelWindow
) -> list[tuple[int, int]]:
    budget = max(1, int(max(tokens.count(start, end), 1) * window.max_tokens / n_model * 0.9))
    parts = recursive_spans(text, tokens, start, end, budget)
    counts = window.counts([text[s:e] for s, e in parts])
    out: list[tuple[int, int]] = []
    for (s, e), n in zip(parts, counts):
        if n <= window.max_tokens:
            out.append((s, e))
        elif budget == 1 or (s, e) == (start, end) and n >= n_model:
            raise ChunkingError(
                f"cannot fit {text[s:e][:40]!r} into the {window.max_tokens}-token window of "
                f"{window.model_id or 'the corpus model'} (task prefix {window.task_prefix!r}); "
                "choose a corpus model with a larger window"
            )
        else:
            out.extend(_split_to_fit(text, tokens, s, e, n, window))
    return out
