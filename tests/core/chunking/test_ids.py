"""Chunk ids are deterministic and unique per document path; a clash names both documents and is never retried."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkbench_core.chunking import make_chunk_id, make_chunker
from chunkbench_core.chunking.base import Chunk, check_unique_ids
from chunkbench_core.errors import DuplicateIdError
from chunkbench_core.parsing.text import parse_text_file
from chunkbench_core.parsing.options import ParseOptions

path_part = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1, max_size=12)
relative_path = st.lists(path_part, min_size=1, max_size=3).map("/".join)


@settings(max_examples=500, deadline=None)
@given(relative_path, relative_path, st.integers(0, 999_999))
def test_distinct_relative_paths_give_distinct_chunk_ids(a: str, b: str, index: int) -> None:
    if a != b:
        assert make_chunk_id("fixed_size", a, index) != make_chunk_id("fixed_size", b, index)
    assert make_chunk_id("fixed_size", a, index) == make_chunk_id("fixed_size", a, index)  # deterministic


def test_names_that_sanitise_alike_do_not_collide(tmp_path) -> None:
    chunks = []
    for name in ("report 2024.txt", "report-2024.txt", "report_2024.txt", "REPORT 2024.txt"):
        path = tmp_path / name
        path.write_text("Quarterly figures rose by four percent in the north.\n", encoding="utf-8")
        document = parse_text_file(path, path.read_bytes(), ParseOptions())
        document.document = name
        chunks += make_chunker("fixed_size", chunk_size=64, chunk_overlap=0).chunk(document)
    check_unique_ids(chunks, "fixed_size x all-minilm-l6-v2")  # no clash
    assert len({c.chunk_id for c in chunks}) == len(chunks) == 4
    assert chunks[0].chunk_id.startswith("fixed_size_report_2024_txt_")  # still readable


def test_a_clash_names_both_documents_and_is_permanent() -> None:
    a = Chunk("same", "a/notes.md", "fixed_size", 0, 0, 4, "text", 1)
    b = Chunk("same", "b/notes.md", "fixed_size", 0, 0, 4, "text", 1)
    with pytest.raises(DuplicateIdError, match=r"'a/notes\.md' and 'b/notes\.md'"):
        check_unique_ids([a, b], "fixed_size x m")
    pytest.importorskip("dagster")
    from dagster import Failure

    from chunkbench_pipelines.failures import permanent_errors_fail_fast

    with pytest.raises(Failure) as info, permanent_errors_fail_fast():
        check_unique_ids([a, b], "fixed_size x m")
    assert info.value.allow_retries is False and "b/notes.md" in info.value.description
