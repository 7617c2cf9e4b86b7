"""The Chunk record and the one small base class every strategy derives from.

Invariant for every strategy: ``markdown[chunk.start:chunk.end] == chunk.text``.
``embedded_text`` is what the corpus model embeds when it differs from ``text``
(e.g. a contextual prefix); it is never stored as the chunk's text.
"""

from __future__ import annotations

import bisect
import re
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from chunkbench_core.errors import ChunkingError
from chunkbench_core.parsing.models import ParsedDocument, Unit

from .tokens import TokenIndex

_UNSAFE = re.compile(r"[^\w]+", re.UNICODE)


def safe_document_name(document: str) -> str:
    """The document name as used inside chunk ids: runs of non-word characters become '_'."""
    return _UNSAFE.sub("_", document).strip("_") or "document"


def make_chunk_id(strategy: str, document: str, chunk_index: int) -> str:
    """Deterministic chunk id ``{strategy}_{safe_doc}_{index:06d}`` (LLD 4.2)."""
    return f"{strategy}_{safe_document_name(document)}_{chunk_index:06d}"


@dataclass
class Chunk:
    chunk_id: str
    document: str
    strategy: str
    chunk_index: int
    start: int
    end: int
    text: str
    token_count: int
    content_type: str = "paragraph"
    heading_path: list[str] = field(default_factory=list)
    parent_id: str | None = None
    embedded_text: str | None = None

    @property
    def text_to_embed(self) -> str:
        return self.embedded_text if self.embedded_text is not None else self.text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def heading_path_at(units: list[Unit], offset: int) -> list[str]:
    """Heading path of the structural unit that contains (or last precedes) ``offset``."""
    if not units:
        return []
    starts = [u.start for u in units]
    i = bisect.bisect_right(starts, offset) - 1
    return list(units[max(i, 0)].heading_path)


def validate_sizes(chunk_size: int, chunk_overlap: int) -> None:
    """Reject sizes no chunker can honour, naming the setting to change."""
    if not isinstance(chunk_size, int) or isinstance(chunk_size, bool) or chunk_size < 1:
        raise ChunkingError(f"chunk_size must be a positive integer number of tokens, got {chunk_size!r}")
    if not isinstance(chunk_overlap, int) or isinstance(chunk_overlap, bool) or chunk_overlap < 0:
        raise ChunkingError(f"chunk_overlap must be an integer >= 0, got {chunk_overlap!r}")
    if chunk_overlap >= chunk_size:
        raise ChunkingError(
            f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size}); "
            "lower chunk_overlap or raise chunk_size"
        )


class Chunker(ABC):
    """A chunking strategy. Subclasses set ``name`` and implement ``spans``.

    ``spans`` returns character spans into the markdown in document order; the base
    class turns them into Chunk records with ids, token counts and heading paths.
    Strategies that need more (parents, prefixes, structural units) override ``chunk``.
    """

    name: ClassVar[str]

    def __init__(self, chunk_size: int = 512, chunk_overlap: int = 50) -> None:
        validate_sizes(chunk_size, chunk_overlap)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def params(self) -> dict[str, Any]:
        """The parameters that determine this chunker's output (recorded as provenance)."""
        return {"chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap}

    @abstractmethod
    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int]] | list[tuple[int, int, int]]:
        """Character spans ``[start, end)`` of the chunks of ``text``, in order.

        A span may carry its token count as a third element when the strategy knows it
        exactly (token windows); otherwise it is ``tokens.count(start, end)``.
        """

    def chunk(self, document: ParsedDocument) -> list[Chunk]:
        text = document.markdown
        tokens = TokenIndex(text)
        chunks: list[Chunk] = []
        for span in self.spans(text, tokens):
            start, end = span[0], span[1]
            if not text[start:end].strip():
                continue
            index = len(chunks)
            chunks.append(
                Chunk(
                    chunk_id=make_chunk_id(self.name, document.document, index),
                    document=document.document,
                    strategy=self.name,
                    chunk_index=index,
                    start=start,
                    end=end,
                    text=text[start:end],
                    token_count=span[2] if len(span) > 2 else tokens.count(start, end),
                    heading_path=heading_path_at(document.units, start),
                )
            )
        return chunks
