"""Document parsing: one entry point, :func:`parse`, for every supported format.

``parse(path, options)`` returns a :class:`ParsedDocument`:

* ``markdown`` - the text every chunker sees and every chunk offset refers to;
* ``tree`` - the DocumentTree: document / section / article / paragraph nodes;
* ``units`` - structural units in document order: ``paragraph``,
  ``table_row``, ``qa_pair`` or ``image_caption``, each with its text, its span
  (``markdown[u.start:u.end] == u.text`` always) and its heading path;
* ``warnings`` and ``stats`` (unit counts, images, pages, ...).

Formats and where their rules live: .md/.txt :mod:`.text`; .docx :mod:`.docx`;
.doc :mod:`.legacy_doc` (LibreOffice, then the DOCX path); .pdf :mod:`.pdf`;
.xlsx/.csv :mod:`.spreadsheet`. Rendering conventions: :mod:`.builder`. Persian
normalisation: :mod:`.persian`. Input checks: :mod:`.guards`.

Also here: :func:`content_hash` and :func:`parse_cache_key` (parse a document
again only when its bytes, :data:`PARSER_VERSION` or the options that its format
reads changed) and :func:`check_spans`. Image caption sources: :mod:`.captions`
(``openai_vision_captioner`` for an OpenAI-compatible vision endpoint).

The rules of thumb (Q&A markers, table headers and titles, PDF headings) are
settings: :class:`ParserHeuristics`, read from a benchmark's TOML file by
:func:`load_parser_heuristics` and passed as ``ParseOptions(heuristics=...)``.
``ParsedDocument.explain`` records which rule made each heading, table header and
Q&A pair; :func:`explain_text` renders it for a person.

Every failure - bad file, wrong extension, corrupt or hostile content, scanned
PDF, missing LibreOffice - raises :class:`DocumentProcessingError` naming the
file and the reason; no other exception escapes ``parse`` for a file's content.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.context import describe_document
from chunkbench_core.parsing.explain import explain_text
from chunkbench_core.parsing.guards import check_file, check_ooxml, check_signature, content_hash
from chunkbench_core.parsing.heuristics import ParserHeuristics, load_parser_heuristics
from chunkbench_core.parsing.models import CONTENT_TYPES, Explanation, ParsedDocument, TreeNode, Unit
from chunkbench_core.parsing.options import SUPPORTED_SUFFIXES, CaptionSource, ParseOptions
from chunkbench_core.parsing.persian import normalize_persian

#: Bump when a parsing rule changes what parse() returns, so cached results are redone.
PARSER_VERSION = "3"

__all__ = [
    "CONTENT_TYPES",
    "PARSER_VERSION",
    "SUPPORTED_SUFFIXES",
    "CaptionSource",
    "DocumentProcessingError",
    "Explanation",
    "ParseOptions",
    "ParsedDocument",
    "ParserHeuristics",
    "TreeNode",
    "Unit",
    "check_spans",
    "content_hash",
    "explain_text",
    "load_parser_heuristics",
    "normalize_persian",
    "parse",
    "parse_cache_key",
]


def _dispatch(path: Path, suffix: str, options: ParseOptions) -> ParsedDocument:
    if suffix in (".md", ".txt"):
        from chunkbench_core.parsing.text import parse_text_file

        return parse_text_file(path, path.read_bytes(), options)
    if suffix == ".docx":
        from chunkbench_core.parsing.docx import parse_docx

        check_ooxml(path, suffix, options)
        return parse_docx(path, options)
    if suffix == ".doc":
        from chunkbench_core.parsing.legacy_doc import parse_legacy_doc

        return parse_legacy_doc(path, options)
    if suffix == ".pdf":
        from chunkbench_core.parsing.pdf import parse_pdf

        return parse_pdf(path, options)
    if suffix == ".xlsx":
        from chunkbench_core.parsing.spreadsheet import parse_xlsx

        check_ooxml(path, suffix, options)
        return parse_xlsx(path, options)
    if suffix == ".csv":
        from chunkbench_core.parsing.spreadsheet import parse_csv

        return parse_csv(path, options)
    raise AssertionError(suffix)  # pragma: no cover - suffix checked by parse()


def parse(path: str | os.PathLike[str], options: ParseOptions | None = None) -> ParsedDocument:
    """Parse one document into markdown, a DocumentTree and structural units.

    Raises :class:`DocumentProcessingError` (message: ``"<path>: <reason>"``) for
    any file that cannot be parsed; nothing else escapes for bad content.
    """
    options = options or ParseOptions()
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise DocumentProcessingError(
            str(p),
            f"unsupported file type {suffix or '(no extension)'!r}; supported: {', '.join(SUPPORTED_SUFFIXES)}",
        )
    try:
        check_file(p, options)
        check_signature(p, suffix)
        parsed = _dispatch(p, suffix, options)
    except DocumentProcessingError:
        raise
    except OSError as exc:
        raise DocumentProcessingError(str(p), f"cannot read the file ({exc.strerror or exc})") from None
    except RecursionError:
        raise DocumentProcessingError(
            str(p), f"{suffix} file is too deeply nested to parse (corrupt or hostile?)"
        ) from None
    except MemoryError:
        raise DocumentProcessingError(str(p), f"{suffix} file needs too much memory to parse") from None
    except Exception as exc:  # any library failure on bad content becomes a typed error
        raise DocumentProcessingError(str(p), f"cannot parse {suffix} file ({type(exc).__name__}: {exc})") from exc
    if not parsed.units and not parsed.markdown.strip():
        parsed.warnings.append("no text found in the document")
    parsed.context = describe_document(parsed.document, parsed.markdown, parsed.metadata).to_dict()
    return parsed


def check_spans(parsed: ParsedDocument) -> None:
    """Assert the span invariant ``markdown[u.start:u.end] == u.text`` for every unit."""
    for i, unit in enumerate(parsed.units):
        if parsed.markdown[unit.start : unit.end] != unit.text:
            raise AssertionError(
                f"unit {i} ({unit.content_type}) span [{unit.start}:{unit.end}] does not match its text"
            )


def parse_cache_key(path: str | os.PathLike[str], options: ParseOptions | None = None) -> str:
    """Key for "parse again only if something changed": an unchanged corpus is not parsed twice.

    SHA-256 over the file's content hash, :data:`PARSER_VERSION` and the options that
    change the output of the file's format (:meth:`ParseOptions.fingerprint` with the
    file's suffix): a changed PDF heading pattern changes the key of PDFs, not of Word files.
    """
    options = options or ParseOptions()
    suffix = Path(path).suffix.lower()
    parts = [content_hash(path), PARSER_VERSION, suffix, options.fingerprint(suffix)]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()
