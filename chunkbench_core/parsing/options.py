"""Settings of the document parser (``ParseOptions``) and the list of supported suffixes.

The defaults: the PDF text-layer gate (``pdf_min_total_chars`` 100, ``pdf_min_median_chars_per_page`` 40, below
which a PDF is a scan with no text to index) and the 512-token chunk ceiling that decides when a DOCX table is
page layout rather than data (a cell no chunk can hold is prose, not a value). Options are validated when built, and a bad value
raises :class:`~chunkbench_core.errors.ConfigError` naming the field and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Callable, Literal

from chunkbench_core.errors import ConfigError
from chunkbench_core.parsing.heuristics import ParserHeuristics

SUPPORTED_SUFFIXES: tuple[str, ...] = (".docx", ".doc", ".pdf", ".xlsx", ".csv", ".md", ".txt")

#: A caption source turns the bytes of one embedded image into a text description
#: (so the text of a figure can be retrieved, not only counted). :func:`chunkbench_core.parsing.captions.openai_vision_captioner`
#: builds one for an OpenAI-compatible vision endpoint.
CaptionSource = Callable[[bytes], str]

DigitStyle = Literal["ascii", "persian"]
RtlOrder = Literal["auto", "visual", "logical"]

MB = 1024 * 1024
#: the memory one document may take to parse when none is set (the parse worker's limit; the PDF reader scales
#: its own safety limits to it)
DEFAULT_MEMORY_BYTES = 2048 * MB

#: settings that change nothing in a parse that succeeds (left out of fingerprints and provenance)
_NOT_IN_OUTPUT = ("caption_source", "soffice_timeout_s", "heuristics", "memory_limit_bytes")
_OOXML = (".docx", ".xlsx", ".doc")
#: the formats that read each option (options not listed apply to every format)
_OPTION_FORMATS: dict[str, tuple[str, ...]] = {
    "pdf_min_total_chars": (".pdf",),
    "pdf_min_median_chars_per_page": (".pdf",),
    "pdf_rtl_order": (".pdf",),
    "max_uncompressed_bytes": _OOXML,
    "max_compression_ratio": _OOXML,
    "chunk_token_limit": (".docx", ".doc"),
    "caption_source": (".docx", ".doc", ".pdf"),
    "csv_encodings": (".csv", ".md", ".txt"),
}


@dataclass(frozen=True)
class ParseOptions:
    """How :func:`chunkbench_core.parsing.parse` reads a document.

    pdf_min_total_chars / pdf_min_median_chars_per_page
        Text-layer gate: a PDF with fewer non-blank characters in total,
        or a lower median per page, is treated as scanned and rejected.
    max_file_bytes
        Files larger than this are refused before being opened (one huge file must not stall the run).
    max_uncompressed_bytes
        A DOCX/XLSX whose zip entries declare more uncompressed bytes than this in
        total is refused, without inflating anything.
    max_compression_ratio
        A zip entry inflating more than this many times its compressed size is
        also refused (only checked for entries above 1 MB uncompressed).
    soffice_timeout_s
        Seconds LibreOffice may take to convert one legacy .doc.
    chunk_token_limit
        Tokens (cl100k) in one chunk. A DOCX table cell longer than this makes the
        table page layout, so its cells are read as prose.
    caption_source
        Callable turning image bytes into a caption. ``None``: images are counted in
        ``stats['images']`` and reported in ``warnings``, never silently dropped.
    persian_digits
        Arabic-Indic and Persian digits are both rewritten to this one style
        ("ascii" 0-9 or "persian" ۰-۹), so a number matches however it was typed.
    pdf_rtl_order
        How right-to-left PDF lines are stored: "auto" orders the words of a
        right-to-left line by their position on the page (right to left), which
        undoes the reversed word order of printed PDFs; "visual" always reverses
        the extracted word order of RTL lines; "logical" trusts extraction order.
    csv_encodings
        Encodings tried, in order, for .csv/.md/.txt files (a comma-separated text is accepted: the
        ``chunkbench run --csv-encodings`` flag and the launchpad's ``parsed_documents`` config give one).
    heuristics
        The rules of thumb (Q&A markers, table headers and titles, PDF headings):
        :class:`~chunkbench_core.parsing.heuristics.ParserHeuristics`, read from a benchmark's
        settings file with :func:`~chunkbench_core.parsing.heuristics.load_parser_heuristics`.
    memory_limit_bytes
        The memory one parse may use. The PDF reader's element limits scale with it (see
        :func:`chunkbench_core.parsing.pdf.pypdf_limits`), so the memory cap is the guard rather than
        an array size. ``None``: the parse worker's limit (``CHUNKBENCH_PARSE_MEMORY_MB``, default
        2,048 MB); :class:`~chunkbench_core.parsing.isolation.IsolatedParser` sets its own.
    """

    pdf_min_total_chars: int = 100
    pdf_min_median_chars_per_page: int = 40
    max_file_bytes: int = 50 * MB
    max_uncompressed_bytes: int = 500 * MB
    max_compression_ratio: int = 200
    soffice_timeout_s: float = 120.0
    chunk_token_limit: int = 512
    caption_source: CaptionSource | None = None
    persian_digits: DigitStyle = "ascii"
    pdf_rtl_order: RtlOrder = "auto"
    csv_encodings: tuple[str, ...] = ("utf-8-sig", "cp1256")
    heuristics: ParserHeuristics = field(default_factory=ParserHeuristics)
    memory_limit_bytes: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "pdf_min_total_chars",
            "pdf_min_median_chars_per_page",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConfigError(f"ParseOptions.{name} must be an integer >= 0, got {value!r}")
        for name in ("max_file_bytes", "max_uncompressed_bytes", "max_compression_ratio", "chunk_token_limit"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"ParseOptions.{name} must be a positive integer, got {value!r}")
        if (
            not isinstance(self.soffice_timeout_s, (int, float))
            or isinstance(self.soffice_timeout_s, bool)
            or self.soffice_timeout_s <= 0
        ):
            raise ConfigError(
                f"ParseOptions.soffice_timeout_s must be a positive number of seconds, got {self.soffice_timeout_s!r}"
            )
        if self.caption_source is not None and not callable(self.caption_source):
            raise ConfigError(
                "ParseOptions.caption_source must be None or a callable taking image bytes and returning a caption, "
                f"got {type(self.caption_source).__name__}"
            )
        if self.persian_digits not in ("ascii", "persian"):
            raise ConfigError(f"ParseOptions.persian_digits must be 'ascii' or 'persian', got {self.persian_digits!r}")
        if self.pdf_rtl_order not in ("auto", "visual", "logical"):
            raise ConfigError(
                f"ParseOptions.pdf_rtl_order must be 'auto', 'visual' or 'logical', got {self.pdf_rtl_order!r}"
            )
        if isinstance(self.csv_encodings, str):  # "utf-8-sig,cp1256", as the run flag and the launchpad give it
            object.__setattr__(
                self, "csv_encodings", tuple(e.strip() for e in self.csv_encodings.split(",") if e.strip())
            )
        elif isinstance(self.csv_encodings, list):
            object.__setattr__(self, "csv_encodings", tuple(self.csv_encodings))
        if not self.csv_encodings:
            raise ConfigError(
                "ParseOptions.csv_encodings must be a non-empty tuple of codec names, e.g. ('utf-8-sig', 'cp1256')"
            )
        if not isinstance(self.heuristics, ParserHeuristics):
            raise ConfigError(
                "ParseOptions.heuristics must be a ParserHeuristics (load_parser_heuristics reads "
                f"one from a settings file), got {type(self.heuristics).__name__}"
            )
        if self.memory_limit_bytes is not None and (
            not isinstance(self.memory_limit_bytes, int)
            or isinstance(self.memory_limit_bytes, bool)
            or self.memory_limit_bytes < 64 * MB
        ):
            raise ConfigError(
                f"ParseOptions.memory_limit_bytes must be None or at least 64 MB in bytes, "
                f"got {self.memory_limit_bytes!r}"
            )
        import codecs

        for enc in self.csv_encodings:
            try:
                codecs.lookup(enc)
            except (LookupError, TypeError):
                raise ConfigError(f"ParseOptions.csv_encodings: unknown encoding {enc!r}") from None

    def fingerprint(self, suffix: str | None = None) -> str:
        """A digest of every setting that changes what a parse produces.

        Stored parses are keyed by it, so turning image captions on (or changing the chunk
        ceiling, digit style, ...) parses the documents again instead of reusing old output.
        The caption source counts by its ``caption_id`` attribute (model, endpoint, prompt),
        else by its qualified name. The LibreOffice timeout and the memory limit change nothing
        in a parse that succeeds and are left out.

        With ``suffix`` (".pdf", ".docx", ...) only the settings that file format reads count: the
        key of a Word file does not change when a PDF heading pattern or the PDF text-layer gate does.
        """
        values = {
            name: value
            for name, value in self._values().items()
            if suffix is None or suffix.lower() in _OPTION_FORMATS.get(name, SUPPORTED_SUFFIXES)
        }
        values["heuristics"] = self.heuristics.fingerprint(suffix)
        return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def _values(self) -> dict[str, object]:
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_IN_OUTPUT}
        source = self.caption_source
        name = f"{getattr(source, '__module__', '')}.{getattr(source, '__qualname__', type(source).__name__)}"
        values["caption_source"] = None if source is None else (getattr(source, "caption_id", None) or name)
        return values

    def describe(self) -> dict[str, object]:
        """The settings as plain values (provenance): the caption source by its id, the timeout left out,
        the heuristics as their digest and the settings changed from the defaults."""
        values: dict[str, object] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_IN_OUTPUT
        }
        values["csv_encodings"] = list(self.csv_encodings)
        source = self.caption_source
        values["caption_source"] = (
            None
            if source is None
            else (getattr(source, "caption_id", None) or getattr(source, "__qualname__", type(source).__name__))
        )
        values["heuristics"] = self.heuristics.fingerprint()
        values["heuristics_changed"] = self.heuristics.changed()
        return values

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))
