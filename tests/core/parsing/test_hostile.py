"""Hostile documents cost a bounded amount: sparse sheets are read by their cells, zip members are
inflated with a running cap, and each document is parsed in a worker with a memory and a time limit."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from chunkbench_core.errors import ConfigError, DocumentProcessingError
from chunkbench_core.parsing import parse
from chunkbench_core.configuration import parse_limits_of
from chunkbench_core.parsing.isolation import MB, IsolatedParser, ParseLimits
from chunkbench_core.settings import Settings
from tests.core.parsing import builders


def test_sparse_sheet_is_read_by_its_cells(tmp_path: Path) -> None:
    path = builders.build_sparse_xlsx(tmp_path / "sparse.xlsx", "XFD1048576")
    tracemalloc.start()
    try:
        started = time.monotonic()
        parsed = parse(path)
        seconds = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "far away" in parsed.markdown and "Central" in parsed.markdown
    # the bounding box from A1 is 17 billion cells; read by its cells the sheet is five
    assert peak < 50 * MB, f"peak {peak / MB:.0f} MB"
    assert seconds < 30


def test_far_cell_does_not_change_the_rows(tmp_path: Path) -> None:
    near = parse(builders.build_sparse_xlsx(tmp_path / "near.xlsx", "C3"))
    far = parse(builders.build_sparse_xlsx(tmp_path / "far.xlsx", "CV20000"))
    assert near.markdown == far.markdown


def test_lying_zip_header_is_refused_without_inflating(tmp_path: Path) -> None:
    path = builders.build_lying_docx(tmp_path / "lying.docx", inflated_bytes=200 * MB, declared_bytes=2048)
    assert path.stat().st_size < 1 * MB
    tracemalloc.start()
    try:
        with pytest.raises(
            DocumentProcessingError,
            match=r"lying\.docx: refused: its part .*thumbnail.* unpacks to more "
            r"than the 2.0 KB it says it holds",
        ):
            parse(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * MB, f"peak {peak / MB:.0f} MB"


def test_running_cap_counts_real_bytes(tmp_path: Path) -> None:
    from chunkbench_core.parsing import ParseOptions

    # a member that declares its size honestly: refused by what it inflates to when over the total cap
    path = builders.build_lying_docx(tmp_path / "honest.docx", inflated_bytes=3 * MB, declared_bytes=3 * MB)
    with pytest.raises(DocumentProcessingError, match="unpack to 3.8 MB in all, over the limit of 2.0 MB"):
        parse(path, ParseOptions(max_uncompressed_bytes=2 * MB, max_compression_ratio=10_000))


def _comma_bomb(path: Path, cells: int) -> Path:
    """A small CSV whose one row has millions of cells: every cell is an object, gigabytes in all."""
    path.write_bytes(b"name,value\n" + b"x," * cells + b"\n")
    return path


@pytest.mark.slow
def test_worker_memory_limit_holds_and_the_next_document_goes_on(tmp_path: Path) -> None:
    bomb = _comma_bomb(tmp_path / "wide.csv", 20_000_000)  # 40 MB on disk, several GB parsed
    good = tmp_path / "notes.txt"
    good.write_text("Annual leave is 26 days.\n", encoding="utf-8")
    with IsolatedParser(ParseLimits(memory_bytes=768 * MB, timeout_s=300)) as parser:
        with pytest.raises(DocumentProcessingError) as caught:
            parser.parse(bomb)
        assert str(caught.value).startswith(str(bomb))
        assert "memory limit of 768 MB (CHUNKBENCH_PARSE_MEMORY_MB)" in str(caught.value)
        # the worker survived its MemoryError, and never held more than its limit (peak RSS, VmHWM)
        status = Path(f"/proc/{parser._process.pid}/status").read_text()
        peak_kb = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])
        assert 100 * MB < peak_kb * 1024 < 768 * MB
        assert parser.parse(good).markdown.startswith("Annual leave")


@pytest.mark.slow
def test_worker_time_limit_names_the_document(tmp_path: Path) -> None:
    slow = tmp_path / "long.txt"
    slow.write_text(("The quick brown fox jumps over the lazy dog. " * 2 + "\n") * 450_000, encoding="utf-8")
    good = tmp_path / "notes.md"
    good.write_text("# Leave\n\n26 days.\n", encoding="utf-8")
    with IsolatedParser(ParseLimits(timeout_s=60.0)) as parser:
        parser.parse(good)  # the worker is up (its start-up is not what is timed below)
        # 50 ms: far less than reading and parsing 40 MB of text takes on any machine, however idle
        parser.limits = ParseLimits(timeout_s=0.05)
        with pytest.raises(DocumentProcessingError, match=r"long\.txt: parsing took longer than the limit of 0\.05 s"):
            parser.parse(slow)
        parser.limits = ParseLimits(timeout_s=60.0)
        assert "26 days" in parser.parse(good).markdown  # a new worker


def test_limits_from_the_settings() -> None:
    def limits_from(environ: dict[str, str]) -> ParseLimits:
        return parse_limits_of(Settings.load(environ))

    limits = limits_from({"CHUNKBENCH_PARSE_MEMORY_MB": "1024", "CHUNKBENCH_PARSE_TIMEOUT_S": "30"})
    assert limits == ParseLimits(memory_bytes=1024 * MB, timeout_s=30.0)
    assert limits_from({}) == ParseLimits()
    with pytest.raises(ConfigError, match="CHUNKBENCH_PARSE_MEMORY_MB must be a number"):
        limits_from({"CHUNKBENCH_PARSE_MEMORY_MB": "lots"})
    with pytest.raises(ConfigError, match="at least 256 MB"):
        limits_from({"CHUNKBENCH_PARSE_MEMORY_MB": "10"})


def test_the_sparse_sheet_parses_in_a_worker_under_a_small_limit(tmp_path: Path) -> None:
    path = builders.build_sparse_xlsx(tmp_path / "sparse.xlsx", "XFD1048576")
    with IsolatedParser(ParseLimits(memory_bytes=512 * MB, timeout_s=60)) as parser:
        assert "far away" in parser.parse(path).markdown
