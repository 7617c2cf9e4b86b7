"""Which failures a RetryPolicy may retry.

Assets carry a RetryPolicy for transient trouble (a provider's 429 after the client's own
retries, a Qdrant lock held by another process). Errors that a retry cannot fix — an
unavailable model, a bad setting, an unknown strategy, two chunks with one id, an empty question
set, a bug in chunkbench — become
``Failure(allow_retries=False)`` so the partition fails at once with the reason.
"""

from contextlib import contextmanager
from typing import Iterator

from dagster import Backoff, Failure, Jitter, RetryPolicy

from chunkbench_core.embedding import Embedder
from chunkbench_core.errors import (
    ChunkbenchError,
    ChunkingError,
    ConfigError,
    DuplicateIdError,
    EmbeddingRejectedError,
    EmbeddingUnavailableError,
    QuestionSetError,
)
from chunkbench_core.redaction import redact

TRANSIENT_RETRY = RetryPolicy(max_retries=3, delay=2.0, backoff=Backoff.EXPONENTIAL, jitter=Jitter.PLUS_MINUS)

PERMANENT_ERRORS = (ChunkingError, ConfigError, DuplicateIdError, QuestionSetError, EmbeddingRejectedError, EmbeddingUnavailableError)
# a bug: the same input fails the same way on every attempt
PROGRAMMING_ERRORS = (TypeError, AttributeError, NameError, ImportError, AssertionError, NotImplementedError)


def fail_fast(reason: str) -> Failure:
    return Failure(description=redact(reason), allow_retries=False)


@contextmanager
def permanent_errors_fail_fast() -> Iterator[None]:
    try:
        yield
    except PERMANENT_ERRORS as exc:
        raise fail_fast(str(exc)) from exc
    except PROGRAMMING_ERRORS as exc:
        raise fail_fast(f"internal error, not retried (please report it): {type(exc).__name__}: {exc}") from exc


def corpus_embedder(embeddings, corpus_model: str) -> Embedder:
    """The partition's corpus-model embedder; an unknown or unavailable model fails at once with the reason."""
    try:
        ok, reason = embeddings.availability(corpus_model)
    except ChunkbenchError as exc:
        raise fail_fast(str(exc)) from exc
    if not ok:
        raise fail_fast(reason)
    return embeddings.embedder(corpus_model)
