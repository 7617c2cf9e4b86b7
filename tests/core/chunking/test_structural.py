import pytest

from chunkbench_core.chunking import ModelWindow, make_chunker
from chunkbench_core.chunking.structural import structural_blocks
from chunkbench_core.errors import ChunkingError
from chunkbench_core.parsing.models import Unit

from .helpers import doc, topic_embed, words_counter

PROSE_1 = "Cats purr. Cats nap. Cats hunt."
PROSE_2 = "Dogs bark. Dogs run. Dogs dig."
ROW_1 = "Leave type: Annual | Days: 27"
ROW_2 = "Leave type: Sick | Days: 20"
QA = "Q: Can I buy leave?\nA: Yes, up to five days a year."
TEXT = f"# Pets\n\n{PROSE_1}\n\n{PROSE_2}\n\n{ROW_1}\n{ROW_2}\n\n# FAQ\n\n{QA}\n"


def units() -> list[Unit]:
    out = []
    for kind, body, path in (
        ("paragraph", PROSE_1, ["Pets"]),
        ("paragraph", PROSE_2, ["Pets"]),
        ("table_row", ROW_1, ["Pets"]),
        ("table_row", ROW_2, ["Pets"]),
        ("qa_pair", QA, ["FAQ"]),
    ):
        start = TEXT.index(body)
        out.append(Unit(kind, body, start, start + len(body), path))
    return out


def structural(**kwargs):
    params = {"chunk_size": 100, "chunk_overlap": 0, "embed": topic_embed({"cat": 0, "dog": 1})}
    params.update(kwargs)
    return make_chunker("structural", **params)


def test_blocks_merge_paragraphs_under_one_heading_and_keep_units_atomic():
    blocks = structural_blocks(doc(TEXT, units=units()))
    assert [(b.content_type, TEXT[b.start : b.end]) for b in blocks] == [
        ("paragraph", f"{PROSE_1}\n\n{PROSE_2}"),
        ("table_row", ROW_1),
        ("table_row", ROW_2),
        ("qa_pair", QA),
    ]


def test_golden_semantic_prose_and_atomic_units():
    chunks = structural(percentile=50, min_chunk_size=3).chunk(doc(TEXT, name="policy.docx", units=units()))
    assert [(c.content_type, c.text, c.heading_path) for c in chunks] == [
        ("paragraph", PROSE_1, ["Pets"]),
        ("paragraph", PROSE_2, ["Pets"]),
        ("table_row", ROW_1, ["Pets"]),
        ("table_row", ROW_2, ["Pets"]),
        ("qa_pair", QA, ["FAQ"]),
    ]
    ids = [c.chunk_id for c in chunks]
    assert ids[0] == "structural_policy_docx_1007bf6804_000000"
    assert [c.previous_chunk_id for c in chunks] == [None, *ids[:-1]]
    assert [c.next_chunk_id for c in chunks] == [*ids[1:], None]


def test_fixed_size_prose_chunker_and_atomic_units_bounded_by_the_window_only():
    window = ModelWindow(max_tokens=512, count_tokens=words_counter)
    chunks = structural(prose_chunker="fixed_size", chunk_size=8, chunk_overlap=2, embed=None, window=window).chunk(
        doc(TEXT, units=units())
    )
    prose = [c for c in chunks if c.content_type == "paragraph"]
    assert len(prose) > 2 and all(c.token_count <= 8 for c in prose)
    assert prose[0].start == TEXT.index(PROSE_1) and prose[-1].end == TEXT.index(PROSE_2) + len(PROSE_2)
    assert [c.text for c in chunks if c.content_type != "paragraph"] == [ROW_1, ROW_2, QA]


def test_a_unit_longer_than_the_model_window_is_split_and_keeps_its_type():
    window = ModelWindow(max_tokens=6, count_tokens=words_counter)
    chunks = structural(window=window).chunk(doc(TEXT, units=units()))
    qa = [c for c in chunks if c.content_type == "qa_pair"]
    assert len(qa) > 1 and all(words_counter([c.text])[0] <= 6 for c in chunks)
    assert qa[0].start == TEXT.index(QA) and qa[-1].end == TEXT.index(QA) + len(QA)


def test_without_a_window_atomic_units_are_bounded_by_chunk_size():
    chunks = structural(prose_chunker="recursive", chunk_size=8, chunk_overlap=0, embed=None).chunk(
        doc(TEXT, units=units())
    )
    rows = [c for c in chunks if c.content_type == "table_row"]
    assert len(rows) > 2 and all(c.token_count <= 8 for c in chunks)


def test_without_units_the_document_is_one_prose_block():
    chunks = structural(min_chunk_size=3).chunk(doc(f"{PROSE_1} {PROSE_2}"))
    assert [c.text for c in chunks] == [PROSE_1, PROSE_2]


def test_parsed_handbook_keeps_rows_and_qa_pairs(sample_docs):
    handbook = next(d for d in sample_docs if d.document == "employee_handbook.docx")
    chunks = structural(prose_chunker="fixed_size", chunk_size=200, chunk_overlap=0, embed=None).chunk(handbook)
    rows = [u.text for u in handbook.units if u.content_type in ("table_row", "qa_pair")]
    assert [c.text for c in chunks if c.content_type in ("table_row", "qa_pair")] == rows
    assert {c.content_type for c in chunks} == {"paragraph", "table_row", "qa_pair"}


def test_bad_prose_chunker_is_rejected():
    with pytest.raises(ChunkingError, match="prose_chunker must be one of semantic, fixed_size, recursive"):
        structural(prose_chunker="llm")
    with pytest.raises(ChunkingError, match="or set prose_chunker='fixed_size'"):
        make_chunker("structural", chunk_size=100, chunk_overlap=0)


# -- tables: rows that carry their headers, and row groups ------------------------------------------
TABLE_A = ["Leave — Type: Annual | Days: 27", "Leave — Type: Sick | Days: 20", "Leave — Type: Parental | Days: 90"]
TABLE_B = ["Fees — Plan: Basic | Price: 100"]
TABLES_TEXT = "# Policy\n\n" + "\n".join(TABLE_A) + "\n\n" + "\n".join(TABLE_B) + "\n"


def table_units() -> list[Unit]:
    out = []
    for row in TABLE_A + TABLE_B:
        start = TABLES_TEXT.index(row)
        out.append(Unit("table_row", row, start, start + len(row), ["Policy"]))
    return out


def test_table_chunks_group_packs_rows_of_one_table_up_to_chunk_size():
    document = doc(TABLES_TEXT, units=table_units())
    rows = structural(prose_chunker="fixed_size", embed=None).chunk(document)
    assert [c.text for c in rows] == TABLE_A + TABLE_B  # default: one chunk per row
    grouped = structural(prose_chunker="fixed_size", embed=None, table_chunks="group").chunk(document)
    # the rows of one table form one chunk; the next table (a blank line apart) is never joined to it
    assert [c.text for c in grouped] == ["\n".join(TABLE_A), TABLE_B[0]]
    assert {c.content_type for c in grouped} == {"table_row"}
    assert all(c.text == TABLES_TEXT[c.start : c.end] for c in grouped)
    # a group never passes chunk_size: with room for two rows, the third starts a new chunk
    two = (
        max(
            structural(prose_chunker="fixed_size", embed=None)
            .chunk(doc(TABLES_TEXT, units=table_units()))[i]
            .token_count
            for i in range(2)
        )
        * 2
        + 1
    )
    small = structural(
        prose_chunker="fixed_size", embed=None, table_chunks="group", chunk_size=two, chunk_overlap=0
    ).chunk(document)
    assert [c.text for c in small] == ["\n".join(TABLE_A[:2]), TABLE_A[2], TABLE_B[0]]
    assert all(c.token_count <= two for c in small)


def test_table_row_groups_respect_the_model_window():
    # a row counts 9 (7 words and 2 specials), two rows 16: a 12-token window keeps each row alone
    window = ModelWindow(max_tokens=12, count_tokens=words_counter)
    chunks = structural(prose_chunker="fixed_size", embed=None, table_chunks="group", window=window).chunk(
        doc(TABLES_TEXT, units=table_units())
    )
    assert [c.text for c in chunks] == TABLE_A + TABLE_B
    wide = ModelWindow(max_tokens=16, count_tokens=words_counter)
    chunks = structural(prose_chunker="fixed_size", embed=None, table_chunks="group", window=wide).chunk(
        doc(TABLES_TEXT, units=table_units())
    )
    assert [c.text for c in chunks] == ["\n".join(TABLE_A[:2]), TABLE_A[2], TABLE_B[0]]


def test_bad_table_chunks_is_rejected():
    with pytest.raises(ChunkingError, match="table_chunks must be one of row, group"):
        structural(table_chunks="table")


def test_params_record_table_chunks():
    assert structural(table_chunks="group").params()["table_chunks"] == "group"


def test_a_financial_table_row_chunk_carries_its_period_header_and_title():
    """The fixture's statement of operations: the chunk holding net sales says which period each figure is."""
    from pathlib import Path

    from chunkbench_core.parsing import parse

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "financial" / "2023 Q3 ACME.pdf"
    parsed = parse(fixture)
    for mode in ("row", "group"):
        chunks = structural(prose_chunker="fixed_size", embed=None, table_chunks=mode, chunk_size=512).chunk(parsed)
        chunk = next(c for c in chunks if "82,959" in c.text)
        assert chunk.content_type == "table_row"
        line = next(line for line in chunk.text.split("\n") if "82,959" in line)
        assert "Net sales > Total net sales | Three Months Ended September 30, 2023: 82,959 | " in line
        assert line.startswith("ACME Robotics, Inc. CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS")
        assert chunk.text == parsed.markdown[chunk.start : chunk.end]
