"""The Chunk record and the one small base class every strategy derives from.

Invariant for every strategy: ``markdown[chunk.start:chunk.end] == chunk.text``.
``embedded_text`` is what the corpus model embeds when it differs from ``text``
(e.g. a contextual prefix); it is never stored as the chunk's text.

Ids are deterministic: ``{strategy}_{safe_doc}_{index:06d}``, with ``chunk_index`` counting every
chunk of the document in document order (for ``semantic_parent_child`` a parent comes right before
its children), so a rebuild of the same chunks gives the same ids and points.
``previous_chunk_id`` / ``next_chunk_id`` link the chunks of a document that are retrieved (neighbor
expansion walks them); parents are linked among themselves.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from abc import ABC
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

from chunkbench_core.errors import ChunkingError, DuplicateIdError
from chunkbench_core.parsing.context import document_header
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.tokens import TokenIndex, count_tokens

from .registry import StrategyOptions, read_options
from .window import ModelWindow, fit_pieces

_UNSAFE = re.compile(r"[^\w]+", re.UNICODE)
#: between the document header and the chunk in an embedded text
HEADER_GAP = "\n\n"

ChunkRole = Literal["chunk", "parent", "child"]
CHUNK_ROLES: tuple[str, ...] = ("chunk", "parent", "child")


def safe_document_name(document: str) -> str:
    """The document name as used inside chunk ids: runs of non-word characters become '_', plus a short
    hash of the exact name, so ``report 2024.txt`` and ``report-2024.txt`` never share an id."""
    readable = _UNSAFE.sub("_", document).strip("_") or "document"
    return f"{readable}_{hashlib.sha256(document.encode('utf-8')).hexdigest()[:10]}"


def make_chunk_id(strategy: str, document: str, chunk_index: int) -> str:
    """Deterministic chunk id ``{strategy}_{safe_doc}_{path hash}_{index:06d}``: readable, and unique per
    document path (the relative path the corpus scan gives)."""
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
    # ``role``: "chunk" (retrieved), "child" (retrieved; its parent goes into the answer context) or
    # "parent" (context only, never searched).
    role: str = "chunk"
    previous_chunk_id: str | None = None
    next_chunk_id: str | None = None
    # Where the contextual prefix of ``embedded_text`` came from: "llm", "headings" or
    # "headings_fallback" (the LLM failed and the run was configured to fall back).
    context_source: str | None = None
    # The first and last page the chunk spans (1-based, as PDF viewers number them); None for a document
    # without pages.
    page_start: int | None = None
    page_end: int | None = None

    @property
    def text_to_embed(self) -> str:
        return self.embedded_text if self.embedded_text is not None else self.text

    @property
    def is_retrieved(self) -> bool:
        """Whether this chunk is embedded and searched (parents are context only)."""
        return self.role != "parent"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Piece:
    """A chunk before it has an id: a span plus what the strategy knows about it.

    ``parent`` is the position, in the same list of pieces, of this piece's parent.
    """

    start: int
    end: int
    content_type: str = "paragraph"
    heading_path: list[str] | None = None
    role: str = "chunk"
    parent: int | None = None
    token_count: int | None = None


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


def link_neighbours(chunks: list[Chunk]) -> list[Chunk]:
    """Set previous/next chunk ids among the chunks of each role group, in document order.

    Retrieved chunks (``chunk``/``child``) are linked to each other; parents to parents.
    """
    last: dict[bool, Chunk] = {}
    for chunk in chunks:
        key = chunk.role == "parent"
        before = last.get(key)
        if before is not None and before.document == chunk.document:
            before.next_chunk_id = chunk.chunk_id
            chunk.previous_chunk_id = before.chunk_id
        last[key] = chunk
    return chunks


class Chunker(ABC):
    """A chunking strategy: registered with :func:`.registry.register_strategy`, which sets ``name``,
    ``Options`` (its typed options) and ``needs_boundary_embeddings``. Subclasses implement ``spans``
    or ``pieces``.

    ``spans`` returns character spans into the markdown in document order; the base
    class turns them into Chunk records with ids, token counts and heading paths.
    Strategies that know more (content types, parents) override ``pieces``; the few
    that also change the embedded text (contextual prefixes) override ``chunk``.

    ``size_driven``: its chunks are cut by size alone; with a ``window``, a chunk over it is split
    to fit, here in :meth:`chunk` (the other strategies fit their own units to ``window``).
    The options given are validated by ``Options`` into ``self.options``.
    """

    name: ClassVar[str]
    Options: ClassVar[type[StrategyOptions]] = StrategyOptions
    needs_boundary_embeddings: ClassVar[bool] = False
    size_driven: ClassVar[bool] = True

    def __init__(
        self, chunk_size: int = 512, chunk_overlap: int = 50, *, window: ModelWindow | None = None, **options: Any
    ) -> None:
        validate_sizes(chunk_size, chunk_overlap)
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.window = window
        self.options: Any = read_options(getattr(self, "name", type(self).__name__), self.Options, options)

    def params(self) -> dict[str, Any]:
        """The parameters that determine this chunker's output (recorded as provenance)."""
        out: dict[str, Any] = {"chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap}
        if self.window is not None:
            out["model_window"] = self.window.describe()
        if self.options.document_context:
            out["document_context"] = True
        return out

    def spans(self, text: str, tokens: TokenIndex) -> list[tuple[int, int]] | list[tuple[int, int, int]]:
        """Character spans ``[start, end)`` of the chunks of ``text``, in order.

        A span may carry its token count as a third element when the strategy knows it
        exactly (token windows); otherwise it is ``tokens.count(start, end)``.
        """
        raise NotImplementedError(f"{type(self).__name__} implements neither spans() nor pieces()")

    def pieces(self, document: ParsedDocument, tokens: TokenIndex) -> list[Piece]:
        """The chunks of ``document`` as pieces; by default one paragraph piece per span."""
        return [
            Piece(s[0], s[1], token_count=s[2] if len(s) > 2 else None)  # a span of two or three numbers
            for s in self.spans(document.markdown, tokens)
        ]

    def chunk(self, document: ParsedDocument) -> list[Chunk]:
        """The chunks of ``document``; with ``document_context``, each embedded text starts with the document's
        header, and the chunk size and the model window are what is left beside it (the header is counted)."""
        if not self.options.document_context:
            return self.chunk_document(document)
        header = self._fitted_header(document_header(document))
        if not header:
            return self.chunk_document(document)
        prefix = header + HEADER_GAP
        sizes = self.chunk_size, self.chunk_overlap, self.window
        self.chunk_size = max(1, self.chunk_size - count_tokens(prefix))
        self.chunk_overlap = min(self.chunk_overlap, self.chunk_size // 4)
        if self.window is not None:
            self.window = self.window.with_prefix(prefix)
        try:
            chunks = self.chunk_document(document)
        finally:
            self.chunk_size, self.chunk_overlap, self.window = sizes
        for chunk in chunks:
            chunk.embedded_text = prefix + chunk.text_to_embed
        return chunks

    def _fitted_header(self, header: str) -> str:
        """``header``, cut at a word (with "…") when it would take more than a quarter of the chunk size or of
        the model window: every chunk keeps most of its room for its own text."""

        def fits(text: str) -> bool:
            if count_tokens(text + HEADER_GAP) > self.chunk_size // 4:
                return False
            return (
                self.window is None
                or self.window.counts([text + HEADER_GAP])[0] - self.window.counts([""])[0]
                <= self.window.max_tokens // 4
            )

        if not header or fits(header):
            return header
        words = header.split()
        low, high = 0, len(words)
        while low < high:
            middle = (low + high + 1) // 2
            if fits(" ".join(words[:middle]) + " …"):
                low = middle
            else:
                high = middle - 1
        return " ".join(words[:low]) + " …" if low else ""

    def chunk_document(self, document: ParsedDocument) -> list[Chunk]:
        """The chunks of ``document`` at ``chunk_size`` and ``window`` (what :meth:`chunk` runs; a strategy that
        also writes embedded texts overrides this)."""
        tokens = TokenIndex(document.markdown)
        pieces = self.pieces(document, tokens)
        if self.size_driven and self.window is not None:
            pieces = fit_pieces(document.markdown, tokens, pieces, self.window)
        return build_chunks(self.name, document, pieces, tokens)


def check_unique_ids(chunks: list[Chunk] | tuple[Chunk, ...] | Any, where: str) -> None:
    """Raise :class:`DuplicateIdError` naming the id and both documents when two chunks share an id."""
    seen: dict[str, Chunk] = {}
    for chunk in chunks:
        first = seen.setdefault(chunk.chunk_id, chunk)
        if first is not chunk:
            both = (
                f"documents {first.document!r} and {chunk.document!r}"
                if first.document != chunk.document
                else f"document {chunk.document!r} (chunks {first.chunk_index} and {chunk.chunk_index})"
            )
            raise DuplicateIdError(
                f"{where}: two chunks share the id {chunk.chunk_id!r}: {both}; chunk ids must be unique"
            )


def build_chunks(strategy: str, document: ParsedDocument, pieces: list[Piece], tokens: TokenIndex) -> list[Chunk]:
    """Chunk records for ``pieces``: ids, indices, texts, token counts, heading paths, links.

    Whitespace-only pieces are dropped (no empty chunk is ever produced); a dropped
    parent drops its children.
    """
    text = document.markdown
    units = document.units
    unit_ends = [u.end for u in units]
    doc_name = document.document
    safe = safe_document_name(doc_name)
    chunks: list[Chunk] = []
    id_of_piece: dict[int, str | None] = {}
    for position, piece in enumerate(pieces):
        start, end = piece.start, piece.end
        body = text[start:end]
        parent_id = id_of_piece.get(piece.parent) if piece.parent is not None else None
        if not body.strip() or (piece.parent is not None and parent_id is None):
            id_of_piece[position] = None
            continue
        index = len(chunks)
        chunk_id = f"{strategy}_{safe}_{index:06d}"
        id_of_piece[position] = chunk_id
        if piece.heading_path is not None:
            path = list(piece.heading_path)
        elif units:
            i = bisect.bisect_right(unit_ends, start)
            path = list(units[min(i, len(units) - 1)].heading_path)
        else:
            path = []
        pages = document.page_span(start, end)
        chunks.append(
            Chunk(
                chunk_id=chunk_id,
                document=doc_name,
                strategy=strategy,
                chunk_index=index,
                start=start,
                end=end,
                text=body,
                token_count=piece.token_count if piece.token_count is not None else tokens.count(start, end),
                content_type=piece.content_type,
                heading_path=path,
                parent_id=parent_id,
                role=piece.role,
                page_start=pages[0] if pages else None,
                page_end=pages[1] if pages else None,
            )
        )
    return link_neighbours(chunks)
