"""A small but complete ResultsDB for report tests, written with ``ResultsDB.write``.

``build_results(root, extended=False)`` writes only the base schema columns of
``results_db.TABLES``. ``extended=True`` first widens the schema (for the duration of
the writes) with every optional column the reports render when present: expansion
trees, judge metrics, CIs, significance, token usage, latency breakdown, references...

Hostile text is everywhere a user can put text: a document named and filled with
``<script>``, a question, a chunk, an answer, error messages, model names in provenance.
"""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

import pytest

from chunkbench_core.storage import results_db
from chunkbench_core.storage.results_db import ResultsDB

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(2)>"
XSS_CLOSE = "</script><script>alert(3)</script><!--"
EVIL_DOC = f"{XSS_SCRIPT}.md"

DOCUMENTS: dict[str, str] = {
    "volcano.md": (
        "# Volcanoes\n\nA volcano is an opening in the crust of a planet. Molten rock below the surface is called "
        "magma. When magma reaches the surface it is called lava. Lava can be as hot as 1,200 degrees Celsius.\n\n"
        "## Eruptions\n\nExplosive eruptions throw ash high into the air. Effusive eruptions pour lava slowly. "
        "Most volcanoes sit on the edges of tectonic plates, where one plate sinks below another.\n\n"
        "## Monitoring\n\nScientists watch volcanoes with seismometers, gas sensors and satellites. A swarm of small "
        "earthquakes often comes before an eruption."
    ),
    EVIL_DOC: (
        f"# Payloads\n\nThis file tests escaping. {XSS_SCRIPT} Here the page must stay inert. {XSS_IMG} "
        f"And a closing tag inside JSON: {XSS_CLOSE} The secret answer is forty-two.\n\n"
        "Another paragraph with <b>bold markup</b> & ampersands that must render as text."
    ),
    "persian.md": "# تهران\n\nتهران پایتخت ایران است. جمعیت تهران بیش از هشت میلیون نفر است.\n\nکوه دماوند بلندترین کوه ایران است.",
}

QUESTIONS = [
    (
        "basics",
        "q1",
        "What is magma called when it reaches the surface?",
        "volcano.md",
        "it is called lava",
        "It is called lava.",
        "factual",
        "easy",
    ),
    (
        "basics",
        "q2",
        "What comes before an eruption?",
        "volcano.md",
        "A swarm of small earthquakes",
        "A swarm of small earthquakes.",
        "factual",
        "medium",
    ),
    (
        "hostile",
        "q3",
        f"{XSS_SCRIPT} What is the secret answer?",
        EVIL_DOC,
        "The secret answer is forty-two",
        f"forty-two {XSS_IMG}",
        "security",
        "hard",
    ),
    ("persian", "q4", "پایتخت ایران کجاست؟", "persian.md", "تهران پایتخت ایران است", "تهران", "factual", "easy"),
]

STRATEGIES = ("fixed_size", "recursive")
SWEEP_VARIANT = "size256_overlap32"
MODELS = ("minilm", "e5-small")
NOW = datetime(2026, 11, 1, 12, 0, 0)


@dataclass(frozen=True)
class FixtureChunk:
    chunk_id: str
    strategy: str
    document: str
    index: int
    start: int
    end: int
    parent_id: str | None = None

    def text(self) -> str:
        return DOCUMENTS[self.document][self.start : self.end]


def _safe(document: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in document)


def chunk_documents(strategy: str) -> list[FixtureChunk]:
    out: list[FixtureChunk] = []
    for document, text in DOCUMENTS.items():
        if strategy == "fixed_size":
            bounds = [(s, min(s + 90, len(text))) for s in range(0, len(text), 90)]
        elif strategy == "recursive":
            bounds, start = [], 0
            while start < len(text):
                cut = text.find("\n\n", start)
                end = len(text) if cut < 0 else cut + 2
                bounds.append((start, end))
                start = end
        else:  # semantic_parent_child: parents are paragraphs, children are sentences
            bounds = []
        for i, (s, e) in enumerate(bounds):
            out.append(FixtureChunk(f"{strategy}_{_safe(document)}_{i:06d}", strategy, document, i, s, e))
        if strategy == "semantic_parent_child":
            start, index = 0, 0
            while start < len(text):
                cut = text.find("\n\n", start)
                end = len(text) if cut < 0 else cut + 2
                parent = FixtureChunk(
                    f"{strategy}_{_safe(document)}_p{index:05d}", strategy, document, index, start, end
                )
                out.append(parent)
                s = start
                for j, piece in enumerate(text[start:end].split(". ")):
                    e = min(end, s + len(piece) + 2)
                    out.append(
                        FixtureChunk(
                            f"{parent.chunk_id}_c{j:03d}",
                            strategy,
                            document,
                            1000 * index + j,
                            s,
                            e,
                            parent_id=parent.chunk_id,
                        )
                    )
                    s = e
                start, index = end, index + 1
    return out


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def score(retrieved: list[FixtureChunk], reference: tuple[str, int, int]) -> dict[str, float]:
    document, rs, re_ = reference
    ref_len = re_ - rs
    covered: set[int] = set()
    overlap_sum = 0
    first_hit = 0
    for rank, c in enumerate(retrieved, start=1):
        if c.document != document:
            continue
        o = _overlap((c.start, c.end), (rs, re_))
        overlap_sum += o
        covered |= set(range(max(c.start, rs), min(c.end, re_)))
        if o and not first_hit:
            first_hit = rank
    retrieved_chars = sum(c.end - c.start for c in retrieved)
    missed = ref_len - len(covered)
    return {
        "recall": len(covered) / ref_len,
        "precision": overlap_sum / retrieved_chars if retrieved_chars else 0.0,
        "iou": overlap_sum / (retrieved_chars + missed),
        "hit": float(first_hit > 0),
        "reciprocal_rank": 1 / first_hit if first_hit else 0.0,
    }


EXTRA_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "question_results": [
        ("references", "VARCHAR"),
        ("expanded", "VARCHAR"),
        ("expansion_tree", "VARCHAR"),
        ("precision_omega", "DOUBLE"),
        ("ndcg", "DOUBLE"),
        ("recall_expanded", "DOUBLE"),
        ("precision_expanded", "DOUBLE"),
        ("iou_expanded", "DOUBLE"),
        ("context_relevance", "DOUBLE"),
        ("answer_similarity", "DOUBLE"),
        ("faithfulness", "DOUBLE"),
        ("hallucination", "BOOLEAN"),
        ("judge_reasoning", "VARCHAR"),
        ("generated_answer", "VARCHAR"),
        ("expected_answer", "VARCHAR"),
        ("answer_error", "VARCHAR"),
        ("parent_context", "VARCHAR"),
        ("token_usage", "VARCHAR"),
        ("latency_ms", "VARCHAR"),
        ("embed_ms", "DOUBLE"),
        ("search_ms", "DOUBLE"),
        ("expand_ms", "DOUBLE"),
        ("generate_ms", "DOUBLE"),
        ("judge_ms", "DOUBLE"),
    ],
    "experiment_metrics": [
        *[
            (f"{m}{s}", "DOUBLE")
            for m in (
                "recall",
                "precision",
                "iou",
                "mrr",
                "ndcg",
                "precision_omega",
                "answer_similarity",
                "hallucination_rate",
            )
            for s in ("", "_ci_low", "_ci_high")
            if f"{m}{s}" not in ("recall", "precision", "iou", "mrr")
        ],
        ("context_relevance", "DOUBLE"),
        ("faithfulness", "DOUBLE"),
        ("significant_vs_best", "BOOLEAN"),
        ("p_value", "DOUBLE"),
        ("cost_usd", "DOUBLE"),
        ("answer_prompt_tokens", "BIGINT"),
        ("answer_completion_tokens", "BIGINT"),
        ("embedding_tokens", "BIGINT"),
        ("retrieval_ms", "DOUBLE"),
    ],
}


@contextmanager
def widened_schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The tables plus EXTRA_COLUMNS (columns already in the schema, or metric columns, are not duplicated: a wide
    table's extra non-metric columns go to its base table)."""
    for table, extra in EXTRA_COLUMNS.items():
        scored = results_db.SCORED_TABLES.get(table)
        base = scored.base if scored is not None else table
        current = list(results_db.TABLES[base])
        names = {c for c, _ in current} | ({c for c, _ in scored.metric_columns()} if scored is not None else set())
        monkeypatch.setitem(results_db.TABLES, base, current + [(c, t) for c, t in extra if c not in names])
    yield


def _reference(document: str, phrase: str) -> tuple[str, int, int]:
    start = DOCUMENTS[document].index(phrase)
    return document, start, start + len(phrase)


def _retrieve(
    chunks: list[FixtureChunk], reference: tuple[str, int, int], config_index: int, top_k: int = 3
) -> list[FixtureChunk]:
    """Deterministic 'retrieval': evidence chunks first for good configs, noise first for weaker ones."""
    candidates = [c for c in chunks if c.parent_id is not None or c.strategy != "semantic_parent_child"]
    hits = [c for c in candidates if c.document == reference[0] and _overlap((c.start, c.end), reference[1:]) > 0]
    noise = [c for c in candidates if c not in hits]
    noise = noise[config_index % max(len(noise), 1) :] + noise[: config_index % max(len(noise), 1)]
    if config_index % 3 == 2:  # a weak configuration: the evidence falls out of the top k
        ordered = noise[:top_k] + hits
    elif config_index % 2 == 1:
        ordered = noise[:1] + hits + noise[1:]
    else:
        ordered = hits + noise
    return ordered[:top_k]


def build_results(root: Path, extended: bool = False, monkeypatch: pytest.MonkeyPatch | None = None) -> ResultsDB:
    if extended:
        if monkeypatch is None:
            raise ValueError("extended=True needs a MonkeyPatch")
        with widened_schema(monkeypatch):
            return _write(root, extended=True)
    return _write(root, extended=False)


def _write(root: Path, extended: bool) -> ResultsDB:
    db = ResultsDB(root)
    db.write(
        "documents",
        "all",
        [
            *[
                {
                    "document": name,
                    "path": f"/corpus/{name}",
                    "sha256": f"{i:064x}",
                    "size_bytes": len(text.encode()),
                    "status": "parsed",
                    "error": None,
                    "parser": "markdown",
                    "n_chars": len(text),
                    "n_units": 3,
                    "warnings": json.dumps([f"warning about {name}"]),
                    "parsed_at": NOW,
                }
                for i, (name, text) in enumerate(DOCUMENTS.items())
            ],
            {
                "document": "broken.pdf",
                "path": "/corpus/broken.pdf",
                "sha256": None,
                "size_bytes": 10,
                "status": "failed",
                "error": f"PDF has no text layer {XSS_IMG}",
                "parser": "pdf",
                "n_chars": None,
                "n_units": None,
                "warnings": "[]",
                "parsed_at": NOW,
            },
        ],
    )
    strategies = (*STRATEGIES, "semantic_parent_child") if extended else STRATEGIES
    configs = [(s, m) for s in strategies for m in MODELS if not (s == "semantic_parent_child" and m == "e5-small")]
    chunks = {s: chunk_documents(s) for s in strategies}
    for s, m in configs:
        db.write(
            "chunks",
            f"{s}__{m}",
            [
                {
                    "chunk_id": c.chunk_id,
                    "point_id": c.chunk_id,
                    "strategy": s,
                    "corpus_model": m,
                    "document": c.document,
                    "chunk_index": c.index,
                    "start_offset": c.start,
                    "end_offset": c.end,
                    "token_count": max(1, len(c.text().split()) + len(c.text()) // 12),
                    "content_type": "text",
                    "heading_path": "[]",
                    "parent_id": c.parent_id,
                    "text": c.text(),
                    "embedded_text": (f"Context {XSS_SCRIPT}: " + c.text()) if extended else None,
                    "chunking_params": json.dumps({"chunk_size": 90 if s == "fixed_size" else 400}),
                    "materialized_at": NOW,
                }
                for c in chunks[s]
            ],
        )

    runs = [("r1-baseline", NOW - timedelta(days=3)), ("r3-latest", NOW)]
    for run, stamp in runs:
        for ci, (s, m) in enumerate(configs):
            _write_run(db, run, stamp, s, m, ci + (1 if run == "r1-baseline" else 0), chunks[s], extended)
    # a chunk-size sweep variant inside the latest run, written an hour before the default row
    _write_run(
        db,
        "r3-latest",
        NOW - timedelta(hours=1),
        "fixed_size",
        "minilm",
        2,
        chunks["fixed_size"],
        extended,
        variant=SWEEP_VARIANT,
    )
    # a neighbor sweep step of fixed_size x minilm (metrics only), between the two runs
    _write_metrics_only(
        db,
        "r2-neighbors-3",
        NOW - timedelta(days=2),
        "fixed_size",
        "minilm",
        {"neighbor_prev": 3, "neighbor_next": 3},
        extended,
    )
    if extended:  # a run with a different boundary model
        _write_metrics_only(
            db,
            "r0-boundary-e5",
            NOW - timedelta(days=4),
            "semantic_parent_child",
            "minilm",
            {"boundary_model": "e5-small", "corpus_fingerprint": "corpus-older"},
            extended,
        )
        # a run whose id (free text from the user's sweep config) is hostile
        _write_metrics_only(db, f"r4-{XSS_SCRIPT}", NOW - timedelta(days=1), "recursive", "minilm", {}, extended)
    return db


class ResultsTemplates:
    """Each kind of fixture results folder built once (per test process) and copied for every test that changes it.

    ``copy(kind, root)`` copies the folder to ``root`` (which must not exist) and opens it: the DuckDB file's views
    read their Parquet files by relative paths, so the copy reads its own data. Kinds: ``base`` (``build_results``),
    ``base-compared`` (then ranked by the pipeline's comparison on recall@k), ``extended`` (``extended=True``,
    written under the widened schema: a test reading it widens the schema too, see ``widened_schema``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._built: dict[str, Path] = {}

    def _build(self, kind: str) -> Path:
        root = self.folder / kind / "results"
        if kind == "base":
            build_results(root)
        elif kind == "base-compared":
            from chunkbench_core.evaluation.recommendation import RankingSettings
            from chunkbench_core.stages import compare_latest_runs

            compare_latest_runs(self.copy("base", root), RankingSettings(rank_metric="recall@k"))
        elif kind == "extended":
            with pytest.MonkeyPatch.context() as mp:
                build_results(root, extended=True, monkeypatch=mp)
        else:
            raise ValueError(f"no fixture results of kind {kind!r}")
        return root

    def copy(self, kind: str, root: Path) -> ResultsDB:
        if kind not in self._built:
            self._built[kind] = self._build(kind)
        shutil.copytree(self._built[kind], root)
        return ResultsDB(root)


def _provenance(strategy: str, model: str, extra: dict[str, Any], extended: bool, variant: str = "") -> str:
    neighbors = {"neighbor_prev": extra.get("neighbor_prev", 0), "neighbor_next": extra.get("neighbor_next", 0)}
    provenance: dict[str, Any] = {
        "strategy": strategy,
        "corpus_model": model,
        "top_k": 3,
        "boundary_model": extra.get("boundary_model", "minilm" if strategy.startswith("semantic") else None),
        "chunking_params": {"chunk_size": 90 if strategy == "fixed_size" else 400},
        "question_set_hash": "abc123",
        "document_hashes": {d: f"hash-of-{d}" for d in DOCUMENTS},
        "code_version": "0.1.0",
        "note": XSS_CLOSE,
        "variant": variant,
        # the facts of the collection the run scored (its build record)
        "corpus_fingerprint": extra.get("corpus_fingerprint", "corpus-current"),
    }
    if extended:  # the flat names (neighbor_prev / neighbor_next at the top level)
        provenance.update(neighbors)
    else:  # the nested shape of evaluation.experiment.build_provenance
        provenance["neighbors"] = {**neighbors, "applied": strategy == "fixed_size" and any(neighbors.values())}
    return json.dumps(provenance, ensure_ascii=False)


def _write_run(
    db: ResultsDB,
    run: str,
    stamp: datetime,
    strategy: str,
    model: str,
    config_index: int,
    chunks: list[FixtureChunk],
    extended: bool,
    variant: str = "",
) -> None:
    rows = []
    by_id = {c.chunk_id: c for c in chunks}
    for qi, (qset, qid, question, document, phrase, expected, category, difficulty) in enumerate(QUESTIONS):
        reference = _reference(document, phrase)
        base: dict[str, Any] = {
            "experiment_run_id": run,
            "strategy": strategy,
            "corpus_model": model,
            "question_set": qset,
            "question_id": qid,
            "question": question,
            "category": category,
            "difficulty": difficulty,
            "top_k": 3,
            "n_references": 1,
            "created_at": stamp,
        }
        if qid == "q2" and strategy == "recursive" and model == "e5-small":
            rows.append(
                {**base, "retrieved": "[]", "error": f"retrieval: search timed out {XSS_SCRIPT}", "retrieval_ms": None}
            )
            continue
        hits = _retrieve(chunks, reference, config_index + qi)
        scores = score(hits, reference)
        retrieved = [
            {
                "rank": r,
                "chunk_id": c.chunk_id,
                "document": c.document,
                "start": c.start,
                "end": c.end,
                "score": round(0.9 - 0.1 * r, 3),
            }
            for r, c in enumerate(hits, start=1)
        ]
        row = {
            **base,
            "retrieved": json.dumps(retrieved, ensure_ascii=False),
            **scores,
            "retrieval_ms": 10.0 + 3 * config_index + qi,
            "error": None,
        }
        if extended:
            row.update(_extended_question(strategy, hits, by_id, chunks, reference, expected, scores, qi, config_index))
        rows.append(row)
    key = f"{strategy}__{model}__{variant + '__' if variant else ''}{run}"
    db.write("question_results", key, rows)
    scored = [r for r in rows if r["error"] is None]

    def mean(column: str) -> float:
        values = [r[column] for r in scored if r.get(column) is not None]
        return sum(values) / len(values)

    metrics: dict[str, Any] = {
        "experiment_run_id": run,
        "strategy": strategy,
        "corpus_model": model,
        "n_questions": len(scored),
        "n_failed": len(rows) - len(scored),
        "recall": mean("recall"),
        "precision": mean("precision"),
        "iou": mean("iou"),
        "mrr": mean("reciprocal_rank"),
        "hit_rate": mean("hit"),
        "top_k": 3,
        "provenance": _provenance(strategy, model, {}, extended, variant),
        "created_at": stamp,
    }
    if extended:
        for name, column in (
            ("recall", "recall"),
            ("precision", "precision"),
            ("iou", "iou"),
            ("mrr", "reciprocal_rank"),
            ("ndcg", "ndcg"),
            ("precision_omega", "precision_omega"),
            ("answer_similarity", "answer_similarity"),
        ):
            m = mean(column)
            metrics[name] = m
            metrics[f"{name}_ci_low"], metrics[f"{name}_ci_high"] = max(0.0, m - 0.15), m + 0.1
        metrics["hallucination_rate"] = sum(bool(r["hallucination"]) for r in scored) / len(scored)
        metrics["hallucination_rate_ci_low"], metrics["hallucination_rate_ci_high"] = 0.0, 0.5
        metrics["context_relevance"] = mean("context_relevance")
        metrics["faithfulness"] = mean("faithfulness")
        metrics["significant_vs_best"] = config_index % 2 == 1
        metrics["p_value"] = 0.01 if config_index % 2 == 1 else 0.4
        metrics["cost_usd"] = 0.002 * (config_index + 1)
        metrics["answer_prompt_tokens"] = 1200 + 10 * config_index
        metrics["answer_completion_tokens"] = 160
        metrics["embedding_tokens"] = 0 if model == "minilm" else 5400
        metrics["retrieval_ms"] = mean("retrieval_ms")
    db.write("experiment_metrics", key, [metrics])


def _extended_question(
    strategy: str,
    hits: list[FixtureChunk],
    by_id: dict[str, FixtureChunk],
    chunks: list[FixtureChunk],
    reference: tuple[str, int, int],
    expected: str,
    scores: dict[str, float],
    qi: int,
    config_index: int,
) -> dict[str, Any]:
    tree, expanded = [], []
    for rank, hit in enumerate(hits, start=1):
        node: dict[str, Any] = {
            "hit": hit.chunk_id,
            "rank": rank,
            "score": round(0.9 - 0.1 * rank, 3),
            "neighbors_prev": [],
            "neighbors_next": [],
            "parent": None,
        }
        expanded.append(
            {
                "rank": rank,
                "chunk_id": hit.chunk_id,
                "document": hit.document,
                "start": hit.start,
                "end": hit.end,
                "score": node["score"],
                "role": "hit",
                "parent_id": hit.parent_id,
            }
        )
        if strategy == "fixed_size":
            same = [c for c in chunks if c.document == hit.document]
            for c in same:
                if c.index == hit.index - 1:
                    node["neighbors_prev"].append(c.chunk_id)
                if c.index == hit.index + 1:
                    node["neighbors_next"].append(c.chunk_id)
            for cid in node["neighbors_prev"] + node["neighbors_next"]:
                c = by_id[cid]
                expanded.append(
                    {
                        "rank": None,
                        "chunk_id": cid,
                        "document": c.document,
                        "start": c.start,
                        "end": c.end,
                        "score": None,
                        "role": "neighbor",
                        "parent_id": None,
                    }
                )
        if hit.parent_id:
            node["parent"] = hit.parent_id
            p = by_id[hit.parent_id]
            expanded.append(
                {
                    "rank": None,
                    "chunk_id": p.chunk_id,
                    "document": p.document,
                    "start": p.start,
                    "end": p.end,
                    "score": None,
                    "role": "parent",
                    "parent_id": None,
                }
            )
        tree.append(node)
    parents = [by_id[h.parent_id].text() for h in hits if h.parent_id]
    return {
        "references": json.dumps(
            [{"document": reference[0], "start": reference[1], "end": reference[2]}], ensure_ascii=False
        ),
        "expanded": json.dumps(expanded, ensure_ascii=False),
        "expansion_tree": json.dumps(tree, ensure_ascii=False),
        "precision_omega": min(1.0, scores["precision"] + 0.2),
        "ndcg": scores["reciprocal_rank"] * 0.9,
        "recall_expanded": min(1.0, scores["recall"] + 0.1),
        "precision_expanded": scores["precision"] * 0.8,
        "iou_expanded": scores["iou"] * 0.9,
        "context_relevance": 6.0 + (qi + config_index) % 4,
        "answer_similarity": 5.0 + (qi * 2 + config_index) % 5,
        "faithfulness": 7.0 + config_index % 3,
        "hallucination": (qi + config_index) % 3 == 0,
        "judge_reasoning": f"The answer matches; note {XSS_IMG}",
        "generated_answer": f"Generated answer for question {qi + 1} by {strategy}: {XSS_SCRIPT}",
        "expected_answer": expected,
        "answer_error": None,
        "parent_context": json.dumps(parents, ensure_ascii=False) if parents else None,
        "token_usage": json.dumps(
            {"answer_prompt": 300 + qi, "answer_completion": 40, "judge_prompt": 500, "judge_completion": 60}
        ),
        "latency_ms": json.dumps({"embed": 2.0, "search": 5.0 + qi, "expand": 1.0, "generate": 650.0, "judge": 800.0}),
        "embed_ms": 2.0,
        "search_ms": 5.0 + qi,
        "expand_ms": 1.0,
        "generate_ms": 650.0,
        "judge_ms": 800.0,
    }


def _write_metrics_only(
    db: ResultsDB, run: str, stamp: datetime, strategy: str, model: str, extra: dict[str, Any], extended: bool
) -> None:
    db.write(
        "experiment_metrics",
        f"{strategy}__{model}__{run}",
        [
            {
                "experiment_run_id": run,
                "strategy": strategy,
                "corpus_model": model,
                "n_questions": 4,
                "n_failed": 0,
                "recall": 0.91,
                "precision": 0.22,
                "iou": 0.2,
                "mrr": 0.8,
                "hit_rate": 1.0,
                "top_k": 3,
                "provenance": _provenance(strategy, model, extra, extended),
                "created_at": stamp,
            }
        ],
    )
