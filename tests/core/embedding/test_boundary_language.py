"""The boundary model reads the corpus's language: the rule, the choice and its record, and the Persian sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkbench_core.datasets import SAMPLE_CORPUS
from chunkbench_core.embedding import Embedder, builtin_registry, get_model, load_registry
from chunkbench_core.embedding.language import NON_LATIN_SHARE, ScriptShare, choose_boundary_model
from chunkbench_core.embedding.registry import InvalidModelSpec
from chunkbench_core.errors import ConfigError
from chunkbench_core.parsing import parse
from chunkbench_core.provenance import settings_fingerprint
from chunkbench_core.stages.collections import build_chunker
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, model_window, resolve_collection

PERSIAN_DOC = Path(SAMPLE_CORPUS) / "persian_leave_policy.docx"
MINILM, E5 = "all-minilm-l6-v2", "multilingual-e5-small"


def test_the_shipped_registry_declares_what_each_model_reads():
    registry = builtin_registry()
    assert registry[MINILM].english_only and not registry[MINILM].multilingual
    assert registry[E5].multilingual and registry[E5].reads("fa")
    assert registry[MINILM].reads("fa") is False and registry[MINILM].reads("en") is True


def test_a_bad_languages_value_names_the_model_and_the_field(tmp_path):
    bad = tmp_path / "models.toml"
    bad.write_text(
        '[[models]]\nid = "x"\nprovider = "local"\nengine = "minilm_onnx"\nmodel_name = "m"\n'
        'dimension = 4\nmax_input_tokens = 8\nlanguages = "en"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"'x'.*'languages'"):
        load_registry(bad)
    with pytest.raises(InvalidModelSpec, match="languages"):
        get_model(MINILM).__class__(
            id="y",
            provider="local",
            engine="minilm_onnx",
            model_name="m",
            dimension=4,
            max_input_tokens=8,
            languages=("English",),
        )


def test_the_rule_is_a_share_of_letters_outside_the_latin_script():
    english = ScriptShare.of(["Annual leave is 26 days a year; unused days carry over."])
    persian = ScriptShare.of(["مرخصی استحقاقی سالانه ۲۶ روز است."])
    assert english.non_latin == 0 and not english.needs_multilingual
    assert persian.non_latin == 1 and persian.needs_multilingual and persian.main_other_script == "arabic"
    assert "Arabic script" in persian.describe()
    # 5% is the line: 4 Persian letters in 100 are not enough, 6 are
    assert not ScriptShare.of(["a" * 96 + "سلام"]).needs_multilingual
    assert ScriptShare.of(["a" * 94 + "سلامتی"]).needs_multilingual
    assert NON_LATIN_SHARE == 0.05
    # digits, punctuation and spaces are not letters; shares add up over documents
    both = english + persian
    assert both.letters == english.letters + persian.letters
    assert ScriptShare.from_dict(both.to_dict()) == both
    assert ScriptShare.of(["Мир", "世界"]).by_script == {"cjk": 2, "cyrillic": 3}


def test_an_english_only_default_gives_way_to_a_multilingual_model_on_a_persian_corpus():
    registry = builtin_registry()
    persian = ScriptShare.of(["مرخصی استحقاقی سالانه"])
    choice = choose_boundary_model(registry, corpus=persian)
    assert (choice.model, choice.source, choice.replaced) == (E5, "corpus language", MINILM)
    assert "reads English only" in choice.reason and choice.warning is None
    # English corpus, or nothing known: the registry's default stands
    assert choose_boundary_model(registry, corpus=ScriptShare.of(["leave policy"])).model == MINILM
    assert choose_boundary_model(registry).model == MINILM


@pytest.mark.parametrize("how", ["explicit", "shared_default", "machine_default"])
def test_a_chosen_english_only_model_is_kept_with_a_warning(how):
    persian = ScriptShare.of(["مرخصی استحقاقی سالانه"])
    choice = choose_boundary_model(builtin_registry(), corpus=persian, **{how: MINILM})
    assert choice.model == MINILM and choice.source != "corpus language"
    assert "reads English only" in choice.warning and "chunkbench defaults set boundary_model" in choice.warning


def test_no_multilingual_model_registered_refuses_naming_the_command(tmp_path):
    only_english = tmp_path / "models.toml"
    only_english.write_text(
        'include_builtin = false\n[[models]]\nid = "all-minilm-l6-v2"\nprovider = "local"\nengine = "minilm_onnx"\n'
        'model_name = "m"\ndimension = 384\nmax_input_tokens = 256\nlanguages = ["en"]\n',
        encoding="utf-8",
    )
    registry = load_registry(only_english)
    with pytest.raises(ConfigError, match="chunkbench defaults set boundary_model all-minilm-l6-v2"):
        choose_boundary_model(registry, corpus=ScriptShare.of(["مرخصی"]))


def test_the_persian_sample_is_cut_by_e5_by_default_and_the_cuts_differ_from_minilm(tmp_path):
    parsed = parse(PERSIAN_DOC)
    script = ScriptShare.of([parsed.markdown])
    assert script.needs_multilingual, script
    registry = builtin_registry()
    context = SpecContext(registry, corpus_script=script)
    spec = resolve_collection(CollectionRequest("semantic", MINILM), context)
    assert spec.boundary_model == E5 and spec.boundary_choice.source == "corpus language"
    # recorded in the build's settings (provenance), without changing what decides the chunks
    assert spec.settings["boundary_choice"]["model"] == E5
    assert settings_fingerprint(spec.settings) == settings_fingerprint(
        {k: v for k, v in spec.settings.items() if k != "boundary_choice"}
    )
    json.dumps(spec.settings)
    # MiniLM chosen explicitly: a variant of its own, kept, with the warning
    chosen = resolve_collection(CollectionRequest("semantic", MINILM, boundary_model=MINILM), context)
    assert chosen.boundary_model == MINILM and chosen.boundary_choice.warning and chosen.variant

    def cuts(strategy, boundary, **options):
        spec = resolve_collection(
            CollectionRequest(strategy, MINILM, boundary_model=boundary, options=options), context
        )
        chunker = build_chunker(spec, model_window(spec.model), Embedder(get_model(boundary)))
        return [(c.start, c.end) for c in chunker.chunk(parsed)]

    # cut where each model's own adjacent similarities are lowest: the two models disagree on Persian
    e5_cuts = cuts("semantic", E5, threshold_mode="percentile", percentile=80.0)
    minilm_cuts = cuts("semantic", MINILM, threshold_mode="percentile", percentile=80.0)
    assert len(e5_cuts) > 1 and len(minilm_cuts) > 1 and e5_cuts != minilm_cuts
    # and with its defaults, the strategy that cuts by similarity alone
    assert cuts("cluster_semantic", E5) != cuts("cluster_semantic", MINILM)


def test_an_english_document_keeps_the_registry_default():
    parsed = parse(Path(SAMPLE_CORPUS) / "product_faq.md")
    context = SpecContext(builtin_registry(), corpus_script=ScriptShare.of([parsed.markdown]))
    spec = resolve_collection(CollectionRequest("semantic", MINILM), context)
    assert spec.boundary_model == MINILM and spec.boundary_choice.source == "registry"


def test_semantic_strategies_cut_persian_and_english_alike_with_e5_by_default():
    """multilingual-e5's fixed threshold (0.82) cuts none of the Persian sample's sentence pairs, whose adjacent
    similarities all run above it, and about half of the English ones: the default percentile rule cuts each
    document at its own largest distances, so both get semantic cuts."""
    from chunkbench_core.chunking.boundaries import CutRule, adjacent_similarities, embed_units
    from chunkbench_core.chunking.sentences import sentence_spans

    boundary = Embedder(get_model(E5))
    embed = lambda texts: boundary.embed(list(texts), "document")  # noqa: E731 - a one-line helper reads best beside its use
    registry = builtin_registry()
    for name in ("persian_leave_policy.docx", "employee_handbook.docx"):
        parsed = parse(Path(SAMPLE_CORPUS) / name)
        sentences = sentence_spans(parsed.markdown, 0, len(parsed.markdown))
        similarities = adjacent_similarities(
            embed_units("semantic", embed, [parsed.markdown[a:b] for a, b in sentences])
        )
        absolute = CutRule("absolute", registry[E5].default_semantic_threshold).cut_masks([similarities])[0]
        relative = CutRule("percentile").cut_masks([similarities])[0]
        assert relative.sum() >= max(1, int(0.04 * len(similarities))), name
        if name.startswith("persian"):
            assert absolute.sum() == 0  # what the fixed threshold did
        context = SpecContext(registry, corpus_script=ScriptShare.of([parsed.markdown]))
        for strategy in ("semantic", "structural", "semantic_parent_child"):
            spec = resolve_collection(CollectionRequest(strategy, MINILM, chunk_size=4000, boundary_model=E5), context)
            assert spec.threshold_mode == "percentile" and spec.threshold is None
            assert spec.settings["threshold_mode"] == "percentile"
            chunker = build_chunker(spec, None, boundary)
            chunks = [c for c in chunker.chunk(parsed) if c.role != "parent"]
            if strategy == "semantic":  # no size cut at 4,000 tokens: every cut is a semantic one
                assert len(chunks) > 1, (name, strategy)
    # absolute mode is still there, with the threshold in force
    spec = resolve_collection(
        CollectionRequest("semantic", MINILM, boundary_model=E5, options={"threshold_mode": "absolute"}), context
    )
    assert spec.threshold == registry[E5].default_semantic_threshold and spec.threshold_source == "registry"
