"""Big PDFs: pypdf's element limits follow the parse memory limit; a limit reached is named, never "corrupt".

The PDFs are written here byte by byte: a tagged PDF whose structure tree has a /K array of more than
100,000 elements (pypdf's default limit), and one whose page draws its text with a TJ array of as many.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing import ParseOptions, parse
from chunkbench_core.parsing.isolation import IsolatedParser, ParseLimits
from chunkbench_core.parsing.pdf import pypdf_limits

MB = 1024 * 1024
TEXT = "Big tagged PDFs parse when the limits of the PDF reader follow the memory limit of the parse."


def big_array_pdf(path: Path, *, structure_elements: int = 0, tj_elements: int = 0) -> Path:
    """One page of text; a /StructTreeRoot /K array and/or a TJ array padded to the given sizes."""
    objects: dict[int, bytes] = {}
    tree = b""
    if structure_elements:
        tree = b" /StructTreeRoot << /Type /StructTreeRoot /K [" + b" 0" * structure_elements + b" ] >>"
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R /MarkInfo << /Marked true >>" + tree + b" >>"
    objects[2] = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
    objects[3] = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>"
    )
    words = [f"({w} )".encode() for w in (TEXT + " ").split()] * 3
    padding = max(0, tj_elements - len(words))
    content = b"BT /F1 11 Tf 72 720 Td [" + b" ".join(words) + b" 0" * padding + b" ] TJ ET"
    objects[4] = b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream"
    objects[5] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = out.tell()
        out.write(b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for number in sorted(objects):
        out.write(b"%010d 00000 n \n" % offsets[number])
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    path.write_bytes(out.getvalue())
    return path


@pytest.fixture(scope="module")
def tagged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return big_array_pdf(tmp_path_factory.mktemp("big") / "tagged.pdf", structure_elements=150_000)


@pytest.fixture(scope="module")
def long_tj(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return big_array_pdf(tmp_path_factory.mktemp("big") / "tj.pdf", tj_elements=150_000)


def test_pypdf_refuses_these_files_with_its_default_limits(tagged: Path, long_tj: Path) -> None:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    with pytest.raises(LimitReachedError, match="maximum array element count"):
        len(PdfReader(str(tagged)).pages)
    with pytest.raises(LimitReachedError, match="maximum array element count"):
        PdfReader(str(long_tj)).pages[0].extract_text()


@pytest.mark.parametrize("name", ["tagged", "long_tj"])
def test_big_arrays_parse_under_the_default_memory_limit(name: str, request: pytest.FixtureRequest) -> None:
    parsed = parse(request.getfixturevalue(name))
    assert parsed.units[0].text.startswith(TEXT)


@pytest.mark.parametrize("name", ["tagged", "long_tj"])
def test_a_limit_reached_names_the_limit_and_how_to_raise_it(name: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(name)
    with pytest.raises(DocumentProcessingError) as info:
        parse(path, ParseOptions(memory_limit_bytes=64 * MB))  # allows arrays of 131,072 elements
    message = str(info.value)
    assert message.startswith(str(path))
    assert (
        "larger than the PDF reader's limit of 131,072 elements in one array (array_maximum_element_count)"
    ) in message
    assert "raise the parse memory limit (CHUNKBENCH_PARSE_MEMORY_MB, now 64 MB" in message
    assert "corrupt" not in message


def test_the_isolated_parser_gives_the_worker_its_memory_limit(tagged: Path) -> None:
    with IsolatedParser(ParseLimits(memory_bytes=256 * MB, timeout_s=120)) as parser:
        assert parser.parse(tagged).units[0].text.startswith(TEXT)


def test_limits_scale_with_memory_and_never_fall_below_pypdfs_defaults() -> None:
    from pypdf import Configuration

    defaults = Configuration()
    small, default, large = pypdf_limits(64 * MB), pypdf_limits(2048 * MB), pypdf_limits(8192 * MB)
    assert default["array_maximum_element_count"] == 4_194_304  # a quarter of 2 GB at 128 bytes an element
    assert default["zlib_maximum_output_length"] == 512 * MB
    for name, value in default.items():
        assert small[name] >= getattr(defaults, name)
        assert small[name] <= value <= large[name]
    assert large["array_maximum_element_count"] == 4 * default["array_maximum_element_count"]
