"""The work behind each pipeline asset, as plain functions (no Dagster here).

Each function takes explicit inputs (folders, stores, models, parameters) and returns
a small summary the asset turns into metadata. The Dagster layer only reads its
partition and config and calls these.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from chunkbench_core import __version__
from chunkbench_core.chunking import Chunk, make_chunker
from chunkbench_core.embedding import Embedder, EmbeddingModelSpec
from chunkbench_core.errors import ChunkbenchError, ChunkingError, DocumentProcessingError
from chunkbench_core.evaluation.experiment import (
    DEFAULT_TOP_K,
    aggregate,
    outcome_row,
    resolve_questions,
    run_retrieval,
)
from chunkbench_core.evaluation.questions import load_question_sets, question_set_hash
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.storage.corpus import ParsedStore, SourceDocument
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore, collection_name, point_id

log = logging.getLogger("chunkbench")

DEFAULT_CHUNK_OVERLAP = 50
MAX_DEFAULT_CHUNK_SIZE = 512


def now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


@lru_cache(maxsize=1)
def parser_version() -> str:
    """A digest of the parsing code: a changed parser re-parses every document."""
    digest = hashlib.sha256()
    for path in sorted((Path(__file__).parent / "parsing").glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


# -- documents -----------------------------------------------------------------------------
@dataclass
class ParseSummary:
    parsed: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def parse_corpus(
    sources: Sequence[SourceDocument],
    store: ParsedStore,
    results: ResultsDB,
    parse: Callable[[str], ParsedDocument],
) -> ParseSummary:
    """Parse every source whose content hash is new; record all of them in ``documents``.

    A document that fails is recorded with status ``failed`` and its error; the others go on.
    """
    summary = ParseSummary()
    rows: list[dict[str, Any]] = []
    for source in sources:
        record = store.get(source)
        if record is None:
            try:
                parsed = parse(source.path)
                parsed.document = source.document
                store.put(source, parsed, None)
                summary.parsed.append(source.document)
            except DocumentProcessingError as exc:
                store.put(source, None, str(exc))
                summary.failed[source.document] = str(exc)
            except Exception as exc:  # a parser bug must not lose the other documents
                message = f"{source.path}: unexpected {type(exc).__name__}: {exc}"
                store.put(source, None, message)
                summary.failed[source.document] = message
            record = store.get(source)
        elif record["status"] == "parsed":
            summary.reused.append(source.document)
        else:
            summary.failed[source.document] = record["error"]
        assert record is not None
        parsed_dict = record.get("parsed") or {}
        rows.append({
            "document": source.document,
            "path": source.path,
            "sha256": source.sha256,
            "size_bytes": source.size_bytes,
            "status": record["status"],
            "error": record.get("error"),
            "parser": parsed_dict.get("parser"),
            "n_chars": len(parsed_dict.get("markdown", "")) if parsed_dict else None,
            "n_units": len(parsed_dict.get("units", [])) if parsed_dict else None,
            "warnings": json.dumps(parsed_dict.get("warnings", []), ensure_ascii=False),
            "parsed_at": now(),
        })
    results.write("documents", "corpus", rows)
    store.write_manifest(list(sources))
    return summary


def load_parsed_corpus(store: ParsedStore) -> list[ParsedDocument]:
    """The documents the last ``parsed_documents`` materialization parsed successfully."""
    return store.load_manifest_documents()


# -- chunk collections ---------------------------------------------------------------------------
def default_chunk_size(spec: EmbeddingModelSpec) -> int:
    """LLD default 512 cl100k tokens, shrunk to 3/4 of a smaller model window.

    English runs about 1.2 word pieces per cl100k token, so 3/4 of the window keeps
    nearly every chunk inside it (192 for MiniLM's 256 word pieces).
    """
    return min(MAX_DEFAULT_CHUNK_SIZE, spec.max_input_tokens * 3 // 4)


def chunking_params(spec: EmbeddingModelSpec, chunk_size: int | None, chunk_overlap: int | None) -> dict[str, Any]:
    size = chunk_size if chunk_size else default_chunk_size(spec)
    overlap = chunk_overlap if chunk_overlap is not None else min(DEFAULT_CHUNK_OVERLAP, size // 4)
    return {"chunk_size": size, "chunk_overlap": overlap}


@dataclass
class CollectionSummary:
    collection: str
    n_documents: int
    n_chunks: int
    upserted: int
    removed: int
    token_counts: list[int]
    params: dict[str, Any]


def build_chunk_collection(
    strategy: str,
    spec: EmbeddingModelSpec,
    documents: Sequence[ParsedDocument],
    embedder: Embedder,
    store: VectorStore,
    results: ResultsDB,
    params: dict[str, Any],
) -> CollectionSummary:
    """Chunk every document, embed the chunks with the corpus model, replace the collection."""
    chunker = make_chunker(strategy, **params)
    if not documents:
        raise ChunkingError(
            "no parsed documents to chunk: materialize parsed_documents first, or check that the corpus "
            "folder (CHUNKBENCH_CORPUS) holds documents that parse"
        )
    chunks: list[Chunk] = []
    for document in documents:
        try:
            chunks.extend(chunker.chunk(document))
        except ChunkbenchError:
            raise
        except Exception as exc:
            raise ChunkingError(f"{strategy} failed on {document.document}: {type(exc).__name__}: {exc}") from exc
    name = collection_name(strategy, spec.id)
    vectors = embedder.embed([c.text_to_embed for c in chunks], "document")
    store.ensure_collection(name, spec.dimension)
    counts = store.replace_points(name, chunks, vectors)
    stamp = now()
    params_json = json.dumps(chunker.params(), sort_keys=True)
    results.write("chunks", f"{strategy}__{spec.id}", [
        {
            "chunk_id": c.chunk_id,
            "point_id": point_id(c.chunk_id),
            "strategy": strategy,
            "corpus_model": spec.id,
            "document": c.document,
            "chunk_index": c.chunk_index,
            "start_offset": c.start,
            "end_offset": c.end,
            "token_count": c.token_count,
            "content_type": c.content_type,
            "heading_path": json.dumps(c.heading_path, ensure_ascii=False),
            "parent_id": c.parent_id,
            "text": c.text,
            "embedded_text": c.embedded_text,
            "chunking_params": params_json,
            "materialized_at": stamp,
        }
        for c in chunks
    ])
    return CollectionSummary(name, len(documents), len(chunks), counts["upserted"], counts["removed"],
                             [c.token_count for c in chunks], chunker.params())


# -- experiments --------------------------------------------------------------------------------
@dataclass
class ExperimentSummary:
    experiment_run_id: str
    metrics: dict[str, float | int]
    errors: list[str]
    n_questions: int


def run_experiment(
    strategy: str,
    spec: EmbeddingModelSpec,
    experiment_run_id: str,
    questions_folder: Path,
    documents: Sequence[ParsedDocument],
    embedder: Embedder,
    store: VectorStore,
    results: ResultsDB,
    top_k: int = DEFAULT_TOP_K,
    filter_by_document: bool = False,
    provenance: dict[str, Any] | None = None,
) -> ExperimentSummary:
    """Score every question of every question set against this partition's collection."""
    sets, set_errors = load_question_sets(questions_folder)
    resolved, ref_errors = resolve_questions(sets, {d.document: d.markdown for d in documents})
    errors = [str(e) for e in (*set_errors, *ref_errors)]
    if not resolved:
        raise ChunkbenchError(
            "no question could be evaluated: " + ("; ".join(errors) if errors else f"no question sets in {questions_folder}")
        )
    name = collection_name(strategy, spec.id)
    outcomes = run_retrieval(resolved, embedder, store, name, top_k=top_k, filter_by_document=filter_by_document)
    stamp = now()
    key = f"{strategy}__{spec.id}__{experiment_run_id}"
    base = {"experiment_run_id": experiment_run_id, "strategy": strategy, "corpus_model": spec.id, "top_k": top_k,
            "created_at": stamp}
    results.write("question_results", key, [{**base, **outcome_row(o)} for o in outcomes])
    summary = aggregate(outcomes)
    full_provenance = {
        "corpus_model": spec.id,
        "top_k": top_k,
        "filter_by_document": filter_by_document,
        "question_sets": {qs.name: qs.sha256 for qs in sets},
        "question_set_hash": question_set_hash(sets),
        "documents": sorted(d.document for d in documents),
        "code_version": __version__,
        **(provenance or {}),
    }
    results.write("experiment_metrics", key, [{
        **base,
        **summary,
        "provenance": json.dumps(full_provenance, sort_keys=True, ensure_ascii=False),
    }])
    return ExperimentSummary(experiment_run_id, summary, errors, len(outcomes))
