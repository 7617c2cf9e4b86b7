"""The documents stage: parse every new or changed file of the corpus, record every file's state.

Behind the ``parsed_documents`` asset: :func:`parse_corpus` takes a :class:`ParseRequest` (the scan of the
corpus folder, the parsed store, the parse function) and returns a :class:`ParseSummary`; the documents'
rows go through the results store (``ResultsDB.record_documents``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from chunkbench_core.embedding.language import ScriptShare
from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.progress import Tracker, check_stop, file_size, timed
from chunkbench_core.storage.corpus import CorpusScan, ParsedStore, SourceDocument, corpus_state, fingerprint
from chunkbench_core.storage.records import DocumentRecord
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.tokens import count_tokens


@dataclass
class ParseSummary:
    parsed: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    hidden: int = 0  # hidden or system files skipped by the corpus scan
    corpus_fingerprint: str = ""  # digest of {document: sha256}: what downstream partitions were built from
    script: ScriptShare = field(default_factory=ScriptShare)  # the parsed letters by script (boundary model rule)
    sample: dict[str, Any] | None = None  # the sampled corpus's record (None: the whole corpus)


@dataclass(frozen=True)
class ParseRequest:
    """What to parse: the corpus's ``sources`` into ``store`` with ``parse``; ``scan``: what the corpus scan
    refused (a link leading outside the corpus) and how many hidden files it skipped; ``parse_options``: their
    description, recorded with the parse."""

    sources: Sequence[SourceDocument]
    store: ParsedStore
    parse: Callable[[str], ParsedDocument]
    scan: CorpusScan | None = None
    parse_options: dict[str, Any] | None = None
    sample: dict[str, Any] | None = None  # the sampled corpus's record (None: the whole corpus)


def caption_counts(parsed: dict[str, Any]) -> dict[str, int]:
    """``n_captions``: the image captions a vision model wrote for a parsed document; ``caption_tokens``:
    their cl100k tokens (what the captions cost: evaluation.cost.caption_usd)."""
    captions = [u.get("text") or "" for u in parsed.get("units", []) if u.get("content_type") == "image_caption"]
    return {"n_captions": len(captions), "caption_tokens": sum(count_tokens(t) for t in captions)}


def _parse_one(request: ParseRequest, source: SourceDocument, summary: ParseSummary) -> dict[str, Any]:
    """The stored record of ``source``, parsing it first when its content is new (a failure is recorded)."""
    record = request.store.get(source)
    if record is None:
        try:
            parsed = request.parse(source.path)
            parsed.document = source.document
            request.store.put(source, parsed, None)
            summary.parsed.append(source.document)
        except DocumentProcessingError as exc:
            request.store.put(source, None, str(exc), reason=exc.reason)
            summary.failed[source.document] = str(exc)
        except Exception as exc:  # a parser bug must not lose the other documents
            reason = f"unexpected {type(exc).__name__}: {exc}"
            message = f"{source.path}: {reason}"
            request.store.put(source, None, message, reason=reason)
            summary.failed[source.document] = message
        record = request.store.get(source)
    elif record["status"] == "parsed":
        summary.reused.append(source.document)
    else:
        summary.failed[source.document] = record["error"]
    assert record is not None
    return record


def document_record(source: SourceDocument, record: dict[str, Any]) -> DocumentRecord:
    """The ``documents`` record of a source and what the parsed store holds for it."""
    parsed = record.get("parsed") or {}
    return DocumentRecord(
        document=source.document, path=source.path, sha256=source.sha256, size_bytes=source.size_bytes,
        status=record["status"], error=record.get("error"), parser=parsed.get("parser"),
        n_chars=len(parsed.get("markdown", "")) if parsed else None,
        n_units=len(parsed.get("units", [])) if parsed else None,
        warnings=json.dumps(parsed.get("warnings", []), ensure_ascii=False), **caption_counts(parsed))


def parse_corpus(request: ParseRequest, results: ResultsDB) -> ParseSummary:
    """Parse every source whose content hash is new; record all of them in ``documents``.

    A document that fails is recorded with status ``failed`` and its error; the others go on. A file the
    scan refused is a ``failed`` row naming it.
    """
    scan = request.scan
    summary = ParseSummary(hidden=scan.hidden if scan is not None else 0)
    records: list[DocumentRecord] = []
    for document, error in (scan.refused.items() if scan is not None else ()):
        summary.failed[document] = error
        records.append(DocumentRecord(document=document, status="failed", error=error))
    script = ScriptShare()
    tracker = Tracker("parsing", len(request.sources), unit="documents",
                      weights=[source.size_bytes for source in request.sources])
    with timed("parsing"), tracker.heartbeat():  # a line every few seconds even while one huge file parses
        for done, source in enumerate(request.sources, start=1):
            check_stop()
            tracker.begin(f"{source.document}, {file_size(source.size_bytes)}")
            record = _parse_one(request, source, summary)
            records.append(document_record(source, record))
            script = script + ScriptShare.of([(record.get("parsed") or {}).get("markdown") or ""])
            tracker.step(done)
    results.record_documents(records)
    summary.script = script
    request.store.write_manifest(list(request.sources), request.parse_options, script.to_dict(),
                                 sample=request.sample)
    summary.corpus_fingerprint = fingerprint(corpus_state(list(request.sources)))
    summary.sample = request.sample
    return summary


def sample_sources(sources: Sequence[SourceDocument], questions_folder: Path | str, store: ParsedStore, *,
                   n: int | None = None, token_budget: int | None = None,
                   seed: int = 0) -> tuple[list[SourceDocument], dict[str, Any] | None]:
    """The sources of a sampled corpus (every document holding the questions' evidence, plus a seeded sample of
    the others: :func:`chunkbench_core.estimate.sampling.sample_documents`) and its record (None: the whole
    corpus was asked for). A token budget counts parsed documents by their text, the others by file size."""
    if n is None and token_budget is None:
        return list(sources), None
    from chunkbench_core.estimate.plan import corpus_documents
    from chunkbench_core.estimate.predict import document_tokens
    from chunkbench_core.estimate.sampling import sample_documents
    from chunkbench_core.evaluation.questions import load_question_sets

    sets, _ = load_question_sets(questions_folder)  # a broken set is reported by the experiment, not here
    names: Any = [s.document for s in sources]
    if token_budget is not None:
        sizes = corpus_documents(store, sources)
        counts, _ = document_tokens(sizes)
        names = {d.document: int(round(t)) for d, t in zip(sizes, counts)}
    sample = sample_documents(names, sets, n=n, token_budget=token_budget, seed=seed)
    kept = set(sample.documents)
    return [s for s in sources if s.document in kept], sample.record.to_dict()


def load_parsed_corpus(store: ParsedStore) -> list[ParsedDocument]:
    """The documents the last ``parsed_documents`` materialization parsed successfully."""
    return store.load_manifest_documents()
