"""Question sets: a JSON file per set, each question with the evidence its answer rests on.

A file in the questions folder looks like::

    {"name": "sample", "questions": [
        {"id": "q1", "question": "...", "expected_answer": "...", "category": "...", "difficulty": "...",
         "labels": {"Source Chunk Type": "Table"},
         "references": [{"document": "handbook.docx", "content": "the exact excerpt"},
                        {"document": "*2023 Q3*"}]}]}

A reference with ``content`` is an evidence span. Evidence may carry character offsets
(``"start"``/``"end"``, half-open, into the parsed text); when given they are checked against
the content. A reference without ``content`` names only a document, or a glob of documents
(``"*2023 Q3 AAPL*"``): the question's evidence is at the document level
(:attr:`Question.documents`, resolved against the corpus by :func:`resolve_source_documents`).
A reference found by ``chunkbench questions locate`` records how (``"located_by"``, e.g.
``"answer_words"``) and how sure it is (``"score"``, 0 to 1); one written by hand, or accepted
in review, has neither. ``labels`` holds any further text columns of the team's own sheet
(the question type, the chunk type...); they are kept and can be grouped by.

Chroma's evaluation CSV (``question,references,corpus_id``) is imported by
:func:`load_chroma_csv` and read from the questions folder like a JSON set.

A reference without offsets is located in the parsed text of its document: exact match first,
then whitespace-tolerant (any whitespace run matches any whitespace run), each tried on the
content as written and after the parser's Persian normalisation. Both searches take time linear
in the document and the excerpt. Every problem is a QuestionSetError naming the file, the
question id and the field.

Nothing is lost to one mistake: a question with a problem (an unknown key such as ``"doc"`` for
``"document"``, a missing field, bad offsets, a text field over :data:`MAX_FIELD_CHARS`, nesting
deeper than :data:`MAX_DEPTH`) is dropped alone and its problem is kept in
``QuestionSet.errors``; only a file that cannot be read at all (not UTF-8, a JSON syntax error,
named with its line and column) is an error of the whole file. A question without any reference
(the plain format) is *judge-only*: it is retrieved and answered, scored by the LLM judge when one
is configured, and left out of the evidence metrics (never scored 0).
"""

from __future__ import annotations

import csv
import difflib
import fnmatch
import functools
import hashlib
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkbench_core.errors import QuestionSetError
from chunkbench_core.parsing.persian import normalize_persian

OPTIONAL_TEXT_FIELDS = ("expected_answer", "category", "difficulty")
#: keys a question may have (``metadata``: a free object kept by importers, generators and the review, never
#: scored; ``labels``: the team's own text columns, kept for grouping)
QUESTION_KEYS = ("id", "question", *OPTIONAL_TEXT_FIELDS, "references", "labels", "metadata")
REFERENCE_KEYS = ("document", "content", "start", "end", "located_by", "score", "page")
#: the ways ``chunkbench questions locate`` finds evidence (a located reference's ``located_by`` joins them with +)
LOCATE_METHODS = ("answer_words", "answer_figures", "answer_figures_scaled", "context_words")

#: the longest text a field may hold (characters): a question file is read whole, so a bigger field is a mistake
MAX_FIELD_CHARS = 8 * 1024 * 1024
#: the deepest nesting of lists and objects inside one question (a question needs 4 levels)
MAX_DEPTH = 32


@dataclass(frozen=True)
class Reference:
    """Evidence of one question: a span (``content``) of a document, or a whole document (no ``content``)."""

    document: str
    content: str = ""
    start: int | None = None
    end: int | None = None
    #: how ``chunkbench questions locate`` found it (e.g. ``answer_words+answer_figures``); "" = written by hand
    located_by: str = ""
    #: how sure the locating is, 0 to 1 (None for a hand-written reference)
    score: float | None = None
    #: the page of the document the evidence is on (1-based, as PDF viewers number them); None when not cited
    page: int | None = None

    @property
    def located(self) -> bool:
        return bool(self.located_by)

    @property
    def document_only(self) -> bool:
        return not self.content


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    expected_answer: str = ""
    category: str = ""
    difficulty: str = ""
    #: evidence spans (references with ``content``), hand-written or located
    references: tuple[Reference, ...] = ()
    #: document-level evidence: the names or globs of references without ``content``, as written
    documents: tuple[str, ...] = ()
    #: the team's own columns (question type, chunk type, ...): label -> text
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    #: pages cited by document-level references (document, 1-based page): evidence whose text is not kept
    document_pages: tuple[tuple[str, int], ...] = ()

    @property
    def pages(self) -> tuple[tuple[str, int], ...]:
        """Every cited page of the question's evidence, (document, 1-based page), each once: the page metrics
        score against these."""
        cited = [(r.document, r.page) for r in self.references if r.page is not None]
        return tuple(dict.fromkeys([*cited, *self.document_pages]))

    @property
    def judge_only(self) -> bool:
        """No evidence at all (no span, no source document): scored by the LLM judge only."""
        return not self.references and not self.documents

    @property
    def n_located(self) -> int:
        """Evidence spans found by ``questions locate`` and not reviewed yet."""
        return sum(r.located for r in self.references)

    @property
    def evidence_origin(self) -> str | None:
        """``written`` (every span by hand), ``located`` (every span located), ``mixed``, ``documents`` (document
        level only), or None (judge-only): what the views show next to a question's scores."""
        if self.references:
            located = self.n_located
            return "located" if located == len(self.references) else "mixed" if located else "written"
        return "documents" if self.documents else None


@dataclass
class QuestionSet:
    name: str
    path: str
    sha256: str
    questions: list[Question] = field(default_factory=list)
    #: problems of single questions (each dropped alone; the others are in ``questions``)
    errors: list[QuestionSetError] = field(default_factory=list)


@dataclass(frozen=True)
class Span:
    """A character span ``[start, end)`` in one document's parsed markdown."""

    document: str
    start: int
    end: int

    def __len__(self) -> int:
        return max(0, self.end - self.start)


def _text(file: str, qid: str | None, data: Mapping[str, Any], key: str, required: bool) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise QuestionSetError(file, "is missing", qid, key)
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise QuestionSetError(file, f"must be a non-empty string, got {_preview(value)}", qid, key)
    if len(value) > MAX_FIELD_CHARS:
        raise QuestionSetError(
            file, f"holds {len(value):,} characters, more than the {MAX_FIELD_CHARS:,} a field may hold", qid, key
        )
    return value


def _preview(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check_size_and_depth(
    value: Any, file: str, qid: str | None, where: str, max_depth: int = MAX_DEPTH, max_chars: int = MAX_FIELD_CHARS
) -> None:
    """Raise a QuestionSetError naming the first field nested deeper than ``max_depth`` or holding more than
    ``max_chars`` characters (a walk with its own stack: no recursion, whatever the nesting)."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            if len(item) > max_chars:
                raise QuestionSetError(
                    file,
                    f"holds {len(item):,} characters, more than the {max_chars:,} a field may hold",
                    qid,
                    path or None,
                )
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth >= max_depth:
            raise QuestionSetError(
                file,
                f"is nested more than {max_depth} levels deep (lists and objects inside "
                "each other): a question needs 4",
                qid,
                path or None,
            )
        children = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in children:
            if isinstance(child, (str, dict, list)):
                label = f"{path}.{key}" if isinstance(item, dict) else f"{path}[{key}]"
                stack.append((child, label.lstrip("."), depth + 1))


def _check_keys(file: str, qid: str | None, data: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in data:
        if key in allowed:
            continue
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise QuestionSetError(
            file,
            f"unknown key {key!r}: {hint}allowed keys are {', '.join(allowed)}",
            qid,
            f"{where}.{key}" if where else str(key),
        )


def _parse_question(file: str, position: int, item: Any) -> Question:
    if not isinstance(item, dict):
        raise QuestionSetError(file, f"must be an object, got {type(item).__name__}", None, f"questions[{position}]")
    qid = item.get("id")
    if not isinstance(qid, str) or not qid.strip() or len(qid) > 1000:
        raise QuestionSetError(
            file, f"questions[{position}] needs a non-empty string id, got {_preview(qid)}", None, "id"
        )
    check_size_and_depth(item, file, qid, "")
    _check_keys(file, qid, item, QUESTION_KEYS, "")
    text = _text(file, qid, item, "question", required=True)
    extras = {k: _text(file, qid, item, k, required=False) for k in OPTIONAL_TEXT_FIELDS}
    raw_refs = item.get("references", [])
    if raw_refs is None:
        raw_refs = []
    if not isinstance(raw_refs, list):
        raise QuestionSetError(file, "must be a list", qid, "references")
    refs: list[Reference] = []
    documents: list[str] = []
    document_pages: list[tuple[str, int]] = []
    for r, ref in enumerate(raw_refs):
        where = f"references[{r}]"
        if not isinstance(ref, dict):
            raise QuestionSetError(
                file, "must be an object with a document (and the content of the evidence)", qid, where
            )
        _check_keys(file, qid, ref, REFERENCE_KEYS, where)
        document = _text(file, qid, ref, "document", required=True)
        page = ref.get("page")
        if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
            raise QuestionSetError(
                file,
                f"must be a page number from 1 (as PDF viewers number pages), got {_preview(page)}",
                qid,
                f"{where}.page",
            )
        if ref.get("content") is None:  # document-level evidence: a name or a glob, perhaps with a page
            extra = [k for k in ("start", "end", "located_by", "score") if ref.get(k) is not None]
            if extra:
                raise QuestionSetError(file, f"{', '.join(extra)} need the content of the evidence", qid, where)
            if document not in documents:
                documents.append(document)
            if page is not None and (document, page) not in document_pages:
                document_pages.append((document, page))
            continue
        content = _text(file, qid, ref, "content", required=True)
        located_by = ref.get("located_by") or ""
        if not isinstance(located_by, str) or (located_by and not set(located_by.split("+")) <= set(LOCATE_METHODS)):
            raise QuestionSetError(
                file,
                f"must be one of {', '.join(LOCATE_METHODS)} (joined by +), got {_preview(located_by)}",
                qid,
                f"{where}.located_by",
            )
        score = ref.get("score")
        if score is not None and (
            isinstance(score, bool)
            or not isinstance(score, (int, float))
            or not math.isfinite(score)
            or not 0 <= score <= 1
        ):
            raise QuestionSetError(file, f"must be a number from 0 to 1, got {_preview(score)}", qid, f"{where}.score")
        start, end = ref.get("start"), ref.get("end")
        for key, value in (("start", start), ("end", end)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise QuestionSetError(file, f"must be a non-negative integer, got {value!r}", qid, f"{where}.{key}")
        if (start is None) != (end is None):
            raise QuestionSetError(file, "start and end must be given together", qid, where)
        if start is not None and end < start:
            raise QuestionSetError(file, f"end ({end}) must not be smaller than start ({start})", qid, where)
        refs.append(
            Reference(
                document=document,
                content=content,
                start=start,
                end=end,
                located_by=located_by,
                score=None if score is None else float(score),
                page=page,
            )
        )
    labels = item.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, (str, int, float, bool)) for v in labels.values()):
        raise QuestionSetError(file, "must be an object of label -> text", qid, "labels")
    metadata = item.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise QuestionSetError(file, "must be an object", qid, "metadata")
    return Question(
        id=qid,
        question=text,
        references=tuple(refs),
        documents=tuple(documents),
        labels={str(k): label_text(v) for k, v in labels.items()},
        metadata=metadata,
        document_pages=tuple(document_pages),
        **extras,
    )


def label_text(value: Any) -> str:
    """A label value as text: numbers without a needless ``.0``, true/false for flags."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def parse_question_set(
    data: Any, file: str, sha256: str = "", errors: list[QuestionSetError] | None = None
) -> QuestionSet:
    """Validate the decoded JSON of one question set file.

    A bad question is dropped alone: its problem goes to the set's ``errors`` (after any
    ``errors`` given, e.g. rows an importer could not read). Raises only when the file
    as a whole is unusable (not an object, no ``questions`` list).
    """
    if not isinstance(data, dict):
        raise QuestionSetError(file, "top level must be a JSON object with a 'questions' list")
    items = data.get("questions")
    if not isinstance(items, list) or not items:
        raise QuestionSetError(file, "must be a non-empty list of questions", field="questions")
    name = data.get("name") or Path(file).stem
    problems: list[QuestionSetError] = list(errors or [])
    questions: list[Question] = []
    seen: set[str] = set()
    for position, item in enumerate(items):
        try:
            question = _parse_question(file, position, item)
            if question.id in seen:
                raise QuestionSetError(file, "duplicate question id (the first one is kept)", question.id, "id")
        except QuestionSetError as exc:
            problems.append(exc)
            continue
        seen.add(question.id)
        questions.append(question)
    return QuestionSet(name=str(name), path=file, sha256=sha256, questions=questions, errors=problems)


def _syntax_error(file: str, text: str, exc: json.JSONDecodeError) -> QuestionSetError:
    before = text[: exc.pos].rstrip()
    hint = " (a trailing comma?)" if before.endswith(",") and text[exc.pos : exc.pos + 1] in "}]" else ""
    return QuestionSetError(file, f"JSON syntax error at line {exc.lineno}, column {exc.colno}: {exc.msg}{hint}")


def decode_json_file(path: str | Path) -> tuple[Any, bytes]:
    """The decoded JSON of ``path`` and its bytes; QuestionSetError for non-UTF-8 text or a syntax error."""
    path = Path(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuestionSetError(
            str(path),
            f"is not UTF-8 text: byte {raw[exc.start]:#04x} at byte offset {exc.start} "
            "cannot be decoded (save the file as UTF-8)",
        ) from exc
    return decode_json_text(str(path), text), raw


def decode_json_text(file: str, text: str) -> Any:
    """``json.loads`` with one-line errors: a syntax error with its line and column, nesting too deep to read."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _syntax_error(file, text, exc) from None
    except RecursionError:
        raise QuestionSetError(
            file,
            f"is nested too deeply to read (lists and objects inside each other, far more "
            f"than the {MAX_DEPTH} levels a question set may use)",
        ) from None


@contextmanager
def csv_field_limit() -> Iterator[None]:
    """Let the csv module read fields up to :data:`MAX_FIELD_CHARS` while the block runs (its default, 128 KB, is
    too small for the excerpts of real question sets); bigger fields stay an error, reported with their line.

    The csv module's limit is one for the whole process: the one in force before is put back at the end, so a
    program that imports chunkbench keeps its own."""
    before = csv.field_size_limit(MAX_FIELD_CHARS)
    try:
        yield
    finally:
        csv.field_size_limit(before)


def csv_error(file: str, reader: Any, exc: csv.Error) -> QuestionSetError:
    """A csv module error as one line naming the file and the line."""
    reason = str(exc)
    if "field larger than field limit" in reason:
        reason = f"a field is longer than {MAX_FIELD_CHARS:,} characters"
    return QuestionSetError(file, f"CSV error at line {getattr(reader, 'line_num', '?')}: {reason}")


def load_question_set(path: str | Path) -> QuestionSet:
    data, raw = decode_json_file(path)
    return parse_question_set(data, str(path), hashlib.sha256(raw).hexdigest())


CHROMA_COLUMNS = ("question", "references", "corpus_id")


def load_chroma_csv(path: str | Path, name: str | None = None, document_suffix: str = ".md") -> QuestionSet:
    """A question set from the Chroma evaluation CSV (``question, references, corpus_id``).

    ``references`` is a JSON list of ``{"content", "start_index", "end_index"}``:
    character offsets into the corpus file ``<corpus_id>.md``, which becomes the
    reference's document. Question ids are ``<corpus_id>-<row>`` (row = 1-based data
    row, so an id points back into the file); category = corpus_id. Offsets are kept
    and checked against the parsed text when the questions are resolved.
    """
    path = Path(path)
    raw = path.read_bytes()
    file = str(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuestionSetError(file, f"is not UTF-8: {exc}") from exc
    reader = csv.DictReader(io.StringIO(text, newline=""))
    items: list[dict[str, Any]] = []
    row_errors: list[QuestionSetError] = []
    with csv_field_limit():
        try:
            missing = [c for c in CHROMA_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise QuestionSetError(
                    file,
                    f"is not a Chroma question CSV: missing column(s) {', '.join(missing)} "
                    f"(expected header {','.join(CHROMA_COLUMNS)})",
                )
            for row_number, row in enumerate(reader, start=1):
                try:
                    items.append(_chroma_row(file, row_number, row, document_suffix))
                except QuestionSetError as exc:  # a bad row is dropped alone
                    row_errors.append(exc)
        except csv.Error as exc:  # the rows before it are kept
            row_errors.append(csv_error(file, reader, exc))
    sha256 = hashlib.sha256(raw).hexdigest()
    if not items:
        if not row_errors:
            raise QuestionSetError(file, "has no question rows", field="questions")
        return QuestionSet(name=name or path.stem, path=file, sha256=sha256, errors=row_errors)
    data = {"name": name or path.stem, "questions": items}
    return parse_question_set(data, file, sha256, errors=row_errors)


def _chroma_row(file: str, row_number: int, row: Mapping[str, Any], document_suffix: str) -> dict[str, Any]:
    corpus_id = (row.get("corpus_id") or "").strip()
    qid = f"{corpus_id or 'row'}-{row_number:04d}"
    if not corpus_id:
        raise QuestionSetError(file, f"row {row_number}: corpus_id is empty", qid, "corpus_id")
    try:
        refs = json.loads(row.get("references") or "")
    except json.JSONDecodeError as exc:
        raise QuestionSetError(
            file, f"row {row_number}: references is not valid JSON: {exc}", qid, "references"
        ) from exc
    except RecursionError:
        raise QuestionSetError(
            file, f"row {row_number}: references is nested too deeply to read", qid, "references"
        ) from None
    if not isinstance(refs, list):
        raise QuestionSetError(file, f"row {row_number}: references must be a JSON list", qid, "references")
    references = []
    for r, ref in enumerate(refs):
        if not isinstance(ref, dict) or not {"content", "start_index", "end_index"} <= set(ref):
            raise QuestionSetError(
                file, f"row {row_number}: each reference needs content, start_index, end_index", qid, f"references[{r}]"
            )
        start, end = ref["start_index"], ref["end_index"]
        if isinstance(start, str) and start.strip().isdigit():
            start = int(start)
        if isinstance(end, str) and end.strip().isdigit():
            end = int(end)
        if isinstance(start, int) and isinstance(end, int) and end < start:
            raise QuestionSetError(
                file, f"row {row_number}: end_index {end} < start_index {start}", qid, f"references[{r}]"
            )
        if not isinstance(ref["content"], str):
            raise QuestionSetError(file, f"row {row_number}: content must be text", qid, f"references[{r}].content")
        references.append(
            {"document": corpus_id + document_suffix, "content": ref["content"], "start": start, "end": end}
        )
    return {"id": qid, "question": row.get("question"), "category": corpus_id, "references": references}


def reference_to_json(ref: Reference) -> dict[str, Any]:
    entry: dict[str, Any] = {"document": ref.document}
    if ref.content:
        entry["content"] = ref.content
        if ref.start is not None:
            entry.update(start=ref.start, end=ref.end)
        if ref.located_by:
            entry["located_by"] = ref.located_by
            if ref.score is not None:
                entry["score"] = round(ref.score, 3)
    if ref.page is not None:
        entry["page"] = ref.page
    return entry


def question_to_json(q: Question) -> dict[str, Any]:
    """The JSON form of one question (what ``parse_question_set`` reads)."""
    item: dict[str, Any] = {"id": q.id, "question": q.question}
    for key in OPTIONAL_TEXT_FIELDS:
        if getattr(q, key):
            item[key] = getattr(q, key)
    if q.labels:
        item["labels"] = dict(q.labels)
    refs = [reference_to_json(ref) for ref in q.references]
    for d in q.documents:  # a document-level reference per cited page, or one for the document
        pages = [p for doc, p in q.document_pages if doc == d]
        refs += [{"document": d, "page": p} for p in pages] if pages else [{"document": d}]
    if refs:
        item["references"] = refs
    if q.metadata:
        item["metadata"] = dict(q.metadata)
    return item


def question_set_to_json(qs: QuestionSet) -> dict[str, Any]:
    """The JSON form of a question set (what ``load_question_set`` reads)."""
    return {"name": qs.name, "questions": [question_to_json(q) for q in qs.questions]}


def write_question_file(data: Mapping[str, Any], path: str | Path) -> Path:
    """Write a question set JSON file atomically (a temporary name, then renamed); re-running replaces it."""
    import os

    from chunkbench_core.storage.space import guard_writes

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # a full disk: one line naming the folder, no half-written file, the previous file kept
    with guard_writes(path, f"the question file {path.name}", cleanup=[tmp]):
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    return path


def _is_chroma_csv(path: Path) -> bool:
    with path.open("r", encoding="utf-8-sig", errors="replace", newline="") as handle:
        header = next(csv.reader(handle), [])
    return [h.strip() for h in header] == list(CHROMA_COLUMNS)


def load_question_sets(folder: str | Path) -> tuple[list[QuestionSet], list[QuestionSetError]]:
    """Every question set in ``folder``: ``*.json`` files, and ``*.csv`` files in the Chroma format.

    Bad files are returned as errors, the rest load; the problems of single questions
    (``QuestionSet.errors``) are returned too, after their file's. A CSV whose header is
    not the Chroma one (question,references,corpus_id) is reported as an error too.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return [], [QuestionSetError(str(folder), "question folder does not exist")]
    sets: list[QuestionSet] = []
    errors: list[QuestionSetError] = []
    names: dict[str, str] = {}
    loaded: list[QuestionSet] = []
    for path in sorted([*folder.glob("*.json"), *folder.glob("*.csv")]):
        if path.name.endswith(DECISIONS_SUFFIX):  # a review's decisions, not a question set
            continue
        try:
            if path.suffix == ".csv":
                if not _is_chroma_csv(path):
                    raise QuestionSetError(
                        str(path),
                        f"a CSV in the questions folder must have the Chroma header {','.join(CHROMA_COLUMNS)}",
                    )
                qs = load_chroma_csv(path)
            else:
                qs = load_question_set(path)
        except QuestionSetError as exc:
            errors.append(exc)
            continue
        loaded.append(qs)
    # two files may not share a set name (results are keyed by it): both are named, and both are kept, the
    # clash under names made from their files
    by_name: dict[str, list[QuestionSet]] = {}
    for qs in loaded:
        by_name.setdefault(qs.name, []).append(qs)
    taken = set(by_name)
    for name, group in by_name.items():
        if len(group) > 1:
            files = [Path(qs.path).name for qs in group]
            renamed = []
            # the file named after the set keeps the name; the others take their file's name
            keeper = next((qs for qs in group if Path(qs.path).stem == name), None)
            for qs in group:
                if qs is not keeper:
                    stem = Path(qs.path).stem
                    qs.name = stem if stem not in taken else f"{name} ({Path(qs.path).name})"
                    taken.add(qs.name)
                renamed.append(f"{Path(qs.path).name} as {qs.name!r}")
            errors.append(
                QuestionSetError(
                    str(group[0].path),
                    f"question set name {name!r} is used by {len(group)} files "
                    f'({", ".join(files)}): give each its own "name"; meanwhile both are read, '
                    f"{' and '.join(renamed)}",
                    field="name",
                )
            )
    for qs in loaded:
        names[qs.name] = qs.path
        errors.extend(qs.errors)
        sets.append(qs)
    return sets, errors


#: the file-name ending of a review's decisions (skipped when the folder is read)
DECISIONS_SUFFIX = ".decisions.json"

_NOT_SPACE = re.compile(r"\S")
_SPACE = re.compile(r"\s+")


@functools.lru_cache(maxsize=8)
def _collapsed(markdown: str) -> str:
    """``markdown`` with every whitespace run made one space, and none at the ends (cached: a document is
    searched by many references)."""
    return " ".join(markdown.split())


def _nth_non_space(text: str, n: int) -> int:
    """The index in ``text`` of its ``n``-th (0-based) non-whitespace character: one pass over blocks."""
    position, block_size = 0, 1 << 16
    while position < len(text):
        block = text[position : position + block_size]
        count = len(_SPACE.sub("", block))
        if n < count:
            for match in _NOT_SPACE.finditer(block):
                if n == 0:
                    return position + match.start()
                n -= 1
        n -= count
        position += block_size
    raise IndexError("past the end of the text")


def find_whitespace_tolerant(content: str, markdown: str) -> tuple[int, int] | None:
    """Where ``content`` is in ``markdown`` when any whitespace run may stand for any other: linear in both
    (a plain substring search of the collapsed texts, mapped back by counting non-space characters)."""
    needle = " ".join(content.split())
    if not needle:
        return None
    haystack = _collapsed(markdown)
    at = haystack.find(needle)
    if at < 0:
        return None
    first = at - haystack.count(" ", 0, at)  # non-space characters before the match
    last = first + len(needle) - needle.count(" ") - 1
    return _nth_non_space(markdown, first), _nth_non_space(markdown, last) + 1


def locate_reference(reference: Reference, markdown: str, file: str, question_id: str, field_name: str) -> Span:
    """Where ``reference`` sits in ``markdown``: given offsets (checked), exact match, then whitespace-tolerant."""
    if reference.start is not None and reference.end is not None:
        found = markdown[reference.start : reference.end]
        if found != reference.content and found.split() != reference.content.split():
            raise QuestionSetError(
                file,
                f"offsets {reference.start}:{reference.end} of {reference.document} hold {found[:60]!r}, "
                f"not the reference content {reference.content[:60]!r}",
                question_id,
                field_name,
            )
        return Span(reference.document, reference.start, reference.end)
    # The parser normalises Persian text before computing offsets, so a
    # reference typed as a person reads it is looked for in that form too.
    for content in dict.fromkeys((reference.content, normalize_persian(reference.content))):
        index = markdown.find(content)
        if index >= 0:
            return Span(reference.document, index, index + len(content))
    for content in dict.fromkeys((reference.content, normalize_persian(reference.content))):
        tolerant = find_whitespace_tolerant(content, markdown)
        if tolerant:
            return Span(reference.document, *tolerant)
    raise QuestionSetError(
        file,
        f"reference content {reference.content[:80]!r} was not found in the parsed text of {reference.document}",
        question_id,
        field_name,
    )


def match_documents(pattern: str, names: Iterable[str]) -> list[str]:
    """The parsed documents a source names: the exact name; else the documents whose name, or file name, matches
    the glob (``*2023 Q3 AAPL*``); else those whose file name, or file name without its extension, is the
    pattern, ignoring case. Sorted."""
    names = list(names)
    if pattern in names:
        return [pattern]
    folded = pattern.casefold()
    if any(c in pattern for c in "*?["):
        return sorted(
            n
            for n in names
            if fnmatch.fnmatchcase(n.casefold(), folded) or fnmatch.fnmatchcase(Path(n).name.casefold(), folded)
        )
    return sorted(n for n in names if folded in (n.casefold(), Path(n).name.casefold(), Path(n).stem.casefold()))


def resolve_source_documents(question: Question, names: Iterable[str]) -> tuple[str, ...]:
    """The question's source documents among the parsed ``names``: every document its document-level references
    match, and every document of its evidence spans; sorted, each once. Empty for a judge-only question.

    A document-level pattern that matches nothing is reported by :func:`document_problems`."""
    names = list(names)
    found = {ref.document for ref in question.references}
    for pattern in question.documents:
        found.update(match_documents(pattern, names))
    return tuple(sorted(found))


def document_problems(question: Question, names: Iterable[str], file: str) -> list[QuestionSetError]:
    """A problem for each document-level reference of ``question`` that names no parsed document."""
    names = list(names)
    problems = []
    for i, pattern in enumerate(question.documents):
        if not match_documents(pattern, names):
            known = ", ".join(sorted(names)[:10]) or "none"
            problems.append(
                QuestionSetError(
                    file,
                    f"document {pattern!r} matches no parsed document of the corpus "
                    f"(parsed: {known}{', ...' if len(names) > 10 else ''})",
                    question.id,
                    f"references[{len(question.references) + i}].document",
                )
            )
    return problems


def question_set_hash(sets: list[QuestionSet]) -> str:
    digest = hashlib.sha256()
    for qs in sorted(sets, key=lambda s: s.name):
        digest.update(qs.name.encode())
        digest.update(qs.sha256.encode())
    return digest.hexdigest()
