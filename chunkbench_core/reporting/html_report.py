"""The benchmark report: one self-contained HTML file (no CDN, plots inlined as PNG).

All text that comes from documents, questions or settings is escaped.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path

import pandas as pd

from chunkbench_core.storage.results_db import ResultsDB

from .leaderboard import FRACTIONS


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def recall_precision_png(board: pd.DataFrame) -> bytes:
    """Scatter of recall vs precision, one point per strategy x corpus model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    for _, row in board.iterrows():
        ax.scatter(row["precision"], row["recall"], s=50)
        ax.annotate(f'{row["strategy"]} / {row["corpus_model"]}', (row["precision"], row["recall"]),
                    fontsize=8, xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("precision (evidence characters / retrieved characters)")
    ax.set_ylabel("recall (evidence characters retrieved)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()


def _fmt(column: str, value: object) -> str:
    if column in FRACTIONS:
        return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{float(value):.3f}"
    return _e(value)


def render_report(results: ResultsDB) -> str:
    board = results.leaderboard()
    per_question = results.query(
        """SELECT q.strategy, q.corpus_model, q.question_set, q.question_id, q.question, q.recall, q.precision,
                  q.iou, q.reciprocal_rank, q.retrieved
           FROM question_results q JOIN leaderboard l USING (experiment_run_id, strategy, corpus_model)
           ORDER BY q.question_set, q.question_id, q.strategy, q.corpus_model"""
    )
    documents = results.query("SELECT document, status, error, n_chars FROM documents ORDER BY document")
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>chunkbench report</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:2rem;max-width:75rem}"
        "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}"
        "th{background:#f4f4f4}.num{text-align:right}.best{background:#fff4cc}.fail{color:#a00}</style></head><body>",
        "<h1>chunkbench: which chunking strategy and embedding model retrieve best</h1>",
    ]
    if board.empty:
        parts.append("<p>No experiment has run yet.</p>")
    else:
        best = board.iloc[0]
        parts.append(
            f"<p class='recommendation'>Best by recall (then IoU): <strong>{_e(best['strategy'])}</strong> with "
            f"<strong>{_e(best['corpus_model'])}</strong>: recall {_fmt('recall', best['recall'])}, "
            f"precision {_fmt('precision', best['precision'])}, IoU {_fmt('iou', best['iou'])}, "
            f"MRR {_fmt('mrr', best['mrr'])} over {_e(best['n_questions'])} questions.</p>"
        )
        columns = ["strategy", "corpus_model", "n_questions", *FRACTIONS]
        parts.append("<h2>Leaderboard</h2><table id='leaderboard'><tr>" + "".join(f"<th>{c}</th>" for c in columns) + "</tr>")
        for i, (_, row) in enumerate(board.iterrows()):
            parts.append(f"<tr class='{'best' if i == 0 else ''}'>" + "".join(
                f"<td class='{'num' if c in FRACTIONS else ''}'>{_fmt(c, row[c])}</td>" for c in columns) + "</tr>")
        parts.append("</table>")
        png = base64.b64encode(recall_precision_png(board)).decode()
        parts.append(f"<h2>Recall vs precision</h2><img id='recall-precision' alt='recall vs precision per strategy' "
                     f"src='data:image/png;base64,{png}'>")
    parts.append("<h2>Per question</h2><table id='questions'><tr><th>set</th><th>id</th><th>question</th>"
                 "<th>strategy</th><th>corpus_model</th><th>recall</th><th>precision</th><th>iou</th><th>RR</th>"
                 "<th>retrieved (document:start-end)</th></tr>")
    for _, row in per_question.iterrows():
        retrieved = ", ".join(f"{r['document']}:{r['start']}-{r['end']}" for r in json.loads(row["retrieved"] or "[]"))
        parts.append("<tr>" + "".join(f"<td>{_e(row[c])}</td>" for c in ("question_set", "question_id", "question",
                                                                            "strategy", "corpus_model"))
                     + "".join(f"<td class='num'>{_fmt('recall', row[c])}</td>" for c in ("recall", "precision", "iou",
                                                                                        "reciprocal_rank"))
                     + f"<td>{_e(retrieved)}</td></tr>")
    parts.append("</table><h2>Documents</h2><table id='documents'><tr><th>document</th><th>status</th><th>characters</th>"
                 "<th>error</th></tr>")
    for _, row in documents.iterrows():
        parts.append(f"<tr><td>{_e(row['document'])}</td><td class='{'fail' if row['status'] == 'failed' else ''}'>"
                     f"{_e(row['status'])}</td><td class='num'>{_e(row['n_chars'])}</td><td>{_e(row['error'])}</td></tr>")
    parts.append("</table></body></html>")
    return "".join(parts)


def write_report(results: ResultsDB, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(render_report(results), encoding="utf-8")
    tmp.replace(path)
    return path
