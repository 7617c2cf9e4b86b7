"""Checks made before a parser touches a file, so that bad input fails that file alone and never the run.

Each failed check raises :class:`DocumentProcessingError` naming the file and the reason:

* missing path, a directory, an empty file, a file over ``max_file_bytes``;
* content that does not match the extension (a PDF renamed .docx, a zip renamed
  .pdf, binary data in a .csv/.md/.txt) - sniffed from the first bytes;
* OOXML (.docx/.xlsx): not a zip, a truncated/corrupt zip, the main part
  missing, or sizes that look off (a "zip bomb"; said in plain words): refused first by the uncompressed sizes the
  zip *declares* (total over ``max_uncompressed_bytes``, or one entry inflating
  more than ``max_compression_ratio`` times), then by the bytes each member
  really inflates to, counted while inflating it in small blocks with a running
  cap - so a header that understates a member's size cannot matter, and memory
  stays at one block whatever the member holds;
* text files whose encoding is none of ``csv_encodings``.

Also here: :func:`content_hash`, the SHA-256 the pipeline uses to skip
documents that did not change.
"""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from pathlib import Path

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.options import ParseOptions

_OOXML_MAIN_PART = {".docx": "word/document.xml", ".xlsx": "xl/workbook.xml"}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def content_hash(path: str | os.PathLike[str], chunk_size: int = 1 << 20) -> str:
    """SHA-256 hex digest of the file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def _human(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} bytes"


def check_file(path: Path, options: ParseOptions) -> int:
    """The path is a readable, non-empty regular file within the size limit; returns its size."""
    if not path.exists():
        raise DocumentProcessingError(str(path), "file not found")
    if not path.is_file():
        raise DocumentProcessingError(str(path), "not a regular file")
    size = path.stat().st_size
    if size == 0:
        raise DocumentProcessingError(str(path), "empty file (0 bytes)")
    if size > options.max_file_bytes:
        raise DocumentProcessingError(
            str(path),
            f"file is {_human(size)}, over the limit of {_human(options.max_file_bytes)} "
            "(raise ParseOptions.max_file_bytes to accept it)",
        )
    return size


def sniff(head: bytes) -> str:
    """What the first bytes say the file is: "pdf", "zip", "ole" (legacy Office) or "other"."""
    if head.startswith(b"%PDF-") or (b"%PDF-" in head[:1024]):
        return "pdf"
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head.startswith(_OLE_MAGIC):
        return "ole"
    return "other"


_KIND_NAMES = {"pdf": "a PDF", "zip": "a zip (OOXML) container", "ole": "a legacy Office (OLE) file"}


def check_signature(path: Path, suffix: str) -> None:
    """Refuse content that plainly does not match the extension (wrong extension)."""
    with open(path, "rb") as fh:
        head = fh.read(2048)
    kind = sniff(head)
    expected = {".pdf": "pdf", ".docx": "zip", ".xlsx": "zip", ".doc": "ole"}.get(suffix)
    if expected is None:
        # text formats: refuse containers passed off as text
        if kind != "other":
            raise DocumentProcessingError(
                str(path), f"content is {_KIND_NAMES[kind]}, not {suffix} text (wrong extension?)"
            )
        return
    if kind == expected:
        return
    if suffix == ".doc" and kind == "zip":
        return  # a .docx saved as .doc: soffice converts it all the same
    if suffix == ".doc" and head.lstrip().startswith((b"{\\rtf", b"<")):
        return  # RTF or HTML saved as .doc: soffice reads those too
    found = _KIND_NAMES.get(kind, "not recognisable")
    raise DocumentProcessingError(
        str(path),
        f"content does not match the {suffix} extension: the file is {found}"
        + (" (wrong extension?)" if kind != "other" else f" (not a valid {suffix} file: corrupt or truncated?)"),
    )


def check_ooxml(path: Path, suffix: str, options: ParseOptions) -> None:
    """Zip-level checks of a .docx/.xlsx before python-docx/openpyxl open it."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            names = {i.filename for i in infos}
    except zipfile.BadZipFile as exc:
        raise DocumentProcessingError(str(path), f"corrupt or truncated {suffix} (bad zip: {exc})") from None
    except (OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise DocumentProcessingError(str(path), f"corrupt or truncated {suffix} ({exc})") from None
    total = 0
    for info in infos:
        total += info.file_size
        if info.file_size > 1024 * 1024 and info.file_size > options.max_compression_ratio * max(info.compress_size, 1):
            raise DocumentProcessingError(
                str(path),
                f"refused: its part {info.filename!r} says it unpacks to {_human(info.file_size)} from "
                f"{_human(info.compress_size)}, over {options.max_compression_ratio} times its packed size, far more "
                "than a Word or Excel file packs; open it and save it again (or remove it from the corpus)",
            )
    if total > options.max_uncompressed_bytes:
        raise DocumentProcessingError(
            str(path),
            f"refused: its parts say they unpack to {_human(total)} in all, over the limit of "
            f"{_human(options.max_uncompressed_bytes)} for one document; split it into smaller files, or open it and "
            "save it again if it is not that large",
        )
    main_part = _OOXML_MAIN_PART.get(suffix)
    if main_part and main_part not in names:
        other = next((s for s, p in _OOXML_MAIN_PART.items() if p in names), None)
        hint = f" - it looks like a {other} file (wrong extension?)" if other else ""
        raise DocumentProcessingError(str(path), f"not a valid {suffix} file: zip has no {main_part}{hint}")
    check_inflated_sizes(path, suffix, options)


_INFLATE_BLOCK = 1 << 16


def check_inflated_sizes(path: Path, suffix: str, options: ParseOptions) -> None:
    """Inflate every member in small blocks, with a running cap, and refuse a member that inflates past its header.

    The libraries that open a .docx/.xlsx (zipfile underneath) inflate a member in one call sized by
    what it *declares*; a member whose header understates its size is inflated far past it before the
    data is cut (hundreds of MB from a 300 KB file). Here the real stream is inflated with zlib
    block by block, never holding more than one block: a member producing more bytes than its header
    declares, more than ``max_uncompressed_bytes`` in total or more than ``max_compression_ratio``
    times its compressed size is refused. A member that passes holds exactly what it declares.
    """
    import zlib

    total = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                    raise DocumentProcessingError(
                        str(path),
                        f"zip entry {info.filename!r} uses an unsupported compression method "
                        f"({info.compress_type}); Office files use deflate",
                    )
                if info.flag_bits & 0x1:
                    raise DocumentProcessingError(str(path), f"zip entry {info.filename!r} is encrypted")
                fh = zf.fp
                assert fh is not None
                fh.seek(info.header_offset)
                header = fh.read(30)
                name_len = int.from_bytes(header[26:28], "little")
                extra_len = int.from_bytes(header[28:30], "little")
                fh.seek(info.header_offset + 30 + name_len + extra_len)
                remaining = info.compress_size
                inflater = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
                produced = 0
                limit = max(info.file_size, 0)
                ratio_cap = options.max_compression_ratio * max(info.compress_size, 1)
                pending = b""
                while True:
                    if not pending:
                        if remaining <= 0:
                            break
                        pending = fh.read(min(_INFLATE_BLOCK, remaining))
                        if not pending:
                            break
                        remaining -= len(pending)
                    if inflater is None:
                        out, pending = pending, b""
                    else:
                        out = inflater.decompress(pending, _INFLATE_BLOCK)
                        pending = inflater.unconsumed_tail
                    produced += len(out)
                    total += len(out)
                    if produced > limit:
                        raise DocumentProcessingError(
                            str(path),
                            f"refused: its part {info.filename!r} unpacks to more than the {_human(limit)} it says "
                            f"it holds (stopped at {_human(produced)}): the file is damaged or was made to mislead; "
                            "open it and save it again, or remove it from the corpus",
                        )
                    if produced > 1024 * 1024 and produced > ratio_cap:
                        raise DocumentProcessingError(
                            str(path),
                            f"refused: its part {info.filename!r} unpacks to over "
                            f"{options.max_compression_ratio} times its packed size, far more than a Word or Excel "
                            "file packs; open it and save it again (or remove it from the corpus)",
                        )
                    if total > options.max_uncompressed_bytes:
                        raise DocumentProcessingError(
                            str(path),
                            f"refused: its parts unpack to more than the limit of "
                            f"{_human(options.max_uncompressed_bytes)} for one document; split it into smaller "
                            "files, or open it and save it again if it is not that large",
                        )
                    if inflater is not None and inflater.eof:
                        break
                    if not out and not pending and inflater is not None and remaining <= 0:
                        break
    except DocumentProcessingError:
        raise
    except (zipfile.BadZipFile, zlib.error, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise DocumentProcessingError(str(path), f"corrupt or truncated {suffix} ({exc})") from None


# C0 controls other than tab, LF, CR and form feed;
# C1 controls, DEL and lone surrogates also mark binary data.
_CONTROL_CHARS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _looks_like_text(text: str) -> bool:
    """No control characters other than tab, newline, carriage return and form feed."""
    return _CONTROL_CHARS.search(text) is None


def decode_text(path: Path, data: bytes, encodings: tuple[str, ...]) -> tuple[str, str]:
    """Decode a text file (.csv/.md/.txt); returns (text, encoding used) or raises.

    UTF-8 (a BOM is stripped) is tried first, then the other configured encodings
    (cp1256 for Persian Windows files by default). A decoding that produces
    control characters is rejected, so binary data is not read as cp1256 text.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DocumentProcessingError(str(path), "text is UTF-16 (byte-order mark found); save it as UTF-8 or cp1256")
    if b"\x00" in data:
        raise DocumentProcessingError(str(path), "binary content (NUL bytes), not a text file")
    tried: list[str] = []
    for enc in encodings:
        tried.append(enc)
        try:
            text = data.decode(enc)
        except (UnicodeDecodeError, LookupError):
            continue
        if enc.lower().replace("_", "-") in ("utf-8-sig", "utf-8", "utf8"):
            text = text[1:] if text.startswith("\ufeff") else text
        if not _looks_like_text(text):
            continue
        return text, enc
    raise DocumentProcessingError(
        str(path),
        f"cannot decode text as any of {', '.join(tried)} (unknown encoding or binary data); "
        "save it as UTF-8, or name its encoding: chunkbench run --csv-encodings "
        f"{','.join([*tried, 'ENCODING'])} (csv_encodings in the launchpad's parsed_documents config; "
        "e.g. latin-1, cp1252, shift_jis)",
    )
