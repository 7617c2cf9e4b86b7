"""Re-inspectable history through the pipeline: a run's inspector shows its own chunks after a rebuild."""

import dataclasses
import json
import re
import subprocess

import pytest
from dagster import DagsterInstance

from chunkbench_core.reporting.data import load_chunk_sizes, load_report_data, restrict_to_run_variant
from chunkbench_core.reporting.reports import ReportNames
from chunkbench_core.reporting.technical import render_technical
from chunkbench_core.storage.history import list_builds, run_build
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_pipelines.cli import main
from tests.pipelines.support.environment import run_strategy
from tests.conftest import require_executable

MODEL = "all-minilm-l6-v2"
# one chunk per document; the rebuild changes a word outside the evidence (same length: the same offsets)
HARBOUR = (
    "# Harbour\n\nThe Kestrel ferry leaves the north pier at seven every morning and returns at dusk. "
    "Tickets are sold on board by the purser.\n"
)
ORCHARD = (
    "# Orchard\n\nThe Linden orchard grows nine kinds of pear. The harvest starts in late September "
    "and the cider press runs until November.\n"
)
QUESTIONS = {
    "name": "set",
    "questions": [
        {
            "id": "f1",
            "question": "When does the Kestrel ferry leave?",
            "references": [{"document": "harbour.md", "content": "leaves the north pier at seven every morning"}],
        },
        {
            "id": "o1",
            "question": "How many kinds of pear grow in the orchard?",
            "references": [{"document": "orchard.md", "content": "grows nine kinds of pear"}],
        },
    ],
}


@pytest.fixture()
def workspace(tmp_path, monkeypatch):
    corpus, questions, home = tmp_path / "corpus", tmp_path / "questions", tmp_path / "home"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "harbour.md").write_text(HARBOUR, encoding="utf-8")
    (corpus / "orchard.md").write_text(ORCHARD, encoding="utf-8")
    (questions / "set.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    for name, value in {
        "CHUNKBENCH_HOME": home,
        "CHUNKBENCH_CORPUS": corpus,
        "CHUNKBENCH_QUESTIONS": questions,
        "CHUNKBENCH_BENCHMARK": "history",
    }.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("QDRANT_URL", raising=False)
    return {"results": ResultsDB(home / "benchmarks" / "history"), "corpus": corpus, "tmp": tmp_path}


def run_report(results: ResultsDB, run_id: str):
    """The technical report's data for one run: its metrics row as the board, its question rows."""
    data = load_report_data(results)
    run = results.query("SELECT * FROM experiment_metrics WHERE experiment_run_id = ?", [run_id])
    shown = data.board[[c for c in data.board.columns if c not in run.columns or c in ("strategy", "corpus_model")]]
    board = shown.merge(run, on=["strategy", "corpus_model"])
    questions = results.query(
        "SELECT * FROM question_results WHERE experiment_run_id = ? ORDER BY question_id", [run_id]
    )
    return dataclasses.replace(
        data,
        board=board,
        questions=questions,
        chunk_sizes=restrict_to_run_variant(load_chunk_sizes(results, board), board),
    )


def inspector(html: str) -> dict:
    found = re.search(r'<script type="application/json" id="inspector-data">(.*?)</script>', html, re.S)
    assert found
    return json.loads(found.group(1))


def chunk_texts(payload: dict) -> dict[str, str | None]:
    return {c["doc"]: c["text"] for c in payload["chunks"]}


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.browser
def test_an_old_runs_inspector_shows_its_own_chunks_after_a_rebuild(workspace, capsys):
    results, instance = workspace["results"], DagsterInstance.ephemeral()
    run_strategy(instance, MODEL)
    (workspace["corpus"] / "harbour.md").write_text(HARBOUR.replace("Kestrel", "Osprey!"), encoding="utf-8")
    run_strategy(instance, MODEL)
    # a chunk-size sweep of the same strategy: a collection of its own, which the default runs do not read
    run_strategy(instance, MODEL, {"chunking": {"chunk_size": 16, "chunk_overlap": 0}})

    runs = results.query(
        "SELECT experiment_run_id, variant, provenance FROM experiment_metrics ORDER BY created_at"
    ).to_dict("records")
    assert [r["variant"] for r in runs] == ["", "", "size16_overlap0"]
    old, new = runs[0]["experiment_run_id"], runs[1]["experiment_run_id"]
    old_build, new_build = run_build(runs[0]["provenance"]), run_build(runs[1]["provenance"])
    assert old_build and new_build and old_build != new_build
    # the default collection keeps both builds; "the chunks" (current_chunks) are the latest build's
    default = [b for b in list_builds(results) if b.variant == ""]
    assert [b.build for b in default] == [new_build, old_build]
    current = results.query("SELECT document, text, build FROM current_chunks WHERE variant = '' ORDER BY document")
    assert set(current["build"]) == {new_build} and len(current) == 2 and "Osprey!" in current["text"].iloc[0]

    links = ReportNames().links()
    old_html = render_technical(run_report(results, old), links, "technical_report.html", results)
    new_html = render_technical(run_report(results, new), links, "technical_report.html", results)
    old_texts, new_texts = chunk_texts(inspector(old_html)), chunk_texts(inspector(new_html))
    assert old_texts == {"harbour.md": HARBOUR, "orchard.md": ORCHARD}  # the texts that run retrieved
    assert new_texts["harbour.md"] == HARBOUR.replace("Kestrel", "Osprey!")
    old_payload = inspector(old_html)
    assert all(r["hits"] for r in old_payload["results"].values())
    hit = old_payload["chunks"][old_payload["results"]["0:0"]["hits"][0]["chunk"]]
    assert (hit["start"], hit["end"]) == (0, len(HARBOUR if hit["doc"] == "harbour.md" else ORCHARD))

    # what a browser shows: the old run's inspector draws the old text
    page = workspace["tmp"] / "old_technical_report.html"
    page.write_text(old_html, encoding="utf-8")
    chromium = require_executable("chromium")
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=5000",
            f"--user-data-dir={workspace['tmp'] / 'chromium'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-inspector="ready"' in dom.stdout and "Kestrel ferry" in dom.stdout and "Osprey!" not in dom.stdout

    # pruning: a dry run prints and keeps; keep 1 removes the old build of the default collection
    capsys.readouterr()
    assert main(["runs", "prune", "--keep", "1", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert f"would remove: fixed_size × {MODEL}, build {old_build}: 2 chunk rows" in printed
    assert len(list_builds(results)) == 3
    assert main(["runs", "prune", "--keep", "1"]) == 0
    assert f"removed: fixed_size × {MODEL}, build {old_build}" in capsys.readouterr().out
    assert [b.build for b in list_builds(results) if b.variant == ""] == [new_build]
    # the old run keeps its scores and offsets; its chunk texts are gone (never another build's texts)
    pruned = inspector(render_technical(run_report(results, old), links, "technical_report.html", results))
    assert set(chunk_texts(pruned).values()) == {None}
    assert {(c["doc"], c["start"], c["end"]) for c in pruned["chunks"]} == {
        ("harbour.md", 0, len(HARBOUR)),
        ("orchard.md", 0, len(ORCHARD)),
    }


def test_a_run_after_a_build_reads_its_token_ids_and_scores_as_encoding_would(workspace, monkeypatch):
    """The build stores its chunks' cl100k token ids; the experiment after it reads them and encodes no chunk. A
    run over the same build without them (as one made by an earlier version) encodes, with the same scores."""
    import numpy as np

    from chunkbench_core.evaluation import budget
    from chunkbench_core.tokens import cl100k, encode_many

    results, instance = workspace["results"], DagsterInstance.ephemeral()
    encoded: list[str] = []

    def encode(texts):
        encoded.extend(texts)
        return encode_many(texts)

    monkeypatch.setattr(budget, "encode_many", encode)

    def run() -> str:
        budget.forget_tokens()  # as a fresh process: nothing remembered
        encoded.clear()
        run_strategy(instance, MODEL)
        latest = results.query("SELECT experiment_run_id FROM experiment_metrics ORDER BY created_at DESC LIMIT 1")
        return str(latest.iloc[0, 0])

    def scores(run_id: str) -> list[tuple]:
        frame = results.query(
            "SELECT question_id, metric, value FROM question_scores WHERE experiment_run_id = ? ORDER BY ALL", [run_id]
        )
        return [tuple(r) for r in frame.itertuples(index=False)]

    def board() -> list[tuple]:
        columns = (
            "strategy, corpus_model, n_questions, recall, context_tokens, recall_at_256, recall_at_2048, budget_auc"
        )
        return [tuple(r) for r in results.query(f"SELECT {columns} FROM leaderboard").itertuples(index=False)]

    def stored_ids():
        return results.query(
            "SELECT c.text, t.n_chars, t.token_ids FROM chunk_tokens t JOIN chunks c USING (chunk_id, build) ORDER BY ALL"
        )

    first = run()
    [build] = list_builds(results)
    stored = stored_ids()
    assert len(stored) == build.n_chunks == 2
    for text, n_chars, ids in stored.itertuples(index=False):
        assert n_chars == len(text) and np.frombuffer(bytes(ids), "<u4").tolist() == cl100k().encode_ordinary(text)
    assert encoded == []  # the experiment took every chunk's tokens from the build
    with_ids = board()
    assert scores(first) and with_ids[0][4] > 0  # context_tokens measured

    # the same build recorded without ids, as an earlier version did: the run encodes every chunk, the same scores
    record_build = ResultsDB.record_build
    with monkeypatch.context() as earlier:
        earlier.setattr(
            ResultsDB, "record_build", lambda self, b: record_build(self, dataclasses.replace(b, token_ids=[]))
        )
        second = run()
    assert [b.build for b in list_builds(results)] == [build.build] and stored_ids().empty  # none left beside
    assert sorted(encoded) == sorted(stored["text"])
    assert scores(second) == scores(first) and board() == with_ids

    # built again by this version: its ids replaced, nothing duplicated, read by the run
    third = run()
    assert stored_ids().equals(stored) and encoded == []
    assert scores(third) == scores(first) and board() == with_ids and len({first, second, third}) == 3
