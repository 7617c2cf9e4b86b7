"""The fused MiniLM graph gives the packaged graph's vectors, and is kept for the next process; batching and the memo
never mix vectors up."""

from __future__ import annotations

import numpy as np
import pytest

from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.embedding.local import MEMO, VectorMemo
from chunkbench_core.embedding.local_onnx import (
    GraphMismatch,
    MiniLMOnnx,
    _model_path,
    fused_graph,
    fused_graph_name,
    kept_fused_graph,
    shared_minilm,
)

LONG = " ".join(f"The lava flow number {i} cooled into basalt columns near the coast." for i in range(60))
TEXTS = [
    "lava",
    "Which mineral gives basalt its dark colour?",
    LONG,  # well over 256 word pieces: truncated
    "Quarterly revenue rose 12% to $4.1 billion, driven by cloud services.",
    "کوه دماوند بلندترین کوه ایران است.",
    "a b c d e f g",
    LONG[:700],
    "The patient was given 5 mg of the drug twice a day for two weeks.",
]


@pytest.fixture(scope="module")
def packaged() -> MiniLMOnnx:
    return MiniLMOnnx(graph="packaged")


def test_fused_graph_replaces_attention_and_gelu():
    import onnx

    model = onnx.load_from_string(fused_graph(_model_path()))
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("Attention") == 6 and ops.count("BiasGelu") == 6
    assert not {"Softmax", "Erf", "IsNaN"} & set(ops)  # the unfused attention and GELU are gone
    assert shared_minilm().graph == "fused"


def test_fused_graph_gives_the_packaged_vectors(packaged):
    fused = shared_minilm().embed(TEXTS, batch_size=4)
    before = packaged.embed(TEXTS, batch_size=4)
    cosine = (fused * before).sum(axis=1)
    assert cosine.min() >= 0.99999, cosine
    np.testing.assert_allclose(fused, before, atol=1e-5)


def test_the_fused_graph_is_kept_read_back_and_built_again_when_damaged(tmp_path, monkeypatch, caplog):
    built = fused_graph(_model_path())
    folder = tmp_path / "models"
    assert kept_fused_graph(_model_path(), folder) == built  # built, then kept
    [kept] = folder.iterdir()
    assert kept.name == fused_graph_name(_model_path()) and not [p for p in folder.iterdir() if p.suffix == ".tmp"]

    calls = []
    import chunkbench_core.embedding.local_onnx as local_onnx

    def counted(path):
        calls.append(path)
        return built

    monkeypatch.setattr(local_onnx, "fused_graph", counted)
    assert kept_fused_graph(_model_path(), folder) == built and calls == []  # read back, not built

    damaged = bytearray(kept.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    kept.write_bytes(bytes(damaged))
    with caplog.at_level("WARNING"):
        assert kept_fused_graph(_model_path(), folder) == built and len(calls) == 1  # built again...
    assert "damaged" in caplog.text
    assert kept_fused_graph(_model_path(), folder) == built and len(calls) == 1  # ...and kept whole again
    kept.write_bytes(kept.read_bytes()[:1000])  # truncated: built again too
    assert kept_fused_graph(_model_path(), folder) == built and len(calls) == 2

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert kept_fused_graph(_model_path(), blocked / "models") == built  # cannot be kept: built, and the run goes on
    assert kept_fused_graph(_model_path(), None) == built and len(calls) == 4


def test_a_model_whose_graph_was_kept_gives_the_same_vectors(tmp_path):
    first = MiniLMOnnx(graph_folder=tmp_path)
    second = MiniLMOnnx(graph_folder=tmp_path)  # reads the kept graph
    assert first.graph == second.graph == "fused" and len(list(tmp_path.iterdir())) == 1
    np.testing.assert_array_equal(first.embed(TEXTS, batch_size=4), second.embed(TEXTS, batch_size=4))


def test_a_text_embeds_the_same_alone_and_in_a_mixed_length_batch():
    model = shared_minilm()
    alone = np.stack([model.run_batch([text])[0] for text in TEXTS])
    for batch_size in (1, 3, 64):
        batched, tokens, truncated = model.embed_rows(TEXTS, batch_size=batch_size)
        cosine = batched @ alone.T  # row i against every text alone
        assert np.diag(cosine).min() >= 0.999, (batch_size, np.diag(cosine))
        assert (cosine.argmax(axis=1) == np.arange(len(TEXTS))).all(), batch_size  # no row got another's vector
        assert truncated.tolist() == [text == LONG for text in TEXTS]
        assert tokens[TEXTS.index(LONG)] == 256 and tokens[TEXTS.index("lava")] == 3
    # the input order does not matter either
    shuffled = list(reversed(TEXTS))
    np.testing.assert_allclose(model.embed(shuffled, batch_size=3)[::-1], model.embed(TEXTS, batch_size=3), atol=1e-5)


def test_fused_graph_refuses_a_graph_without_attention(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "plain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(GraphMismatch, match="no attention block"):
        fused_graph(path)


def test_memo_gives_the_same_vectors_and_usage_without_running_the_model():
    MEMO.clear()
    texts = ["basalt columns", LONG, "basalt columns", "obsidian is volcanic glass"]
    first = Embedder(get_model("all-minilm-l6-v2"))
    vectors = first.embed(texts, "document")
    usage = first.last_usage
    assert MEMO.hits == 0 and len(MEMO) == 3
    again = Embedder(get_model("all-minilm-l6-v2"))  # a second configuration of the same run, no cache
    repeated = again.embed(list(reversed(texts)) + ["pumice floats"], "document")
    assert MEMO.hits == 3 and len(MEMO) == 4  # only the new text ran
    np.testing.assert_array_equal(repeated[:4], vectors[::-1])
    assert (again.last_usage.truncated, again.last_usage.prompt_tokens > usage.prompt_tokens) == (1, True)
    assert usage.truncated == 1
    # a query is remembered apart from a document with the same text
    again.embed(["basalt columns"], "query")
    assert MEMO.hits == 3


def test_memo_drops_the_least_recently_used():
    memo = VectorMemo(max_entries=2)
    keys = [VectorMemo.key("e", "document", t) for t in "abc"]
    memo.put_many([(keys[0], np.ones(2), 1, False), (keys[1], np.zeros(2), 1, False)])
    assert set(memo.get_many([keys[0]])) == {keys[0]}  # a is now the most recent
    memo.put_many([(keys[2], np.ones(2), 1, False)])
    assert set(memo.get_many(keys)) == {keys[0], keys[2]}
    with pytest.raises(ValueError, match="max_entries"):
        VectorMemo(-1)
