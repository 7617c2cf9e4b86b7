"""`chunkbench ask` and `chunkbench questions generate` when the LLM endpoint fails: exit 1 with the provider's one
line (the server, what it said, what was tried, what to do), no traceback, the key never shown; a transient fault is
retried and the command succeeds. Against a scripted chat server on 127.0.0.1, the commands called in this process."""

from __future__ import annotations

import json

import pytest

from tests.core.evaluation.chat_server import ScriptedChatServer
from tests.pipelines.test_cli_history_and_defaults import MODEL, QUESTION, build_fixed_size, cli

KEY = "sk-test-commands-abcdefghijklmnop"
REFUSED = {"status": 401, "message": f"Incorrect API key provided: {KEY}"}


def llm_env(server: ScriptedChatServer) -> dict[str, str]:
    return {
        "CHUNKBENCH_LLM_MODEL": "cmd-m",
        "CHUNKBENCH_LLM_BASE_URL": server.base_url,
        "CHUNKBENCH_LLM_API_KEY": KEY,
        "CHUNKBENCH_PROVIDER_RETRY_BUDGET_S": "10",
    }


@pytest.mark.slow  # builds one collection of two sample documents
def test_ask_exits_1_with_the_line_when_the_llm_refuses_and_0_once_a_rate_limit_passes(tmp_path):
    home = tmp_path / "home"
    build_fixed_size(home)
    with ScriptedChatServer([REFUSED]) as server:
        refused = cli(
            "ask",
            QUESTION,
            "--strategy",
            "fixed_size",
            "--corpus-model",
            MODEL,
            "--no-save",
            home=home,
            **llm_env(server),
        )
        assert len(server.requests) == 1
    output = refused.stdout + refused.stderr
    host = server.base_url.split("/")[2]
    assert refused.returncode == 1 and "Traceback" not in output and KEY not in output
    [line] = [x for x in refused.stdout.splitlines() if x.startswith("answer failed:")]
    assert line.startswith(
        f"answer failed: LLM server {host} (model cmd-m) answered HTTP 401: Incorrect API key "
        "provided: [redacted]; not retried"
    )
    assert line.endswith("check the key in CHUNKBENCH_LLM_API_KEY (else OPENAI_API_KEY)")
    with ScriptedChatServer([{"status": 429, "retry_after": 0}, "From 10:00 to 15:30."]) as server:
        done = cli(
            "ask",
            QUESTION,
            "--strategy",
            "fixed_size",
            "--corpus-model",
            MODEL,
            "--no-save",
            "--json",
            home=home,
            **llm_env(server),
        )
        assert len(server.requests) == 2
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["answer"] == "From 10:00 to 15:30."


def test_questions_generate_exits_1_with_the_line_when_the_quota_is_used_up(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "tides.md").write_text(
        "# Tides\n\nThe harbour of Quelm floods twice a day at high tide, and boats must be moored on the outer wall "
        "between October and March. The harbour master publishes the tide table every Monday morning.\n",
        encoding="utf-8",
    )
    quota = {
        "status": 429,
        "code": "insufficient_quota",
        "message": "You exceeded your current quota, please check your plan and billing details.",
    }
    out = tmp_path / "generated.json"
    with ScriptedChatServer([quota]) as server:
        done = cli(
            "questions",
            "generate",
            "--n",
            "3",
            "--out",
            str(out),
            home=tmp_path / "home",
            CHUNKBENCH_CORPUS=str(corpus),
            **llm_env(server),
        )
        assert len(server.requests) == 1  # stopped at once, not once per passage
    output = done.stdout + done.stderr
    host = server.base_url.split("/")[2]
    assert done.returncode == 1 and "Traceback" not in output and KEY not in output
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert line.startswith(f"error: LLM server {host} (model cmd-m) answered HTTP 429: You exceeded your current quota")
    assert "not retried" in line and "the quota is used up: raise it" in line
    assert "Nothing written" in done.stderr and not out.exists()


def test_the_llm_resource_gives_contexts_and_captions_the_timeout_and_the_budget(tmp_path):
    import time

    from chunkbench_core.errors import ProviderError
    from chunkbench_pipelines.resources import LLMResource
    from tests.core.parsing import builders

    with ScriptedChatServer([{"sleep": 4}]) as server:
        llm = LLMResource(
            model="cmd-m",
            vision_model="vision-m",
            base_url=server.base_url,
            api_key=KEY,
            home=str(tmp_path / "home"),
            timeout_seconds=1.0,
            retry_budget_seconds=2.0,
        )
        context = llm.contextual_context()
        assert (context.settings.timeout_seconds, context.settings.retry_budget_seconds) == (1.0, 2.0)
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"did not answer within 1\.0 s") as info:
            llm.parse_options().caption_source(builders.png_bytes())
        assert time.monotonic() - started < 3.5 and KEY not in str(info.value)
