"""Legacy .doc via headless LibreOffice: a .doc made from the rich DOCX with soffice
parses to the same units as the DOCX itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing import parse
from chunkbench_core.parsing.legacy_doc import convert_with_soffice
from tests.conftest import require_executable
from tests.core.parsing.conftest import assert_spans, unit_triples
from tests.core.parsing.test_docx import EXPECTED_MARKDOWN, EXPECTED_UNITS


@pytest.fixture(scope="module")
def legacy_doc(rich_docx: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    soffice = require_executable("soffice")
    work = tmp_path_factory.mktemp("make-doc")
    converted = convert_with_soffice(rich_docx, "doc", work, 180.0, soffice)
    target = work / "rich.doc"
    converted.replace(target)
    assert target.read_bytes()[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # a real OLE .doc
    return target


@pytest.mark.tools
def test_doc_parses_like_the_docx_it_was_made_from(legacy_doc: Path) -> None:
    parsed = parse(legacy_doc)
    assert parsed.parser == "doc"
    assert parsed.document == "rich.doc"
    assert unit_triples(parsed) == EXPECTED_UNITS
    assert parsed.markdown == EXPECTED_MARKDOWN
    assert parsed.stats["images"] == 1
    assert_spans(parsed)


@pytest.mark.tools
def test_truncated_doc_is_a_typed_error(legacy_doc: Path, tmp_path: Path) -> None:
    data = legacy_doc.read_bytes()
    path = tmp_path / "truncated.doc"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DocumentProcessingError, match="no WordDocument stream") as info:
        parse(path)
    assert str(path) in str(info.value)


def test_ole_garbage_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.doc"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(range(256)) * 8)
    with pytest.raises(DocumentProcessingError, match="bad compound-file header"):
        parse(path)
