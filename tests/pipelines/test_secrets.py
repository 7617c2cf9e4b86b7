"""No secret in any error: a provider that echoes the API key in its 401 (as OpenAI does) leaves no trace of it
in CHUNKBENCH_HOME (DuckDB, Parquet, reports, parsed store, caches), the Dagster storage or the output."""

import json
import os
import secrets
from pathlib import Path

import pytest

from chunkbench_core.redaction import describe_error, redact
from chunkbench_core.settings import Settings
from chunkbench_core.storage.results_db import ResultsDB
from tests.pipelines.support.cli import chunkbench
from tests.pipelines.support.echo_key_server import EchoKeyServer
from tests.support import calibration

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_redact_removes_configured_keys_and_key_shapes():
    # a key configured in the environment is registered when the settings are built from it (at the edges)
    Settings.load({"CHUNKBENCH_OPENAI_COMPATIBLE_API_KEY": "plain-looking-value-42"})
    text = (
        "Incorrect API key provided: sk-proj-abcd1234********wxyz; Authorization: Bearer abc.def.ghi-123456; "
        'api_key="zz-top-secret"; echoed plain-looking-value-42'
    )
    clean = redact(text)
    for leaked in ("sk-proj-abcd1234", "abc.def.ghi-123456", "zz-top-secret", "plain-looking-value-42"):
        assert leaked not in clean
    assert clean.startswith("Incorrect API key provided: [redacted]")
    assert redact("the task-specific sk-learn note") == "the task-specific sk-learn note"

    class HTTPError(Exception):
        status_code = 401

    assert describe_error(HTTPError("bad key sk-abcdefghijklmnop")) == "HTTP 401 HTTPError: bad key [redacted]"


def _files_containing(folder: Path, needles: list[bytes]) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path} holds {n!r}" for n in needles if n in data]
    return found


def test_an_echoed_key_is_stored_nowhere(tmp_path):
    corpus, questions, home, dagster_home = (tmp_path / n for n in ("corpus", "questions", "home", "dagster_home"))
    for folder in (corpus, questions, dagster_home):
        folder.mkdir()
    (corpus / "tides.md").write_text("# Tides\n\nThe harbour of Quelm floods twice a day.\n", encoding="utf-8")
    (questions / "q.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": "t1",
                        "question": "How often does Quelm flood?",
                        "expected_answer": "Twice a day.",
                        "references": [{"document": "tides.md", "content": "floods twice a day"}],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    llm_key = "sk-hostile-" + secrets.token_hex(16)
    provider_key = "cbk-local-" + secrets.token_hex(16)  # not shaped like a key: removed as a configured secret
    server = EchoKeyServer()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CHUNKBENCH_", "OPENAI_", "QDRANT_"))},
        "PYTHONPATH": str(ROOT),
        "CHUNKBENCH_HOME": str(home),
        "DAGSTER_HOME": str(dagster_home),
        "CHUNKBENCH_BENCHMARK": "secrets",
        "CHUNKBENCH_CORPUS": str(corpus),
        "CHUNKBENCH_QUESTIONS": str(questions),
        "CHUNKBENCH_LLM_MODEL": "gpt-test",
        "CHUNKBENCH_LLM_BASE_URL": server.base_url,
        "CHUNKBENCH_LLM_API_KEY": llm_key,
        "CHUNKBENCH_OPENAI_COMPATIBLE_URL": server.base_url,
        "CHUNKBENCH_OPENAI_COMPATIBLE_API_KEY": provider_key,
    }
    calibration.give_measured(home)  # MiniLM's rate as this worker measured it, not timed again on this fresh home
    calibration.give_graph(home)  # and its fused graph, as a first run keeps it
    try:  # in this process, with exactly this environment and both output streams (fd 1 and 2) captured
        run = chunkbench(
            [
                "run",
                "--strategy",
                "fixed_size",
                "--corpus-model",
                "all-minilm-l6-v2",
                "--corpus-model",
                "nomic-embed-text-v2-moe",
            ],
            env,
            cwd=ROOT,
        )
    finally:
        server.stop()
    output = run.stdout + run.stderr
    assert server.requests >= 2, output  # the LLM answer and the embedding request both reached the server
    assert run.returncode == 1, output  # the nomic partition failed (rejected)
    assert "nomic-embed-text-v2-moe" in output and "401" in output and "[redacted]" in output
    needles = [k.encode() for k in (llm_key, provider_key)] + [
        llm_key[:8].encode() + b"****",
        llm_key[-16:].encode(),
        provider_key[-16:].encode(),
    ]
    for needle in needles:
        assert needle.decode() not in output
    leaks = _files_containing(home, needles) + _files_containing(dagster_home, needles)
    assert leaks == []
    # the answer error was recorded (redacted), so the test looked where the key would have gone
    results = ResultsDB(home / "benchmarks" / "secrets")  # the benchmark's folder: CHUNKBENCH_BENCHMARK above
    [error] = results.query("SELECT answer_error FROM question_results")["answer_error"]
    assert "401" in error and "[redacted]" in error
