"""The parser's rules of thumb as one typed, validated settings object: :class:`ParserHeuristics`.

Three groups, each a section of a benchmark's settings file (TOML, e.g. ``parser.toml``):

``[qa]`` (:class:`QAHeuristics`) - which paragraphs are questions and answers (Word, PDF):
    question_markers, answer_markers, inline_answer_markers, numbered_questions.
``[tables]`` (:class:`TableHeuristics`) - when a row is a header, what titles a table (all table formats
    for the header thresholds; Word and PDF for the rest): header_max_chars, header_max_words,
    header_year_pattern, caption_max_chars, caption_pattern, caption_lines, section_endings,
    total_prefixes.
``[pdf]`` (:class:`PDFHeuristics`) - headings and tables of PDFs: heading_size_ratio, max_heading_chars,
    max_short_line_chars, bold_headings, chapter_patterns, section_patterns, article_patterns,
    numbered_heading_pattern, cell_gap_ems, running_line_share.

The defaults are the rules the parser has always applied. :func:`load_parser_heuristics` reads a file;
keys left out keep their default, unknown keys and bad values are refused with the file, section and
key named. :meth:`ParserHeuristics.fingerprint` covers only the settings that apply to one file format,
so a changed PDF heading pattern re-parses PDFs and leaves Word files alone.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from chunkbench_core.errors import ConfigError

WORD = (".docx", ".doc")
PDF = (".pdf",)
SPREADSHEETS = (".xlsx", ".csv")
#: the formats whose parser reads each group (a field may narrow it with ``metadata["formats"]``)
QA_FORMATS = WORD + PDF
TABLE_FORMATS = WORD + PDF + SPREADSHEETS


def _formats(*suffixes: str) -> dict[str, Any]:
    return {"formats": suffixes}


@dataclass(frozen=True)
class QAHeuristics:
    """Q&A pairs: a question paragraph followed by an answer paragraph is one ``qa_pair`` unit.

    question_markers / answer_markers
        Words that open a question / an answer, matched at the start of a paragraph, case-insensitive,
        optionally numbered ("Q1", "سوال ۲") and followed by ":", "-", ".", ")" (a question also by the
        end of the line).
    inline_answer_markers
        Words that, followed by ":", start the answer inside a question's own paragraph
        ("1- ...? پاسخ: ..."); case-sensitive. A one-letter answer marker ("A:") counts inline only at
        the start of a line.
    numbered_questions
        A paragraph opening with an enumerator ("1-", "۲.", "3)") is a question when an answer follows.
    """

    question_markers: tuple[str, ...] = ("سوال", "سؤال", "پرسش", "question", "q")
    answer_markers: tuple[str, ...] = ("پاسخ", "جواب", "answer", "a")
    inline_answer_markers: tuple[str, ...] = ("پاسخ", "جواب", "Answer")
    numbered_questions: bool = True


@dataclass(frozen=True)
class TableHeuristics:
    """Tables: header rows, titles and section rows.

    header_max_chars / header_max_words
        A header cell is at most this long (a longer cell makes the row data). A row is a header only
        when every cell is short, distinct and not a bare number (years excepted under a period header).
    header_year_pattern
        Cells that are years, allowed in a header row under a period header ("2023 | 2022").
    caption_max_chars / caption_pattern / caption_lines
        Up to ``caption_lines`` short title lines right above a table are its title, carried into
        every row: paragraphs of at most ``caption_max_chars`` characters that are not sentences (no
        closing full stop, except after an abbreviation such as "Inc."; a lead-in ending with ":"
        counts), or that start like a caption (``caption_pattern``: "Table 3. ...").
    section_endings
        A row with only its first cell filled that ends with one of these ("Operating expenses:") is a
        section row: its text goes in front of the rows under it.
    total_prefixes
        A row whose label starts with one of these ("Total ...") closes the section it ends.
    """

    header_max_chars: int = 60
    header_max_words: int = 6
    header_year_pattern: str = field(default=r"^(?:19|20)\d\d$|^1[34]\d\d$", metadata=_formats(*WORD, *PDF))
    caption_max_chars: int = field(default=120, metadata=_formats(*WORD, *PDF))
    caption_pattern: str = field(
        default=r"(?:table|exhibit|schedule|جدول)\s*[\d\u06f0-\u06f9]+", metadata=_formats(*WORD, *PDF)
    )
    caption_lines: int = field(default=3, metadata=_formats(*WORD, *PDF))
    section_endings: tuple[str, ...] = field(default=(":", "\uff1a"), metadata=_formats(*WORD, *PDF))
    total_prefixes: tuple[str, ...] = field(default=("total", "جمع"), metadata=_formats(*WORD, *PDF))


@dataclass(frozen=True)
class PDFHeuristics:
    """PDF headings (when the PDF has no outline) and tables.

    heading_size_ratio
        A line at least this many times the body text's size is a heading (largest size level 1, ...).
    max_heading_chars
        Longer lines are never headings.
    max_short_line_chars / bold_headings
        A standalone line up to this long may be a heading by a text pattern, or (``bold_headings``) by
        being fully bold at body size.
    chapter_patterns / section_patterns / article_patterns
        Regular expressions (case-insensitive, matched at the line start) for headings one level
        (chapters) or two levels (sections, articles) below the font-size levels; article headings make
        article nodes.
    numbered_heading_pattern
        A numbered heading ("2.1 Title"); its first group is the number, whose dots give the level.
    cell_gap_ems
        A horizontal gap wider than this many font sizes (ems) between two pieces of text on one line
        starts a new table cell.
    running_line_share
        A line repeated at the same place on more than this share of the pages (page numbers masked)
        is a running header or footer and is dropped.
    """

    heading_size_ratio: float = 1.15
    max_heading_chars: int = 150
    max_short_line_chars: int = 80
    bold_headings: bool = True
    chapter_patterns: tuple[str, ...] = (r"(?:chapter|part)\s+[\w.]+", r"(?:فصل|بخش)\s+\S+")
    section_patterns: tuple[str, ...] = (r"section\s+[\d.]+", r"(?:مبحث|گفتار)\s+\S+")
    article_patterns: tuple[str, ...] = (r"article\s+[\w.]+", r"ماده\s+[\d\u06f0-\u06f9]+")
    numbered_heading_pattern: str = r"(\d+(?:\.\d+)+)\.?\s+\S"
    cell_gap_ems: float = 2.0
    running_line_share: float = 0.5


GROUPS: dict[str, tuple[type[Any], tuple[str, ...]]] = {
    "qa": (QAHeuristics, QA_FORMATS),
    "tables": (TableHeuristics, TABLE_FORMATS),
    "pdf": (PDFHeuristics, PDF),
}


@dataclass(frozen=True)
class ParserHeuristics:
    """Every rule of thumb of the parser (see the module docstring); defaults are today's rules."""

    qa: QAHeuristics = field(default_factory=QAHeuristics)
    tables: TableHeuristics = field(default_factory=TableHeuristics)
    pdf: PDFHeuristics = field(default_factory=PDFHeuristics)

    def __post_init__(self) -> None:
        for name, (cls, _) in GROUPS.items():
            group = getattr(self, name)
            if not isinstance(group, cls):
                raise ConfigError(f"ParserHeuristics.{name} must be a {cls.__name__}, got {type(group).__name__}")
            for f in fields(group):
                _validate(f"[{name}] {f.name}", f.name, getattr(group, f.name), f.default)

    # -- cache keys and provenance ----------------------------------------------------------------
    def applicable(self, suffix: str | None = None) -> dict[str, dict[str, Any]]:
        """The settings that apply to files of ``suffix`` (".pdf", ...), by group; all when None."""
        suffix = suffix.lower() if suffix else None
        out: dict[str, dict[str, Any]] = {}
        for name, (_, formats) in GROUPS.items():
            group = getattr(self, name)
            values = {}
            for f in fields(group):
                applies = f.metadata.get("formats", formats)
                if suffix is None or suffix in applies:
                    value = getattr(group, f.name)
                    values[f.name] = list(value) if isinstance(value, tuple) else value
            if values:
                out[name] = values
        return out

    def fingerprint(self, suffix: str | None = None) -> str:
        """Digest of the settings that apply to ``suffix`` (all settings when None)."""
        text = json.dumps(self.applicable(suffix), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

    def changed(self) -> dict[str, dict[str, Any]]:
        """The settings that differ from the defaults, by group (for provenance and ``--explain``)."""
        default = ParserHeuristics().applicable()
        mine = self.applicable()
        return {
            g: {k: v for k, v in values.items() if default[g][k] != v}
            for g, values in mine.items()
            if any(default[g][k] != v for k, v in values.items())
        }

    # -- files ----------------------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "parser settings") -> "ParserHeuristics":
        """Build from ``{"qa": {...}, "tables": {...}, "pdf": {...}}`` (a parsed TOML file)."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: expected sections [qa], [tables], [pdf], got {type(data).__name__}")
        unknown = sorted(set(data) - set(GROUPS))
        if unknown:
            raise ConfigError(
                f"{source}: unknown section(s) {', '.join(f'[{u}]' for u in unknown)}; "
                f"known: {', '.join(f'[{g}]' for g in GROUPS)}"
            )
        groups: dict[str, Any] = {}
        for name, (group_cls, _) in GROUPS.items():
            values = data.get(name, {})
            if not isinstance(values, Mapping):
                raise ConfigError(f"{source}: [{name}] must be a table of settings, got {type(values).__name__}")
            known = {f.name: f for f in fields(group_cls)}
            bad = sorted(set(values) - set(known))
            if bad:
                raise ConfigError(
                    f"{source}: unknown setting(s) {', '.join(f'[{name}] {b}' for b in bad)}; "
                    f"[{name}] has {', '.join(known)}"
                )
            kwargs = {}
            for key, value in values.items():
                default = known[key].default
                if isinstance(default, tuple):
                    if isinstance(value, str) or not isinstance(value, (list, tuple)):
                        raise ConfigError(f"{source}: [{name}] {key} must be a list, got {value!r}")
                    value = tuple(value)
                elif isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
                    value = float(value)  # "2" and "2.0" are one setting (and one cache key)
                kwargs[key] = value
            try:
                groups[name] = group_cls(**kwargs)
            except TypeError as exc:  # pragma: no cover - keys are checked above
                raise ConfigError(f"{source}: [{name}]: {exc}") from None
        try:
            return cls(**groups)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None

    def to_toml(self) -> str:
        """The settings as a TOML file (every key, with a comment naming what it does)."""
        lines = [
            "# Parser heuristics of this benchmark. Keys left out keep their default.",
            "# A changed setting re-parses only the file formats it applies to.",
            "",
        ]
        for name, (_, formats) in GROUPS.items():
            group = getattr(self, name)
            lines.append(f"[{name}]")
            for f in fields(group):
                applies = f.metadata.get("formats", formats)
                lines.append(f"{f.name} = {_toml_value(getattr(group, f.name))}  # {' '.join(applies)}")
            lines.append("")
        return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        if "'" not in value and "\n" not in value:
            return f"'{value}'"  # a literal string: regular expressions keep their backslashes
        return json.dumps(value, ensure_ascii=False)
    return "[" + ", ".join(_toml_value(v) for v in value) + "]"


def _validate(where: str, name: str, value: Any, default: Any) -> None:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
    elif isinstance(default, int):
        least = 0 if name == "caption_lines" else 1  # no caption lines: titles come from title rows only
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ConfigError(f"{where} must be a whole number of at least {least}, got {value!r}")
    elif isinstance(default, float):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise ConfigError(f"{where} must be a positive number, got {value!r}")
        if name == "running_line_share" and not 0 < value < 1:
            raise ConfigError(f"{where} must be between 0 and 1 (a share of the pages), got {value!r}")
        if name == "heading_size_ratio" and value <= 1:
            raise ConfigError(f"{where} must be above 1 (headings are larger than the body text), got {value!r}")
    elif isinstance(default, str):
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where} must be a non-empty regular expression, got {value!r}")
        _check_pattern(where, value)
        if name == "numbered_heading_pattern" and re.compile(value).groups < 1:
            raise ConfigError(f"{where} needs a group around the number (its dots give the level), got {value!r}")
    elif isinstance(default, tuple):
        if not isinstance(value, tuple) or not all(isinstance(v, str) and v.strip() for v in value):
            raise ConfigError(f"{where} must be a list of non-empty strings, got {value!r}")
        if name.endswith("_patterns"):
            for pattern in value:
                _check_pattern(where, pattern)
        if name in ("question_markers", "answer_markers") and not value:
            raise ConfigError(f"{where} needs at least one marker")


def _check_pattern(where: str, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{where}: {pattern!r} is not a valid regular expression ({exc})") from None


@lru_cache(maxsize=256)
def compiled(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    """A settings pattern compiled once (anchored at the start by ``match``)."""
    return re.compile(pattern, flags)


def load_parser_heuristics(path: str | Path) -> ParserHeuristics:
    """Read a parser settings file (TOML); a missing or bad file raises ConfigError naming it."""
    import tomllib

    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{p}: parser settings file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{p}: cannot read the parser settings ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML ({exc})") from None
    return ParserHeuristics.from_mapping(data, str(p))
