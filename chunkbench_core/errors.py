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
