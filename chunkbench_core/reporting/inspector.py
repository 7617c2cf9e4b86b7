"""The retrieval inspector's data: questions x configurations with their chunks, as one JSON object.

The technical report embeds this object in a ``<script type="application/json">`` element
and ``static/inspector.js`` renders it. Chunk texts are stored once (``chunks``) and referred
to by index; evidence ranges are code-point offsets relative to the chunk's text
(``[start, end)``), computed here from the reference spans (``references`` column) so the
page only slices and wraps them in ``<mark>``.

Columns read when present (``question_results``): ``retrieved`` (base), ``references``,
``expanded``, ``expansion_tree``, ``generated_answer``/``answer``, ``expected_answer``,
``answer_error``, ``judge_error``, ``context_relevance``, ``answer_similarity``,
``faithfulness``, ``hallucination``, ``judge_reasoning``, ``parent_context``,
``token_usage`` and ``*_tokens``, ``latency_ms`` and ``*_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

import pandas as pd

from chunkbench_core.evaluation.breakdowns import DIMENSIONS, question_groups
from chunkbench_core.metric_catalog import CATALOG
from chunkbench_core.progress import Tracker
from chunkbench_core.storage.results_db import ResultsDB

from .html import ObjectStream
from .columns import GENERATED_ANSWER, metrics_catalog, missing, number, parse_json, run_settings, value
from .data import PROGRESS_ROWS, ReportData, load_chunks, row_key, row_label

Key = tuple[str, str, str]  # strategy, corpus_model, chunk_id

#: the judge's verdict fields: the judge's metrics of the list of metrics, by their per-question names
JUDGE_FIELDS = tuple(m.name for m in CATALOG.values(source="judge"))


def _records(raw: Any) -> list[dict[str, Any]]:
    parsed = parse_json(raw, [])
    return [r for r in parsed if isinstance(r, dict)] if isinstance(parsed, list) else []


def _node_id(item: Any) -> str | None:
    if isinstance(item, dict):
        item = item.get("chunk_id")
    return None if item is None else str(item)


def _span(record: Mapping[str, Any]) -> tuple[str, int, int] | None:
    start, end = number(record.get("start")), number(record.get("end"))
    if record.get("document") is None or start is None or end is None:
        return None
    return str(record["document"]), int(start), int(end)


@dataclass
class ChunkTable:
    """Chunk rows loaded from the results, and the list embedded in the page."""

    by_key: dict[Key, list[dict[str, Any]]] = field(default_factory=dict)
    by_span: dict[tuple[str, int, int], str] = field(default_factory=dict)
    entries: list[dict[str, Any]] = field(default_factory=list)
    _index: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def add_rows(self, rows: pd.DataFrame) -> None:
        for row in rows.to_dict("records"):
            key = (str(row["strategy"]), str(row["corpus_model"]), str(row["chunk_id"]))
            self.by_key.setdefault(key, []).append(row)
            if isinstance(row.get("text"), str) and number(row.get("start_offset")) is not None:
                self.by_span.setdefault(
                    (str(row["document"]), int(row["start_offset"]), int(row["end_offset"])), row["text"]
                )

    def row(self, key: Key, span: tuple[str, int, int] | None) -> dict[str, Any] | None:
        rows = self.by_key.get(key, [])
        if span is not None:
            for r in rows:
                if (str(r["document"]), int(r["start_offset"]), int(r["end_offset"])) == span:
                    return r
        return rows[0] if rows and span is None else None

    def entry(self, key: Key, span: tuple[str, int, int] | None) -> int:
        """Index of the chunk in ``entries`` (added on first use)."""
        row = self.row(key, span)
        if span is None and row is not None:
            span = (str(row["document"]), int(row["start_offset"]), int(row["end_offset"]))
        marker = (key, span)
        if marker in self._index:
            return self._index[marker]
        text = row.get("text") if row is not None else None
        if not isinstance(text, str) and span is not None:
            text = self.by_span.get(span)
        entry: dict[str, Any] = {
            "id": key[2],
            "doc": span[0] if span else None,
            "start": span[1] if span else None,
            "end": span[2] if span else None,
            "text": text if isinstance(text, str) else None,
        }
        if row is not None:
            if not missing(row.get("parent_id")):
                entry["parent"] = str(row["parent_id"])
            embedded = row.get("embedded_text")
            if isinstance(embedded, str) and embedded and embedded != text:
                entry["embedded"] = embedded
        self._index[marker] = len(self.entries)
        self.entries.append(entry)
        return self._index[marker]


def evidence_ranges(
    span: tuple[str, int, int] | None, text: str | None, references: Iterable[tuple[str, int, int]]
) -> tuple[list[list[int]], int]:
    """Evidence inside a chunk: ranges relative to its text (merged) and the evidence character count.

    Ranges are only given when the text length matches the span (the offsets describe the text).
    """
    if span is None:
        return [], 0
    document, start, end = span
    parts = sorted(
        (max(start, s), min(end, e)) for d, s, e in references if d == document and min(end, e) > max(start, s)
    )
    merged: list[list[int]] = []
    for s, e in parts:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    count = sum(e - s for s, e in merged)
    if text is None or len(text) != end - start:
        return [], count
    return [[s - start, e - start] for s, e in merged], count


def _references(row: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    return [s for s in (_span(r) for r in _records(row.get("references"))) if s is not None]


def _located(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The evidence spans found by ``questions locate`` and not reviewed yet: document, how, how sure."""
    out = []
    for r in _records(row.get("references")):
        if r.get("located_by") and _span(r) is not None:
            out.append(
                {
                    "doc": str(r["document"]),
                    "start": int(r["start"]),
                    "end": int(r["end"]),
                    "by": str(r["located_by"]),
                    "score": number(r.get("score")),
                }
            )
    return out


def _sources(row: Mapping[str, Any]) -> list[str]:
    parsed = parse_json(row.get("source_documents"), [])
    return [str(d) for d in parsed] if isinstance(parsed, list) else []


def _build(row: Mapping[str, Any]) -> str:
    """The collection build a question row (or a chunk row) belongs to; '' for rows from before builds were kept."""
    build = row.get("build")
    return build if isinstance(build, str) else ""


def _wanted_keys(questions: pd.DataFrame) -> set[tuple[str, str, str, str]]:
    """(strategy, corpus_model, chunk_id, build) of every chunk the question rows name, in the build each
    row retrieved from (so an old run shows its own chunks after the collection was rebuilt)."""
    wanted: set[tuple[str, str, str, str]] = set()
    columns = [
        c
        for c in ("strategy", "corpus_model", "build", "retrieved", "expanded", "expansion_tree")
        if c in questions.columns
    ]
    for row in _row_slices(questions[columns]):
        strategy, model, build = str(row["strategy"]), str(row["corpus_model"]), _build(row)
        for column in ("retrieved", "expanded"):
            for r in _records(row.get(column)):
                for name in ("chunk_id", "parent_id"):
                    if r.get(name) is not None:
                        wanted.add((strategy, model, str(r[name]), build))
        tree = parse_json(row.get("expansion_tree"), [])
        for node in tree if isinstance(tree, list) else []:
            if not isinstance(node, dict):
                continue
            for item in [
                node.get("hit"),
                node.get("parent"),
                *(node.get("neighbors_prev") or []),
                *(node.get("neighbors_next") or []),
            ]:
                cid = _node_id(item)
                if cid is not None:
                    wanted.add((strategy, model, cid, build))
    return wanted


def load_chunk_table(results: ResultsDB | None, questions: pd.DataFrame) -> ChunkTable:
    table = ChunkTable()
    if results is None or questions.empty:
        return table
    wanted = _wanted_keys(questions)
    rows = load_chunks(results, wanted)
    table.add_rows(rows)
    parents = {
        (str(r["strategy"]), str(r["corpus_model"]), str(r["parent_id"]), _build(r))
        for r in rows.to_dict("records")
        if not missing(r.get("parent_id"))
    } - wanted
    if parents:
        table.add_rows(load_chunks(results, parents))
    return table


def _chunk_refs(
    records: list[dict[str, Any]],
    strategy: str,
    model: str,
    table: ChunkTable,
    references: list[tuple[str, int, int]],
    default_role: str,
    located: list[tuple[str, int, int]] | None = None,
) -> list[dict[str, Any]]:
    """The chunks of a question's ranking or context, with their evidence; ``located``: the spans among the
    references found by ``questions locate`` (a chunk holding some is marked ``evLocated``)."""
    out = []
    for r in records:
        if r.get("chunk_id") is None:
            continue
        span = _span(r)
        index = table.entry((strategy, model, str(r["chunk_id"])), span)
        entry = table.entries[index]
        chunk_span = span or (_span({"document": entry["doc"], "start": entry["start"], "end": entry["end"]}))
        ranges, count = evidence_ranges(chunk_span, entry["text"], references)
        role = r.get("role") or default_role
        if role == "hit" and not count:  # HIT only for a chunk that shares evidence
            role = "retrieved"
        ref = {
            "chunk": index,
            "rank": r.get("rank"),
            "score": number(r.get("score")),
            "role": role,
            "ev": ranges,
            "evChars": count,
        }
        if count and located:  # its evidence is (partly) located, not written by hand: marked apart
            ref["evLocated"] = evidence_ranges(chunk_span, entry["text"], located)[1] > 0
        out.append(ref)
    return out


def _tree(
    raw: Any, strategy: str, model: str, table: ChunkTable, spans: Mapping[str, tuple[str, int, int]]
) -> list[dict[str, Any]]:
    tree = parse_json(raw, [])
    out = []
    for node in tree if isinstance(tree, list) else []:
        if not isinstance(node, dict) or _node_id(node.get("hit")) is None:
            continue

        def ref(item: Any) -> int | None:
            cid = _node_id(item)
            return None if cid is None else table.entry((strategy, model, cid), spans.get(cid))

        out.append(
            {
                "hit": ref(node.get("hit")),
                "rank": node.get("rank"),
                "score": number(node.get("score")),
                "prev": [ref(x) for x in node.get("neighbors_prev") or []],
                "next": [ref(x) for x in node.get("neighbors_next") or []],
                "parent": ref(node.get("parent")) if node.get("parent") is not None else None,
            }
        )
    return out


def _parent_context(raw: Any) -> list[str]:
    if missing(raw):
        return []
    parsed = parse_json(raw, raw)
    if isinstance(parsed, list):
        return [p if isinstance(p, str) else str(p.get("text", p)) if isinstance(p, dict) else str(p) for p in parsed]
    if isinstance(parsed, dict):
        return [str(parsed.get("text", parsed))]
    return [str(parsed)]


def _numbers(row: Mapping[str, Any], suffix: str, json_column: str) -> dict[str, float]:
    out: dict[str, float] = {}
    parsed = parse_json(row.get(json_column), {})
    if isinstance(parsed, dict):
        for key, raw in parsed.items():
            if number(raw) is not None:
                out[str(key)] = float(raw)
    for column, raw in row.items():
        name = str(column)
        if name.endswith(suffix) and number(raw) is not None:
            out.setdefault(name.removesuffix(suffix).rstrip("_") or name, float(raw))
    return out


def group_options(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The inspector's group filter: every (dimension, group) of the questions with its question count."""
    counts: dict[tuple[str, str], int] = {}
    for q in questions:
        for dimension, groups in q["groups"].items():
            for group in groups:
                counts[(dimension, group)] = counts.get((dimension, group), 0) + 1
    return [
        {"dimension": d, "group": g, "n": n}
        for (d, g), n in sorted(counts.items(), key=lambda item: (DIMENSIONS.index(item[0][0]), item[0][1]))
    ]


ROW_SLICE = 1000  # question rows turned into dicts at a time (all 20,000 at once held hundreds of MB)


def _row_slices(frame: pd.DataFrame, size: int = ROW_SLICE) -> Iterator[dict[str, Any]]:
    """The rows of ``frame`` as dicts, ``size`` rows converted at a time."""
    for begin in range(0, len(frame), size):
        yield from frame.iloc[begin : begin + size].to_dict("records")


class InspectorStream:
    """Everything the inspector shows, keyed by question index and configuration index, built while it is
    written: :meth:`parts` gives the JSON object's members in an order where each is complete when it is
    reached (the results first: walking them fills the question list and the chunk list). So a report of
    20,000 question rows never holds the whole object, nor its JSON text, at once."""

    def __init__(self, data: ReportData, results: ResultsDB | None) -> None:
        self.data = data
        self.configs: list[dict[str, Any]] = []
        for row in data.board.to_dict("records"):
            settings = run_settings(parse_json(row.get("provenance"), {}), row)
            # a board read by load_report_data carries both; a board built by hand gets them here
            self.configs.append(
                {
                    "key": row.get("key") or row_key(row),
                    "strategy": row["strategy"],
                    "model": row["corpus_model"],
                    "label": row.get("label") or row_label(row),
                    "run": row.get("experiment_run_id"),
                    "badge": settings.neighbor_badge,
                    "boundary": settings.boundary_model,
                }
            )
        self.config_index = {(c["strategy"], c["model"]): i for i, c in enumerate(self.configs)}
        questions = data.questions
        self.table = load_chunk_table(results, questions)
        self.metric_columns = [m for m in metrics_catalog() if m.question_column in questions.columns]
        self.answer_column = next((c for c in GENERATED_ANSWER if c in questions.columns), None)
        self.questions: list[dict[str, Any]] = []
        self._question_index: dict[tuple[str, str], int] = {}

    @property
    def n_questions(self) -> int:
        """Distinct questions (known before the rows are walked)."""
        questions = self.data.questions
        if questions.empty:
            return 0
        return len(questions[["question_set", "question_id"]].astype(str).drop_duplicates())

    def parts(self) -> dict[str, Any]:
        """The members in writing order; a callable is called when its member is reached."""
        return {
            "configs": self.configs,
            "metricLabels": {m.name: m.label for m in self.metric_columns},
            "metricKinds": {m.name: m.kind for m in self.metric_columns},
            "results": ObjectStream(self.results()),
            "questions": lambda: self.questions,
            "chunks": lambda: self.table.entries,
            "groupOptions": lambda: group_options(self.questions),
        }

    def results(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """``"<question index>:<configuration index>"`` and what the inspector shows of that question row."""
        questions = self.data.questions
        tracker = (
            Tracker("report inspector", len(questions), unit="question rows")
            if len(questions) >= PROGRESS_ROWS
            else None
        )
        for position, row in enumerate(_row_slices(questions)):
            if tracker is not None:
                tracker.step(position)
            item = self._result(row)
            if item is not None:
                yield item
        if tracker is not None:
            tracker.step(len(questions))

    def _result(self, row: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        table = self.table
        qkey = (str(row["question_set"]), str(row["question_id"]))
        if qkey not in self._question_index:
            self._question_index[qkey] = len(self.questions)
            self.questions.append(
                {
                    "set": qkey[0],
                    "id": qkey[1],
                    "text": row.get("question"),
                    "category": value(row, "category"),
                    "difficulty": value(row, "difficulty"),
                    "expected": None,
                    "groups": question_groups(row),
                }
            )
        q = self.questions[self._question_index[qkey]]
        if q["expected"] is None and not missing(row.get("expected_answer")):
            q["expected"] = str(row["expected_answer"])
        ci = self.config_index.get((row["strategy"], row["corpus_model"]))
        if ci is None:
            return None
        strategy, model = str(row["strategy"]), str(row["corpus_model"])
        references = _references(row)
        located = _located(row)
        located_spans = [(x["doc"], x["start"], x["end"]) for x in located]
        retrieved = _records(row.get("retrieved"))
        expanded = _records(row.get("expanded"))
        spans = {str(r["chunk_id"]): s for r in [*retrieved, *expanded] if (s := _span(r)) and r.get("chunk_id")}
        judge = {f: row.get(f) for f in JUDGE_FIELDS if f in row and not missing(row.get(f))}
        if isinstance(judge.get("hallucination"), (int, float)) and not isinstance(judge["hallucination"], bool):
            judge["hallucination"] = bool(judge["hallucination"])
        answer_column = self.answer_column
        result: dict[str, Any] = {
            "metrics": {
                m.name: v for m in self.metric_columns if (v := number(row.get(m.question_column))) is not None
            },
            "error": value(row, "error"),
            "answer": value(row, answer_column) if answer_column else None,
            "answerError": value(row, "answer_error"),
            "judgeError": value(row, "judge_error"),
            "judge": judge,
            "reasoning": value(row, "judge_reasoning"),
            "hits": _chunk_refs(retrieved, strategy, model, table, references, "hit", located_spans),
            "context": _chunk_refs(expanded, strategy, model, table, references, "context", located_spans),
            "tree": _tree(row.get("expansion_tree"), strategy, model, table, spans),
            "parentContext": _parent_context(row.get("parent_context")),
            "tokens": _numbers(row, "_tokens", "token_usage"),
            "latency": _numbers(row, "_ms", "latency_ms"),
            "hasReferences": bool(references),
            # how the evidence was given: written | located | mixed | documents (source documents only)
            "origin": value(row, "evidence_origin"),
            "sources": _sources(row),
            "located": located,
        }
        return f"{self._question_index[qkey]}:{ci}", result


def inspector_payload(data: ReportData, results: ResultsDB | None) -> dict[str, Any]:
    """Everything the inspector shows as one object (what :class:`InspectorStream` writes, held whole)."""
    stream = InspectorStream(data, results)
    out: dict[str, Any] = {}
    for name, member in stream.parts().items():
        if isinstance(member, ObjectStream):
            member = dict(member)
        elif callable(member):
            member = member()
        out[name] = member
    return out
