"""A document's context: who or what it is, which form, which period, as one deterministic header line.

A family of near-identical documents (four quarterly reports of one company) shares every table and most of
its prose; a chunk cut from one of them does not say which one it came from. The header says it, and any
strategy can put it in front of each chunk's embedded text (the ``document_context`` option).

Each part is told, in this order, from:

* **name** (company or title): the registrant named on the cover page (the line above "(Exact name of
  registrant as specified in its charter)"); the PDF's or Word file's author when the cover page also
  names it (metadata authors are often a converter or "anonymous", which the text never names); the
  metadata title when it reads as words (not an accession number or "Microsoft Word - ..."); the first
  heading; the file name without its extension;
* **form**: "Form 10-Q" (10-K, 8-K, 20-F, 6-K, 40-F, S-1) on the cover page, in the metadata or in the file
  name; else "Quarterly report" / "Annual report" when the cover page says so;
* **period**: "quarterly period ended March 31, 2023" (or quarter, year, fiscal year, months ended) on the
  cover page or in the metadata title; the metadata subject's "period ending 2023-03-31"; a quarter in the
  file name ("2023 Q1" -> "Q1 2023").

Only the start of the document is read (the cover page), so the same file always gives the same header.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Mapping

#: how much of the markdown counts as the cover page
COVER_CHARS = 6000
SEPARATOR = " | "

_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan\\.?|Feb\\.?|Mar\\.?|Apr\\.?|Jun\\.?|Jul\\.?|Aug\\.?|Sept?\\.?|Oct\\.?|Nov\\.?|Dec\\.?"
)
_DATE = rf"(?:{_MONTHS})\s+\d{{1,2}},?\s+\d{{4}}"
_PERIOD = re.compile(
    rf"\b((?:quarterly period|quarter|fiscal year|fiscal quarter|year|period|(?:three|six|nine|twelve) months)"
    rf"\s+ended\s+{_DATE})",
    re.IGNORECASE,
)
_ISO_PERIOD = re.compile(r"period ending (\d{4}-\d{2}-\d{2})", re.IGNORECASE)
_NAME_QUARTER = re.compile(
    r"(?<![\d])((?:19|20)\d{2})[\s_-]*Q([1-4])\b|\bQ([1-4])[\s_-]*((?:19|20)\d{2})(?![\d])", re.IGNORECASE
)
_FORM = re.compile(r"\bForm\s+(10-Q|10-K|8-K|20-F|40-F|6-K|S-1|10-QT|10-KT)\b", re.IGNORECASE)
_NAME_FORM = re.compile(r"(?<![A-Za-z0-9])(10-?Q|10-?K|8-?K|20-?F)(?![A-Za-z0-9])", re.IGNORECASE)
_REPORT_KIND = re.compile(r"\b(quarterly|annual) report\b", re.IGNORECASE)
_REGISTRANT = re.compile(r"\(\s*exact name of registrant", re.IGNORECASE)
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)
_ID_LIKE = re.compile(
    r"^[\W\d_]*$|^[\d.\-_/ ]+\w{0,6}$|^microsoft (word|excel|powerpoint)\b|^untitled\b", re.IGNORECASE
)
_MARK = re.compile(r"^[#>*\-\s]+")


@dataclass(frozen=True)
class DocumentContext:
    """The parts of a document's header and where each was told from (``sources``: part -> where)."""

    name: str
    form: str | None = None
    period: str | None = None
    sources: tuple[tuple[str, str], ...] = ()

    @property
    def header(self) -> str:
        """``"AMAZON.COM, INC. | Form 10-Q | quarterly period ended March 31, 2023"`` (parts that are known)."""
        return SEPARATOR.join(p for p in (self.name, self.form, self.period) if p)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["sources"] = dict(self.sources)
        out["header"] = self.header
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "DocumentContext":
        return cls(
            str(data.get("name") or ""),
            data.get("form") or None,
            data.get("period") or None,
            tuple(sorted(dict(data.get("sources") or {}).items())),
        )


def _clean(text: str) -> str:
    return " ".join(_MARK.sub("", text).split()).strip(" ,;:")


def _lines(cover: str) -> list[str]:
    return [_clean(line) for line in cover.splitlines() if _clean(line) and set(_clean(line)) - set("_-=*")]


def _registrant(cover: str) -> str | None:
    """The line above "(Exact name of registrant as specified in its charter)"."""
    lines = _lines(cover)
    for i, line in enumerate(lines):
        if _REGISTRANT.search(line) and i > 0:
            return lines[i - 1] or None
    return None


def _words(value: str | None) -> str | None:
    """A metadata value that reads as words, else None."""
    value = " ".join((value or "").split())
    if not value or _ID_LIKE.search(value) or not re.search(r"[^\W\d_]{2}", value):
        return None
    return value


def _stem(document: str) -> str:
    name = document.replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def describe_document(document: str, markdown: str, metadata: Mapping[str, str] | None = None) -> DocumentContext:
    """The context of ``document`` (its corpus name) from its ``markdown`` and file ``metadata`` (module rules).

    ``metadata`` holds what the file says about itself: ``title``, ``author``, ``subject``, ``keywords``.
    """
    meta = {k: " ".join(str(v).split()) for k, v in (metadata or {}).items() if v}
    cover = markdown[:COVER_CHARS]
    folded = cover.casefold()
    stem = _stem(document)
    sources: dict[str, str] = {}

    name = _registrant(cover)
    if name:
        sources["name"] = "cover page"
    author = _words(meta.get("author"))
    if not name and author and author.casefold() in folded:
        name, sources["name"] = author, "metadata author"
    title = _words(meta.get("title"))
    if not name and title:
        name, sources["name"] = title, "metadata title"
    if not name:
        heading = next((_clean(m.group(1)) for m in _HEADING.finditer(cover) if _clean(m.group(1))), None)
        if heading:
            name, sources["name"] = heading, "first heading"
    if not name:
        name, sources["name"] = stem, "file name"

    form = None
    for where, text in (
        ("cover page", cover),
        ("metadata", " ".join(meta.get(k, "") for k in ("title", "subject", "keywords"))),
    ):
        match = _FORM.search(text)
        if match:
            form, sources["form"] = f"Form {match.group(1).upper()}", where
            break
    if form is None:
        keywords = meta.get("keywords", "")
        match = _NAME_FORM.search(stem) or _NAME_FORM.search(keywords)
        if match:
            code = match.group(1).upper()
            code = code if "-" in code else f"{code[:-1]}-{code[-1]}"
            form, sources["form"] = f"Form {code}", "file name" if _NAME_FORM.search(stem) else "metadata"
    if form is None:
        match = _REPORT_KIND.search(cover)
        if match:
            form, sources["form"] = f"{match.group(1).capitalize()} report", "cover page"

    period = None
    for where, text in (("cover page", cover), ("metadata", meta.get("title", "") + " " + meta.get("subject", ""))):
        match = _PERIOD.search(text)
        if match:
            words = " ".join(match.group(1).split())
            period, sources["period"] = words[0].lower() + words[1:], where
            break
    if period is None:
        match = _ISO_PERIOD.search(meta.get("subject", ""))
        if match:
            period, sources["period"] = f"period ended {match.group(1)}", "metadata"
    if period is None:
        match = _NAME_QUARTER.search(stem)
        if match:
            year, quarter = (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
            period, sources["period"] = f"Q{quarter} {year}", "file name"
    return DocumentContext(name, form, period, tuple(sorted(sources.items())))


def document_context(document: Any) -> DocumentContext:
    """The context a parsed document carries (told at parse time), or one told now from its text and name."""
    stored = getattr(document, "context", None)
    if stored:
        return DocumentContext.from_dict(stored)
    return describe_document(document.document, document.markdown)


def document_header(document: Any) -> str:
    """The header line of a parsed document (module docstring)."""
    return document_context(document).header
