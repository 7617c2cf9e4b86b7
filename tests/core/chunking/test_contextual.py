import logging
from types import SimpleNamespace

import pytest

from chunkbench_core.chunking import LLMContext, make_chunker
from chunkbench_core.chunking.contextual_retrieval import document_title, heading_context
from chunkbench_core.errors import ChunkingError
from chunkbench_core.evaluation.llm import LLMSettings
from chunkbench_core.parsing.models import TreeNode, Unit

from .helpers import doc

TEXT = "# Handbook\n\nIntro text here.\n\n## Leave\n\nAnnual leave is 27 days.\n"


def handbook():
    tree = TreeNode("document", children=[TreeNode("section", heading="Handbook", heading_level=1)])
    units = [
        Unit("paragraph", "Intro text here.", 12, 28, ["Handbook"]),
        Unit("paragraph", "Annual leave is 27 days.", 39, 63, ["Handbook", "Leave"]),
    ]
    return doc(TEXT, name="handbook.docx", units=units, tree=tree)


def chunker(**kwargs):
    # these tests are about the context itself: the document header in front of it is tested on its own
    kwargs.setdefault("document_context", False)
    return make_chunker("contextual_retrieval", chunk_size=8, chunk_overlap=0, **kwargs)


def test_headings_context_is_only_in_the_embedded_text():
    chunks = chunker().chunk(handbook())
    assert [(c.text, c.embedded_text, c.context_source) for c in chunks] == [
        ("# Handbook\n\nIntro text here.", "Handbook\n\n# Handbook\n\nIntro text here.", "headings"),
        ("## Leave", "Handbook > Leave\n\n## Leave", "headings"),
        ("Annual leave is 27 days.", "Handbook > Leave\n\nAnnual leave is 27 days.", "headings"),
    ]
    for c in chunks:
        assert TEXT[c.start : c.end] == c.text
    assert chunks[0].chunk_id == "contextual_retrieval_handbook_docx_dd128f7f2b_000000"
    assert chunker().params()["context_source"] == "headings"


def test_title_falls_back_to_the_file_name():
    assert document_title(doc("no headings", name="finance.md")) == "finance"
    assert heading_context("T", ["T", "A", "B"]) == "T > A > B"
    assert heading_context("T", []) == "T"


def test_llm_context_is_used_cached_and_recorded():
    seen = []

    def complete(messages):
        seen.append(messages)
        return "  This chunk is about\nleave.  "

    context = LLMContext(complete)
    c = chunker(context=context)
    first = c.chunk(handbook())
    again = c.chunk(handbook())
    assert [x.embedded_text for x in first] == [f"This chunk is about leave.\n\n{x.text}" for x in first]
    assert {x.context_source for x in first + again} == {"llm"}
    assert context.calls == len(first) == len(seen)  # the second run came from the cache
    assert c.params()["context_source"] == "llm:complete"
    content = seen[0][0]["content"]
    assert content.startswith("<document>\n" + TEXT + "\n</document>\n")
    assert "<chunk>\n# Handbook\n\nIntro text here.\n</chunk>" in content


def test_llm_context_calls_an_openai_compatible_client():
    calls = []

    def create(**kwargs):
        calls.append(kwargs)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="Leave policy section."))])

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    context = LLMContext(client=client, settings=LLMSettings(model="gemma-3-270m"), max_tokens=40)
    assert context(TEXT, "Annual leave is 27 days.") == "Leave policy section."
    assert calls[0]["model"] == "gemma-3-270m" and calls[0]["max_tokens"] == 40 and calls[0]["temperature"] == 0.0
    assert context.label == "llm:gemma-3-270m"


def test_long_documents_are_cut_around_the_chunk():
    long_text = " ".join(f"word{i}" for i in range(5000))
    context = LLMContext(lambda m: "x", max_document_tokens=200)
    excerpt = context._document_excerpt(long_text, "word2500 word2501")
    assert "word2500 word2501" in excerpt and len(excerpt) < len(long_text) / 5


def failing(messages):
    raise TimeoutError("LLM endpoint timed out")


def test_llm_failure_fails_the_run_unless_configured_to_fall_back():
    with pytest.raises(
        ChunkingError, match="LLM context failed on handbook.docx: TimeoutError.*on_context_failure='headings'"
    ):
        chunker(context=LLMContext(failing)).chunk(handbook())


def test_llm_failure_falls_back_per_document_and_says_so(caplog):
    def flaky(messages):
        if "Annual leave" in messages[0]["content"]:
            raise TimeoutError("LLM endpoint timed out")
        return "Context."

    c = chunker(context=LLMContext(flaky), on_context_failure="headings")
    other = doc("Some other text.", name="other.md")
    with caplog.at_level(logging.WARNING, logger="chunkbench.chunking"):
        failed = c.chunk(handbook())
        fine = c.chunk(other)
    assert {x.context_source for x in failed} == {"headings_fallback"}
    assert failed[1].embedded_text.startswith("Handbook > Leave\n\n")
    assert [x.context_source for x in fine] == ["llm"] and fine[0].embedded_text == "Context.\n\nSome other text."
    assert c.fallbacks == {"handbook.docx": "TimeoutError: LLM endpoint timed out"}
    assert "handbook.docx" in caplog.text and "headings_fallback" in caplog.text


def test_an_empty_llm_answer_is_a_failure():
    with pytest.raises(ChunkingError, match="returned an empty context"):
        chunker(context=LLMContext(lambda m: "   ")).chunk(handbook())


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"base_chunker": "semantic"}, "base_chunker must be one of recursive, fixed_size"),
        ({"on_context_failure": "ignore"}, "on_context_failure must be one of error, headings"),
        ({"context": "gpt-4o"}, "context must be a callable"),
    ],
)
def test_bad_contextual_settings_are_rejected(kwargs, message):
    with pytest.raises(ChunkingError, match=message):
        chunker(**kwargs)


def test_llm_context_needs_one_way_to_call_the_model():
    with pytest.raises(ChunkingError, match="exactly one of complete"):
        LLMContext()
    with pytest.raises(ChunkingError, match="needs settings="):
        LLMContext(client=object())


def test_llm_contexts_persist_across_runs_keyed_by_model_endpoint_and_prompt(tmp_path):
    from chunkbench_core.storage.context_cache import ContextCache

    calls = []

    def complete(messages):
        calls.append(messages)
        return f"Context number {len(calls)}."

    path = tmp_path / "contextual_cache.sqlite"
    first = chunker(context=LLMContext(complete, cache=ContextCache(path), endpoint="http://a")).chunk(handbook())
    assert len(calls) == len(first) == len(ContextCache(path))
    # a new process would open the file again: every context comes from it, no call
    again = chunker(context=LLMContext(complete, cache=ContextCache(path), endpoint="http://a")).chunk(handbook())
    assert len(calls) == len(first) and [c.embedded_text for c in again] == [c.embedded_text for c in first]
    # another endpoint, or another prompt version (generation settings), is another address
    chunker(context=LLMContext(complete, cache=ContextCache(path), endpoint="http://b")).chunk(handbook())
    assert len(calls) == 2 * len(first)
    chunker(context=LLMContext(complete, cache=ContextCache(path), endpoint="http://a", max_tokens=60)).chunk(
        handbook()
    )
    assert len(calls) == 3 * len(first) and len(ContextCache(path)) == 3 * len(first)


def test_llm_context_counts_every_context_cached_or_not():
    """What building the contexts costs from scratch: the same tokens whether an answer came from the cache."""
    from chunkbench_core.tokens import count_tokens

    context = LLMContext(lambda messages: "Where it sits.", cache={})
    document, chunk = "# Title\n\nSome text about warranties. " * 3, "Some text about warranties."
    first = context(document, chunk)
    in_once = context.input_tokens
    assert (context.calls, context.contexts) == (1, 1)
    assert in_once == count_tokens(context.messages(document, chunk)[0]["content"]) > 0
    assert context.output_tokens == count_tokens("Where it sits.")
    assert context(document, chunk) == first
    assert (context.calls, context.contexts) == (1, 2)  # served from the cache, counted all the same
    assert (context.input_tokens, context.output_tokens) == (2 * in_once, 2 * count_tokens("Where it sits."))
