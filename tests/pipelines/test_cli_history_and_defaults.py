"""ask and its query history, role defaults, the strategy catalog, parser settings and the boundary model's
language, run as a user runs them (a subprocess on this checkout, real MiniLM/e5, real embedded Qdrant and DuckDB)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chunkbench_core.datasets import SAMPLE_CORPUS
from chunkbench_core.settings import Settings

from .support.cli import chunkbench

ROOT = Path(__file__).resolve().parents[2]
MODEL, E5 = "all-minilm-l6-v2", "multilingual-e5-small"
QUESTION = "What are the core working hours?"


def cli(*args, home, **env):
    # in this process (tests/pipelines/support/cli.py): the commands' behaviour is the point, not the entry point
    return chunkbench(
        args, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CHUNKBENCH_HOME": str(home), **env}
    )


def build_fixed_size(home: Path) -> None:
    """One built configuration (fixed_size x MiniLM) of two sample documents, where the command line looks."""
    from chunkbench_core.parsing import parse
    from chunkbench_core.stages.collections import BuildRequest, build_collection
    from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
    from chunkbench_pipelines.cli.instance import resources

    settings = Settings.load({"CHUNKBENCH_HOME": str(home)})
    made = resources(settings)
    documents = []
    for name in ("employee_handbook.docx", "product_faq.md"):
        document = parse(str(Path(SAMPLE_CORPUS) / name))
        document.document = name
        documents.append(document)
    spec = resolve_collection(CollectionRequest("fixed_size", MODEL), SpecContext.of(settings))
    with made["qdrant"].open() as store:
        build_collection(
            BuildRequest(spec, documents), made["embeddings"].embedder(MODEL), None, store, made["duckdb"].results()
        )


@pytest.mark.slow
def test_ask_without_a_configuration_saves_the_query_and_queries_show_it_by_prefix(tmp_path):
    home = tmp_path / "home"
    build_fixed_size(home)
    asked = cli("ask", QUESTION, "--top-k", "3", home=home)
    assert asked.returncode == 0, asked.stderr
    # no comparison yet: the corpus model in force (the registry's) and its built collection, said on stderr
    assert f"asking fixed_size × {MODEL}" in asked.stderr and "registry" in asked.stderr
    assert f"configuration: fixed_size × {MODEL}" in asked.stdout
    [query_id] = re.findall(r"saved as query ([0-9a-f]{16})", asked.stdout)

    listed = cli("queries", "list", home=home)
    assert listed.returncode == 0 and listed.stdout.startswith(query_id) and "3 hits, no answer" in listed.stdout
    shown = cli("queries", "show", query_id[:8], home=home)
    assert shown.returncode == 0, shown.stderr
    assert f"query {query_id}" in shown.stdout and QUESTION in shown.stdout and "employee_handbook.docx" in shown.stdout
    data = json.loads(cli("queries", "show", query_id[:10], "--json", home=home).stdout)
    assert data["configuration_source"] == "defaults" and len(data["retrieved"]) == 3
    assert {"start", "end", "score", "text", "chunk_id"} <= set(data["retrieved"][0])
    assert any("10:00 to 15:30" in hit["text"] for hit in data["retrieved"])

    not_saved = cli(
        "ask", QUESTION, "--strategy", "fixed_size", "--corpus-model", MODEL, "--no-save", "--json", home=home
    )
    assert not_saved.returncode == 0 and json.loads(not_saved.stdout)["query_id"] is None
    assert len(json.loads(cli("queries", "list", "--json", home=home).stdout)) == 1
    # the saved question's embedding is in embedding_usage next to the corpus's; the unsaved one left no trace
    from chunkbench_core.storage.results_db import ResultsDB

    usage = ResultsDB(Settings.load({"CHUNKBENCH_HOME": str(home)}).results_dir).query(
        "SELECT stage, strategy, corpus_model, texts FROM embedding_usage WHERE stage = 'queries'"
    )
    assert usage.to_dict("records") == [
        {"stage": "queries", "strategy": "fixed_size", "corpus_model": MODEL, "texts": 1}
    ]
    short = cli("queries", "show", query_id[:7], home=home)
    assert short.returncode == 1 and "at least 8" in short.stderr
    missing = cli("ask", QUESTION, "--strategy", "recursive", "--corpus-model", MODEL, home=home)
    assert missing.returncode == 1 and "chunkbench run --strategy recursive" in missing.stderr


def test_defaults_set_corpus_model_is_what_models_shows_in_force_with_its_source(tmp_path):
    home = tmp_path / "home"
    shown = cli("models", home=home)
    assert shown.returncode == 0, shown.stderr
    assert re.search(rf"corpus_model\s+{MODEL}\s+\(registry:", shown.stdout)
    # the sample benchmark is not parsed yet: the boundary model is the registry's
    assert re.search(rf"boundary_model\s+{MODEL}\s+\(registry:", shown.stdout)
    assert f"{E5}" in shown.stdout and "multilingual" in shown.stdout
    done = cli("defaults", "set", "corpus_model", E5, home=home)
    assert done.returncode == 0 and json.loads(done.stdout)["corpus_model"] == E5
    shown = cli("models", home=home)
    assert re.search(rf"corpus_model\s+{E5}\s+\(defaults set: chunkbench defaults set corpus_model\)", shown.stdout)
    rows = [json.loads(line) for line in cli("models", "--json", home=home).stdout.splitlines()]
    assert {r["id"]: r["in_force_as"] for r in rows}[E5] == {"corpus_model": "defaults set"}
    assert {r["id"]: r["languages"] for r in rows}[MODEL] == ["en"]
    cli("defaults", "clear", "corpus_model", home=home)
    env = cli("models", home=home, CHUNKBENCH_CORPUS_MODEL=E5)
    assert re.search(rf"corpus_model\s+{E5}\s+\(environment: CHUNKBENCH_CORPUS_MODEL\)", env.stdout)
    settings = cli("settings", home=home, CHUNKBENCH_CORPUS_MODEL=E5)
    assert "CHUNKBENCH_CORPUS_MODEL" in settings.stdout and "corpus model in force" in settings.stdout
    bad = cli("defaults", "set", "corpus_model", "nope", home=home)
    assert bad.returncode == 1 and "unknown embedding model 'nope'" in bad.stderr


def test_strategies_lists_each_strategy_with_its_options_and_capabilities(tmp_path):
    from chunkbench_core.chunking import STRATEGIES

    result = cli("strategies", home=tmp_path)
    assert result.returncode == 0, result.stderr
    for name in STRATEGIES.names():
        assert re.search(rf"^{name}$", result.stdout, re.M), name
    structural = cli("strategies", "structural", home=tmp_path).stdout
    assert "--table-chunks (one of row, group; default row)" in structural
    assert "cuts with the boundary model" in structural
    data = json.loads(cli("strategies", "--json", home=tmp_path).stdout)
    by_name = {s["name"]: s for s in data}
    assert by_name["semantic"]["capabilities"]["boundary_model"] is True
    assert by_name["fixed_size"]["capabilities"]["sweepable"] is True
    assert cli("strategies", "nope", home=tmp_path).returncode == 2


def test_parse_explains_its_rules_and_reads_the_benchmarks_parser_settings(tmp_path):
    home = tmp_path / "home"
    document = tmp_path / "faq.docx"
    from docx import Document

    word = Document()
    for text in (
        "Question: How many days of leave?",
        "Answer: Twenty-six days a year.",
        "Vraag: Where is the office?",
        "Antwoord: In Utrecht.",
    ):
        word.add_paragraph(text)
    word.save(document)
    explained = cli("parse", str(document), "--explain", home=home)
    assert explained.returncode == 0, explained.stderr
    assert "parser settings: the defaults" in explained.stdout and "1 Q&A pair" in explained.stdout
    written = cli("parse", "--write-settings", home=home)
    settings_file = home / "benchmarks" / "sample" / "parser.toml"
    assert written.returncode == 0 and str(settings_file) in written.stdout and settings_file.is_file()
    again = cli("parse", "--write-settings", home=home)
    assert again.returncode == 1 and "--force" in again.stderr
    text = settings_file.read_text(encoding="utf-8")
    text = text.replace("question_markers = [", "question_markers = ['vraag', ", 1)
    text = text.replace("answer_markers = [", "answer_markers = ['antwoord', ", 1)
    settings_file.write_text(text, encoding="utf-8")
    explained = cli("parse", str(document), "--explain", home=home)
    assert f"parser settings file: {settings_file}" in explained.stdout and "2 Q&A pairs" in explained.stdout
    assert "question_markers" in explained.stdout  # the changed settings are listed
    settings_file.write_text("[qa]\nquestion_markers = 'vraag'\n", encoding="utf-8")
    bad = cli("parse", str(document), home=home)
    assert bad.returncode == 2 and "parser.toml" in bad.stderr and "question_markers must be a list" in bad.stderr


@pytest.mark.slow
def test_chunk_cuts_a_persian_document_with_the_multilingual_boundary_model(tmp_path):
    persian = Path(SAMPLE_CORPUS) / "persian_leave_policy.docx"
    result = cli("chunk", str(persian), "--strategy", "cluster_semantic", home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"boundary model: {E5} (corpus language:" in result.stderr and "Arabic script" in result.stderr
    chosen = cli("chunk", str(persian), "--strategy", "cluster_semantic", "--boundary-model", MODEL, home=tmp_path)
    assert chosen.returncode == 0 and "warning: the boundary model all-minilm-l6-v2 reads English only" in chosen.stderr
    assert json.loads(result.stdout) != json.loads(chosen.stdout)


def test_queries_list_shows_the_corpus_model_in_force_like_ask(tmp_path):
    from datetime import datetime, timezone

    from chunkbench_core.labels import configuration_label
    from chunkbench_core.storage.queries import save_query
    from chunkbench_core.storage.results_db import ResultsDB

    home = tmp_path / "home"
    results = ResultsDB(Settings.load({"CHUNKBENCH_HOME": str(home)}).results_dir)
    for i, model in enumerate((MODEL, E5)):
        save_query(
            results,
            {
                "query_id": f"{i:016x}",
                "question": f"{QUESTION} ({model})",
                "strategy": "fixed_size",
                "corpus_model": model,
                "configuration": configuration_label("fixed_size", model),
                "configuration_source": "given",
                "retrieved": "[]",
                "answer": None,
                "total_ms": 5.0,
                "created_at": datetime(2026, 12, 1, 10, i, tzinfo=timezone.utc),
            },
        )
    both = cli("queries", "list", home=home)  # no default chosen: every model's
    assert both.returncode == 0, both.stderr
    assert MODEL in both.stdout and E5 in both.stdout and both.stderr == ""
    assert cli("defaults", "set", "corpus_model", E5, home=home).returncode == 0
    mine = cli("queries", "list", home=home)
    assert mine.returncode == 0 and E5 in mine.stdout and MODEL not in mine.stdout
    assert f"queries of {E5}, the corpus model in force (defaults set" in mine.stderr
    assert "--corpus-model all" in mine.stderr
    assert MODEL in cli("queries", "list", "--corpus-model", MODEL, home=home).stdout
    every = json.loads(cli("queries", "list", "--corpus-model", "all", "--json", home=home).stdout)
    assert {q["configuration"] for q in every} == {configuration_label("fixed_size", m) for m in (MODEL, E5)}
