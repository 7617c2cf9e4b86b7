import pytest

from chunkbench_core.chunking import make_chunker
from chunkbench_core.tokens import TokenIndex, cl100k, count_tokens
from chunkbench_core.errors import ChunkingError
from chunkbench_core.parsing.models import ParsedDocument, TreeNode, Unit


def doc(text: str, name: str = "doc.md", units=None) -> ParsedDocument:
    return ParsedDocument(document=name, markdown=text, tree=TreeNode("document"), units=units or [], parser="test")


def test_token_index_matches_tiktoken_and_handles_split_multibyte_chars():
    text = "Hello world. سلام بر شما، این یک آزمون است. Emoji 😀 end."
    index = TokenIndex(text)
    assert index.n_tokens == len(cl100k().encode_ordinary(text))
    assert index.count(0, len(text)) == index.n_tokens
    assert list(index.starts) == sorted(index.starts)
    assert index.char_offset(index.n_tokens) == len(text)


def test_fixed_size_golden_windows():
    text = " ".join(f"w{i}" for i in range(40))
    ids = cl100k().encode_ordinary(text)
    chunks = make_chunker("fixed_size", chunk_size=10, chunk_overlap=4).chunk(doc(text))
    step = 6
    expected_windows = [ids[s : s + 10] for s in range(0, len(ids), step) if s == 0 or s + 4 < len(ids)]
    assert [cl100k().encode_ordinary(c.text) for c in chunks] == expected_windows
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert chunks[0].chunk_id == "fixed_size_doc_md_07d3004957_000000"
    assert all(c.token_count <= 10 for c in chunks)
    assert chunks[-1].end == len(text)


@pytest.mark.parametrize("strategy", ["fixed_size", "recursive"])
@pytest.mark.parametrize("size,overlap", [(20, 0), (50, 10), (8, 3)])
def test_offsets_rebuild_text_and_cover_every_non_space_char(strategy, size, overlap):
    text = (
        "# Title\n\nFirst paragraph has a few sentences. It goes on! Does it end?\n\n"
        "## Persian\n\nاین یک جمله است. و این جمله دوم است؟ بله؛ درست است.\n"
        "A line\nanother line with words words words words words words words words.\n"
    ) * 3
    chunks = make_chunker(strategy, chunk_size=size, chunk_overlap=overlap).chunk(doc(text))
    covered = [False] * len(text)
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.text.strip()
        assert c.token_count <= size
        for i in range(c.start, c.end):
            covered[i] = True
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())


def test_fixed_size_without_overlap_tiles_the_text():
    text = "alpha beta gamma delta " * 50
    chunks = make_chunker("fixed_size", chunk_size=16, chunk_overlap=0).chunk(doc(text))
    assert "".join(c.text for c in chunks) == text
    assert all(a.end == b.start for a, b in zip(chunks, chunks[1:]))


def test_recursive_golden_boundaries_prefer_headings_then_paragraphs():
    section_a = "# A\n\nalpha one. alpha two."
    section_b = "# B\n\nbeta one. beta two."
    text = f"{section_a}\n{section_b}\n"
    limit = max(count_tokens(section_a), count_tokens(section_b)) + 1
    chunks = make_chunker("recursive", chunk_size=limit, chunk_overlap=0).chunk(doc(text))
    assert [c.text for c in chunks] == [section_a, section_b]


def test_recursive_splits_sentences_when_paragraph_too_long():
    text = "One short sentence here. Another short sentence there. A third one follows."
    chunks = make_chunker("recursive", chunk_size=7, chunk_overlap=0).chunk(doc(text))
    assert [c.text for c in chunks] == [
        "One short sentence here.",
        "Another short sentence there.",
        "A third one follows.",
    ]


def test_recursive_overlap_repeats_trailing_pieces():
    text = "S1 is here. S2 is here. S3 is here. S4 is here."
    chunks = make_chunker("recursive", chunk_size=12, chunk_overlap=6).chunk(doc(text))
    assert [c.text for c in chunks] == ["S1 is here. S2 is here.", "S2 is here. S3 is here.", "S3 is here. S4 is here."]


def test_heading_path_comes_from_units():
    text = "intro\n\nbody text"
    units = [Unit("paragraph", "intro", 0, 5, ["H1"]), Unit("paragraph", "body text", 7, 16, ["H1", "H2"])]
    chunks = make_chunker("recursive", chunk_size=2, chunk_overlap=0).chunk(doc(text, units=units))
    assert [(c.text, c.heading_path) for c in chunks] == [("intro", ["H1"]), ("body text", ["H1", "H2"])]


def test_determinism():
    text = "Determinism matters. " * 200
    a = make_chunker("recursive", chunk_size=30, chunk_overlap=5).chunk(doc(text))
    b = make_chunker("recursive", chunk_size=30, chunk_overlap=5).chunk(doc(text))
    assert [x.to_dict() for x in a] == [y.to_dict() for y in b]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"chunk_size": 0}, "chunk_size must be a positive integer"),
        ({"chunk_size": 10, "chunk_overlap": 10}, "must be smaller than chunk_size"),
        ({"chunk_size": 10, "chunk_overlap": -1}, "chunk_overlap must be an integer >= 0"),
    ],
)
def test_bad_sizes_are_rejected_at_construction(kwargs, message):
    with pytest.raises(ChunkingError, match=message):
        make_chunker("fixed_size", **kwargs)


def test_unknown_strategy_names_the_choices():
    with pytest.raises(ChunkingError, match="unknown strategy 'nope'; choose one of: fixed_size, recursive"):
        make_chunker("nope")
