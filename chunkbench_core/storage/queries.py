"""The query history: every question asked with ``chunkbench ask``, what came back and what it took.

One row per query in the ``queries`` results table (declared in :mod:`.results_db`), written under its id:
the question, the configuration (and how it was chosen), the expansion settings, the retrieved chunks with
their scores, offsets and texts, the expansion tree, the answer when an LLM is configured, the latencies
and the tokens. A query's id is a digest of what was asked and when (:func:`query_id`), so it is stable and
never a position; ``chunkbench queries show`` takes any prefix of 8 or more characters.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chunkbench_core.errors import ChunkbenchError

if TYPE_CHECKING:
    from .results_db import ResultsDB

#: the shortest id prefix ``queries show`` accepts
MIN_PREFIX = 8
ID_LENGTH = 16


class QueryNotFound(ChunkbenchError):
    """No saved query has that id (or prefix), or the prefix is too short or names several."""


def query_id(question: str, strategy: str, corpus_model: str, settings: dict[str, Any], created_at: datetime) -> str:
    """A digest of the question, the configuration, its settings and the time it was asked (16 hex digits)."""
    text = json.dumps(
        {
            "question": question,
            "strategy": strategy,
            "corpus_model": corpus_model,
            "settings": settings,
            "at": created_at.isoformat(),
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LENGTH]


@dataclass(frozen=True)
class SavedQuery:
    """A ``queries`` row."""

    row: dict[str, Any]

    @property
    def query_id(self) -> str:
        return str(self.row["query_id"])

    def to_dict(self) -> dict[str, Any]:
        """The row with its JSON columns read back (what ``queries show --json`` prints)."""
        out: dict[str, Any] = {}
        for key, value in self.row.items():
            if key in ("retrieved", "context", "expansion_tree") and isinstance(value, str):
                value = json.loads(value)
            elif isinstance(value, float) and math.isnan(value):
                value = None
            elif isinstance(value, datetime):
                value = value.isoformat(timespec="seconds")
            elif hasattr(value, "item"):  # numpy scalars from the DataFrame
                value = value.item()
            out[key] = value
        return out


def save_query(results: "ResultsDB", row: dict[str, Any]) -> str:
    """Store one query under its id (saving the same query again replaces it); returns the id."""
    results.write("queries", row["query_id"], [row])
    return str(row["query_id"])


def list_queries(
    results: "ResultsDB", limit: int | None = 20, strategy: str | None = None, corpus_model: str | None = None
) -> list[dict[str, Any]]:
    """The newest saved queries first (id, time, configuration, question, hits, answered, total ms)."""
    where, params = [], []
    if strategy:
        where.append("strategy = ?")
        params.append(strategy)
    if corpus_model:
        where.append("corpus_model = ?")
        params.append(corpus_model)
    sql = (
        "SELECT query_id, created_at, configuration, configuration_source, question, "
        "json_array_length(retrieved) AS hits, answer IS NOT NULL AS answered, total_ms FROM queries"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY created_at DESC, query_id"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [SavedQuery(r).to_dict() for r in results.query(sql, params).to_dict("records")]


def find_query(results: "ResultsDB", prefix: str) -> SavedQuery:
    """The saved query whose id starts with ``prefix`` (at least 8 characters); QueryNotFound otherwise."""
    prefix = prefix.strip().lower()
    if len(prefix) < MIN_PREFIX or any(c not in "0123456789abcdef" for c in prefix):
        raise QueryNotFound(
            f"query id {prefix!r}: give at least {MIN_PREFIX} hexadecimal characters of it "
            "(chunkbench queries list shows the ids)"
        )
    rows = results.query(
        "SELECT * FROM queries WHERE starts_with(query_id, ?) ORDER BY created_at DESC", [prefix]
    ).to_dict("records")
    if not rows:
        raise QueryNotFound(f"no saved query has an id starting with {prefix!r} (chunkbench queries list shows them)")
    ids = sorted({str(r["query_id"]) for r in rows})
    if len(ids) > 1:
        raise QueryNotFound(f"{prefix!r} starts {len(ids)} query ids ({', '.join(ids[:5])}): give more characters")
    return SavedQuery(rows[0])


def query_text(query: SavedQuery, width: int = 240) -> str:
    """A saved query for a person: what was asked, of which configuration, what came back, what it took."""
    d = query.to_dict()

    def clip(text: str | None) -> str:
        flat = " ".join((text or "").split())
        return flat if len(flat) <= width else flat[: width - 3] + "..."

    neighbors = f", neighbors -{d['neighbor_prev']}/+{d['neighbor_next']}" if d.get("expansion_applied") else ""
    lines = [
        f"query {d['query_id']} ({d['created_at']})",
        f"question: {d['question']}",
        f"configuration: {d['configuration']} ({d['configuration_source']}), top {d['top_k']}"
        + (f", document {d['document']}" if d.get("document") else "")
        + neighbors,
        "",
        "retrieved chunks:",
    ]
    for hit in d.get("retrieved") or []:
        lines.append(
            f"  {hit['rank']}. score {hit['score']:.4f}  {hit['document']} [{hit['start']}:{hit['end']}]  "
            f"{hit['chunk_id']}"
        )
        lines.append(f"     {clip(hit.get('text'))}")
    if not d.get("retrieved"):
        lines.append("  (none)")
    tree = d.get("expansion_tree") or []
    if any(n.get("neighbors_prev") or n.get("neighbors_next") or n.get("parent") for n in tree):
        lines += ["", "expansion tree:"]
        for node in tree:
            lines.append(f"  hit {node['rank']} {node['hit']}")
            lines += [f"    previous {c}" for c in node.get("neighbors_prev") or []]
            lines += [f"    next     {c}" for c in node.get("neighbors_next") or []]
            if node.get("parent"):
                lines.append(f"    parent   {node['parent']}")
    lines.append("")
    if d.get("answer") is not None:
        lines += [f"answer ({d.get('llm_model')}):", f"  {d['answer']}"]
    elif d.get("answer_error"):
        lines.append(f"answer failed: {d['answer_error']}")
    else:
        lines.append("answer: none (no LLM was configured)")
    parts = [
        f"{name} {d[key]:.0f} ms"
        for name, key in (
            ("embed", "embed_ms"),
            ("search", "search_ms"),
            ("expand", "expand_ms"),
            ("generate", "generate_ms"),
        )
        if isinstance(d.get(key), (int, float))
    ]
    lines.append("latency: " + ", ".join(parts))
    tokens = [
        f"{name} {d[key]}"
        for name, key in (
            ("context", "context_tokens"),
            ("prompt", "prompt_tokens"),
            ("completion", "completion_tokens"),
        )
        if isinstance(d.get(key), int)
    ]
    if tokens:
        lines.append("tokens: " + ", ".join(tokens))
    return "\n".join(lines)
