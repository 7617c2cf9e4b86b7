"""Question sets teams already have, imported with their answers, source documents, evidence and labels.

Formats (:data:`FORMATS`; :func:`detect_format` picks one from the file when none is given):

- ``table``: a sheet of questions, CSV (or TSV), XLSX or JSONL, one question a row. A column mapping
  names the column of each role (:data:`ROLES`): ``question`` (required), ``answer`` (the expected
  answer), ``sources`` (the source documents: names, globs such as ``*2023 Q3 AAPL*``, or a list of
  them: a JSON list, or names separated by ``;``, ``|`` or line breaks), ``contexts`` (evidence
  excerpts: a list, or one excerpt), ``category``, ``difficulty``, ``id``. The mapping is written
  ``question=Question,answer=Answer,sources="Source Docs"``; a JSONL column may reach into an object
  (``sources=metadata.source``). Without one, :func:`guess_mapping` guesses it from the column names
  (:data:`GUESSES`). Every other column is kept as a label of the question (an object's fields as
  ``column.field``).
- ``ragas``: a RAGAS test set (CSV or JSONL: ``user_input``, ``reference``, ``reference_contexts``, or
  the older ``question``, ``ground_truth``, ``contexts``); its other columns (``synthesizer_name``, ...)
  are labels, and a source column is honoured like the table's.
- ``llamaindex``: a LlamaIndex retrieval dataset (``queries``, ``corpus``, ``relevant_docs``) or a
  labelled RAG dataset (``examples`` with ``query``, ``reference_contexts``, ``reference_answer``).
- ``chroma``: Chroma's evaluation CSV (``question, references, corpus_id``; offsets into
  ``<corpus_id>.md``), read by :func:`.questions.load_chroma_csv`.
- ``financebench``: JSON or JSONL questions with a list of evidence objects (``evidence_text``, ``doc_name``,
  ``evidence_page_num``), told from those keys. A table's mapping can read such a list too: ``LIST[].FIELD``
  names a field of each object (``contexts=evidence[].evidence_text,sources=evidence[].doc_name,
  pages=evidence[].evidence_page_num``). Each object is its own reference: its document found by
  :func:`.evidence.resolve_document_name` (an ambiguous name is refused with its candidates), its passage by
  :func:`.evidence.find_evidence`, its page stored 1-based after the file's convention is told from where the
  passages are found (:func:`.evidence.page_convention`). A passage not found stays as its document and page
  (for the document and page metrics) and in ``metadata.evidence_not_found``; the parse ceiling
  (:class:`.evidence.ParseCeiling`) counts it. A malformed object is one problem (file, question, field,
  reason); the question keeps its other evidence.

A context is looked for in the question's source documents only (never in another document that
happens to hold it), or in every document when the question names none: exact, then
whitespace-tolerant, each also after Persian normalisation. Found, it becomes a reference with the
exact parsed text and its offsets. Not found (a paraphrase, or the answer given as the context), the
question is kept: its evidence is located from that text (:mod:`.locate`, ``context_words`` and
figures) and the import notes it. Source documents are kept as document-level references. A question
with no span is then given located evidence from its answer (unless ``locate=False``).

A row is left out, and named (file, question id, field, reason), when it has no question, a source that
matches no document, or a value of the wrong type; the other rows are kept.
"""

from __future__ import annotations

import ast
import csv
import datetime as dt
import hashlib
import io
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chunkbench_core.errors import QuestionSetError

from .evidence import (
    KIND_LABEL,
    EvidenceCheck,
    PageConvention,
    ParseCeiling,
    evidence_kind,
    find_evidence,
    found_pages,
    page_convention,
    resolve_document_name,
)
from .locate import DEFAULT_MIN_SCORE, LocateReport, Locator, Search, locate_questions
from .questions import (
    MAX_FIELD_CHARS,
    Question,
    QuestionSet,
    Reference,
    csv_error,
    csv_field_limit,
    decode_json_file,
    decode_json_text,
    label_text,
    load_chroma_csv,
    locate_reference,
    match_documents,
    question_set_to_json,
)

FORMATS = ("table", "ragas", "llamaindex", "chroma", "financebench")
ROLES = ("question", "answer", "sources", "contexts", "pages", "category", "difficulty", "id")
#: a role read from each object of a list column: ``contexts=evidence[].evidence_text``
LIST_MARK = "[]."
#: FinanceBench's fields (its other fields, such as question_type, company or justification, are labels)
FINANCEBENCH_MAPPING = {
    "id": "financebench_id",
    "question": "question",
    "answer": "answer",
    "contexts": "evidence[].evidence_text",
    "sources": "evidence[].doc_name",
    "pages": "evidence[].evidence_page_num",
}
#: column names (lower case, letters and digits only) guessed for each role, best first
GUESSES: dict[str, tuple[str, ...]] = {
    "question": ("question", "userinput", "query", "questiontext", "prompt", "q"),
    "answer": (
        "answer",
        "expectedanswer",
        "reference",
        "referenceanswer",
        "groundtruth",
        "goldanswer",
        "idealanswer",
        "response",
        "a",
    ),
    "sources": (
        "sourcedocs",
        "sourcedocuments",
        "sourcedoc",
        "sourcedocument",
        "sources",
        "source",
        "documents",
        "document",
        "docs",
        "doc",
        "files",
        "file",
        "filename",
        "filenames",
        "sourcefile",
        "sourcefiles",
        "metadatasource",
        "corpusid",
    ),
    "contexts": (
        "referencecontexts",
        "contexts",
        "context",
        "evidence",
        "excerpts",
        "excerpt",
        "references",
        "passages",
        "passage",
        "supportingtext",
    ),
    "category": ("category", "questiontype", "questioncategory", "type", "topic"),
    "difficulty": ("difficulty", "level", "complexity"),
    "id": ("id", "questionid", "qid", "uid", "key"),
}
RAGAS_PRESETS = (
    {"question": "user_input", "contexts": "reference_contexts", "answer": "reference"},
    {"question": "question", "contexts": "contexts", "answer": "ground_truth"},
)
TABLE_SUFFIXES = (".csv", ".tsv", ".xlsx", ".jsonl", ".ndjson")


@dataclass
class Table:
    file: str
    columns: list[str]
    rows: list[dict[str, Any]]
    problems: list[QuestionSetError] = field(default_factory=list)  # rows that could not be read


@dataclass(frozen=True)
class ImportOptions:
    """How a file of questions is imported: the question set's ``name`` (default: the file's stem), the columns
    ``mapping`` (default: read from the format, or guessed), the spreadsheet ``sheet``, whether evidence is located
    in the parsed text (``locate``) and how close a match must be (``min_score``), and each PDF's page starts
    (``pages``: document -> the markdown offset of each page's start, to tell the file's page convention and check
    that a cited page holds its passage)."""

    name: str | None = None
    mapping: Mapping[str, str] | None = None
    sheet: str | None = None
    locate: bool = True
    min_score: float = DEFAULT_MIN_SCORE
    pages: Mapping[str, Sequence[int]] | None = None


@dataclass
class ImportResult:
    question_set: QuestionSet
    source_format: str
    n_read: int
    problems: list[QuestionSetError] = field(default_factory=list)  # rows left out, with the reason
    notes: list[str] = field(default_factory=list)  # kept, but worth a look (a context not found verbatim, ...)
    mapping: dict[str, str] = field(default_factory=dict)
    located: LocateReport | None = None
    #: the share of the evidence passages found in the parsed text (None: the file gives no passages)
    ceiling: ParseCeiling | None = None
    #: how the file numbers its pages (None: it gives none)
    pages: PageConvention | None = None

    def to_json(self) -> dict[str, Any]:
        data = question_set_to_json(self.question_set)
        how = f", columns {format_mapping(self.mapping)}" if self.mapping else ""
        data["description"] = (
            f"imported from {Path(self.question_set.path).name} ({self.source_format}{how}); "
            "contexts located in the parsed documents; references with located_by were found "
            "by `chunkbench questions locate` and await review"
        )
        out = {"name": data["name"], "description": data["description"], "questions": data["questions"]}
        if self.ceiling is not None and self.ceiling.total:
            out["parse_ceiling"] = self.ceiling.to_json()
        return out

    def summary(self) -> str:
        kept = len(self.question_set.questions)
        with_docs = sum(bool(q.documents) for q in self.question_set.questions)
        labels = sorted({k for q in self.question_set.questions for k in q.labels})
        judge_only = sum(q.judge_only for q in self.question_set.questions)
        extra = f"; {with_docs} with source documents" if with_docs else ""
        extra += f"; {judge_only} judge-only (no evidence found: scored only by an LLM judge)" if judge_only else ""
        extra += f"; labels kept: {', '.join(labels)}" if labels else ""
        return (
            f"{self.n_read} question(s) read from {self.question_set.path} ({self.source_format}): {kept} kept, "
            f"{self.n_read - kept} left out{extra}"
        )


# -- reading ---------------------------------------------------------------------------------------
def _cell(value: Any) -> Any:
    """A spreadsheet value as the importer reads it: text stripped, whole floats as integers, dates as ISO."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, str):
        return value.strip()
    return value


def _read_csv(path: Path) -> Table:
    file = str(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuestionSetError(
            file,
            f"is not UTF-8 text: byte {raw[exc.start]:#04x} at byte offset {exc.start} "
            "cannot be decoded (save it as CSV UTF-8)",
        ) from None
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    if delimiter == ",":
        try:
            delimiter = csv.Sniffer().sniff(text[:65536].split("\n", 5)[0] + "\n", delimiters=",;\t|").delimiter
        except csv.Error:
            pass
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    table = Table(file, [], [])
    with csv_field_limit():
        try:
            header = next(reader, None)
            if not header or not any(h.strip() for h in header):
                raise QuestionSetError(file, "has no header row (the first line names the columns)")
            table.columns = _unique_columns(header)
            for row in reader:
                if not any(c.strip() for c in row):
                    continue
                table.rows.append({c: _cell(v) for c, v in zip(table.columns, row)})
        except csv.Error as exc:  # the rows before it are kept
            table.problems.append(csv_error(file, reader, exc))
    return table


def _unique_columns(header: Sequence[Any]) -> list[str]:
    out: list[str] = []
    for i, raw in enumerate(header):
        name = str(raw).strip() if raw is not None and str(raw).strip() else f"column {i + 1}"
        while name in out:
            name += "'"
        out.append(name)
    return out


def _read_xlsx(path: Path, sheet: str | None) -> Table:
    import openpyxl

    file = str(path)
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - any reason a workbook cannot be opened is one line
        raise QuestionSetError(file, f"is not a readable XLSX workbook ({type(exc).__name__}: {exc})") from None
    try:
        if sheet is not None and sheet not in book.sheetnames:
            raise QuestionSetError(file, f"has no sheet {sheet!r} (sheets: {', '.join(book.sheetnames)})")
        ws = book[sheet] if sheet else book.worksheets[0]
        rows = ws.iter_rows(values_only=True)
        header = None
        for row in rows:
            if any(v is not None and str(v).strip() for v in row):
                header = row
                break
        if header is None:
            raise QuestionSetError(file, f"sheet {ws.title!r} is empty")
        table = Table(file, _unique_columns(header), [])
        for row in rows:
            if any(v is not None and str(v).strip() for v in row):
                values = [_cell(v) for v in row]
                table.rows.append({c: (values[i] if i < len(values) else None) for i, c in enumerate(table.columns)})
        return table
    finally:
        book.close()


def _read_jsonl(path: Path) -> Table:
    file = str(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuestionSetError(
            file, f"is not UTF-8 text: byte {raw[exc.start]:#04x} at byte offset {exc.start} cannot be decoded"
        ) from None
    table = Table(file, [], [])
    columns: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = decode_json_text(f"{file}, line {number}", line)
        except QuestionSetError as exc:
            table.problems.append(QuestionSetError(file, f"line {number}: {exc.reason}", f"line-{number}"))
            continue
        if not isinstance(row, dict):
            table.problems.append(
                QuestionSetError(
                    file, f"line {number} must be a JSON object, got {type(row).__name__}", f"line-{number}"
                )
            )
            continue
        for key in row:
            columns.setdefault(str(key), None)
        table.rows.append({str(k): _cell(v) for k, v in row.items()})
    table.columns = list(columns)
    return table


def read_table(path: str | Path, sheet: str | None = None) -> Table:
    """The rows of a CSV/TSV, XLSX or JSONL file, with its column names in order."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        return _read_xlsx(path, sheet)
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(path)
    if suffix in (".csv", ".tsv", ".txt"):
        return _read_csv(path)
    raise QuestionSetError(
        str(path), f"cannot read a {suffix or 'nameless'} file as a table: use .csv, .tsv, .xlsx or .jsonl"
    )


# -- mapping -----------------------------------------------------------------------------------------
def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", name.casefold())


def parse_mapping(text: str) -> dict[str, str]:
    """``question=Question,answer=Answer,sources="Source Docs"`` -> {role: column}; quotes allow commas."""
    mapping: dict[str, str] = {}
    for part in next(csv.reader([text], skipinitialspace=True), []):
        if not part.strip():
            continue
        role, sep, column = part.partition("=")
        role, column = role.strip().lower(), column.strip().strip('"').strip("'")
        if role == "expected_answer":
            role = "answer"
        if not sep or not column:
            raise QuestionSetError("--map", f"{part!r} must be ROLE=COLUMN, e.g. question=Question")
        if role not in ROLES:
            raise QuestionSetError(
                "--map",
                f"unknown role {role!r}: the roles are {', '.join(ROLES)} (every other column is kept as a label)",
            )
        mapping[role] = column
    return mapping


def format_mapping(mapping: Mapping[str, str]) -> str:
    def quoted(column: str) -> str:
        return f'"{column}"' if re.search(r"[\s,=\"']", column) else column

    return ",".join(f"{role}={quoted(mapping[role])}" for role in ROLES if role in mapping)


def _values(rows: Sequence[Mapping[str, Any]], column: str) -> list[Any]:
    return [_lookup(row, column) for row in rows[:50]]


def guess_mapping(table: Table) -> dict[str, str]:
    """The role of each column, guessed from its name (:data:`GUESSES`), and from the values of a ``metadata``
    object with a source-like field (``sources=metadata.source``)."""
    by_key: dict[str, str] = {}
    for column in table.columns:
        by_key.setdefault(_key(column), column)
    for column in table.columns:  # an object column with a source field (LangChain's metadata.source, ...)
        sample = [v for v in _values(table.rows, column) if isinstance(v, dict)]
        for field_name in ("source", "file_name", "filename", "file_path", "document"):
            if sample and all(field_name in v for v in sample):
                by_key.setdefault(_key(f"{column}.{field_name}"), f"{column}.{field_name}")
                break
    mapping: dict[str, str] = {}
    used: set[str] = set()
    listed = _guess_evidence_list(table)
    if listed:
        mapping.update(listed)
        used.update(c.split(LIST_MARK, 1)[0] for c in listed.values())
    for role in ROLES:
        if role in mapping:
            continue
        for candidate in GUESSES.get(role, ()):
            found = by_key.get(candidate)
            if found is not None and found not in used:
                mapping[role] = found
                used.add(found)
                break
    return mapping


#: the fields of an evidence object, per role, best first
EVIDENCE_FIELDS: dict[str, tuple[str, ...]] = {
    "contexts": ("evidence_text", "text", "content", "passage", "excerpt", "context"),
    "sources": ("doc_name", "document", "source", "file_name", "filename", "doc"),
    "pages": ("evidence_page_num", "page", "page_num", "page_number", "pagenum"),
}


def _guess_evidence_list(table: Table) -> dict[str, str]:
    """A column of lists of evidence objects (FinanceBench's ``evidence``): the roles read from their fields."""
    for column in table.columns:
        sample = [v for v in _values(table.rows, column) if isinstance(v, list) and v]
        objects = [o for v in sample for o in v if isinstance(o, dict)]
        if not objects:
            continue
        keys = set().union(*(o.keys() for o in objects))
        found = {}
        for role, fields in EVIDENCE_FIELDS.items():
            name = next((f for f in fields if f in keys), None)
            if name is not None:
                found[role] = f"{column}{LIST_MARK}{name}"
        if "contexts" in found or "sources" in found:
            return found
    return {}


def evidence_list(mapping: Mapping[str, str]) -> str | None:
    """The list column the mapping reads evidence objects from (``evidence`` for ``evidence[].evidence_text``)."""
    heads = {c.split(LIST_MARK, 1)[0] for c in mapping.values() if LIST_MARK in c}
    return next(iter(heads)) if len(heads) == 1 else None


def check_mapping(mapping: Mapping[str, str], table: Table) -> None:
    if "question" not in mapping:
        raise QuestionSetError(
            table.file,
            f"no column is mapped to question (columns: {', '.join(table.columns)}); "
            "give one with --map question=COLUMN",
        )
    heads = {c.split(LIST_MARK, 1)[0] for c in mapping.values() if LIST_MARK in c}
    if len(heads) > 1:
        raise QuestionSetError(
            table.file,
            f"--map reads evidence objects from {len(heads)} lists ("
            f"{', '.join(sorted(heads))}): name fields of one list only",
        )
    for role, column in mapping.items():
        if LIST_MARK in column:
            if role not in ("contexts", "sources", "pages"):
                raise QuestionSetError(
                    table.file,
                    f"--map {role}={column}: only contexts, sources and pages can be "
                    "read from a list of evidence objects",
                )
            column = column.split(LIST_MARK, 1)[0]
        elif role == "pages":
            raise QuestionSetError(
                table.file,
                f"--map pages={column}: pages are read from a list of evidence objects, "
                "with their documents (e.g. pages=evidence[].page,"
                "sources=evidence[].document)",
            )
        if column not in table.columns and not ("." in column and column.split(".", 1)[0] in table.columns):
            raise QuestionSetError(
                table.file, f"--map {role}={column}: no such column (columns: {', '.join(table.columns)})"
            )


def describe_mapping(mapping: Mapping[str, str], table: Table) -> list[str]:
    """One line per column: what it becomes, with an example value (what the user confirms)."""
    role_of = {column: role for role, column in mapping.items()}
    first = next((r for r in table.rows if any(v not in (None, "") for v in r.values())), {})
    lines = []
    for column in [*table.columns, *(c for c in mapping.values() if c not in table.columns)]:
        role = role_of.get(column)
        through = [c for c in role_of if c.startswith((column + ".", column + LIST_MARK))]
        if role is None and through:
            role = "(read through " + ", ".join(through) + ")"
        what = {
            "question": "the question",
            "answer": "the expected answer",
            "sources": "the source documents (names, globs or lists)",
            "contexts": "evidence excerpts",
            "category": "the category",
            "difficulty": "the difficulty",
            "id": "the question id",
            "pages": "the page of each evidence passage",
        }.get(role or "", role if role else "a label")
        example = str(_lookup(first, column) if first else "")
        example = " ".join(example.split())
        example = example if len(example) <= 50 else example[:47] + "..."
        lines.append(f"  {column!r:<28} -> {what}" + (f"   (e.g. {example!r})" if example else ""))
    return lines


def _lookup(row: Mapping[str, Any], column: str) -> Any:
    if column in row:
        return row[column]
    if "." in column:
        head, rest = column.split(".", 1)
        value = row.get(head)
        if isinstance(value, str) and value.startswith("{"):
            value = _literal(value)
        if isinstance(value, dict):
            return _lookup(value, rest)
    return None


# -- rows -> questions -------------------------------------------------------------------------------
def _literal(raw: str) -> Any:
    """A JSON value, or the Python literal pandas writes for a list or dict; else the text itself."""
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(raw)
        except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
            continue
    return raw


def _text(value: Any, file: str, qid: str, role: str, required: bool = False) -> str:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise QuestionSetError(file, "is empty", qid, role)
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuestionSetError(file, f"must be text, got {type(value).__name__} {str(value)[:60]!r}", qid, role)
    text = label_text(value)
    if len(text) > MAX_FIELD_CHARS:
        raise QuestionSetError(file, f"holds {len(text):,} characters, more than {MAX_FIELD_CHARS:,}", qid, role)
    return text


def _text_list(value: Any, file: str, qid: str, role: str, split: bool) -> list[str]:
    """A list cell: a list, a JSON or Python list literal, or (``split``) names separated by ; | or line breaks."""
    if value is None:
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped:
            return []
        if stripped.startswith("["):
            parsed = _literal(stripped)
            if isinstance(parsed, list):
                value = parsed
        if isinstance(value, str):
            parts = re.split(r"\s*(?:;|\||\n)\s*", stripped) if split else [stripped]
            return [p for p in parts if p]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [label_text(value)]
    if not isinstance(value, list):
        raise QuestionSetError(file, f"must be text or a list of texts, got {type(value).__name__}", qid, role)
    out = []
    for i, item in enumerate(value):
        if isinstance(item, dict):  # {"document": ...} / {"source": ...} / {"content": ...}
            item = next((item[k] for k in ("document", "source", "content", "text", "file_name") if k in item), None)
        if not isinstance(item, str) or not item.strip():
            raise QuestionSetError(
                file, f"must be a list of non-empty texts; item {i} is {str(item)[:60]!r}", qid, f"{role}[{i}]"
            )
        out.append(item.strip())
    return out


def _sources(patterns: list[str], names: Sequence[str], file: str, qid: str) -> list[str]:
    """The patterns, each checked to name a parsed document; a cell of comma-separated names is split when each
    part names one and the whole does not."""
    out: list[str] = []
    for i, pattern in enumerate(patterns):
        if match_documents(pattern, names):
            out.append(pattern)
            continue
        parts = [p.strip() for p in pattern.split(",") if p.strip()]
        if len(parts) > 1 and all(match_documents(p, names) for p in parts):
            out.extend(parts)
            continue
        # a name with other separators, case or no extension (BOEING_2022_10K, boeing 2022 10k): its one document
        candidates = resolve_document_name(pattern, names)
        if len(candidates) == 1:
            out.append(candidates[0])
            continue
        if len(candidates) > 1:
            raise QuestionSetError(
                file,
                f"source {pattern!r} is ambiguous: it could be {', '.join(candidates[:6])}; name the file exactly",
                qid,
                f"sources[{i}]",
            )
        known = ", ".join(sorted(names)[:8]) or "none"
        raise QuestionSetError(
            file,
            f"source {pattern!r} matches no parsed document (parsed: {known}{', ...' if len(names) > 8 else ''})",
            qid,
            f"sources[{i}]",
        )
    return list(dict.fromkeys(out))


def _label_items(key: str, value: Any) -> list[tuple[str, str]]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if isinstance(value, dict):
        return [item for k, v in value.items() for item in _label_items(f"{key}.{k}", v)]
    if isinstance(value, list):
        texts = [label_text(v) if not isinstance(v, (dict, list)) else json.dumps(v, ensure_ascii=False) for v in value]
        return [(key, "; ".join(texts))] if texts else []
    return [(key, label_text(value)[:1000])]


@dataclass
class _Evidence:
    """One evidence object of a question (``evidence[i]``), as the file gives it."""

    position: int
    document: str
    text: str
    page: int | None  # as the file numbers pages
    span: tuple[int, int] | None = None
    kind: str = "text"


@dataclass
class _Row:
    question: Question
    unfound: list[str]  # contexts not found verbatim: evidence is located from them
    evidence: list[_Evidence] = field(default_factory=list)  # evidence objects (a list column), not yet searched
    checks: list[EvidenceCheck] = field(default_factory=list)  # contexts searched (the parse ceiling)


def _page_number(value: Any) -> int | None:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        page = value
    elif isinstance(value, float) and value.is_integer():
        page = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        page = int(value.strip())
    else:
        raise ValueError
    if page < 0:
        raise ValueError
    return page


def _evidence_objects(
    row: Mapping[str, Any],
    mapping: Mapping[str, str],
    head: str,
    names: Sequence[str],
    file: str,
    qid: str,
    problems: list[QuestionSetError],
) -> list[_Evidence]:
    """The evidence objects of a row's list column; a malformed one is reported alone (file, question, field,
    reason) and the others are kept."""
    raw = row.get(head)
    if isinstance(raw, str) and raw.strip().startswith("["):
        raw = _literal(raw.strip())
    if raw is None or raw == "":
        return []
    if not isinstance(raw, list):
        problems.append(
            QuestionSetError(file, f"must be a list of evidence objects, got {type(raw).__name__}", qid, head)
        )
        return []
    fields = {
        role: mapping[role].split(LIST_MARK, 1)[1]
        for role in ("contexts", "sources", "pages")
        if LIST_MARK in mapping.get(role, "")
    }
    out = []
    for i, item in enumerate(raw):
        where = f"{head}[{i}]"
        try:
            if not isinstance(item, dict):
                raise QuestionSetError(
                    file, f"must be an evidence object, got {type(item).__name__} {str(item)[:40]!r}", qid, where
                )
            text = ""
            if "contexts" in fields:
                value = item.get(fields["contexts"])
                if not isinstance(value, str) or not value.strip():
                    raise QuestionSetError(
                        file,
                        f"must be the evidence passage (non-empty text), got {str(value)[:40]!r}",
                        qid,
                        f"{where}.{fields['contexts']}",
                    )
                if len(value) > MAX_FIELD_CHARS:
                    raise QuestionSetError(
                        file,
                        f"holds {len(value):,} characters, more than {MAX_FIELD_CHARS:,}",
                        qid,
                        f"{where}.{fields['contexts']}",
                    )
                text = value.strip()
            if "sources" not in fields:
                raise QuestionSetError(
                    file,
                    "names no document: map sources to a field of the evidence objects "
                    f"(e.g. sources={head}{LIST_MARK}doc_name)",
                    qid,
                    where,
                )
            name = item.get(fields["sources"])
            if not isinstance(name, str) or not name.strip():
                raise QuestionSetError(
                    file, f"must name a document, got {str(name)[:40]!r}", qid, f"{where}.{fields['sources']}"
                )
            candidates = resolve_document_name(name.strip(), names)
            if not candidates:
                known = ", ".join(sorted(names)[:8]) or "none"
                raise QuestionSetError(
                    file,
                    f"document {name.strip()!r} is not in the corpus (parsed: {known}"
                    f"{', ...' if len(names) > 8 else ''})",
                    qid,
                    f"{where}.{fields['sources']}",
                )
            if len(candidates) > 1:
                raise QuestionSetError(
                    file,
                    f"document {name.strip()!r} is ambiguous: it could be "
                    f"{', '.join(candidates[:6])}; name the file exactly",
                    qid,
                    f"{where}.{fields['sources']}",
                )
            page = None
            if "pages" in fields and item.get(fields["pages"]) not in (None, ""):
                try:
                    page = _page_number(item.get(fields["pages"]))
                except ValueError:
                    raise QuestionSetError(
                        file,
                        f"must be a page number, got {str(item.get(fields['pages']))[:40]!r}",
                        qid,
                        f"{where}.{fields['pages']}",
                    ) from None
        except QuestionSetError as exc:
            problems.append(exc)
            continue
        out.append(_Evidence(i, candidates[0], text, page))
    return out


def _find_context(
    context: str, documents: Mapping[str, str], candidates: Sequence[str], file: str, qid: str, where: str
) -> tuple[Reference | None, list[str]]:
    """The first candidate document (by name) holding ``context`` verbatim; and the other documents holding it."""
    found: list[Reference] = []
    for name in sorted(candidates):
        try:
            span = locate_reference(Reference(name, context), documents[name], file, qid, where)
        except QuestionSetError:
            continue
        found.append(Reference(name, documents[name][span.start : span.end], span.start, span.end))
        if len(found) > 3:
            break
    return (found[0] if found else None), [r.document for r in found[1:]]


@dataclass(frozen=True)
class _Reading:
    """What every row of one import is read with: the columns' mapping, the parsed documents, the file and the
    prefix of its question ids, and the lists the notes and problems of the rows are added to."""

    mapping: Mapping[str, str]
    documents: Mapping[str, str]
    file: str
    id_prefix: str
    notes: list[str]
    problems: list[QuestionSetError]


def _question_from_row(row: Mapping[str, Any], number: int, reading: _Reading) -> _Row:
    mapping, documents, file, id_prefix = reading.mapping, reading.documents, reading.file, reading.id_prefix
    notes, problems = reading.notes, reading.problems
    names = list(documents)
    qid = f"{id_prefix}-{number:04d}"
    if "id" in mapping:
        qid = _text(_lookup(row, mapping["id"]), file, qid, "id") or qid
    raw_question = _lookup(row, mapping["question"])
    if raw_question is not None and not isinstance(raw_question, str):
        raise QuestionSetError(
            file, f"must be text, got {type(raw_question).__name__} {str(raw_question)[:60]!r}", qid, "question"
        )
    question = _text(raw_question, file, qid, "question", required=True)
    answer = _text(_lookup(row, mapping["answer"]), file, qid, "answer") if "answer" in mapping else ""
    category = _text(_lookup(row, mapping["category"]), file, qid, "category") if "category" in mapping else ""
    difficulty = _text(_lookup(row, mapping["difficulty"]), file, qid, "difficulty") if "difficulty" in mapping else ""
    head = evidence_list(mapping)
    evidence: list[_Evidence] = []
    if head is not None:  # evidence objects: each its own reference, searched once the whole file is read
        evidence = _evidence_objects(row, mapping, head, names, file, qid, problems if problems is not None else [])
    listed = {role for role, column in mapping.items() if LIST_MARK in column}
    sources = (
        _sources(_text_list(_lookup(row, mapping["sources"]), file, qid, "sources", split=True), names, file, qid)
        if "sources" in mapping and "sources" not in listed
        else []
    )
    contexts = (
        _text_list(_lookup(row, mapping["contexts"]), file, qid, "contexts", split=False)
        if "contexts" in mapping and "contexts" not in listed
        else []
    )
    checks: list[EvidenceCheck] = []
    searched = sorted({d for s in sources for d in match_documents(s, names)}) if sources else names
    references: list[Reference] = []
    unfound: list[str] = []
    for i, context in enumerate(contexts):
        if len(context) > MAX_FIELD_CHARS:
            raise QuestionSetError(
                file, f"holds {len(context):,} characters, more than {MAX_FIELD_CHARS:,}", qid, f"contexts[{i}]"
            )
        reference, others = _find_context(context, documents, searched, file, qid, f"contexts[{i}]")
        checks.append(
            EvidenceCheck(
                qid,
                reference.document
                if reference is not None
                else (", ".join(searched) if len(searched) <= 2 else "the searched documents"),
                evidence_kind(context, _plain_labels(row, mapping)),
                reference is not None,
            )
        )
        if reference is None:
            unfound.append(context)
            where = "its source documents" if sources else "any parsed document"
            notes.append(
                f"{file}, question {qid!r}: context {i + 1} is not verbatim in {where}; evidence is "
                "located from it instead"
            )
            continue
        if others and not sources:
            notes.append(
                f"{file}, question {qid!r}: context {i + 1} is in {reference.document} and also in "
                f"{', '.join(others)}; {reference.document} is used (name the source documents to choose)"
            )
        if reference not in references:
            references.append(reference)
    mapped = {
        c.split(LIST_MARK, 1)[0] if LIST_MARK in c else c.split(".", 1)[0] if c not in row else c
        for c in mapping.values()
    }
    labels: dict[str, str] = {}
    for column, value in row.items():
        if column in mapped:
            if isinstance(value, dict):  # the object a mapping reads through: its other fields are labels
                used = {c.split(".", 1)[1] for c in mapping.values() if c.startswith(column + ".")}
                for k, v in value.items():
                    if k not in used:
                        labels.update(_label_items(f"{column}.{k}", v))
            continue
        labels.update(_label_items(column, value))
    return _Row(
        Question(
            id=qid,
            question=question,
            expected_answer=answer,
            category=category,
            difficulty=difficulty,
            references=tuple(references),
            documents=tuple(sources),
            labels=labels,
        ),
        unfound,
        evidence,
        checks,
    )


def _plain_labels(row: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, str]:
    """The row's text columns not mapped to a role (a "Source Chunk Type" column says a context's kind)."""
    used = set(mapping.values())
    return {k: v for k, v in row.items() if k not in used and isinstance(v, str) and len(v) < 100}


def _labelled_kind(labels: Mapping[str, str]) -> bool:
    return any(str(v).strip().casefold() in ("table", "text") for v in labels.values())


def _search_evidence(
    rows: list[_Row],
    documents: Mapping[str, str],
    pages: Mapping[str, Sequence[int]],
    file: str,
    default_base: int,
    notes: list[str],
) -> tuple[PageConvention | None, list[_Row]]:
    """Find every evidence object of the rows in its document, tell the file's page convention from where they
    are found, and make each its reference: a span when found (with its page), else its document and page
    (kept for the document and page metrics, and in the question's metadata as not found)."""
    for r in rows:
        for e in r.evidence:
            if e.text:
                e.span = find_evidence(e.text, documents[e.document])
                e.kind = evidence_kind(e.text, r.question.labels)
    observations = [
        (e.page, found_pages(pages[e.document], e.span))
        for r in rows
        for e in r.evidence
        if e.span is not None and e.page is not None and pages.get(e.document)
    ]
    has_pages = any(e.page is not None for r in rows for e in r.evidence)
    convention = (
        page_convention([(p, span) for p, span in observations if span is not None], default=default_base)
        if has_pages
        else None
    )
    out = []
    for r in rows:
        if not r.evidence:
            out.append(r)
            continue
        q = r.question
        references = list(q.references)
        document_pages = list(q.document_pages)
        not_found = []
        checks = list(r.checks)
        for e in r.evidence:
            page = convention.to_viewer_page(e.page) if convention is not None and e.page is not None else None
            starts = pages.get(e.document) or []
            if page is not None and starts and page > len(starts):
                notes.append(
                    f"{file}, question {q.id!r}: evidence {e.position + 1} cites page {page} of "
                    f"{e.document}, which has {len(starts)} pages"
                )
            if e.span is not None:
                where = found_pages(starts, e.span) if starts else None
                if page is not None and where is not None and not where[0] <= page <= where[1]:
                    found_on = f"page {where[0]}" if where[0] == where[1] else f"pages {where[0]}-{where[1]}"
                    notes.append(
                        f"{file}, question {q.id!r}: evidence {e.position + 1} is cited on page {page} of "
                        f"{e.document} but its passage is found on {found_on}"
                    )
                start, end = e.span
                reference = Reference(e.document, documents[e.document][start:end], start, end, page=page)
                if reference not in references:
                    references.append(reference)
            else:
                if page is not None and (e.document, page) not in document_pages:
                    document_pages.append((e.document, page))
                if e.text:
                    not_found.append(
                        {
                            "document": e.document,
                            **({"page": page} if page is not None else {}),
                            "kind": e.kind,
                            "text": e.text,
                        }
                    )
            if e.text:
                checks.append(EvidenceCheck(q.id, e.document, e.kind, e.span is not None, page))
        metadata = dict(q.metadata)
        if not_found:
            metadata["evidence_not_found"] = not_found
        # a found passage's document is a source document through its span; one not found is named alone
        documents_named = list(dict.fromkeys([*q.documents, *(e.document for e in r.evidence if e.span is None)]))
        out.append(
            _Row(
                replace(
                    q,
                    references=tuple(references),
                    documents=tuple(documents_named),
                    document_pages=tuple(document_pages),
                    metadata=metadata,
                ),
                r.unfound,
                [],
                checks,
            )
        )
    return convention, out


def _label_kinds(rows: list[_Row], ceiling: ParseCeiling) -> list[_Row]:
    """When a set has both table and text evidence, each question not labelled so already gets an
    ``evidence kind`` label (table, text, or table and text): the results are then broken down by it."""
    if ceiling.kinds != {"table", "text"}:
        return rows
    kinds: dict[str, set[str]] = {}
    for c in ceiling.checks:
        kinds.setdefault(c.question_id, set()).add(c.kind)
    out = []
    for r in rows:
        q = r.question
        mine = kinds.get(q.id)
        if mine and not _labelled_kind(q.labels):
            value = " and ".join(k for k in ("table", "text") if k in mine)
            q = replace(q, labels={**q.labels, KIND_LABEL: value})
        out.append(_Row(q, r.unfound, r.evidence, r.checks))
    return out


def import_rows(
    table: Table,
    mapping: Mapping[str, str],
    documents: Mapping[str, str],
    options: ImportOptions,
    source_format: str,
    id_prefix: str,
    sha256: str = "",
) -> ImportResult:
    """Questions from the rows of ``table`` read through ``mapping`` (the options' mapping resolved for the format);
    evidence located unless ``options.locate`` is off; the set named ``options.name`` (else the file's stem)."""
    locate, min_score, pages = options.locate, options.min_score, options.pages
    name = options.name or Path(table.file).stem
    check_mapping(mapping, table)
    problems = list(table.problems)
    notes: list[str] = []
    rows: list[_Row] = []
    seen: set[str] = set()
    reading = _Reading(mapping, documents, table.file, id_prefix, notes, problems)
    for number, row in enumerate(table.rows, start=1):
        try:
            built = _question_from_row(row, number, reading)
            if built.question.id in seen:
                raise QuestionSetError(
                    table.file, f"row {number}: duplicate question id (the first one is kept)", built.question.id, "id"
                )
        except QuestionSetError as exc:
            problems.append(exc)
            continue
        seen.add(built.question.id)
        rows.append(built)
    convention = None
    if evidence_list(mapping) is not None:
        convention, rows = _search_evidence(
            rows, documents, pages or {}, table.file, 0 if source_format == "financebench" else 1, notes
        )
    ceiling = ParseCeiling([c for r in rows for c in r.checks])
    rows = _label_kinds(rows, ceiling)
    questions = [r.question for r in rows]
    report = None
    names = list(documents)
    extra = [
        Search(
            r.question.id,
            text,
            tuple(sorted({d for s in r.question.documents for d in match_documents(s, names)})) or tuple(sorted(names)),
            "context_words",
        )
        for r in rows
        for text in r.unfound
    ]
    if locate or extra:
        # the answer is searched for the questions with no span yet; an unfound context always is
        answers_of = [q.id for q in questions if not q.references] if locate else []
        questions, report = locate_questions(
            questions, Locator(documents), min_score, extra=extra, answers_of=answers_of
        )
    path = Path(table.file)
    qs = QuestionSet(
        name=name, path=table.file, sha256=sha256 or hashlib.sha256(path.read_bytes()).hexdigest(), questions=questions
    )
    return ImportResult(
        qs,
        source_format,
        len(table.rows) + sum(p.question_id is not None and p.question_id.startswith("line-") for p in table.problems),
        problems,
        notes,
        dict(mapping),
        report,
        ceiling if ceiling.total else None,
        convention,
    )


# -- formats -------------------------------------------------------------------------------------------
def import_table(
    path: str | Path, documents: Mapping[str, str], options: ImportOptions = ImportOptions()
) -> ImportResult:
    path = Path(path)
    table = read_table(path, options.sheet)
    chosen = dict(options.mapping) if options.mapping else guess_mapping(table)
    return import_rows(table, chosen, documents, options, "table", _id_prefix(path))


def read_financebench(path: str | Path) -> Table:
    """The questions of a FinanceBench-shaped file: JSONL (one question a line), or JSON (a list of questions,
    or an object whose ``questions`` or ``data`` is one)."""
    path = Path(path)
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return _read_jsonl(path)
    file = str(path)
    data, _ = decode_json_file(path)
    if isinstance(data, dict):
        data = next((data[k] for k in ("questions", "data", "examples") if isinstance(data.get(k), list)), None)
    if not isinstance(data, list):
        raise QuestionSetError(
            file,
            "is not a FinanceBench-shaped file: expected a list of questions (JSON), or one question per line (JSONL)",
        )
    table = Table(file, [], [])
    columns: dict[str, None] = {}
    for i, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            table.problems.append(
                QuestionSetError(file, f"item {i} must be an object, got {type(item).__name__}", f"line-{i}")
            )
            continue
        columns.update(dict.fromkeys(map(str, item)))
        table.rows.append({str(k): _cell(v) for k, v in item.items()})
    table.columns = list(columns)
    return table


def financebench_mapping(table: Table, mapping: Mapping[str, str] | None = None) -> dict[str, str]:
    """FinanceBench's fields, those the file has; ``mapping`` overrides. Every other field is a label."""
    chosen = {
        role: column for role, column in FINANCEBENCH_MAPPING.items() if column.split(LIST_MARK, 1)[0] in table.columns
    }
    if "evidence" not in table.columns and not mapping:
        raise QuestionSetError(
            table.file,
            "is not FinanceBench-shaped: no question has an 'evidence' list (objects "
            "with evidence_text, doc_name, evidence_page_num)",
        )
    chosen.update(mapping or {})
    return chosen


def import_financebench(
    path: str | Path, documents: Mapping[str, str], options: ImportOptions = ImportOptions()
) -> ImportResult:
    """A FinanceBench-shaped set: each evidence object of a question is its own reference (a span when its
    passage is found in the parsed text, else its document and page); pages are stored 1-based."""
    path = Path(path)
    table = read_financebench(path)
    return import_rows(
        table, financebench_mapping(table, options.mapping), documents, options, "financebench", _id_prefix(path)
    )


def _id_prefix(path: Path) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", path.stem).strip("-").lower()[:24] or "q"


def ragas_mapping(table: Table, mapping: Mapping[str, str] | None = None) -> dict[str, str]:
    """RAGAS columns (either generation of RAGAS), the rest guessed; ``mapping`` overrides."""
    preset = next((p for p in RAGAS_PRESETS if p["question"] in table.columns and p["contexts"] in table.columns), None)
    if preset is None and not mapping:
        raise QuestionSetError(
            table.file,
            "is not a RAGAS test set: missing column(s) user_input, reference_contexts (or question, contexts)",
        )
    chosen = {
        role: column for role, column in guess_mapping(table).items() if role not in ("question", "answer", "contexts")
    }
    chosen.update({r: c for r, c in (preset or {}).items() if c in table.columns})
    chosen.update(mapping or {})
    return chosen


def import_ragas(
    path: str | Path, documents: Mapping[str, str], options: ImportOptions = ImportOptions()
) -> ImportResult:
    table = read_table(Path(path))
    return import_rows(
        table, ragas_mapping(table, options.mapping), documents, replace(options, pages=None), "ragas", "ragas"
    )


def import_llamaindex(
    path: str | Path, documents: Mapping[str, str], options: ImportOptions = ImportOptions()
) -> ImportResult:
    path = Path(path)
    mapping = options.mapping
    options = replace(options, pages=None)
    file = str(path)
    data, raw = decode_json_file(path)
    sha = hashlib.sha256(raw).hexdigest()
    if isinstance(data, dict) and isinstance(data.get("examples"), list):  # a labelled RAG dataset
        table = Table(file, [], [])
        columns: dict[str, None] = {}
        for i, example in enumerate(data["examples"], start=1):
            if not isinstance(example, dict):
                table.problems.append(QuestionSetError(file, f"examples[{i - 1}] must be an object", f"example-{i}"))
                continue
            table.rows.append({str(k): _cell(v) for k, v in example.items()})
            columns.update(dict.fromkeys(map(str, example)))
        table.columns = list(columns)
        chosen = {
            "question": "query",
            "contexts": "reference_contexts",
            "answer": "reference_answer",
            **{r: c for r, c in guess_mapping(table).items() if r in ("sources", "category", "difficulty")},
            **(mapping or {}),
        }
        return import_rows(table, chosen, documents, options, "llamaindex", "example", sha256=sha)
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k), dict) for k in ("queries", "corpus", "relevant_docs")
    ):
        raise QuestionSetError(
            file,
            "is not a LlamaIndex retrieval dataset: expected an object with queries, corpus "
            "and relevant_docs objects (or a labelled RAG dataset with examples)",
        )
    corpus: Mapping[str, Any] = data["corpus"]
    table = Table(file, ["id", "question", "contexts"], [])
    for qid, text in data["queries"].items():
        try:
            node_ids = data["relevant_docs"].get(qid)
            if not isinstance(node_ids, list) or not node_ids:
                raise QuestionSetError(
                    file, "has no relevant_docs entry (a list of node ids)", str(qid), "relevant_docs"
                )
            bad = [n for n in node_ids if not isinstance(n, (str, int)) or isinstance(n, bool)]
            if bad:
                raise QuestionSetError(
                    file, f"must list node ids (texts), got {str(bad[0])[:60]!r}", str(qid), "relevant_docs"
                )
            unknown = [n for n in node_ids if str(n) not in corpus]
            if unknown:
                raise QuestionSetError(
                    file, f"node id(s) {', '.join(map(str, unknown[:3]))} are not in corpus", str(qid), "relevant_docs"
                )
            texts = [corpus[str(n)] for n in node_ids]
            if not all(isinstance(t, str) and t.strip() for t in texts):
                raise QuestionSetError(file, "a node's text must be a non-empty string", str(qid), "corpus")
        except QuestionSetError as exc:
            table.problems.append(exc)
            continue
        table.rows.append({"id": str(qid), "question": text, "contexts": texts})
    result = import_rows(
        table,
        {"id": "id", "question": "question", "contexts": "contexts", **(mapping or {})},
        documents,
        options,
        "llamaindex",
        "q",
        sha256=sha,
    )
    result.n_read = len(data["queries"])
    return result


def import_chroma(
    path: str | Path, documents: Mapping[str, str], options: ImportOptions = ImportOptions()
) -> ImportResult:
    name = options.name
    from .experiment import resolve_questions

    qs = load_chroma_csv(path, name)
    resolved, problems = resolve_questions([qs], documents)
    kept = {r.question.id for r in resolved}
    questions = [q for q in qs.questions if q.id in kept]
    sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    result_set = QuestionSet(name=name or Path(path).stem, path=str(path), sha256=sha, questions=questions)
    return ImportResult(result_set, "chroma", len(qs.questions) + len(qs.errors), [*qs.errors, *problems])


def detect_format(path: str | Path) -> str:
    """The format of ``path``: a Chroma or RAGAS header, a LlamaIndex JSON, else a table of questions."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".json", ".jsonl", ".ndjson"):
        with path.open("r", encoding="utf-8-sig", errors="replace") as handle:
            head = handle.read(262144)
        if '"evidence"' in head and ('"evidence_text"' in head or '"doc_name"' in head):
            return "financebench"
    if suffix == ".json":
        return "llamaindex"
    if suffix not in TABLE_SUFFIXES:
        raise QuestionSetError(
            str(path), f"cannot tell the format of a {suffix or 'nameless'} file: give --format ({', '.join(FORMATS)})"
        )
    if suffix == ".xlsx":
        return "table"
    with path.open("r", encoding="utf-8-sig", errors="replace", newline="") as handle:
        head = handle.read(65536)
    if suffix in (".csv", ".tsv"):
        try:
            with csv_field_limit():
                header = [h.strip() for h in next(csv.reader(io.StringIO(head)), [])]
        except csv.Error:
            header = []
        if header == ["question", "references", "corpus_id"]:
            return "chroma"
    else:
        first = head.split("\n", 1)[0]
        header = list(re.findall(r'"([^"\\]+)"\s*:', first))
    if any(p["question"] in header and p["contexts"] in header for p in RAGAS_PRESETS):
        return "ragas"
    return "table"


def import_questions(
    source_format: str | None, path: str | Path, documents: Mapping[str, str], options: ImportOptions = ImportOptions()
) -> ImportResult:
    """Import ``path`` in ``source_format`` (one of FORMATS, or None to detect it) against ``documents``
    (name -> parsed text), as ``options`` say (:class:`ImportOptions`)."""
    if not Path(path).is_file():
        raise QuestionSetError(str(path), "does not exist")
    source_format = source_format or detect_format(path)
    if source_format not in FORMATS:
        raise QuestionSetError(str(path), f"unknown format {source_format!r}; use one of {', '.join(FORMATS)}")
    importers = {
        "table": import_table,
        "financebench": import_financebench,
        "chroma": import_chroma,
        "ragas": import_ragas,
        "llamaindex": import_llamaindex,
    }
    return importers[source_format](path, documents, options)
