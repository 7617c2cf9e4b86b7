"""What `chunkbench run` says when a provider fails: LLM failures make it exit 1 with one line per configuration
(how many, why, what to do) and the evidence metrics kept; an embedding server that refuses ends the
configuration with the server's line. Against stdlib servers on 127.0.0.1, the command called in this process."""

from __future__ import annotations

import pytest

from tests.core.embedding.openai_server import FaultProxy
from tests.pipelines.support.small_benchmark import make_world

KEY = "sk-test-zyxwvutsrqponm9876"


@pytest.fixture()
def server():
    proxy = FaultProxy(dimension=8)
    yield proxy
    proxy.stop()


@pytest.mark.e2e  # a whole `chunkbench run` (make test-fast leaves it out)
def test_llm_refusals_make_the_run_exit_1_with_one_line_per_configuration_and_the_metrics_kept(tmp_path, server):
    world = make_world(tmp_path / "world")
    server.script(*[f"401:{KEY}"] * 50)
    env = world.env(
        CHUNKBENCH_LLM_MODEL="judge-m",
        CHUNKBENCH_LLM_BASE_URL=server.base_url,
        CHUNKBENCH_LLM_API_KEY=KEY,
        CHUNKBENCH_LLM_PRICE_INPUT="0",
        CHUNKBENCH_LLM_PRICE_OUTPUT="0",
    )
    from tests.pipelines.support.cli import chunkbench

    done = chunkbench(["run", "--strategy", "fixed_size", "--corpus-model", "all-minilm-l6-v2"], env)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert KEY not in output and "Traceback" not in output
    assert len(server.requests) == 1  # refused once: the configuration's other questions are not sent
    [line] = [x for x in done.stdout.splitlines() if x.startswith("- ") and "not judged" in x]
    host = server.base_url.split("/")[2]
    assert "4 of 4 questions not judged (4 without an answer, 0 without a judgement)" in line
    assert f"LLM server {host} (model judge-m) answered HTTP 401: Incorrect API key provided: [redacted]" in line
    assert "check the key in CHUNKBENCH_LLM_API_KEY" in line
    assert "LLM failures (1 configuration; their evidence metrics are kept" in done.stdout
    rows = world.leaderboard()
    assert rows and rows[0][4] is not None and rows[0][4] > 0  # the evidence metrics (recall) were computed and kept


def test_defaults_list_names_the_request_timeout_and_the_retry_budget(tmp_path):
    import json

    from tests.pipelines.support.cli import chunkbench

    world = make_world(tmp_path / "world")
    done = chunkbench(["defaults", "list"], world.env(CHUNKBENCH_PROVIDER_TIMEOUT_S="12"))
    data = json.loads(done.stdout)
    assert (data["provider_timeout_seconds"], data["provider_retry_budget_seconds"]) == (12.0, 60.0)
    bad = chunkbench(["defaults", "list"], world.env(CHUNKBENCH_PROVIDER_RETRY_BUDGET_S="soon"))
    assert bad.returncode == 2 and bad.stderr.strip() == (
        "chunkbench defaults: error: CHUNKBENCH_PROVIDER_RETRY_BUDGET_S must be a number of seconds, got 'soon'"
    )
