"""The chunkbench command line: what each command prints and its exit status, for a user's environment.

The commands are called in this test process with exactly the environment given (tests/pipelines/support/cli.py:
the exit status and both output streams as a subprocess gives them), without starting Python, Dagster and the
embedding engine again for each of the 14; the installed ``chunkbench`` entry point as a process is tested in
test_cli_startup.py.
"""

import json
from pathlib import Path

import pytest

from tests.pipelines.support.cli import chunkbench
from tests.support import calibration

ROOT = Path(__file__).resolve().parents[2]


# a user's environment: none of the variables of this process (CHUNKBENCH_*, OPENAI_*, ...), the home of each test
BASE_ENV = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}


def run(*args, env_home, **env):
    return chunkbench(args, {**BASE_ENV, "CHUNKBENCH_HOME": str(env_home), **env}, cwd=ROOT)


def test_parse_prints_units_and_fails_clearly_on_bad_input(tmp_path):
    good = tmp_path / "note.md"
    good.write_text("# Title\n\nA paragraph about tides.\n", encoding="utf-8")
    result = run("parse", str(good), env_home=tmp_path)
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)
    assert [(u["content_type"], u["text"]) for u in parsed["units"]] == [("paragraph", "A paragraph about tides.")]
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4 truncated")
    result = run("parse", str(bad), env_home=tmp_path)
    assert result.returncode == 1 and "broken.pdf" in result.stderr


@pytest.mark.slow
def test_chunk_uses_the_boundary_model_for_semantic_strategies(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Cats\n\nCats purr. Cats sleep a lot. Cats chase mice.\n\n# Taxes\n\n"
        "Taxes are due in April. Late filing costs a fee. Receipts must be kept.\n",
        encoding="utf-8",
    )
    result = run("chunk", str(doc), "--strategy", "semantic", env_home=tmp_path)
    assert result.returncode == 0, result.stderr
    chunks = json.loads(result.stdout)
    text = doc.read_text(encoding="utf-8")
    assert chunks and all(text[c["start"] : c["end"]] == c["text"] for c in chunks)
    # the cuts come from the BOUNDARY model: an unavailable one fails semantic, and fixed_size does not use it
    unavailable = run(
        "chunk", str(doc), "--strategy", "semantic", "--boundary-model", "text-embedding-3-small", env_home=tmp_path
    )
    assert unavailable.returncode == 1 and "text-embedding-3-small" in unavailable.stderr
    assert "OPENAI_API_KEY" in unavailable.stderr
    assert (
        run(
            "chunk",
            str(doc),
            "--strategy",
            "fixed_size",
            "--boundary-model",
            "text-embedding-3-small",
            env_home=tmp_path,
        ).returncode
        == 0
    )
    result = run(
        "chunk", str(doc), "--strategy", "fixed_size", "--chunk-size", "10", "--chunk-overlap", "20", env_home=tmp_path
    )
    assert result.returncode == 1 and "chunk_overlap (20) must be smaller than chunk_size (10)" in result.stderr


def test_models_lists_every_model_with_availability(tmp_path):
    result = run("models", "--json", env_home=tmp_path)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    by_id = {r["id"]: r for r in rows}
    assert by_id["all-minilm-l6-v2"]["available"] is True
    assert by_id["text-embedding-3-small"]["available"] is False
    assert "OPENAI_API_KEY" in by_id["text-embedding-3-small"]["reason"]


def test_estimate_without_llm_says_no_call_is_made(tmp_path):
    # the local engines' rates this process measured: timing them again is not this test's point (a fresh home's
    # own timing is tested with the calibration, tests/core/estimate, and by the pages' estimate commands)
    calibration.give_measured(tmp_path, ("all-minilm-l6-v2", "multilingual-e5-small"))
    result = run("estimate", env_home=tmp_path)
    assert result.returncode == 0 and "no LLM configured" in result.stdout


@pytest.mark.slow
def test_health_fails_only_for_what_is_configured_and_broken(tmp_path):
    from tests.core.embedding.openai_server import free_port

    result = run("health", "--no-probe", env_home=tmp_path)
    checks = {c["component"]: c for c in map(json.loads, result.stdout.splitlines())}
    assert result.returncode == 0, result.stdout  # OpenAI merely not set up is no failure
    assert checks["provider:openai"]["configured"] is False and checks["qdrant"]["ok"] is True
    dead = f"http://127.0.0.1:{free_port()}/v1"
    result = run("health", env_home=tmp_path, CHUNKBENCH_OPENAI_COMPATIBLE_URL=dead)
    checks = {c["component"]: c for c in map(json.loads, result.stdout.splitlines())}
    assert result.returncode == 1 and not checks[f"provider:openai_compatible:{dead}"]["ok"]


def test_init_creates_the_provider_pools_with_their_starting_limit(tmp_path):
    from dagster import DagsterInstance

    result = run("init", env_home=tmp_path)
    assert result.returncode == 0, result.stderr
    dagster_home = Path(result.stdout.strip())
    assert dagster_home == tmp_path / "dagster_home"
    with DagsterInstance.from_config(str(dagster_home)) as instance:
        storage = instance.event_log_storage
        assert storage.get_concurrency_keys() == {"openai", "openai_compatible"}
        assert storage.get_concurrency_info("openai").slot_count == 2
        storage.set_concurrency_slots("openai", 5)  # what the UI's Concurrency page does
    again = run("init", env_home=tmp_path, CHUNKBENCH_PROVIDER_POOL_LIMIT="3")
    assert again.returncode == 0, again.stderr
    with DagsterInstance.from_config(str(dagster_home)) as instance:
        storage = instance.event_log_storage
        assert storage.get_concurrency_info("openai").slot_count == 5  # a limit set by hand is kept
        assert storage.get_concurrency_info("openai_compatible").slot_count == 2


def test_estimate_prices_the_sampled_corpus_as_it_times_it(tmp_path):
    """--sample-documents: the tokens and dollars are those of the sample (the evidence document and seeded
    others), like the time; the whole corpus without the flag."""
    import re

    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    for d in range(6):
        (corpus / f"notes{d}.md").write_text(
            f"# Notes {d}\n\n"
            + " ".join(f"Note {i} of file {d}: the quay of Quelm is checked at {i % 12} o'clock." for i in range(200))
            + "\n",
            encoding="utf-8",
        )
    (questions / "set.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": "q1",
                        "question": "When is the quay checked in note 3?",
                        "references": [{"document": "notes0.md", "content": "Note 3 of file 0: the quay of Quelm"}],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    env = {
        **BASE_ENV,
        "CHUNKBENCH_HOME": str(tmp_path / "home"),
        "CHUNKBENCH_CORPUS": str(corpus),
        "CHUNKBENCH_QUESTIONS": str(questions),
    }
    calibration.give_measured(tmp_path / "home")  # MiniLM's rate as this process measured it: not this test's point

    def tokens(*flags):
        done = chunkbench(
            ["estimate", "--strategy", "fixed_size", "--corpus-model", "all-minilm-l6-v2", *flags], env, cwd=ROOT
        )
        assert done.returncode == 0, done.stdout + done.stderr
        [count] = re.findall(r"index all-minilm-l6-v2: 1 collection\(s\), about ([\d,]+) tokens", done.stdout)
        return int(count.replace(",", "")), done.stdout

    whole, _ = tokens()
    sampled, printed = tokens("--sample-documents", "2")
    assert "tokens and dollars of the sampled corpus: sample of 2 of 6 documents (1 with evidence, seed 0)" in printed
    assert abs(sampled * 3 - whole) <= 3  # six files of one size: two of them are a third of the tokens
    # the time: the same sample, its documents parsed for the estimate (their tokens are those of their text)
    [parsed] = re.findall(r"parsing: every document is parsed already \(2 documents, ([\d,]+) tokens\)", printed)
    assert int(parsed.replace(",", "")) < sampled  # the chunks' overlap repeats some of the text's tokens
