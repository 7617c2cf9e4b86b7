"""The chunk-collection check: a pure function behind a blocking asset check.

``check_chunks`` verifies, for the chunks of one strategy run:

* no empty chunk (text, or embedded text, that is only whitespace) and no duplicate id;
* offsets reproduce the text: ``markdown[start:end] == text`` for the chunk's document;
* every ``parent_id`` names a chunk of the run;
* for the strategies registered with ``covers_text`` (``fixed_size`` and ``recursive``, meant to
  keep everything), every non-whitespace character of every document is inside some chunk;
* the model window as a hard fact: every embedded text (task prefix + contextual
  prefix + chunk) is counted with the corpus model's OWN tokenizer
  (``count_model_tokens(texts) -> list[int]``) and must fit ``max_model_tokens``.
  Parents of ``semantic_parent_child`` are context only and are not counted. With
  ``overflow="truncate"`` an overflow is allowed knowingly (the Chroma protocol
  embeds 250-token chunks with MiniLM, which truncates) and counted in
  ``n_truncated``; with ``overflow="error"`` it fails the check, and the report names
  the setting to change.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Literal, Mapping

from chunkbench_core.errors import ChunkingError
from chunkbench_core.progress import Tracker

from .base import Chunk
from .registry import STRATEGIES
from .window import CountModelTokens, model_token_counts

OverflowMode = Literal["error", "truncate"]
OVERFLOW_MODES: tuple[str, ...] = ("error", "truncate")
_COUNT_BATCH = 2048
_LISTED = 20  # ids/spans listed per problem in the report (counts are always complete)


@dataclass
class WindowOverflow:
    chunk_id: str
    strategy: str
    model_tokens: int
    cl100k_tokens: int


def _n(count: int, word: str) -> str:
    return f"{count} {word if count == 1 else word + 's'}"


@dataclass
class ChunkCheckReport:
    """What :func:`check_chunks` found. ``passed`` is the asset check's verdict."""

    n_chunks: int
    n_documents: int
    max_model_tokens: int
    overflow_mode: str
    n_window_checked: int = 0
    max_model_tokens_seen: int = 0
    empty: list[str] = field(default_factory=list)
    duplicate_ids: list[str] = field(default_factory=list)
    offset_mismatches: list[str] = field(default_factory=list)
    unknown_documents: list[str] = field(default_factory=list)
    dangling_parents: list[str] = field(default_factory=list)
    coverage_checked: bool = False
    n_uncovered_chars: int = 0
    uncovered: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    overflows: list[WindowOverflow] = field(default_factory=list)
    n_overflows: int = 0
    n_truncated: int = 0
    settings_to_change: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not (
            self.empty
            or self.duplicate_ids
            or self.offset_mismatches
            or self.unknown_documents
            or self.dangling_parents
            or self.n_uncovered_chars
            or (self.n_overflows and self.overflow_mode == "error")
        )

    def problems(self) -> list[str]:
        """One line per failed rule, each saying what to change."""
        out = []
        if self.empty:
            out.append(f"{_n(len(self.empty), 'empty chunk')} (e.g. {self.empty[:3]}): a chunker bug, report it")
        if self.duplicate_ids:
            out.append(f"{_n(len(self.duplicate_ids), 'duplicate chunk id')} (e.g. {self.duplicate_ids[:3]})")
        if self.offset_mismatches:
            out.append(
                f"{_n(len(self.offset_mismatches), 'chunk')} whose markdown[start:end] is not "
                f"{'its' if len(self.offset_mismatches) == 1 else 'their'} text "
                f"(e.g. {self.offset_mismatches[:3]}): re-parse and re-chunk; if it persists, a chunker bug"
            )
        if self.unknown_documents:
            out.append(f"chunks of documents with no parsed markdown: {self.unknown_documents[:5]}")
        if self.dangling_parents:
            out.append(
                f"{_n(len(self.dangling_parents), 'chunk')} name a parent_id that is not in the run "
                f"(e.g. {self.dangling_parents[:3]})"
            )
        if self.n_uncovered_chars:
            docs = ", ".join(f"{d} at {spans[:2]}" for d, spans in list(self.uncovered.items())[:3])
            out.append(f"{self.n_uncovered_chars} non-whitespace characters are in no chunk ({docs})")
        if self.n_overflows and self.overflow_mode == "error":
            worst = max(self.overflows, key=lambda o: o.model_tokens)
            out.append(
                f"{self.n_overflows} of {self.n_window_checked} embedded texts exceed the corpus model window of "
                f"{self.max_model_tokens} tokens (longest {worst.model_tokens}, {worst.chunk_id}); "
                + "; ".join(self.settings_to_change)
            )
        return out

    def to_metadata(self) -> dict[str, Any]:
        """JSON-friendly summary (lists cut to a few examples; counts complete)."""
        data = asdict(self)
        data["overflows"] = [asdict(o) for o in self.overflows[:_LISTED]]
        data["uncovered"] = {d: [list(s) for s in spans] for d, spans in list(self.uncovered.items())[:_LISTED]}
        data["passed"] = self.passed
        data["problems"] = self.problems()
        return data


#: a run of characters that are not whitespace (``str.isspace``: the same set as ``\s`` on text)
_NON_WHITESPACE = re.compile(r"\S+")


def uncovered_spans(markdown: str, spans: Iterable[tuple[int, int]]) -> tuple[int, list[tuple[int, int]]]:
    """Non-whitespace characters of ``markdown`` outside every span: their number and first runs.

    Only the gaps between the merged spans are read (a regular expression finds the non-whitespace runs in
    each), so a big document costs its spans, not arrays as long as its text."""
    n = len(markdown)
    count = 0
    runs: list[tuple[int, int]] = []

    def scan(begin: int, end: int) -> None:
        nonlocal count
        for match in _NON_WHITESPACE.finditer(markdown, begin, end):
            count += match.end() - match.start()
            if len(runs) < _LISTED:
                runs.append((match.start(), match.end()))

    cursor = 0
    for start, end in sorted((max(0, s), min(n, max(e, 0))) for s, e in spans):
        if end <= start:
            continue  # an empty span covers nothing
        if start > cursor:
            scan(cursor, start)
        cursor = max(cursor, end)
    if cursor < n:
        scan(cursor, n)
    return count, runs


def _settings_advice(strategies: set[str], overflows: list[WindowOverflow], max_model_tokens: int) -> list[str]:
    advice = []
    fit = min(max(1, o.cl100k_tokens * max_model_tokens // max(o.model_tokens, 1)) for o in overflows)
    size_driven = sorted(strategies & set(STRATEGIES.with_capability("sized_by_chunk_size")))
    if size_driven:
        advice.append(f"lower chunk_size (cl100k tokens) to about {fit} or less for {', '.join(size_driven)}")
    if strategies & set(STRATEGIES.with_capability("llm")):
        advice.append("or shorten the contextual prefix (the LLM's max_tokens)")
    others = sorted(strategies - set(size_driven))
    if others:
        advice.append(
            f"give {', '.join(others)} the corpus model window (window=ModelWindow(...)) so long "
            "groups and units are split"
        )
    advice.append("or set overflow: truncate to embed truncated chunks knowingly (counted as n_truncated)")
    return advice


def check_chunks(
    chunks: list[Chunk],
    markdown_by_document: Mapping[str, str],
    max_model_tokens: int,
    count_model_tokens: CountModelTokens,
    overflow: str = "error",
    *,
    task_prefix: str = "",
    coverage: bool | None = None,
) -> ChunkCheckReport:
    """Check one run's chunks (module rules) and return the report; never raises for a failed rule.

    ``coverage`` None: checked when the chunks are ``fixed_size`` or ``recursive``
    (then for every document of ``markdown_by_document``). ``task_prefix``: the corpus
    model's document prefix, counted with every embedded text.
    """
    if overflow not in OVERFLOW_MODES:
        raise ChunkingError(f"overflow must be one of {', '.join(OVERFLOW_MODES)}, got {overflow!r}")
    if isinstance(max_model_tokens, bool) or not isinstance(max_model_tokens, int) or max_model_tokens < 1:
        raise ChunkingError(f"max_model_tokens must be a positive integer, got {max_model_tokens!r}")
    report = ChunkCheckReport(
        n_chunks=len(chunks),
        n_documents=len(markdown_by_document),
        max_model_tokens=max_model_tokens,
        overflow_mode=overflow,
    )
    ids: set[str] = set()
    spans_by_document: dict[str, list[tuple[int, int]]] = defaultdict(list)
    unknown: set[str] = set()
    for chunk in chunks:
        if chunk.chunk_id in ids:
            report.duplicate_ids.append(chunk.chunk_id)
        ids.add(chunk.chunk_id)
        if not chunk.text.strip() or (chunk.embedded_text is not None and not chunk.embedded_text.strip()):
            report.empty.append(chunk.chunk_id)
        markdown = markdown_by_document.get(chunk.document)
        if markdown is None:
            unknown.add(chunk.document)
            continue
        if not (0 <= chunk.start <= chunk.end <= len(markdown)) or markdown[chunk.start : chunk.end] != chunk.text:
            report.offset_mismatches.append(chunk.chunk_id)
        spans_by_document[chunk.document].append((chunk.start, chunk.end))
    report.unknown_documents = sorted(unknown)
    report.dangling_parents = [c.chunk_id for c in chunks if c.parent_id is not None and c.parent_id not in ids]

    strategies = {c.strategy for c in chunks}
    covering = set(STRATEGIES.with_capability("covers_text"))  # their chunks must cover every character
    report.coverage_checked = bool(strategies & covering) if coverage is None else coverage
    if report.coverage_checked:
        for document, markdown in markdown_by_document.items():
            count, runs = uncovered_spans(markdown, spans_by_document.get(document, []))
            if count:
                report.n_uncovered_chars += count
                report.uncovered[document] = runs

    embedded = [c for c in chunks if c.is_retrieved]
    report.n_window_checked = len(embedded)
    # the model's tokens of each (a minute at 65,000)
    tracker = Tracker("checking chunks", len(embedded), unit="chunks", only_when_long=True)
    for begin in range(0, len(embedded), _COUNT_BATCH):
        tracker.step(begin)
        batch = embedded[begin : begin + _COUNT_BATCH]
        counts = model_token_counts(count_model_tokens, [task_prefix + c.text_to_embed for c in batch])
        for chunk, n in zip(batch, counts):
            report.max_model_tokens_seen = max(report.max_model_tokens_seen, n)
            if n > max_model_tokens:
                report.n_overflows += 1
                if len(report.overflows) < 10 * _LISTED:
                    report.overflows.append(WindowOverflow(chunk.chunk_id, chunk.strategy, n, chunk.token_count))
    tracker.step(len(embedded))
    if report.n_overflows:
        report.settings_to_change = _settings_advice(strategies, report.overflows, max_model_tokens)
        if overflow == "truncate":
            report.n_truncated = report.n_overflows
    return report
