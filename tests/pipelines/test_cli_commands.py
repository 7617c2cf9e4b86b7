"""The command line's safety and its settings, run as a user runs it (a subprocess on this checkout)."""

import json
from pathlib import Path

import pytest

from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore, collection_name

from .support.cli import chunkbench

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    "run",
    "parse",
    "chunk",
    "estimate",
    "models",
    "health",
    "collections",
    "thresholds",
    "defaults",
    "init",
    "runs",
    "report",
    "ask",
    "queries",
    "strategies",
]
MODEL = "all-minilm-l6-v2"


def cli(*args, home, **env):
    # in this process (tests/pipelines/support/cli.py): the commands' behaviour is the point, not the entry point
    return chunkbench(
        args, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CHUNKBENCH_HOME": str(home), **env}
    )


def test_top_level_help_lists_every_command_on_one_line(tmp_path):
    result = cli("--help", home=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    for name in COMMANDS:
        [line] = [x for x in lines if x.startswith(f"  {name} ")]
        assert len(line.split(maxsplit=1)) == 2, line  # the name and what it does, on one line


@pytest.mark.parametrize(
    "args, message",
    [
        (["collections", "wipe"], "wipe needs the collection names to delete, or --all --yes"),
        (["collections", "wipe", "--all"], "--all --yes"),
        (["collections", "preview"], "preview needs --strategy, --model and --document"),
        (["thresholds", "set"], "set needs a model id and a threshold"),
        (["thresholds", "clear"], "clear needs a model id"),
        (["defaults", "set", "boundary_model"], "set needs a setting and a value"),
        (["chunk", "x.md", "--strategy", "nope"], "invalid choice: 'nope'"),
        (["run", "--threshold-mode", "sometimes"], "choose from 'absolute', 'percentile'"),
        (["runs", "exclude"], "exclude needs a run id"),
        (["runs", "include", "some-run", "--reason", "x"], "include takes no --reason"),
        (["report", "--run", "a", "--batch", "b"], "not allowed with argument"),
    ],
)
def test_usage_errors_print_usage_and_exit_2(tmp_path, args, message):
    # (a bad --strategy / --corpus-model value of `run` is one line naming the valid values: test_run_control)
    result = cli(*args, home=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith("usage: chunkbench")
    assert message in result.stderr


@pytest.mark.slow
def test_collections_wipe_deletes_only_what_it_is_told(tmp_path):
    names = [collection_name("fixed_size", MODEL), collection_name("recursive", MODEL)]
    # no CHUNKBENCH_CORPUS nor CHUNKBENCH_BENCHMARK in cli()'s environment: the benchmark is "sample"
    with VectorStore(local_root=tmp_path / "benchmarks" / "sample" / "qdrant") as store:
        for name in names:
            store.ensure_collection(name, 384)
    listed = [json.loads(line)["name"] for line in cli("collections", "list", home=tmp_path).stdout.splitlines()]
    assert sorted(listed) == sorted(names)
    assert cli("collections", "wipe", home=tmp_path).returncode == 2
    assert cli("collections", "wipe", names[0], "--all", home=tmp_path).returncode == 2
    assert sorted(
        json.loads(line)["name"] for line in cli("collections", "list", home=tmp_path).stdout.splitlines()
    ) == sorted(names)  # nothing was deleted by a refused command
    assert cli("collections", "wipe", names[0], home=tmp_path).returncode == 0
    assert [json.loads(line)["name"] for line in cli("collections", "list", home=tmp_path).stdout.splitlines()] == [
        names[1]
    ]
    assert cli("collections", "wipe", "--all", "--yes", home=tmp_path).returncode == 0
    assert cli("collections", "list", home=tmp_path).stdout.strip() == ""


@pytest.mark.slow
def test_thresholds_and_defaults_are_kept_in_the_results_database(tmp_path):
    assert json.loads(cli("thresholds", "list", home=tmp_path).stdout) == {}
    result = cli("thresholds", "set", MODEL, "0.4", home=tmp_path)
    assert result.returncode == 0 and json.loads(result.stdout) == {MODEL: 0.4}
    bad = cli("thresholds", "set", "nope", "0.4", home=tmp_path)
    assert bad.returncode == 1 and "unknown embedding model 'nope'" in bad.stderr
    out_of_range = cli("thresholds", "set", MODEL, "1.5", home=tmp_path)
    assert out_of_range.returncode == 1 and "must be a number in (0, 1]" in out_of_range.stderr
    shared = cli("defaults", "set", "boundary_model", "multilingual-e5-small", home=tmp_path)
    waits = {"provider_timeout_seconds": 30.0, "provider_retry_budget_seconds": 60.0}  # named with the defaults
    assert json.loads(shared.stdout) == {
        "boundary_model": "multilingual-e5-small",
        "corpus_model": None,
        "thresholds": {MODEL: 0.4},
        **waits,
    }
    # another machine sharing the results folder (CHUNKBENCH_RESULTS_DIR) sees the same defaults
    other = cli("defaults", "list", home=tmp_path / "other-machine", CHUNKBENCH_RESULTS_DIR=str(tmp_path))
    assert json.loads(other.stdout) == {
        "boundary_model": "multilingual-e5-small",
        "corpus_model": None,
        "thresholds": {MODEL: 0.4},
        **waits,
    }
    assert json.loads(cli("thresholds", "clear", MODEL, home=tmp_path).stdout) == {}
    assert json.loads(cli("defaults", "clear", "boundary_model", home=tmp_path).stdout)["boundary_model"] is None


def test_a_bad_config_file_is_a_usage_error_naming_the_setting(tmp_path):
    config = tmp_path / "settings.yaml"
    config.write_text("chunking:\n  min_chunk_size: many\n", encoding="utf-8")
    result = cli("run", "--config", str(config), home=tmp_path)
    assert result.returncode == 2 and "chunking settings: min_chunk_size" in result.stderr
    config.write_text("chunkin:\n  chunk_size: 10\n", encoding="utf-8")
    result = cli("run", "--config", str(config), home=tmp_path)
    assert result.returncode == 2 and "sections parsing, chunking, experiment" in result.stderr


@pytest.mark.e2e
def test_a_chunk_size_variant_runs_end_to_end_from_a_config_file_and_flags(tmp_path):
    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "tides.md").write_text("# Tides\n\n" + "The harbour of Quelm floods twice a day. " * 30, encoding="utf-8")
    (questions / "q.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": "t1",
                        "question": "How often does Quelm flood?",
                        "references": [{"document": "tides.md", "content": "floods twice a day"}],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    config = tmp_path / "settings.toml"
    config.write_text("[chunking]\nchunk_size = 64\nchunk_overlap = 8\n[experiment]\ntop_k = 3\n", encoding="utf-8")
    home = tmp_path / "home"
    result = cli(
        "run",
        "--strategy",
        "fixed_size",
        "--corpus-model",
        MODEL,
        "--config",
        str(config),
        "--neighbor-prev",
        "1",
        "--persian-digits",
        "persian",
        home=home,
        CHUNKBENCH_CORPUS=str(corpus),
        CHUNKBENCH_QUESTIONS=str(questions),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    results = ResultsDB(home / "benchmarks" / "corpus")  # the benchmark is named after the CHUNKBENCH_CORPUS folder
    [(variant, collection, n_chunks, parse_options)] = results.query(
        "SELECT variant, collection, n_chunks, parse_options FROM collections"
    ).itertuples(index=False, name=None)
    metrics = list(
        results.query("SELECT variant, top_k, neighbor_prev, n_questions FROM experiment_metrics").itertuples(
            index=False, name=None
        )
    )
    sizes = results.query("SELECT max(token_count) AS m FROM chunks")["m"][0]
    assert variant == "size64_overlap8" and collection.endswith("__size64_overlap8_collection") and n_chunks > 3
    assert metrics == [("size64_overlap8", 3, 1, 1)] and sizes <= 64
    assert json.loads(parse_options)["persian_digits"] == "persian"  # the parser setting reached parsed_documents


def test_run_help_lists_the_valid_strategies_and_models(tmp_path):
    result = cli("run", "--help", home=tmp_path)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "fixed_size, recursive, semantic" in text and "all-minilm-l6-v2, multilingual-e5-small" in text


def test_a_command_in_this_process_starts_with_no_garbage_of_earlier_tests(tmp_path):
    """As a new process: what earlier tests left unreferenced is collected before the command starts, in this
    thread (an in-memory Dagster instance collected in a run's thread logs an SQLite error to its stderr)."""
    import gc
    import weakref

    class Left:
        pass

    left = Left()
    left.cycle = left  # only the cycle collector frees it
    gone = weakref.ref(left)
    del left
    enabled = gc.isenabled()
    gc.disable()  # no automatic collection in between: only the helper's
    try:
        assert gone() is not None
        done = cli("strategies", home=tmp_path / "home")
        assert done.returncode == 0, done.stderr
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
