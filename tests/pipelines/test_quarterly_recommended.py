"""Near-identical quarterly reports end to end: a grid run with both retrievers, then `chunkbench ask` of each
quarter's question with the configuration the run recommends finds that quarter's total net sales in the top 3.

The reports (tests/support/quarterly_reports.py) share every statement and differ in the quarter and the figures.
The grid is three strategies x dense and hybrid: cluster_semantic, the configuration the whole grid recommends;
structural, the cheaper runner-up the resamples of the questions pick otherwise; and fixed_size, the cut by size.
Measured with the whole grid (MiniLM, 9 strategies x dense and hybrid): every dense configuration scored
recall_at_512 0 or 0.25, the recommended configuration was cluster_semantic x hybrid (1.0; structural x hybrid
0.75 in 32% of the resamples) and its top 3 held the quarter's figure for 4 of 4 quarters; the other six strategies'
hybrid configurations scored 0.75 at most, none cheaper than structural, and what each strategy finds on these
reports is tested strategy by strategy in tests/core/evaluation/test_quarterly_family.py. With these three the run
gives the same recommendation and the same split of the resamples, with about two thirds of the CPU time (each
strategy embeds its own chunks). The test holds the outcome, not which configuration wins.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from tests.pipelines.support.cli import chunkbench
from tests.support.quarterly_reports import QUARTERS, write_family

ROOT = Path(__file__).resolve().parents[2]
MODEL = "all-minilm-l6-v2"

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a grid of three strategies and two retrievers
#: the winner of the whole grid, its cheaper runner-up and the cut by size (see above)
STRATEGIES = ("cluster_semantic", "structural", "fixed_size")


def sql(results: Path, query: str) -> list[tuple]:
    con = duckdb.connect(str(results / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(results)])
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def test_the_recommended_configuration_finds_each_quarters_figure(tmp_path: Path) -> None:
    docs, question_file = write_family(tmp_path / "family")
    questions = tmp_path / "questions"
    questions.mkdir()
    question_file.rename(questions / question_file.name)
    home = tmp_path / "home"
    env = {
        "PATH": "/usr/bin:/bin",
        "CHUNKBENCH_HOME": str(home),
        "CHUNKBENCH_CORPUS": str(docs),
        "CHUNKBENCH_QUESTIONS": str(questions),
        "CHUNKBENCH_BENCHMARK": "quarters",
        **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
    }
    strategies = [arg for strategy in STRATEGIES for arg in ("--strategy", strategy)]
    run = chunkbench(
        ["run", "--corpus-model", MODEL, *strategies, "--retriever", "dense", "--retriever", "hybrid"], env, cwd=ROOT
    )
    assert run.returncode == 0, run.stdout + run.stderr
    results = home / "benchmarks" / "quarters"
    grid = sql(results, "SELECT DISTINCT strategy, retriever FROM leaderboard ORDER BY ALL")
    assert grid == sorted((s, r) for s in STRATEGIES for r in ("dense", "hybrid")), grid
    (recommended,) = sql(results, "SELECT strategy, corpus_model, retriever FROM recommendation")
    # the decomposition names each factor once: one corpus model explains nothing, and the shares add up to 1
    shares = dict(sql(results, "SELECT factor, share FROM variance_decomposition"))
    assert shares.get("corpus_model", 0.0) == pytest.approx(0.0, abs=1e-9)
    assert sum(shares[f] for f in ("question", "configuration", "rest") if f in shares) <= 1 + 1e-9

    raw = json.loads((questions / question_file.name).read_text(encoding="utf-8"))["questions"]
    found = []
    for quarter, question in zip(QUARTERS, raw):
        asked = chunkbench(["ask", question["question"], "--top-k", "3", "--json", "--no-save"], env, cwd=ROOT)
        assert asked.returncode == 0, asked.stdout + asked.stderr
        answer = json.loads(asked.stdout[asked.stdout.index("{") :])
        assert (answer["strategy"], answer["corpus_model"], answer["retriever"]) == tuple(recommended)
        assert answer["configuration_source"] == "recommended" and len(answer["hits"]) == 3
        if any(
            question["metadata"]["figure"] in hit["text"] and hit["document"] == quarter.file_name
            for hit in answer["hits"]
        ):
            found.append(quarter.key)
    assert found == [q.key for q in QUARTERS], f"recommended {recommended}: found only {found}"
