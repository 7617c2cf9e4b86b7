"""Session fixtures: documents built once per test session by builders.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.parsing import ParsedDocument
from tests.conftest import require_tool
from tests.core.parsing import builders


def assert_spans(parsed: ParsedDocument) -> None:
    """The issue-3 invariant: markdown[u.start:u.end] == u.text for every unit, units in order."""
    last_end = 0
    for unit in parsed.units:
        assert parsed.markdown[unit.start : unit.end] == unit.text, unit
        assert unit.start >= last_end, "units must be in document order and not overlap"
        last_end = unit.end


def unit_triples(parsed: ParsedDocument) -> list[tuple[str, str, list[str]]]:
    return [(u.content_type, u.text, u.heading_path) for u in parsed.units]


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("parsing-fixtures")


@pytest.fixture(scope="session")
def rich_docx(fixture_dir: Path) -> Path:
    return builders.build_rich_docx(fixture_dir / "rich.docx")


@pytest.fixture(scope="session")
def directory_xlsx(fixture_dir: Path) -> Path:
    return builders.build_directory_xlsx(fixture_dir / "directory.xlsx")


@pytest.fixture(scope="session")
def dejavu() -> None:
    require_tool(builders.fonts_available(), "DejaVu fonts (apt-get install fonts-dejavu-core)")


@pytest.fixture(scope="session")
def english_pdf(fixture_dir: Path, dejavu: None) -> Path:
    return builders.build_english_pdf(fixture_dir / "english.pdf")


@pytest.fixture(scope="session")
def english_outline_pdf(fixture_dir: Path, dejavu: None) -> Path:
    return builders.build_english_pdf(fixture_dir / "english-outline.pdf", outline=True)


@pytest.fixture(scope="session")
def persian_pdf(fixture_dir: Path, dejavu: None) -> Path:
    return builders.build_persian_pdf(fixture_dir / "persian.pdf")


@pytest.fixture(scope="session")
def scanned_pdf(fixture_dir: Path) -> Path:
    return builders.build_scanned_pdf(fixture_dir / "scanned.pdf")
