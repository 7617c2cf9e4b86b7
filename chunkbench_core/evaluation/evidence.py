"""Evidence as question sets publish it: passages of a named document, often with the page they are on.

Public sets over filings (FinanceBench and its kind) give each question a list of evidence objects: the
passage as *their* extractor read the page, the document's name (often without its extension) and a page
number. This module finds such a passage in *our* parsed text, tells what kind of evidence it is, reads the
set's page convention, and measures the *parse ceiling*: the share of the evidence the parser kept.

- :func:`resolve_document_name`: ``BOEING_2022_10K``, ``boeing 2022 10k`` and ``BOEING_2022_10K.pdf`` all name
  the corpus file ``BOEING_2022_10K.pdf``: names are compared on their letters and digits only, case-folded,
  with and without the extension. Two corpus files with the same key make the name ambiguous (the candidates
  are listed).
- :func:`find_evidence`: where a passage is in a parsed document, tolerating what differs between two
  extractors: whitespace and line breaks (a word broken across lines), table cell separators, ``$``, ``%``,
  thousands separators and parentheses around negative figures. First the passage's letters and digits are
  looked for as one run in the document's letters and digits (exact up to formatting); then, for a passage
  the parser reordered (a table rewritten row by row), a window of the document holding at least
  :data:`MIN_WINDOW_COVERAGE` of the passage's distinctive words and figures, no longer than a few times the
  passage. Both are linear in the document.
- :func:`evidence_kind`: ``table`` when most lines of the passage carry two or more figures (or cell
  separators), else ``text``; a label of the question saying ``table`` or ``text`` wins.
- :func:`page_convention`: whether the set counts pages from 0 or from 1, told from the pages on which its
  passages are found.
- :class:`ParseCeiling`: found / total evidence, per document and per kind, with the passages not found.
"""

from __future__ import annotations

import functools
import re
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkbench_core.parsing.pages import page_span

from .questions import match_documents

#: a passage found as a window of distinctive words holds at least this share of them
MIN_WINDOW_COVERAGE = 0.85
#: a passage needs this many distinctive words and figures to be found by window (fewer: only as one run)
MIN_WINDOW_TOKENS = 6
#: the window may be this many times the passage's length in words (a table rewritten as header: value pairs
#: repeats the headers), plus a few words
WINDOW_FACTOR = 4
WINDOW_SLACK = 40
#: the label value that says a passage is a table or text (a column such as "Source Chunk Type")
KIND_LABEL = "evidence kind"
KINDS = ("table", "text")

_ALNUM = re.compile(r"[^\W_]+")
_TOKEN = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?|[^\W\d_]+")
_FIGURE_IN_LINE = re.compile(r"\(?\$?\d[\d,]*(?:\.\d+)?%?\)?")
_STOP = frozenset(
    """a an and are as at be by for from has have in is it its of on or that the this to was were
which with will not""".split()
)


# -- document names --------------------------------------------------------------------------------
def name_key(name: str) -> str:
    """A document name reduced to its letters and digits, case-folded: ``BOEING_2022_10K`` = ``boeing 2022 10k``."""
    return "".join(_ALNUM.findall(name.casefold()))


def resolve_document_name(name: str, names: Iterable[str]) -> list[str]:
    """The corpus documents ``name`` stands for: the exact name or a glob (:func:`match_documents`), else every
    document whose file name, with or without its extension, has the same letters and digits. One name: found;
    several: ambiguous; none: not in the corpus."""
    names = list(names)
    exact = match_documents(name, names)
    if exact:
        return exact
    key = name_key(name)
    if not key:
        return []
    return sorted(n for n in names if key in (name_key(Path(n).name), name_key(Path(n).stem)))


# -- finding a passage ---------------------------------------------------------------------------------
class _Letters:
    """A text's letters and digits, case-folded, with the offset of each in the text."""

    def __init__(self, text: str) -> None:
        parts: list[str] = []
        offsets = array("q")
        for m in _ALNUM.finditer(text):
            word = m.group().lower()
            if len(word) != m.end() - m.start():  # a letter that lower-cases to two: keep offsets aligned
                word = m.group()
            parts.append(word)
            offsets.extend(range(m.start(), m.end()))
        self.text = "".join(parts)
        self.offsets = offsets


class _Tokens:
    """A text's words and figures (thousands separators dropped), case-folded, with their offsets."""

    def __init__(self, text: str) -> None:
        matches = list(_TOKEN.finditer(text))
        self.tokens = [_token(m.group()) for m in matches]
        self.starts = array("q", (m.start() for m in matches))
        self.ends = array("q", (m.end() for m in matches))


def _token(raw: str) -> str:
    return raw.replace(",", "") if raw[0].isdigit() else raw.lower()


def _distinctive(token: str) -> bool:
    if token[0].isdigit():
        return len(token.replace(".", "").strip("0")) >= 2 and not (len(token) == 4 and token.startswith(("19", "20")))
    return len(token) >= 3 and token not in _STOP


@functools.lru_cache(maxsize=16)
def _letters(markdown: str) -> _Letters:
    return _Letters(markdown)


@functools.lru_cache(maxsize=16)
def _tokens(markdown: str) -> _Tokens:
    return _Tokens(markdown)


def find_evidence(passage: str, markdown: str) -> tuple[int, int] | None:
    """Where ``passage`` is in ``markdown`` (half-open offsets), tolerating formatting; None when not found."""
    needle = _Letters(passage).text
    if not needle:
        return None
    doc = _letters(markdown)
    at = doc.text.find(needle)
    if at >= 0:
        return doc.offsets[at], doc.offsets[at + len(needle) - 1] + 1
    return _find_window(passage, markdown)


def _find_window(passage: str, markdown: str) -> tuple[int, int] | None:
    """The shortest best window of ``markdown`` holding most of the passage's distinctive tokens: one pass over
    the document's positions of those tokens (two pointers)."""
    mine = _Tokens(passage).tokens
    wanted = {t for t in mine if _distinctive(t)}
    if len(wanted) < MIN_WINDOW_TOKENS:
        return None
    doc = _tokens(markdown)
    need = MIN_WINDOW_COVERAGE * len(wanted)
    width = WINDOW_FACTOR * len(mine) + WINDOW_SLACK
    positions = [i for i, t in enumerate(doc.tokens) if t in wanted]
    counts: Counter = Counter()
    distinct = 0
    best: tuple[int, int, int] | None = None  # (-distinct, length, first)
    left = 0
    for position in positions:
        token = doc.tokens[position]
        counts[token] += 1
        distinct += counts[token] == 1
        while position - positions[left] > width:
            gone = doc.tokens[positions[left]]
            counts[gone] -= 1
            distinct -= counts[gone] == 0
            left += 1
        if distinct >= need:
            # shrink from the left while no distinct token is lost
            while counts[doc.tokens[positions[left]]] > 1:
                counts[doc.tokens[positions[left]]] -= 1
                left += 1
            key = (-distinct, position - positions[left], positions[left])
            if best is None or key < best:
                best = key
    if best is None:
        return None
    first = best[2]
    last = first + best[1]
    return doc.starts[first], doc.ends[last]


# -- kinds ---------------------------------------------------------------------------------------------
def evidence_kind(passage: str, labels: Mapping[str, str] | None = None) -> str:
    """``table`` or ``text``: a label saying so wins (a column such as "Source Chunk Type"), else told from the
    passage: most of its lines carry two or more figures, or cell separators."""
    for key, value in (labels or {}).items():
        folded = str(value).strip().casefold()
        if folded in KINDS and any(w in key.casefold() for w in ("kind", "type", "chunk")):
            return folded
    lines = [line for line in passage.splitlines() if line.strip()]
    if not lines:
        return "text"
    tabular = sum(1 for line in lines if "|" in line or "\t" in line or len(_FIGURE_IN_LINE.findall(line)) >= 2)
    if len(lines) == 1:  # one line (a table flattened by an extractor): mostly figures
        tokens = _TOKEN.findall(lines[0])
        numeric = sum(t[0].isdigit() for t in tokens)
        return "table" if tokens and numeric >= 4 and numeric / len(tokens) >= 0.3 else "text"
    return "table" if tabular / len(lines) >= 0.4 else "text"


# -- pages ---------------------------------------------------------------------------------------------
def found_pages(page_starts: Sequence[int], span: tuple[int, int]) -> tuple[int, int] | None:
    """The first and last 1-based page of a found passage; None for a document without pages."""
    return page_span(page_starts, span[0], span[1])


@dataclass(frozen=True)
class PageConvention:
    """How a set numbers its pages: ``base`` 0 (the first page is 0) or 1, and the evidence that says so."""

    base: int
    zero_based_votes: int
    one_based_votes: int
    assumed: bool  # no passage was found on a page that tells: the format's default was taken

    def to_viewer_page(self, page: int) -> int:
        """The 1-based page a PDF viewer shows for the set's ``page``."""
        return page + 1 if self.base == 0 else page

    def summary(self, file: str) -> str:
        if self.assumed:
            return (
                f"page numbers of {file} taken as {self.base}-based (no evidence passage was found on a page "
                "that tells); stored 1-based, as PDF viewers number pages"
            )
        votes = self.zero_based_votes if self.base == 0 else self.one_based_votes
        total = self.zero_based_votes + self.one_based_votes
        return (
            f"page numbers of {file} are {self.base}-based ({votes} of {total} passages found on the page "
            f"that says so); stored 1-based, as PDF viewers number pages"
        )


def page_convention(observations: Iterable[tuple[int, tuple[int, int]]], default: int = 1) -> PageConvention:
    """The page convention of a set from (page as the set writes it, 1-based pages where its passage was
    found) pairs: the base more passages agree with; ``default`` when none tells."""
    zero = one = 0
    for page, (first, last) in observations:
        zero += first <= page + 1 <= last
        one += first <= page <= last
    if zero == one:
        return PageConvention(default, zero, one, assumed=not (zero or one))
    return PageConvention(0 if zero > one else 1, zero, one, assumed=False)


# -- the parse ceiling ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvidenceCheck:
    """One evidence passage of a set, and whether the parser kept it."""

    question_id: str
    document: str
    kind: str
    found: bool
    page: int | None = None  # 1-based
    question_set: str = ""


def ceiling_from_rows(rows: Iterable[Mapping[str, Any]]) -> ParseCeiling:
    """A ParseCeiling from the rows of the ``parse_ceiling`` table (one check per passage, for the phrases)."""
    checks = []
    for row in rows:
        found, total = int(row.get("found") or 0), int(row.get("total") or 0)
        for i in range(total):
            checks.append(
                EvidenceCheck(
                    "",
                    str(row.get("document") or ""),
                    str(row.get("kind") or "text"),
                    i < found,
                    None,
                    str(row.get("question_set") or ""),
                )
            )
    return ParseCeiling(checks)


def scores_cover(ceiling: ParseCeiling) -> str:
    """The sentence the reports show beside the scores when the parser lost evidence; "" when it kept it all."""
    if not ceiling.total or ceiling.found == ceiling.total:
        return ""
    return (
        f"Scores cover the {_percent(ceiling.share or 0.0)} of evidence the parser kept; not found: "
        f"{ceiling.not_found_phrase()}. Evidence not found still counts for the document and page metrics, "
        "not for the metrics on evidence text."
    )


@dataclass
class ParseCeiling:
    """The share of a set's evidence passages found in the parsed text of their documents."""

    checks: list[EvidenceCheck] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.checks)

    @property
    def found(self) -> int:
        return sum(c.found for c in self.checks)

    @property
    def share(self) -> float | None:
        return self.found / self.total if self.total else None

    def by(self, attribute: str) -> dict[str, tuple[int, int]]:
        """found, total per document or per kind."""
        out: dict[str, list[int]] = {}
        for c in self.checks:
            cell = out.setdefault(getattr(c, attribute), [0, 0])
            cell[0] += c.found
            cell[1] += 1
        return {k: (v[0], v[1]) for k, v in sorted(out.items())}

    @property
    def kinds(self) -> set[str]:
        return {c.kind for c in self.checks}

    def not_found_phrase(self, limit: int = 4) -> str:
        """``2 table passages in BOEING_2022_10K.pdf, 1 text passage in ...``."""
        missing = Counter((c.kind, c.document) for c in self.checks if not c.found)
        parts = [
            f"{n} {kind} passage{'s' if n != 1 else ''} in {document}"
            for (kind, document), n in sorted(missing.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        if len(parts) > limit:
            parts = [*parts[:limit], f"{len(parts) - limit} more document(s)"]
        return ", ".join(parts)

    def summary(self) -> str:
        if not self.total:
            return "parse ceiling: no evidence passage to look for"
        share = self.share or 0.0
        kinds = "; ".join(f"{kind}: {found} of {total}" for kind, (found, total) in self.by("kind").items())
        line = (
            f"parse ceiling: {_percent(share)} of the evidence ({self.found} of {self.total} passages) is in the "
            f"parsed text ({kinds})"
        )
        if self.found < self.total:
            line += (
                f"; scores on evidence text cover the {_percent(share)} the parser kept; not found: "
                f"{self.not_found_phrase()} (still scored on documents and pages)"
            )
        return line

    def rows(self, checked_at: Any) -> list[dict[str, Any]]:
        """Rows of the ``parse_ceiling`` results table: per question set, document and kind."""
        cells: dict[tuple[str, str, str], list[int]] = {}
        for c in self.checks:
            cell = cells.setdefault((c.question_set, c.document, c.kind), [0, 0])
            cell[0] += c.found
            cell[1] += 1
        return [
            {"question_set": s, "document": d, "kind": k, "found": f, "total": t, "checked_at": checked_at}
            for (s, d, k), (f, t) in sorted(cells.items())
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "found": self.found,
            "total": self.total,
            "by_document": {k: {"found": f, "total": t} for k, (f, t) in self.by("document").items()},
            "by_kind": {k: {"found": f, "total": t} for k, (f, t) in self.by("kind").items()},
            "not_found": [
                {
                    "question_id": c.question_id,
                    "document": c.document,
                    "kind": c.kind,
                    **({"page": c.page} if c.page is not None else {}),
                }
                for c in self.checks
                if not c.found
            ],
        }


def _percent(share: float) -> str:
    value = share * 100
    return f"{value:.0f} %" if value >= 10 or value == 0 else f"{value:.1f} %"


__all__ = [
    "KIND_LABEL",
    "EvidenceCheck",
    "PageConvention",
    "ParseCeiling",
    "evidence_kind",
    "find_evidence",
    "found_pages",
    "name_key",
    "page_convention",
    "resolve_document_name",
]
