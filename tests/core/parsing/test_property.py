"""Property test: random or damaged bytes under every supported extension never raise
anything but DocumentProcessingError, and whatever parses keeps the span invariant."""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing import SUPPORTED_SUFFIXES, ParseOptions, parse
from tests.core.parsing import builders
from tests.core.parsing.conftest import assert_spans

_TMP = Path(tempfile.mkdtemp(prefix="chunkbench-prop-"))
atexit.register(shutil.rmtree, _TMP, True)
# soffice is slow to start; random .doc bytes are mostly refused before it runs (no OLE magic)
FAST_SUFFIXES = [s for s in SUPPORTED_SUFFIXES]
OPTIONS = ParseOptions(soffice_timeout_s=20)
MAGIC = [b"", b"PK\x03\x04", b"%PDF-1.4\n", b"\xef\xbb\xbf", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"]


@lru_cache(maxsize=None)
def _valid(suffix: str) -> bytes:
    path = _TMP / f"valid{suffix}"
    if suffix == ".docx":
        builders.build_layout_by_size_docx(path)
    elif suffix == ".xlsx":
        builders.build_directory_xlsx(path)
    elif suffix == ".pdf":
        builders.build_text_pdf(path, ["Some text for the gate. " * 8, "More text on page two. " * 8])
    return path.read_bytes()


_COUNTER = itertools.count()


def _try(data: bytes, suffix: str) -> None:
    path = _TMP / f"case{next(_COUNTER)}{suffix}"
    path.write_bytes(data)
    try:
        parsed = parse(path, OPTIONS)
    except DocumentProcessingError as exc:
        assert str(path) in str(exc)
    else:
        assert_spans(parsed)
    finally:
        path.unlink(missing_ok=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    suffix=st.sampled_from([s for s in FAST_SUFFIXES if s != ".doc"]),
    magic=st.sampled_from(MAGIC[:4]),
    body=st.binary(max_size=3000),
)
def test_random_bytes_only_raise_document_processing_error(suffix: str, magic: bytes, body: bytes) -> None:
    _try(magic + body, suffix)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=2000), magic=st.sampled_from([b"", b"PK\x03\x04", MAGIC[4]]))
def test_random_doc_bytes_only_raise_document_processing_error(body: bytes, magic: bytes) -> None:
    _try(magic + body, ".doc")


@settings(max_examples=3, deadline=None)
@given(body=st.binary(min_size=16, max_size=2000))
def test_random_word_stream_doc_only_raises_document_processing_error(body: bytes) -> None:
    # passes the compound-file checks, so it reaches LibreOffice (or the "soffice not found" error)
    _try(builders.fake_word_ole_bytes() + body, ".doc")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    suffix=st.sampled_from([".docx", ".xlsx", ".pdf"]),
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), max_size=12),
    cut=st.one_of(st.none(), st.floats(0.05, 1.0)),
)
def test_damaged_documents_only_raise_document_processing_error(
    suffix: str, edits: list[tuple[float, int]], cut: float | None
) -> None:
    data = bytearray(_valid(suffix))
    for where, value in edits:
        data[int(where * len(data))] = value
    if cut is not None:
        data = data[: max(1, int(cut * len(data)))]
    _try(bytes(data), suffix)
