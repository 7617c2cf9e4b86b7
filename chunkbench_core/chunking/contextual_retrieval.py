"""contextual_retrieval: base chunks whose EMBEDDED text carries a short context.

Rule: the document is cut by a size-driven base chunker (``recursive`` by default, or
``fixed_size``) at ``chunk_size``/``chunk_overlap``. Each chunk's stored ``text`` stays
the exact slice of the markdown; its ``embedded_text`` (the enriched content) is
``context + "\\n\\n" + text``. The context comes from one source per run, recorded on
every chunk (``context_source``) and in ``params()`` so results never mix them:

* ``llm`` - when a context callable is configured (:class:`LLMContext`: an
  OpenAI-compatible chat model asked, following Anthropic's contextual-retrieval method,
  to situate the chunk within the whole document; answers cached per document);
* ``headings`` - otherwise: the document title and the chunk's heading path,
  ``"Title > Section > Subsection"``.

If the LLM fails on a document, chunking fails with ChunkingError - unless
``on_context_failure="headings"``, in which case that document alone gets heading
contexts (``context_source="headings_fallback"``), the failure is logged and kept in
``fallbacks`` (document -> reason). With the corpus model's ``window``, every embedded
text fits by construction: a context takes at most half the window (a deep heading path
drops its outer headings for "…", an LLM context is cut at a word), and a chunk whose
embedded text (task prefix + context + text, counted with the model's own tokenizer) is
still over the window is split, each part getting its own context.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from dataclasses import replace
from typing import Any, Callable, Literal, MutableMapping

from pydantic import Field

from chunkbench_core.errors import ChunkingError, ProviderError
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.redaction import describe_error

from chunkbench_core.tokens import TokenIndex, cl100k, count_tokens

from .base import Chunk, Chunker, Piece, build_chunks
from .fixed_size import FixedSizeChunker
from .recursive import RecursiveChunker
from .registry import Capabilities, StrategyOptions, register_strategy
from .window import ModelWindow, fit_pieces

log = logging.getLogger("chunkbench.chunking")

ContextSource = Callable[[str, str], str]
"""``context(document_text, chunk_text) -> context`` (raises on failure)."""

BASE_CHUNKERS: dict[str, type[Chunker]] = {"recursive": RecursiveChunker, "fixed_size": FixedSizeChunker}
MAX_FIT_ROUNDS = 6  # split, re-contextualize, count again: a new part's context may differ from its chunk's

# The method of Anthropic's "Introducing Contextual Retrieval" (September 2024): show the model
# the whole document, then one chunk, and ask for a brief context that places the chunk in the
# document, to be prepended to the chunk before embedding. The wording below is our own.
SITUATE_DOCUMENT = "<document>\n{document}\n</document>"
SITUATE_CHUNK = (
    "The following passage is taken from the document above:\n<chunk>\n{chunk}\n</chunk>\n"
    "Write one or two sentences that say where this passage sits in the document and what it is about, "
    "so that a search engine can match it to questions. Reply with those sentences only."
)


def document_title(document: ParsedDocument) -> str:
    """The first heading of the document tree, or the file name without its extension."""
    stack: list[TreeNode] = [document.tree]
    while stack:
        node = stack.pop(0)
        if node.heading and node.heading.strip():
            return node.heading.strip()
        stack = list(node.children) + stack
    name = document.document.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def heading_context(title: str, heading_path: list[str]) -> str:
    """``"Title > Section > Subsection"``; a path that starts with the title does not repeat it."""
    path = list(heading_path)
    if path and path[0] == title:
        path = path[1:]
    return " > ".join([title, *path])


class LLMContext:
    """Situates a chunk in its document with an OpenAI-compatible chat model (contextual retrieval).

    Give either ``complete(messages) -> str`` or ``client`` (an ``openai.OpenAI`` or
    any object with ``chat.completions.create``) plus ``settings`` (an ``evaluation.llm.LLMSettings``: the chat
    model, its timeout, retry budget and retries). The document goes
    first in the message, so servers with prefix caching (OpenAI, llama.cpp) reuse it
    across the chunks of a document; answers are cached in ``cache`` (a dict by
    default; the pipeline passes the persistent, content-addressed
    :class:`chunkbench_core.storage.context_cache.ContextCache`) under :meth:`cache_key`:
    the model, the ``endpoint``, the prompt version and the document's and chunk's hashes. A document longer than
    ``max_document_tokens`` cl100k tokens is cut to that many tokens around the chunk.
    An empty answer is a failure.

    A ``client``'s requests go through :func:`chunkbench_core.provider_faults.call` with ``settings``'
    timeout, retry budget and retries, like the answers and the judge: a refusal stops at once, a transient
    failure is retried within the budget, and what fails for good is a ProviderError in one line. Once the
    endpoint failed for good, the next uncached context fails with the same error without a request (every other
    document would fail alike, each after the whole budget).
    """

    def __init__(
        self,
        complete: Callable[[list[dict[str, str]]], str] | None = None,
        *,
        client: Any = None,
        settings: Any = None,
        max_tokens: int = 120,
        max_document_tokens: int = 8000,
        cache: MutableMapping[str, str] | None = None,
        endpoint: str | None = None,
    ) -> None:
        if (complete is None) == (client is None):
            raise ChunkingError("LLMContext needs exactly one of complete=<callable> or client=<OpenAI client>")
        model = getattr(settings, "model", None)
        if client is not None and not model:
            raise ChunkingError("LLMContext with a client needs settings=<LLMSettings naming the chat model>")
        for name, value in (("max_tokens", max_tokens), ("max_document_tokens", max_document_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ChunkingError(f"LLMContext {name} must be a positive integer, got {value!r}")
        self._complete = complete
        self.client = client
        self.model: str = str(model) if model else getattr(complete, "__name__", "callable")
        self.settings = settings
        self.failure: Exception | None = None  # the endpoint's failure for good (a ProviderError), once met
        self.max_tokens = max_tokens
        self.temperature = 0.0  # a context is written the same way every time (and the cache key says so)
        self.max_document_tokens = max_document_tokens
        self.cache: MutableMapping[str, str] = {} if cache is None else cache
        self.endpoint = endpoint or ("openai" if client is not None else "callable")
        self.calls = 0  # requests actually sent (cache misses)
        #: every context served (cached or not) and its cl100k tokens in and out: what building the
        #: contexts costs from scratch (evaluation.cost.index_usd), the same on every re-run
        self.contexts = 0
        self.input_tokens = 0
        self.output_tokens = 0

    @property
    def label(self) -> str:
        return f"llm:{self.model}"

    def _document_excerpt(self, document_text: str, chunk_text: str) -> str:
        ids = cl100k().encode_ordinary(document_text)
        if len(ids) <= self.max_document_tokens:
            return document_text
        index = TokenIndex(document_text)
        at = max(document_text.find(chunk_text), 0)
        centre = index.count(0, at) + index.count(at, at + len(chunk_text)) // 2
        first = max(0, min(centre - self.max_document_tokens // 2, index.n_tokens - self.max_document_tokens))
        return document_text[index.char_offset(first) : index.char_offset(first + self.max_document_tokens)]

    def messages(self, document_text: str, chunk_text: str) -> list[dict[str, str]]:
        document = SITUATE_DOCUMENT.format(document=self._document_excerpt(document_text, chunk_text))
        return [{"role": "user", "content": document + "\n" + SITUATE_CHUNK.format(chunk=chunk_text)}]

    def _ask(self, messages: list[dict[str, str]]) -> str:
        if self._complete is not None:
            return self._complete(messages)
        from chunkbench_core.evaluation.llm import LLMSettings, _complete

        if self.failure is not None:
            raise self.failure
        settings = self.settings or LLMSettings(model=str(self.model))
        settings = replace(settings, model=str(self.model), temperature=self.temperature)
        try:
            text, _finish, _usage, _ms = _complete(self.client, settings, messages, self.max_tokens, json_mode=False)
        except ProviderError as exc:
            self.failure = exc
            raise
        return text

    @property
    def prompt_version(self) -> str:
        """Digest of what shapes an answer besides the texts: the prompt templates and generation settings."""
        parts = [
            SITUATE_DOCUMENT,
            SITUATE_CHUNK,
            str(self.max_tokens),
            repr(float(self.temperature)),
            str(self.max_document_tokens),
        ]
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]

    def cache_key(self, document_text: str, chunk_text: str) -> str:
        """Content address of one context: model, endpoint, prompt version, document and chunk texts."""
        digest = hashlib.sha256
        return digest(
            "\x00".join(
                (
                    self.model,
                    self.endpoint,
                    self.prompt_version,
                    digest(document_text.encode()).hexdigest(),
                    digest(chunk_text.encode()).hexdigest(),
                )
            ).encode()
        ).hexdigest()

    def __call__(self, document_text: str, chunk_text: str) -> str:
        key = self.cache_key(document_text, chunk_text)
        messages = self.messages(document_text, chunk_text)
        # a cache that workers share claims the key: one worker asks the LLM, the others wait for its answer
        claim = getattr(self.cache, "claim", None)
        answer = claim(key) if claim is not None else self.cache.get(key)
        if answer is None:
            self.calls += 1
            try:
                answer = " ".join((self._ask(messages) or "").split())
                if not answer:
                    raise ChunkingError(f"{self.label} returned an empty context")
            except BaseException:
                if claim is not None:  # nobody waits a lease for it (if this fails too, the lease runs out)
                    with contextlib.suppress(Exception):
                        self.cache.release(key)  # type: ignore[attr-defined]  # a claim means a shared cache, which has release
                raise
            self.cache[key] = answer
        self.contexts += 1
        self.input_tokens += sum(count_tokens(m["content"]) for m in messages)
        self.output_tokens += count_tokens(answer)
        return answer


class ContextualOptions(StrategyOptions):
    # its context places a chunk in its document: the document's header comes first (one of a family of
    # near-identical filings is told apart by its company, form and period, which the headings do not give)
    document_context: bool = Field(True, description=StrategyOptions.model_fields["document_context"].description)
    base_chunker: Literal["recursive", "fixed_size"] = Field(
        "recursive", description="the size-driven chunker under the context prefix"
    )
    on_context_failure: Literal["error", "headings"] = Field(
        "error",
        description="when the LLM fails on a document: 'error' (fail the partition) or 'headings' (that "
        "document uses its title and heading path)",
    )


@register_strategy(
    "contextual_retrieval",
    # what the run estimate assumes of its chunks before a build is recorded
    shape={
        "fill": 0.85,
        "overlap_share": 0.5,
        "context": True,
        "context_tokens": 12.0,
        "chunking_seconds_per_token": 4e-6,
    },
    options=ContextualOptions,
    capabilities=Capabilities(llm=True, sized_by_chunk_size=True),
    description="adds an LLM-written context line to each chunk before embedding it",
    description_without_llm="adds the document's title and the chunk's heading path to each chunk "
    "before embedding it (no LLM was configured)",
)
class ContextualRetrievalChunker(Chunker):
    size_driven = True

    def __init__(
        self,
        chunk_size: int = 512,
        chunk_overlap: int = 50,
        *,
        context: ContextSource | None = None,
        window: ModelWindow | None = None,
        **options: Any,
    ) -> None:
        super().__init__(chunk_size, chunk_overlap, window=window, **options)
        base_chunker, on_context_failure = self.options.base_chunker, self.options.on_context_failure
        if context is not None and not callable(context):
            raise ChunkingError("context must be a callable (document_text, chunk_text) -> str, e.g. LLMContext")
        self.base_chunker = base_chunker
        self.context = context
        self.on_context_failure = on_context_failure
        self.fallbacks: dict[str, str] = {}

    @property
    def context_source(self) -> str:
        if self.context is None:
            return "headings"
        return getattr(self.context, "label", "llm")

    def params(self) -> dict[str, Any]:
        return {
            **super().params(),
            "base_chunker": self.base_chunker,
            "context_source": self.context_source,
            "on_context_failure": self.on_context_failure,
        }

    def _contexts(self, document: ParsedDocument, chunks: list[Chunk], title: str) -> tuple[list[str], str]:
        """One context per chunk, and its source (llm, headings, or headings_fallback after an LLM failure)."""
        if self.context is not None and document.document not in self.fallbacks:
            try:
                return [self._fit_context(self.context(document.markdown, c.text)) for c in chunks], "llm"
            except Exception as exc:
                reason = describe_error(exc)  # a provider's failure: its one line, what to do included
                if self.on_context_failure != "headings":
                    fix = "" if isinstance(exc, ProviderError) else "; fix the LLM endpoint"
                    raise ChunkingError(  # not chained: the endpoint's own text may hold the key
                        f"contextual_retrieval: the LLM context failed on {document.document}: {reason}{fix}; "
                        "or set on_context_failure='headings' to fall back to heading contexts for such documents"
                    ) from None
                self.fallbacks[document.document] = reason
                log.warning(
                    "contextual_retrieval: LLM context failed on %s (%s); this document uses heading "
                    "contexts (context_source=headings_fallback)",
                    document.document,
                    reason,
                )
        source = "headings_fallback" if document.document in self.fallbacks else "headings"
        return [self._heading_prefix(title, c.heading_path) for c in chunks], source

    def _prefix_budget(self) -> int | None:
        """Model tokens a context may take: half the window, so every chunk keeps room for its text."""
        return None if self.window is None else max(1, self.window.max_tokens // 2)

    def _fits(self, prefix: str) -> bool:
        budget = self._prefix_budget()
        return budget is None or self.window.counts([prefix + "\n\n"])[0] <= budget  # type: ignore[union-attr]  # a budget means a window

    def _heading_prefix(self, title: str, heading_path: list[str]) -> str:
        """The heading context, shortened when it would take over half the window: the outer headings
        after the title give way to "…" first, then the title is cut (deep paths of long headings)."""
        path = list(heading_path)
        if path and path[0] == title:
            path = path[1:]
        for skip in range(len(path) + 1):
            parts = [title, *(["…"] if skip else []), *path[skip:]]
            prefix = " > ".join(parts)
            if self._fits(prefix):
                return prefix
        return self._fit_context(title)

    def _fit_context(self, context: str) -> str:
        """``context`` cut at a word boundary (with "…") when it would take over half the window."""
        if self._fits(context):
            return context
        words = context.split()
        low, high = 0, len(words)  # the longest prefix of words that fits
        while low < high:
            middle = (low + high + 1) // 2
            if self._fits(" ".join(words[:middle]) + " …"):
                low = middle
            else:
                high = middle - 1
        return (" ".join(words[:low]) + " …").strip()

    def chunk_document(self, document: ParsedDocument) -> list[Chunk]:
        """Base chunks with their context prefix; with a window, a chunk whose embedded text (task prefix,
        context and text, counted with the corpus model's tokenizer) is over it is split and its parts get
        contexts of their own, until every embedded text fits."""
        tokens = TokenIndex(document.markdown)
        # built here: with document_context the chunk size is what is left beside the document's header
        pieces = BASE_CHUNKERS[self.base_chunker](self.chunk_size, self.chunk_overlap).pieces(document, tokens)
        title = document_title(document)
        for _ in range(MAX_FIT_ROUNDS):
            chunks = build_chunks(self.name, document, pieces, tokens)
            contexts, source = self._contexts(document, chunks, title)
            if self.window is None:
                break
            texts = [f"{prefix}\n\n{chunk.text}" for prefix, chunk in zip(contexts, chunks)]
            over = {i for i, n in enumerate(self.window.counts(texts)) if n > self.window.max_tokens}
            if not over:
                break
            pieces = []
            for i, chunk in enumerate(chunks):
                piece = Piece(chunk.start, chunk.end, chunk.content_type, token_count=chunk.token_count)
                if i in over:
                    pieces.extend(
                        fit_pieces(
                            document.markdown,
                            tokens,
                            [replace(piece, token_count=None)],
                            self.window.with_prefix(contexts[i] + "\n\n"),
                        )
                    )
                else:
                    pieces.append(piece)
        for prefix, chunk in zip(contexts, chunks):
            chunk.embedded_text = f"{prefix}\n\n{chunk.text}"
            chunk.context_source = source
        return chunks
