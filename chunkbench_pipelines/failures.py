"""Which failures a RetryPolicy may retry.

Assets carry a RetryPolicy for transient trouble (a Qdrant lock held by another process). A
provider's failure is not one of them: its requests were retried already, within their time budget
(chunkbench_core.provider_faults), so it arrives as a permanent EmbeddingProviderError saying what
was tried. Errors that a retry cannot fix — an
unavailable model, a bad setting, an unknown strategy, two chunks with one id, an empty question
set, a full disk, a damaged state file (moved aside: the partition that makes it rebuilds it), an
unreadable source file, a bug in chunkbench — become ``Failure(allow_retries=False)`` so the
partition fails at once with the reason. The Failure carries the error's kind in its metadata
(:data:`ERROR_KIND`): ``chunkbench run`` stops at a full disk instead of trying every partition.
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
    PermanentError,
    QuestionSetError,
    StorageError,
)
from chunkbench_core.redaction import redact

TRANSIENT_RETRY = RetryPolicy(max_retries=3, delay=2.0, backoff=Backoff.EXPONENTIAL, jitter=Jitter.PLUS_MINUS)

# PermanentError: a full disk or an input/output error (StorageError), damaged state (CorruptStateError), an
# unreadable source file (SourceFileError)
PERMANENT_ERRORS = (
    ChunkingError,
    ConfigError,
    DuplicateIdError,
    QuestionSetError,
    EmbeddingRejectedError,
    EmbeddingUnavailableError,
    PermanentError,
)
# a bug: the same input fails the same way on every attempt
PROGRAMMING_ERRORS = (TypeError, AttributeError, NameError, ImportError, AssertionError, NotImplementedError)
#: the metadata key of a fail-fast Failure naming the error's class (``StorageFullError`` ...)
ERROR_KIND = "chunkbench/error"
#: the error kinds that end a whole ``chunkbench run``: the next partition would meet the same disk
STORAGE_KINDS = frozenset({"StorageError", "StorageFullError"})


def fail_fast(reason: str, kind: str | None = None) -> Failure:
    """A Failure that is never retried; ``kind``: the error class it stands for (kept in its metadata)."""
    return Failure(description=redact(reason), allow_retries=False, metadata={ERROR_KIND: kind} if kind else None)


def storage_failure(exc: BaseException) -> StorageError | None:
    """The StorageError a full disk or an I/O error met while writing stands for (an ``OSError``, SQLite's
    "database or disk is full" ...), or None when ``exc`` is something else."""
    from chunkbench_core.storage.space import storage_error

    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, ChunkbenchError):
        return None
    path = getattr(exc, "filename", None)
    return storage_error(exc, path or ".", "chunkbench's state") if path else _without_path(exc)


def _without_path(exc: BaseException) -> StorageError | None:
    from chunkbench_core.storage.space import storage_error

    found = storage_error(exc, ".", "chunkbench's state")
    if found is None:
        return None
    # no file was named: say what was met, without pointing at the current folder
    return StorageError(
        f"the disk refused a write ({' '.join(str(exc).split())[:200]}): free some space (or check "
        "the disk) and run again; what was stored before is unchanged"
    )


@contextmanager
def permanent_errors_fail_fast() -> Iterator[None]:
    try:
        yield
    except PERMANENT_ERRORS as exc:
        raise fail_fast(str(exc), type(exc).__name__) from exc
    except PROGRAMMING_ERRORS as exc:
        raise fail_fast(f"internal error, not retried (please report it): {type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # a full disk met where nothing translated it: permanent too
        translated = storage_failure(exc)
        if translated is None:
            raise
        raise fail_fast(str(translated), type(translated).__name__) from exc


def corpus_embedder(embeddings, corpus_model: str) -> Embedder:
    """The partition's corpus-model embedder; an unknown or unavailable model fails at once with the reason."""
    try:
        ok, reason = embeddings.availability(corpus_model)
    except ChunkbenchError as exc:
        raise fail_fast(str(exc)) from exc
    if not ok:
        raise fail_fast(reason)
    return embeddings.embedder(corpus_model)
