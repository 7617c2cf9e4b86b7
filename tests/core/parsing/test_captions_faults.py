"""Image captions meet the provider faults as every LLM request does: one retry loop within the request timeout
and the retry budget, a refusal stopping at once (not once per image), the provider's one line in the parse's
warning, the document kept. Against a scripted OpenAI-compatible server on 127.0.0.1 with the real openai client."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.errors import ProviderError
from chunkbench_core.parsing import ParseOptions, parse
from chunkbench_core.parsing.captions import openai_vision_captioner
from chunkbench_core.provider_faults import RetryPolicy
from tests.core.evaluation.chat_server import ScriptedChatServer
from tests.core.parsing import builders

KEY = "sk-test-captions-abcdefghijklmnop"


def captioner(server: ScriptedChatServer, **limits):
    limits = {"timeout_seconds": 2.0, "budget_seconds": 10.0, **limits}
    return openai_vision_captioner(
        model="vision-m", base_url=server.base_url, api_key=KEY, policy=RetryPolicy(**limits)
    )


def test_a_wrong_key_leaves_the_image_uncaptioned_with_the_provider_s_line(rich_docx: Path):
    with ScriptedChatServer([{"status": 401, "message": f"Incorrect API key provided: {KEY}."}]) as server:
        parsed = parse(rich_docx, ParseOptions(caption_source=captioner(server)))
        assert len(server.requests) == 1  # not retried, by us or by the openai client
    host = server.base_url.split("/")[2]
    assert parsed.stats["images_uncaptioned"] == parsed.stats["images"] >= 1  # the document is kept
    [warning] = [w for w in parsed.warnings if "not captioned" in w]
    assert (
        f"caption source failed (LLM server {host} (model vision-m) answered HTTP 401: Incorrect API key "
        "provided: [redacted]" in warning
    )
    assert "not retried" in warning and "check the key in CHUNKBENCH_LLM_API_KEY" in warning
    assert KEY not in warning and "\n" not in warning


def test_after_a_used_up_quota_the_next_images_send_nothing():
    quota = {"status": 429, "code": "insufficient_quota", "message": "You exceeded your current quota."}
    with ScriptedChatServer([quota]) as server:
        source = captioner(server)
        for _ in range(3):
            with pytest.raises(ProviderError, match="the quota is used up: raise it") as info:
                source(builders.png_bytes())
            assert info.value.kind == "quota"
        assert len(server.requests) == 1


def test_a_rate_limit_and_a_malformed_reply_are_retried_then_the_caption_arrives():
    with ScriptedChatServer([{"status": 429, "retry_after": 0}, {"malformed": True}, "A red square."]) as server:
        assert captioner(server)(builders.png_bytes()) == "A red square."
        assert len(server.requests) == 3
        assert server.requests[-1]["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/png")


def test_a_silent_server_ends_within_the_budget_naming_the_timeout():
    import time

    with ScriptedChatServer([{"sleep": 5}]) as server:
        started = time.monotonic()
        with pytest.raises(ProviderError) as info:
            captioner(server, timeout_seconds=1.0, budget_seconds=3.0)(builders.png_bytes())
        elapsed = time.monotonic() - started
    assert elapsed < 6 and info.value.kind == "timeout"
    assert "did not answer within 1.0 s" in str(info.value) and "CHUNKBENCH_PROVIDER_TIMEOUT_S" in str(info.value)


def test_through_the_isolated_parser_the_line_is_kept_and_the_next_parse_asks_again(rich_docx: Path, tmp_path: Path):
    """Parses run in a worker process that asks the parent for captions: the warning still carries the provider's
    line (not a RuntimeError's), and a document whose captions failed is parsed again by the next parse, so a fixed
    key captions it (a stored parse would otherwise keep it uncaptioned for good)."""
    import shutil

    from chunkbench_core.parsing.isolation import IsolatedParser, ParseLimits
    from chunkbench_core.stages.documents import ParseRequest, parse_corpus
    from chunkbench_core.storage.corpus import ParsedStore, scan_corpus
    from chunkbench_core.storage.results_db import ResultsDB

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(rich_docx, corpus / "rich.docx")
    sources = scan_corpus(corpus)
    results = ResultsDB(tmp_path / "results")
    with ScriptedChatServer(
        [{"status": 401, "message": f"Incorrect API key provided: {KEY}"}, "A small red square."]
    ) as server:
        options = ParseOptions(caption_source=captioner(server))
        store = ParsedStore(tmp_path / "parsed", f"v1-{options.fingerprint()}", options)
        with IsolatedParser(ParseLimits(timeout_s=120)) as parser:
            first = parse_corpus(ParseRequest(sources, store, lambda path: parser.parse(path, options)), results)
            [document] = store.load_manifest_documents()
            assert first.parsed == ["rich.docx"] and document.stats["images_caption_failed"] >= 1
            [warning] = [w for w in document.warnings if "not captioned" in w]
            assert "caption source failed (LLM server" in warning and "RuntimeError" not in warning
            assert "answered HTTP 401" in warning and KEY not in warning
            # the key was fixed: a new caption source (a new process would make one), the same options' fingerprint
            options = ParseOptions(caption_source=captioner(server))
            again = parse_corpus(ParseRequest(sources, store, lambda path: parser.parse(path, options)), results)
        [document] = store.load_manifest_documents()
        assert again.parsed == ["rich.docx"] and "images_caption_failed" not in document.stats
        # the parsed corpus changed (its collections are rebuilt with the caption), though the file did not
        assert again.corpus_fingerprint != first.corpus_fingerprint
        assert any(u.text == "A small red square." for u in document.units if u.content_type == "image_caption")
