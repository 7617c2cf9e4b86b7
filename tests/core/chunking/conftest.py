"""Session fixtures of the chunking tests (parsed corpora and the real MiniLM tokenizer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.parsing import ParsedDocument, parse

from .helpers import CHROMA, CHROMA_NAMES, SAMPLES, chroma_doc


@pytest.fixture(scope="session")
def minilm():
    from chunkbench_core.embedding.local_onnx import shared_minilm

    return shared_minilm()


@pytest.fixture(scope="session")
def chroma_docs() -> dict[str, ParsedDocument]:
    assert CHROMA.is_dir(), f"the Chroma corpora ship with chunkbench, but {CHROMA} is missing"
    return {name: chroma_doc(name) for name in CHROMA_NAMES}


@pytest.fixture(scope="session")
def sample_docs() -> list[ParsedDocument]:
    return [parse(str(p)) for p in sorted(SAMPLES.iterdir()) if p.suffix in (".docx", ".md", ".txt", ".pdf")]


@pytest.fixture(scope="session")
def built_fixture_docs(tmp_path_factory: pytest.TempPathFactory) -> list[ParsedDocument]:
    """The parsing tests' generated fixtures: a rich DOCX (tables, Q&A, images) and a directory XLSX."""
    from tests.core.parsing import builders

    folder: Path = tmp_path_factory.mktemp("chunking-parsed-fixtures")
    paths = [builders.build_rich_docx(folder / "rich.docx"), builders.build_directory_xlsx(folder / "directory.xlsx")]
    return [parse(str(p)) for p in paths]


@pytest.fixture(scope="session")
def persian_doc(sample_docs: list[ParsedDocument]) -> ParsedDocument:
    return next(d for d in sample_docs if d.document.startswith("persian"))
