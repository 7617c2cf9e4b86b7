"""Typed errors of chunkbench. Each message names the thing at fault and the reason."""

from __future__ import annotations


class ChunkbenchError(Exception):
    """Base class of every error chunkbench raises on purpose."""


class DocumentProcessingError(ChunkbenchError):
    """A document could not be read or parsed; the message names the file and the reason."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class ChunkingError(ChunkbenchError):
    """A chunker was misconfigured or could not chunk a document."""


class EmbeddingError(ChunkbenchError):
    """An embedding provider failed or is not available."""


class EmbeddingRejectedError(EmbeddingError):
    """The provider refused the request itself (bad key, unknown model, wrong dimension): retrying cannot help."""


class EmbeddingUnavailableError(EmbeddingError):
    """The model's provider is not configured or not installed here (the reason says what to set)."""


class VectorStoreError(ChunkbenchError):
    """The vector store (Qdrant) could not be reached or rejected an operation."""


class DuplicateIdError(ChunkbenchError):
    """Two different things got one id (chunk id, collection or file name): the same input gives the same
    clash every time, so it is never retried; the message names both."""


class QuestionSetError(ChunkbenchError):
    """A question set is malformed; the message names the file, question id and field."""

    def __init__(self, file: str, reason: str, question_id: str | None = None, field: str | None = None) -> None:
        self.file = str(file)
        self.question_id = question_id
        self.field = field
        self.reason = reason
        where = self.file
        if question_id is not None:
            where += f", question {question_id!r}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {reason}")


class ConfigError(ChunkbenchError):
    """A setting has an invalid value; the message names the setting and what is allowed."""


class PermanentError(ChunkbenchError):
    """The same input fails the same way on every attempt: a retry policy must not retry it. The message says
    what to do instead."""


class ProviderError(PermanentError):
    """A remote provider (an embedding server, the chat LLM) failed for good: refused the request (a bad key, an
    unknown model, a quota used up), or kept failing until the retries or their time budget ran out. The message
    is one line: the server, what it said, what was tried and what to do. ``kind``: auth, forbidden, not_found,
    quota, rate_limit, timeout, connection, server, malformed, refused or bad_vector."""

    def __init__(self, message: str, kind: str = "refused", status: int | None = None) -> None:
        self.kind = kind
        self.status = status
        super().__init__(message)


class EmbeddingProviderError(EmbeddingRejectedError, ProviderError):
    """An embedding server failed for good (see ProviderError); never retried again by a step's retry policy."""


class StorageError(PermanentError):
    """Writing to disk failed for a reason a retry cannot fix at once (an input/output error, a read-only
    disk); ``path`` is the file or folder being written."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class StorageFullError(StorageError):
    """Not enough free space for a write: ``folder``, ``needed`` and ``free`` in bytes (``needed`` is None when
    the disk filled up during the write). The previous results stay readable."""

    def __init__(self, message: str, folder: str, needed: int | None, free: int | None) -> None:
        self.folder = folder
        self.needed = needed
        self.free = free
        super().__init__(message, folder)


class CorruptStateError(PermanentError):
    """A derived file (a results table, the views file, a parsed record, a collection, a cache) could not be
    read. It was moved aside to ``moved_to`` (None when it could not be moved) and is rebuilt by the step
    that makes it; the message names it and says which step that is."""

    def __init__(self, message: str, path: str, moved_to: str | None = None) -> None:
        self.path = path
        self.moved_to = moved_to
        super().__init__(message)


class SourceFileError(PermanentError):
    """A source file (a corpus document, a question file) cannot be read. Source files are never moved or
    changed: the message names the file and the fix."""

    def __init__(self, path: str, reason: str, fix: str) -> None:
        self.path = str(path)
        self.reason = reason
        self.fix = fix
        super().__init__(f"{self.path}: {reason}; {fix}")


def is_permanent(exc: BaseException) -> bool:
    """True for the errors of this module that a retry cannot fix (a full disk, damaged state, an unreadable
    source file): a retry policy fails them at once."""
    return isinstance(exc, PermanentError)
