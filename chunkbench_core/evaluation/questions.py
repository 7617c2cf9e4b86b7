"""Question sets: the LLD 10.1 JSON format extended with evidence references.

A file in the questions folder looks like::

    {"name": "sample", "questions": [
        {"id": "q1", "question": "...", "expected_answer": "...", "category": "...", "difficulty": "...",
         "references": [{"document": "handbook.docx", "content": "the exact excerpt"}]}]}

Evidence may carry character offsets (``"start"``/``"end"``, half-open, into the
parsed text); when given they are checked against the content. Chroma's evaluation
CSV (``question,references,corpus_id``) is imported by :func:`load_chroma_csv` and
read from the questions folder like a JSON set.

A reference without offsets is located in the parsed text of its document: exact match first, then
whitespace-tolerant (any whitespace run matches any whitespace run), each tried on
the content as written and after the parser's Persian normalisation. Every problem
is a QuestionSetError naming the file, the question id and the field.

Nothing is lost to one mistake: a question with a problem (an unknown key such as
``"doc"`` for ``"document"``, a missing field, bad offsets) is dropped alone and its
problem is kept in ``QuestionSet.errors``; only a file that cannot be read at all (not
UTF-8, a JSON syntax error, named with its line and column) is an error of the whole
file. A question without ``references`` (the plain LLD format) is a *judge-only*
question: it is retrieved and answered, scored by the LLM judge when one is configured,
and left out of the evidence metrics (never scored 0).
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkbench_core.errors import QuestionSetError
from chunkbench_core.parsing.persian import normalize_persian

OPTIONAL_TEXT_FIELDS = ("expected_answer", "category", "difficulty")
#: keys a question may have (``metadata``: a free object kept by importers and generators, never read)
QUESTION_KEYS = ("id", "question", *OPTIONAL_TEXT_FIELDS, "references", "metadata")
REFERENCE_KEYS = ("document", "content", "start", "end")


@dataclass(frozen=True)
class Reference:
    document: str
    content: str
    start: int | None = None
    end: int | None = None


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    expected_answer: str = ""
    category: str = ""
    difficulty: str = ""
    references: tuple[Reference, ...] = ()

    @property
    def judge_only(self) -> bool:
        """No evidence references: excluded from evidence metrics, scored by the LLM judge only."""
        return not self.references


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
        raise QuestionSetError(file, f"must be a non-empty string, got {value!r}", qid, key)
    return value


def _check_keys(file: str, qid: str | None, data: Mapping[str, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in data:
        if key in allowed:
            continue
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise QuestionSetError(file, f"unknown key {key!r}: {hint}allowed keys are {', '.join(allowed)}", qid,
                               f"{where}.{key}" if where else str(key))


def _parse_question(file: str, position: int, item: Any) -> Question:
    if not isinstance(item, dict):
        raise QuestionSetError(file, f"must be an object, got {type(item).__name__}", None, f"questions[{position}]")
    qid = item.get("id")
    if not isinstance(qid, str) or not qid.strip():
        raise QuestionSetError(file, f"questions[{position}] needs a non-empty string id, got {qid!r}", None, "id")
    _check_keys(file, qid, item, QUESTION_KEYS, "")
    text = _text(file, qid, item, "question", required=True)
    extras = {k: _text(file, qid, item, k, required=False) for k in OPTIONAL_TEXT_FIELDS}
    raw_refs = item.get("references", [])
    if raw_refs is None:
        raw_refs = []
    if not isinstance(raw_refs, list):
        raise QuestionSetError(file, "must be a list", qid, "references")
    refs: list[Reference] = []
    for r, ref in enumerate(raw_refs):
        where = f"references[{r}]"
        if not isinstance(ref, dict):
            raise QuestionSetError(file, "must be an object with document and content", qid, where)
        _check_keys(file, qid, ref, REFERENCE_KEYS, where)
        document = _text(file, qid, ref, "document", required=True)
        content = _text(file, qid, ref, "content", required=True)
        start, end = ref.get("start"), ref.get("end")
        for key, value in (("start", start), ("end", end)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise QuestionSetError(file, f"must be a non-negative integer, got {value!r}", qid, f"{where}.{key}")
        if (start is None) != (end is None):
            raise QuestionSetError(file, "start and end must be given together", qid, where)
        if start is not None and end < start:
            raise QuestionSetError(file, f"end ({end}) must not be smaller than start ({start})", qid, where)
        refs.append(Reference(document=document, content=content, start=start, end=end))
    return Question(id=qid, question=text, references=tuple(refs), **extras)


def parse_question_set(data: Any, file: str, sha256: str = "",
                       errors: list[QuestionSetError] | None = None) -> QuestionSet:
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
        raise QuestionSetError(str(path), f"is not UTF-8 text: byte {raw[exc.start]:#04x} at byte offset {exc.start} "
                                          "cannot be decoded (save the file as UTF-8)") from exc
    try:
        return json.loads(text), raw
    except json.JSONDecodeError as exc:
        raise _syntax_error(str(path), text, exc) from exc


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
    missing = [c for c in CHROMA_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise QuestionSetError(file, f"is not a Chroma question CSV: missing column(s) {', '.join(missing)} "
                                     f"(expected header {','.join(CHROMA_COLUMNS)})")
    items: list[dict[str, Any]] = []
    row_errors: list[QuestionSetError] = []
    for row_number, row in enumerate(reader, start=1):
        try:
            items.append(_chroma_row(file, row_number, row, document_suffix))
        except QuestionSetError as exc:  # a bad row is dropped alone
            row_errors.append(exc)
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
        raise QuestionSetError(file, f"row {row_number}: references is not valid JSON: {exc}", qid, "references") from exc
    if not isinstance(refs, list):
        raise QuestionSetError(file, f"row {row_number}: references must be a JSON list", qid, "references")
    references = []
    for r, ref in enumerate(refs):
        if not isinstance(ref, dict) or not {"content", "start_index", "end_index"} <= set(ref):
            raise QuestionSetError(file, f"row {row_number}: each reference needs content, start_index, end_index",
                                   qid, f"references[{r}]")
        start, end = ref["start_index"], ref["end_index"]
        if isinstance(start, str) and start.strip().isdigit():
            start = int(start)
        if isinstance(end, str) and end.strip().isdigit():
            end = int(end)
        if isinstance(start, int) and isinstance(end, int) and end < start:
            raise QuestionSetError(file, f"row {row_number}: end_index {end} < start_index {start}", qid,
                                   f"references[{r}]")
        references.append({"document": corpus_id + document_suffix, "content": ref["content"],
                           "start": start, "end": end})
    return {"id": qid, "question": row.get("question"), "category": corpus_id, "references": references}


def question_set_to_json(qs: QuestionSet) -> dict[str, Any]:
    """The JSON form of a question set (what ``load_question_set`` reads)."""
    questions = []
    for q in qs.questions:
        item: dict[str, Any] = {"id": q.id, "question": q.question}
        for key in OPTIONAL_TEXT_FIELDS:
            if getattr(q, key):
                item[key] = getattr(q, key)
        refs = []
        for ref in q.references:
            entry: dict[str, Any] = {"document": ref.document, "content": ref.content}
            if ref.start is not None:
                entry.update(start=ref.start, end=ref.end)
            refs.append(entry)
        if refs:
            item["references"] = refs
        questions.append(item)
    return {"name": qs.name, "questions": questions}


def write_question_file(data: Mapping[str, Any], path: str | Path) -> Path:
    """Write a question set JSON file atomically (a temporary name, then renamed); re-running replaces it."""
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
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
    for path in sorted([*folder.glob("*.json"), *folder.glob("*.csv")]):
        try:
            if path.suffix == ".csv":
                if not _is_chroma_csv(path):
                    raise QuestionSetError(str(path), "a CSV in the questions folder must have the Chroma header "
                                                      f"{','.join(CHROMA_COLUMNS)}")
                qs = load_chroma_csv(path)
            else:
                qs = load_question_set(path)
        except QuestionSetError as exc:
            errors.append(exc)
            continue
        if qs.name in names:
            errors.append(QuestionSetError(str(path), f"question set name {qs.name!r} is also used by {names[qs.name]}", field="name"))
            continue
        names[qs.name] = str(path)
        errors.extend(qs.errors)
        sets.append(qs)
    return sets, errors


def _whitespace_pattern(content: str) -> re.Pattern[str]:
    return re.compile(r"\s+".join(re.escape(word) for word in content.split()))


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
    # The parser normalises Persian text (ADR-0018) before computing offsets, so a
    # reference typed as a person reads it is looked for in that form too.
    for content in dict.fromkeys((reference.content, normalize_persian(reference.content))):
        index = markdown.find(content)
        if index >= 0:
            return Span(reference.document, index, index + len(content))
    for content in dict.fromkeys((reference.content, normalize_persian(reference.content))):
        if content.split():
            match = _whitespace_pattern(content).search(markdown)
            if match:
                return Span(reference.document, match.start(), match.end())
    raise QuestionSetError(
        file,
        f"reference content {reference.content[:80]!r} was not found in the parsed text of {reference.document}",
        question_id,
        field_name,
    )


def question_set_hash(sets: list[QuestionSet]) -> str:
    digest = hashlib.sha256()
    for qs in sorted(sets, key=lambda s: s.name):
        digest.update(qs.name.encode())
        digest.update(qs.sha256.encode())
    return digest.hexdigest()
