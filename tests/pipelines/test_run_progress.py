"""`chunkbench run` as a person watches it: the estimate first (documents, configurations, texts to embed, cached),
progress lines from parsing, chunking, embedding and retrieval (also in the Dagster run log), the wall time per
stage and the estimate against the actual time at the end (kept in run_estimates); a sampled corpus is said so in
the header, the leaderboard and the Dagster metadata, and never mixed with a whole-corpus build."""

import json
import os
from pathlib import Path

import duckdb
import pytest
from dagster import DagsterInstance

from tests.pipelines.support.cli import chunkbench

ROOT = Path(__file__).resolve().parents[2]
WORDS = "tide harbour ferry quay lantern rope anchor gull beacon pier".split()


def _env(tmp_path):
    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    for d in range(6):
        body = " ".join(
            f"Note {i} of file {d}: the {WORDS[(i + d) % 10]} of Quelm is checked at {i % 12} o'clock."
            for i in range(220)
        )
        (corpus / f"notes{d}.md").write_text(f"# Notes {d}\n\n{body}\n", encoding="utf-8")
    (questions / "set.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": f"q{i}",
                        "question": f"When is the {WORDS[i % 10]} of Quelm checked in note {i}?",
                        "references": [
                            {"document": "notes0.md", "content": f"Note {i} of file 0: the {WORDS[i % 10]} of Quelm"}
                        ],
                    }
                    for i in range(20)
                ]
            }
        ),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHUNKBENCH_", "OPENAI_", "QDRANT_", "DAGSTER_"))}
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "CHUNKBENCH_HOME": str(tmp_path / "home"),
            "DAGSTER_HOME": str(tmp_path / "dagster_home"),
            "CHUNKBENCH_CORPUS": str(corpus),
            "CHUNKBENCH_QUESTIONS": str(questions),
        }
    )
    (tmp_path / "dagster_home").mkdir()
    return env


def _run(env, *flags):
    """``chunkbench run`` called in this test process (its exit status and both streams, as a subprocess gives them;
    tests/pipelines/support/cli.py)."""
    done = chunkbench(["run", "--strategy", "fixed_size", "--corpus-model", "all-minilm-l6-v2", *flags], env, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def _query(env, sql):
    folder = Path(env["CHUNKBENCH_HOME"]) / "benchmarks"
    database = next(folder.glob("*/chunkbench.duckdb"))
    con = duckdb.connect(str(database), read_only=True)
    try:
        con.execute(f"SET file_search_path = '{database.parent}'")
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.slow
def test_a_run_says_what_it_will_do_how_far_it_is_and_what_it_took(tmp_path):
    env = _env(tmp_path)
    printed = _run(env, "--sample-documents", "3")
    lines = printed.splitlines()
    position = {
        needle: next(i for i, line in enumerate(lines) if needle in line)
        for needle in (
            "work: 3 documents, 1 configurations",
            "expected time on this machine:",
            "parsing: 3/3 documents",
            "corpus: sample of 3 of 6 documents (1 with evidence, seed 0)",
            "chunking fixed_size × all-minilm-l6-v2: 3/3 documents",
            "embedding fixed_size × all-minilm-l6-v2: 0/",
            "retrieval fixed_size × all-minilm-l6-v2: 20/20 questions",
            "wall time",
            "estimate against actual, run: estimated",
        )
    }
    # the sample's documents are parsed for the estimate (its tokens are their text's), then the work is said
    assert position["parsing: 3/3 documents"] < position["work: 3 documents, 1 configurations"]
    assert (
        position["work: 3 documents, 1 configurations"]
        < position["chunking fixed_size × all-minilm-l6-v2: 3/3 documents"]
    )
    assert "parsing: every document is parsed already (3 documents" in printed
    assert position["wall time"] > position["retrieval fixed_size × all-minilm-l6-v2: 20/20 questions"]
    assert "texts to embed (0 of them cached)" in printed
    assert _query(env, "SELECT corpus_sample FROM leaderboard") == [
        ("sample of 3 of 6 documents (1 with evidence, seed 0)",)
    ]
    ((estimated, actual, sample),) = _query(
        env, "SELECT estimated_seconds, actual_seconds, corpus_sample FROM run_estimates"
    )
    assert estimated > 0 and actual > 0 and json.loads(sample)["n_documents"] == 3
    # the Dagster run log carries the same progress lines; the metadata names the sample
    os.environ["DAGSTER_HOME"], previous = env["DAGSTER_HOME"], os.environ.get("DAGSTER_HOME")
    try:
        with DagsterInstance.get() as instance:
            logs = [e.user_message for run in instance.get_runs() for e in instance.all_logs(run.run_id)]
            assert any("retrieval fixed_size × all-minilm-l6-v2: 20/20 questions" in m for m in logs)
            assert any("parsing: 3/3 documents" in m for m in logs)
            [key] = [
                k for k in instance.get_asset_keys() if k.path[-1] == "parsed_documents"
            ]  # under its benchmark's prefix
            parsed = instance.fetch_materializations(key, limit=1).records
            metadata = parsed[0].asset_materialization.metadata
            assert metadata["corpus_sample"].value == "sample of 3 of 6 documents (1 with evidence, seed 0)"
    finally:
        if previous is None:
            del os.environ["DAGSTER_HOME"]
        else:
            os.environ["DAGSTER_HOME"] = previous

    # the whole corpus next: another corpus fingerprint, so the collection is built again, never mixed
    printed = _run(env)
    assert "corpus: sample" not in printed and "work: 6 documents" in printed
    assert _query(env, "SELECT corpus_sample FROM leaderboard") == [("whole corpus (6 documents)",)]
    assert _query(env, "SELECT count(*) FROM run_estimates") == [(2,)]
    ((n_documents,),) = _query(env, "SELECT max(n_documents) FROM collections")
    assert n_documents == 6


@pytest.mark.slow
def test_a_sample_smaller_than_the_evidence_runs_the_questions_it_can_answer(tmp_path):
    """--sample-documents below the documents the evidence is in, as the estimate may suggest it: the run keeps the
    questions whose evidence lies in the sampled documents, says how many, and scores those alone (the others are
    neither problems nor zeros)."""
    env = _env(tmp_path)
    questions = Path(env["CHUNKBENCH_QUESTIONS"])
    (questions / "more.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": f"m{i}",
                        "question": f"When is the {WORDS[(i + 1) % 10]} of Quelm checked in note {i} of file 1?",
                        "references": [
                            {
                                "document": "notes1.md",
                                "content": f"Note {i} of file 1: the {WORDS[(i + 1) % 10]} of Quelm",
                            }
                        ],
                    }
                    for i in range(5)
                ]
            }
        ),
        encoding="utf-8",
    )
    printed = _run(env, "--sample-documents", "1")
    assert (
        "corpus: sample of 1 of 6 documents (1 with evidence, seed 0; 20 of 25 questions, those whose evidence "
        "it holds)"
    ) in printed
    assert "questions: 20 of 25 kept, those whose evidence lies in the sampled documents" in printed
    assert "question problems" not in printed
    assert _query(env, "SELECT n_questions FROM leaderboard") == [(20,)]
