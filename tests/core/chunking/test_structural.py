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
    for kind, body, path in (("paragraph", PROSE_1, ["Pets"]), ("paragraph", PROSE_2, ["Pets"]),
                             ("table_row", ROW_1, ["Pets"]), ("table_row", ROW_2, ["Pets"]), ("qa_pair", QA, ["FAQ"])):
        start = TEXT.index(body)
        out.append(Unit(kind, body, start, start + len(body), path))
    return out


def structural(**kwargs):
    params = {"chunk_size": 100, "chunk_overlap": 0, "embed": topic_embed({"cat": 0, "dog": 1})}
    params.update(kwargs)
    return make_chunker("structural", **params)


def test_blocks_merge_paragraphs_under_one_heading_and_keep_units_atomic():
    blocks = structural_blocks(doc(TEXT, units=units()))
    assert [(b.content_type, TEXT[b.start:b.end]) for b in blocks] == [
        ("paragraph", f"{PROSE_1}\n\n{PROSE_2}"), ("table_row", ROW_1), ("table_row", ROW_2), ("qa_pair", QA)]


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
        doc(TEXT, units=units()))
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
        doc(TEXT, units=units()))
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
