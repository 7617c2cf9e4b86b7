"""How long each question's evidence is, in tokens, and which chunk sizes that favours.

A question's evidence length is the sum of its evidence spans' lengths in cl100k tokens, estimated from their
characters with the token density of the document they are in (the tokens per character of that document's
chunks as the comparison's configurations cut it: every chunk records both). The questions fall in buckets
(:data:`BUCKETS`), the ``evidence_length`` dimension of the breakdowns, so a reader sees which chunk sizes
serve which questions.

:func:`length_report` sets the questions' evidence lengths against the chunk sizes compared (each
configuration's median chunk, in tokens): the share of questions whose evidence fits in one chunk of that size.
When nearly every question fits in the smallest size, or nearly none fits in any but the largest, the question
set favours one size (:func:`favours_one_size`): small chunks find short evidence with less text around it, and
only large chunks hold long evidence whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chunkbench_core.wording import plural

#: the buckets of evidence length in tokens: (upper bound, name); the last has no upper bound
BUCKETS: tuple[tuple[float, str], ...] = (
    (64, "up to 64 tokens"),
    (128, "65 to 128 tokens"),
    (256, "129 to 256 tokens"),
    (512, "257 to 512 tokens"),
    (math.inf, "over 512 tokens"),
)
#: a question set favours one chunk size when at least this share of its questions fits in the smallest chunks
#: compared, or at most one minus it fits in any but the largest
FAVOURS_SHARE = 0.8


def bucket(tokens: float | None) -> str | None:
    """The bucket of an evidence length in tokens (None: no evidence)."""
    if tokens is None or (isinstance(tokens, float) and math.isnan(tokens)) or tokens <= 0:
        return None
    return next(name for upper, name in BUCKETS if tokens <= upper)


def bucket_order(name: str) -> int:
    """A bucket's place, shortest first (unknown names last)."""
    return next((i for i, (_, b) in enumerate(BUCKETS) if b == name), len(BUCKETS))


def token_density(chunks: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Tokens per character of each document, from its chunks' ``token_count`` and offsets (parent chunks, which
    repeat their children's text, should be left out by the caller)."""
    tokens: dict[str, float] = {}
    chars: dict[str, float] = {}
    for chunk in chunks:
        try:
            n_tokens, n_chars = float(chunk["token_count"]), float(chunk["end_offset"]) - float(chunk["start_offset"])
        except (KeyError, TypeError, ValueError):
            continue
        if n_chars > 0 and n_tokens >= 0 and not math.isnan(n_tokens):
            document = str(chunk["document"])
            tokens[document] = tokens.get(document, 0.0) + n_tokens
            chars[document] = chars.get(document, 0.0) + n_chars
    return {d: tokens[d] / chars[d] for d in tokens if chars[d] > 0}


def density_of(chunks: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """:func:`token_density` over one configuration's chunks per document, the first by (strategy, corpus model)
    name whatever order the chunks come in: every configuration cuts the same text, and one configuration's chunks
    cover each document once (overlapping chunks count their shared text twice in tokens and in characters
    alike)."""
    chunks = list(chunks)
    first: dict[str, tuple[str, str]] = {}
    for chunk in chunks:
        document = str(chunk.get("document"))
        configuration = (str(chunk.get("strategy")), str(chunk.get("corpus_model")))
        if document not in first or configuration < first[document]:
            first[document] = configuration
    return token_density(
        c for c in chunks if first.get(str(c.get("document"))) == (str(c.get("strategy")), str(c.get("corpus_model")))
    )


def evidence_tokens(references: Any, density: Mapping[str, float]) -> int | None:
    """The evidence length of one question in tokens (its spans' characters times their document's density),
    None when it has no span or a span's document has no chunk."""
    if isinstance(references, str):
        try:
            references = json.loads(references)
        except ValueError:
            return None
    if not isinstance(references, list):
        return None
    total, seen = 0.0, False
    for ref in references:
        if not isinstance(ref, dict) or ref.get("start") is None or ref.get("end") is None:
            continue
        rate = density.get(str(ref.get("document")))
        if rate is None:
            return None
        try:
            total += max(0, int(ref["end"]) - int(ref["start"])) * rate
        except (TypeError, ValueError):
            return None
        seen = True
    return max(1, round(total)) if seen and total > 0 else None


def question_evidence_rows(rows: Iterable[Mapping[str, Any]], density: Mapping[str, float]) -> list[dict[str, Any]]:
    """One row per question of ``rows`` (question_results rows): its evidence length in tokens and its bucket.
    The first of a question's rows that gives a length counts, whatever order the rows come in (a row without
    its references, as a stored snapshot keeps them, gives none)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        key = (str(row.get("question_set")), str(row.get("question_id")))
        if key in out and out[key]["evidence_tokens"] is not None:
            continue
        tokens = evidence_tokens(row.get("references"), density)
        if key in out and tokens is None:
            continue
        out[key] = {
            "question_set": key[0],
            "question_id": key[1],
            "evidence_tokens": tokens,
            "evidence_length": bucket(tokens),
        }
    return list(out.values())


@dataclass(frozen=True)
class LengthReport:
    """The questions' evidence lengths against the chunk sizes compared."""

    n_questions: int  # questions with an evidence length
    median_tokens: float | None
    buckets: tuple[tuple[str, int], ...]  # (bucket, questions), shortest first, every bucket listed
    fits: tuple[
        tuple[int, float], ...
    ]  # (chunk size in tokens, share of questions whose evidence fits), smallest first

    def sentence(self) -> str:
        if not self.n_questions:
            return "No question has evidence spans to measure."
        counts = ", ".join(f"{name} {n}" for name, n in self.buckets if n)
        text = (
            f"Evidence length of the {plural(self.n_questions, 'question')} with spans: median "
            f"{self.median_tokens:,.0f} tokens ({counts})."
        )
        if self.fits:
            text += (
                " Fits in one chunk: " + ", ".join(f"{share:.0%} at {size:,} tokens" for size, share in self.fits) + "."
            )
        return text


def length_report(tokens: Sequence[int | None], chunk_sizes: Iterable[float]) -> LengthReport:
    """The distribution of ``tokens`` (each question's evidence length) and the share fitting each chunk size."""
    known = sorted(t for t in tokens if t is not None)
    counts = {name: 0 for _, name in BUCKETS}
    for t in known:
        counts[bucket(t) or BUCKETS[0][1]] += 1
    sizes = sorted({int(round(s)) for s in chunk_sizes if s and not math.isnan(s)})
    fits = tuple((size, sum(1 for t in known if t <= size) / len(known)) for size in sizes) if known else ()
    median = (
        float(known[len(known) // 2])
        if len(known) % 2
        else (float(known[len(known) // 2 - 1] + known[len(known) // 2]) / 2 if known else None)
    )
    return LengthReport(len(known), median, tuple(counts.items()), fits)


def favours_one_size(report: LengthReport, share: float = FAVOURS_SHARE) -> str | None:
    """A warning when the question set's evidence lengths favour one of the chunk sizes compared, else None."""
    if report.n_questions == 0 or len(report.fits) < 2:
        return None
    (smallest, in_smallest), (largest, _) = report.fits[0], report.fits[-1]
    below_largest = report.fits[-2][1]
    if in_smallest >= share - 1e-9:  # float noise: 4 of 5 is 80 %
        return (
            f"{in_smallest:.0%} of the {plural(report.n_questions, 'question')} have evidence short enough for "
            f"the smallest chunks compared ({smallest:,} tokens; median evidence {report.median_tokens:,.0f} "
            "tokens): the question set favours small chunks, which find short evidence with less text around it. "
            "Add questions whose answers span several paragraphs to see what larger chunks are worth."
        )
    if below_largest <= 1 - share + 1e-9:
        return (
            f"Only {below_largest:.0%} of the {plural(report.n_questions, 'question')} have evidence that fits in "
            f"a chunk smaller than the largest compared ({largest:,} tokens; median evidence "
            f"{report.median_tokens:,.0f} tokens): the question set favours large chunks, the only ones that "
            "hold its evidence whole. Add questions answered by a sentence or two to see what smaller chunks "
            "are worth."
        )
    return None
