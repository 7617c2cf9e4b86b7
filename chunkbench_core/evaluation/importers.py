"""Question sets from other tools, with their contexts located in the parsed documents as references.

- ``chroma``: Chroma's evaluation CSV (``question, references, corpus_id``; offsets into
  ``<corpus_id>.md``), read by :func:`.questions.load_chroma_csv`;
- ``ragas``: a RAGAS test set, CSV or JSONL with ``user_input`` (the question), ``reference``
  (the expected answer) and ``reference_contexts`` (a list of texts; in a CSV a JSON or Python
  list literal);
- ``llamaindex``: a LlamaIndex retrieval dataset (``EmbeddingQAFinetuneDataset`` JSON):
  ``queries`` {id: question}, ``corpus`` {node id: text}, ``relevant_docs`` {id: [node id]}.

Each context is looked for in every parsed document the way references are located (exact,
then whitespace-tolerant, each also after Persian normalisation); it becomes a reference with
the document, the exact parsed text and its offsets. A question whose context is found in no
document is left out and reported (file, question id, field, reason); the others are kept.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkbench_core.errors import QuestionSetError

from .questions import (
    Question,
    QuestionSet,
    Reference,
    decode_json_file,
    load_chroma_csv,
    locate_reference,
    question_set_to_json,
)

FORMATS = ("chroma", "ragas", "llamaindex")


@dataclass
class ImportResult:
    question_set: QuestionSet
    source_format: str
    n_read: int
    problems: list[QuestionSetError] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = question_set_to_json(self.question_set)
        data["description"] = (f"imported from {Path(self.question_set.path).name} ({self.source_format}); "
                               "every reference located in the parsed documents")
        return {"name": data["name"], "description": data["description"], "questions": data["questions"]}

    def summary(self) -> str:
        kept = len(self.question_set.questions)
        return (f"{self.n_read} question(s) read from {self.question_set.path} ({self.source_format}): {kept} kept, "
                f"{self.n_read - kept} left out")


def locate_anywhere(content: str, documents: Mapping[str, str], file: str, question_id: str,
                    field_name: str) -> Reference:
    """The first document (by name) holding ``content``, as a reference with the exact parsed text and offsets."""
    for name in sorted(documents):
        try:
            span = locate_reference(Reference(name, content), documents[name], file, question_id, field_name)
        except QuestionSetError:
            continue
        return Reference(name, documents[name][span.start : span.end], span.start, span.end)
    preview = " ".join(content.split())[:80]
    raise QuestionSetError(file, f"context {preview!r} was found in no parsed document "
                                 f"({len(documents)} searched)", question_id, field_name)


def _question(file: str, qid: str, text: Any, contexts: Any, documents: Mapping[str, str],
              expected_answer: Any = "", context_field: str = "reference_contexts") -> Question:
    if not isinstance(text, str) or not text.strip():
        raise QuestionSetError(file, f"must be a non-empty string, got {text!r}", qid, "question")
    if not isinstance(contexts, list) or not contexts or not all(isinstance(c, str) and c.strip() for c in contexts):
        raise QuestionSetError(file, f"must be a non-empty list of texts, got {str(contexts)[:80]!r}", qid,
                               context_field)
    references = tuple(locate_anywhere(c, documents, file, qid, f"{context_field}[{i}]")
                       for i, c in enumerate(contexts))
    answer = expected_answer if isinstance(expected_answer, str) else ""
    return Question(id=qid, question=text.strip(), expected_answer=answer, references=references)


def _contexts_cell(raw: Any) -> Any:
    """``reference_contexts`` of a CSV cell: a JSON list, or the Python list literal pandas writes."""
    if not isinstance(raw, str):
        return raw
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(raw)
        except (ValueError, SyntaxError):
            continue
    return raw


def _ragas_rows(path: Path) -> list[dict[str, Any]]:
    file = str(path)
    text = path.read_bytes().decode("utf-8-sig", errors="strict")
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [c for c in ("user_input", "reference_contexts") if c not in (reader.fieldnames or [])]
        if missing:
            raise QuestionSetError(file, f"is not a RAGAS test set: missing column(s) {', '.join(missing)}")
        return [dict(row) for row in reader]
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise QuestionSetError(file, f"JSON syntax error at line {number}, column {exc.colno}: {exc.msg}") from exc
    return rows


def import_ragas(path: str | Path, documents: Mapping[str, str], name: str | None = None) -> ImportResult:
    path = Path(path)
    file = str(path)
    try:
        rows = _ragas_rows(path)
    except UnicodeDecodeError as exc:
        raise QuestionSetError(file, f"is not UTF-8 text: {exc}") from exc
    questions: list[Question] = []
    problems: list[QuestionSetError] = []
    for number, row in enumerate(rows, start=1):
        qid = f"ragas-{number:04d}"
        try:
            if not isinstance(row, dict):
                raise QuestionSetError(file, f"line {number} must be a JSON object", qid)
            questions.append(_question(file, qid, row.get("user_input"), _contexts_cell(row.get("reference_contexts")),
                                       documents, row.get("reference") or ""))
        except QuestionSetError as exc:
            problems.append(exc)
    return _result(path, name, "ragas", len(rows), questions, problems)


def import_llamaindex(path: str | Path, documents: Mapping[str, str], name: str | None = None) -> ImportResult:
    path = Path(path)
    file = str(path)
    data, _ = decode_json_file(path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), dict) for k in ("queries", "corpus",
                                                                                     "relevant_docs")):
        raise QuestionSetError(file, "is not a LlamaIndex retrieval dataset: expected an object with "
                                     "queries, corpus and relevant_docs objects")
    corpus: Mapping[str, Any] = data["corpus"]
    questions: list[Question] = []
    problems: list[QuestionSetError] = []
    for qid, text in data["queries"].items():
        try:
            node_ids = data["relevant_docs"].get(qid)
            if not isinstance(node_ids, list) or not node_ids:
                raise QuestionSetError(file, "has no relevant_docs entry", str(qid), "relevant_docs")
            unknown = [n for n in node_ids if n not in corpus]
            if unknown:
                raise QuestionSetError(file, f"node id(s) {', '.join(map(str, unknown[:3]))} are not in corpus",
                                       str(qid), "relevant_docs")
            questions.append(_question(file, str(qid), text, [corpus[n] for n in node_ids], documents,
                                       context_field="corpus"))
        except QuestionSetError as exc:
            problems.append(exc)
    return _result(path, name, "llamaindex", len(data["queries"]), questions, problems)


def import_chroma(path: str | Path, documents: Mapping[str, str], name: str | None = None) -> ImportResult:
    from .experiment import resolve_questions

    qs = load_chroma_csv(path, name)
    resolved, problems = resolve_questions([qs], documents)
    kept = {r.question.id for r in resolved}
    questions = [q for q in qs.questions if q.id in kept]
    return _result(Path(path), name, "chroma", len(qs.questions) + len(qs.errors), questions,
                   [*qs.errors, *problems])


def _result(path: Path, name: str | None, source_format: str, n_read: int, questions: Sequence[Question],
            problems: list[QuestionSetError]) -> ImportResult:
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    qs = QuestionSet(name=name or path.stem, path=str(path), sha256=sha, questions=list(questions))
    return ImportResult(qs, source_format, n_read, problems)


def import_questions(source_format: str, path: str | Path, documents: Mapping[str, str],
                     name: str | None = None) -> ImportResult:
    """Import ``path`` in ``source_format`` (one of FORMATS) against ``documents`` (name -> parsed text)."""
    importers = {"chroma": import_chroma, "ragas": import_ragas, "llamaindex": import_llamaindex}
    if source_format not in importers:
        raise QuestionSetError(str(path), f"unknown format {source_format!r}; use one of {', '.join(FORMATS)}")
    if not Path(path).is_file():
        raise QuestionSetError(str(path), "does not exist")
    return importers[source_format](path, documents, name)
