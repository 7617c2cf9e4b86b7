"""The documents stage: parse every new or changed file of the corpus, record every file's state.

Behind the ``parsed_documents`` asset: :func:`parse_corpus` takes a :class:`ParseRequest` (the scan of the
corpus folder, the parsed store, the parse function) and returns a :class:`ParseSummary`; the documents'
rows go through the results store (``ResultsDB.record_documents``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from chunkbench_core.embedding.language import ScriptShare
from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.parsing.options import ParseOptions
from chunkbench_core.progress import Tracker, check_stop, file_size, timed
from chunkbench_core.storage.corpus import CorpusScan, ParsedStore, SourceDocument, corpus_state, fingerprint
from chunkbench_core.storage.records import DocumentRecord

if TYPE_CHECKING:  # the commands that only read parsed documents do not load DuckDB and the tokenizer
    from chunkbench_core.storage.results_db import ResultsDB


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
    from chunkbench_core.tokens import count_tokens

    captions = [u.get("text") or "" for u in parsed.get("units", []) if u.get("content_type") == "image_caption"]
    return {"n_captions": len(captions), "caption_tokens": sum(count_tokens(t) for t in captions)}


def _parse_and_store(
    store: ParsedStore, parse: Callable[[str], ParsedDocument], source: SourceDocument
) -> tuple[ParsedDocument | None, str | None]:
    """Parse ``source`` and store the outcome (a failure with its reason): (its parsed document, None) or
    (None, the error naming the file)."""
    try:
        parsed = parse(source.path)
        parsed.document = source.document
        store.put(source, parsed, None)
        return parsed, None
    except DocumentProcessingError as exc:
        store.put(source, None, str(exc), reason=exc.reason)
        return None, str(exc)
    except Exception as exc:  # a parser bug must not lose the other documents
        reason = f"unexpected {type(exc).__name__}: {exc}"
        message = f"{source.path}: {reason}"
        store.put(source, None, message, reason=reason)
        return None, message


def _captions_failed(record: dict[str, Any]) -> bool:
    """Whether the caption service failed on some images of a stored parse (they are uncaptioned for now)."""
    return bool(((record.get("parsed") or {}).get("stats") or {}).get("images_caption_failed"))


def _parse_one(request: ParseRequest, source: SourceDocument, summary: ParseSummary) -> dict[str, Any]:
    """The stored record of ``source``, parsing it first when its content is new (a failure is recorded), or when
    the caption service failed on some of its images last time (asked again: it may be fixed by now)."""
    record = request.store.get(source)
    if record is not None and record["status"] == "parsed" and _captions_failed(record):
        record = None
    if record is None:
        parsed, error = _parse_and_store(request.store, request.parse, source)
        if parsed is not None:
            summary.parsed.append(source.document)
        else:
            summary.failed[source.document] = str(error)
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
    captions = caption_counts(parsed)
    return DocumentRecord(
        document=source.document,
        path=source.path,
        sha256=source.sha256,
        size_bytes=source.size_bytes,
        status=record["status"],
        error=record.get("error"),
        parser=parsed.get("parser"),
        n_chars=len(parsed.get("markdown", "")) if parsed else None,
        n_units=len(parsed.get("units", [])) if parsed else None,
        warnings=json.dumps(parsed.get("warnings", []), ensure_ascii=False),
        n_captions=captions["n_captions"],
        caption_tokens=captions["caption_tokens"],
    )


def parse_corpus(request: ParseRequest, results: "ResultsDB") -> ParseSummary:
    """Parse every source whose content hash is new; record all of them in ``documents``.

    A document that fails is recorded with status ``failed`` and its error; the others go on. A file the
    scan refused is a ``failed`` row naming it.
    """
    scan = request.scan
    summary = ParseSummary(hidden=scan.hidden if scan is not None else 0)
    records: list[DocumentRecord] = []
    uncaptioned: set[str] = set()  # documents whose caption requests failed this time
    for document, error in scan.refused.items() if scan is not None else ():
        summary.failed[document] = error
        records.append(DocumentRecord(document=document, status="failed", error=error))
    script = ScriptShare()
    tracker = Tracker(
        "parsing", len(request.sources), unit="documents", weights=[source.size_bytes for source in request.sources]
    )
    with timed("parsing"), tracker.heartbeat():  # a line every few seconds even while one huge file parses
        for done, source in enumerate(request.sources, start=1):
            check_stop()
            tracker.begin(f"{source.document}, {file_size(source.size_bytes)}")
            record = _parse_one(request, source, summary)
            if _captions_failed(record):
                uncaptioned.add(source.document)
            records.append(document_record(source, record))
            script = script + ScriptShare.of([(record.get("parsed") or {}).get("markdown") or ""])
            tracker.step(done)
    results.record_documents(records)
    summary.script = script
    request.store.write_manifest(list(request.sources), request.parse_options, script.to_dict(), sample=request.sample)
    # a document whose images are captioned once the caption service works again is a changed parsed corpus (its
    # collections are rebuilt), though its bytes are the same; without caption failures: the files' state alone
    state = {
        name: digest + (":captions-failed" if name in uncaptioned else "")
        for name, digest in corpus_state(list(request.sources)).items()
    }
    summary.corpus_fingerprint = fingerprint(state)
    summary.sample = request.sample
    return summary


def sample_sources(
    sources: Sequence[SourceDocument],
    questions_folder: Path | str,
    store: ParsedStore,
    *,
    n: int | None = None,
    token_budget: int | None = None,
    seed: int = 0,
) -> tuple[list[SourceDocument], dict[str, Any] | None]:
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


@dataclass
class CorpusParse:
    """The parsed documents of a corpus as it is now (in the order of its sources; failed ones left out) and what
    was parsed, reused and failed (:class:`ParseSummary`)."""

    documents: list[ParsedDocument]
    summary: ParseSummary


def read_or_parse(
    sources: Sequence[SourceDocument],
    store: ParsedStore,
    parse: Callable[[str], ParsedDocument],
    read_first: Sequence[ParsedStore] = (),
    load: bool = True,
) -> CorpusParse:
    """Every source's parsed document, each content parsed once whichever command asks.

    A document whose parse under ``store``'s parser version and options is stored (by this command, another
    one, a run, or another process at the same time: records are written whole, atomically) is read back; the
    others are parsed now with ``parse`` and stored, with a progress line at least every
    :data:`~chunkbench_core.progress.REPORT_EVERY_S` seconds naming the document being parsed. A stored failure
    is reported again, not retried (its content, parser and options are unchanged). ``read_first``: stores
    looked in before ``store`` (a parse with image captions, which a command that must not call the vision
    model reads when a run made it). ``load=False``: only parse what is missing (``documents`` then holds only
    those parsed now; the stored ones are not read). Nothing else is written: the manifest of the last run stays
    as it was.
    """
    summary = ParseSummary()
    found: dict[str, tuple[dict[str, Any], ParsedDocument | None]] = {}
    missing: list[SourceDocument] = []
    reading = Tracker("reading parsed documents", len(sources), unit="documents", only_when_long=True)
    for done, source in enumerate(sources, start=1):
        for candidate in (*read_first, store):
            if not candidate.has(source):
                continue
            if not load:
                found[source.document] = ({"status": "stored"}, None)
                break
            fetched = candidate.fetch(source)
            if fetched is not None:
                found[source.document] = fetched
                break
        else:
            missing.append(source)
        reading.step(done)
    parsed_now: dict[str, ParsedDocument] = {}
    if missing:
        tracker = Tracker("parsing", len(missing), unit="documents", weights=[s.size_bytes for s in missing])
        with timed("parsing"), tracker.heartbeat():  # a line every few seconds even while one huge file parses
            for done, source in enumerate(missing, start=1):
                check_stop()
                tracker.begin(f"{source.document}, {file_size(source.size_bytes)}")
                parsed, error = _parse_and_store(store, parse, source)
                if parsed is not None:
                    parsed_now[source.document] = parsed
                    summary.parsed.append(source.document)
                else:
                    summary.failed[source.document] = str(error)
                tracker.step(done)
    documents = []
    for source in sources:
        if source.document in parsed_now:
            documents.append(parsed_now[source.document])
        elif source.document in found:
            record, parsed = found[source.document]
            if record["status"] == "stored":
                summary.reused.append(source.document)
            elif parsed is not None:
                summary.reused.append(source.document)
                documents.append(parsed)
            else:
                summary.failed[source.document] = str(record.get("error"))
    summary.corpus_fingerprint = fingerprint(corpus_state(list(sources)))
    return CorpusParse(documents, summary)


def parse_options_in_force(settings: Any, given: Mapping[str, Any] | None = None) -> ParseOptions:
    """The parse options a run of ``settings`` (the settings in force) parses with: the benchmark's parser
    heuristics, image captions when a vision model is configured, and ``given`` (the run's parsing settings)."""
    from chunkbench_core.configuration import parser_heuristics_of

    caption_source = None
    if getattr(settings, "vision_model", None):
        from chunkbench_core.parsing.captions import openai_vision_captioner

        caption_source = openai_vision_captioner(
            model=settings.vision_model, base_url=settings.llm_base_url, api_key=settings.llm_api_key
        )
    return ParseOptions(caption_source=caption_source, heuristics=parser_heuristics_of(settings), **dict(given or {}))


def last_parse_settings(store: ParsedStore) -> dict[str, Any]:
    """The run's parsing settings of the last parse (its manifest), by name: what a command parsing the corpus
    on its own passes to :func:`parse_options_in_force` so that its parses are the run's."""
    from chunkbench_core.run_config import SAMPLE_FIELDS, ParsingRunSettings

    _, options = store.manifest_parse()
    names = [n for n in ParsingRunSettings.model_fields if n not in SAMPLE_FIELDS]
    return {n: options[n] for n in names if options.get(n) is not None}


def without_captions(options: ParseOptions) -> ParseOptions:
    """``options`` with no caption source: what a command that spends nothing parses with."""
    return dataclasses.replace(options, caption_source=None) if options.caption_source is not None else options


def load_parsed_corpus(store: ParsedStore) -> list[ParsedDocument]:
    """The documents the last ``parsed_documents`` materialization parsed successfully."""
    return store.load_manifest_documents()
