"""The technical report at 10,000 questions: its size, render time, and load time in headless Chromium (target < 3 s).

    python benchmarks/report_at_scale.py [--questions 10000] [--configs 1] [--chromium /usr/bin/chromium] [--keep DIR]

Writes a results folder with ``--questions`` questions x ``--configs`` configurations (5 retrieved chunks
each, a question in 20 with an answer error) through ``ResultsDB``, renders the reports with
``write_reports`` and opens ``technical_report.html`` from disk in headless Chromium (playwright driving
the system browser). Load time: from navigation until the ``load`` event and the inspector's first
panel are both there. Prints the figures; exits 1 when the load time misses the target.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.reporting import write_reports
from chunkbench_core.storage.results_db import ResultsDB

TARGET_S = 3.0
STRATEGIES = ("fixed_size", "recursive", "semantic", "structural")
WORDS = (
    "harbour lava sourdough insurance premium policy volcano bakery starter claim river "
    "village contract clause payment annual rye flour eruption wall island"
).split()


def _text(i: int, n: int = 60) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n))


def build(root: Path, n_questions: int, n_configs: int) -> ResultsDB:
    db = ResultsDB(root)
    now = datetime(2026, 11, 30, 12, 0)
    n_docs, chunk_chars = 200, 400
    db.write(
        "documents",
        "all",
        [
            {
                "document": f"doc{d:03d}.md",
                "path": f"/corpus/doc{d:03d}.md",
                "sha256": f"{d:064x}",
                "size_bytes": 40_000,
                "status": "parsed",
                "error": None,
                "parser": "markdown",
                "n_chars": 40_000,
                "n_units": 100,
                "warnings": "[]",
                "parsed_at": now,
            }
            for d in range(n_docs)
        ],
    )
    for c in range(n_configs):
        strategy, model = STRATEGIES[c % len(STRATEGIES)], "all-minilm-l6-v2"
        chunks = []
        for d in range(n_docs):
            for k in range(100):
                chunks.append(
                    {
                        "chunk_id": f"{strategy}_doc{d:03d}_{k:06d}",
                        "point_id": f"p{d}-{k}",
                        "strategy": strategy,
                        "corpus_model": model,
                        "document": f"doc{d:03d}.md",
                        "chunk_index": k,
                        "start_offset": k * chunk_chars,
                        "end_offset": (k + 1) * chunk_chars,
                        "token_count": 80,
                        "content_type": "text",
                        "heading_path": "[]",
                        "parent_id": None,
                        "text": _text(d * 100 + k)[:chunk_chars].ljust(chunk_chars),
                        "embedded_text": None,
                        "chunking_params": "{}",
                        "materialized_at": now,
                    }
                )
        db.write("chunks", f"{strategy}__{model}", chunks)
        rows = []
        for q in range(n_questions):
            d, k = q % n_docs, (q * 13) % 100
            retrieved = [
                {
                    "rank": r + 1,
                    "chunk_id": f"{strategy}_doc{d:03d}_{(k + r) % 100:06d}",
                    "document": f"doc{d:03d}.md",
                    "start": ((k + r) % 100) * chunk_chars,
                    "end": ((k + r) % 100 + 1) * chunk_chars,
                    "score": round(0.9 - 0.05 * r, 3),
                }
                for r in range(5)
            ]
            rows.append(
                {
                    "experiment_run_id": "run1",
                    "strategy": strategy,
                    "corpus_model": model,
                    "question_set": "big",
                    "question_id": f"q{q:05d}",
                    "question": f"Question {q}: {_text(q, 12)}?",
                    "category": "policy",
                    "difficulty": "easy",
                    "top_k": 5,
                    "n_references": 1,
                    "created_at": now,
                    "retrieved": json.dumps(retrieved),
                    "recall": 1.0,
                    "precision": 0.2,
                    "iou": 0.2,
                    "hit": 1.0,
                    "reciprocal_rank": 1.0,
                    "retrieval_ms": 3.0,
                    "error": None,
                    "expected_answer": _text(q, 10),
                    "references": json.dumps(
                        [{"document": f"doc{d:03d}.md", "start": k * chunk_chars + 10, "end": k * chunk_chars + 90}]
                    ),
                    "answer_error": "answer: HTTP 500 InternalServerError: upstream down" if q % 20 == 0 else None,
                }
            )
        db.write("question_results", f"{strategy}__{model}__run1", rows)
        db.write(
            "experiment_metrics",
            f"{strategy}__{model}__run1",
            [
                {
                    "experiment_run_id": "run1",
                    "strategy": strategy,
                    "corpus_model": model,
                    "n_questions": n_questions,
                    "n_failed": 0,
                    "recall": 1.0,
                    "precision": 0.2,
                    "iou": 0.2,
                    "mrr": 1.0,
                    "hit_rate": 1.0,
                    "top_k": 5,
                    "provenance": json.dumps({"strategy": strategy, "corpus_model": model}),
                    "created_at": now,
                }
            ],
        )
    return db


def load_seconds(path: Path, chromium: str) -> float:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        started = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load", timeout=300_000)
        page.wait_for_function(
            "() => document.querySelector('#inspector-panel') && "
            "document.querySelector('#inspector-panel').childElementCount > 0",
            timeout=300_000,
        )
        seconds = time.perf_counter() - started
        errors = page.evaluate("() => document.querySelectorAll('#question-list li').length")
        browser.close()
    print(f"  question list items rendered: {errors}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--configs", type=int, default=1)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="chunkbench-report-scale-"))
    started = time.perf_counter()
    db = build(root, args.questions, args.configs)
    print(
        f"results: {args.questions:,} questions x {args.configs} configuration(s) in {time.perf_counter() - started:.1f} s"
    )
    started = time.perf_counter()
    paths = write_reports(db, root / "reports")
    print(
        f"render: {time.perf_counter() - started:.1f} s; technical_report.html "
        f"{paths.technical.stat().st_size / 1e6:.1f} MB"
    )
    seconds = load_seconds(paths.technical, args.chromium)
    print(f"load in headless Chromium: {seconds:.2f} s (target < {TARGET_S:g} s)")
    return 0 if seconds < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
