"""`chunkbench run` stops within seconds on SIGTERM while the corpus model is embedding chunks (multilingual-e5-small)."""

import random
import signal
import subprocess
import sys
import time

import pytest
from dagster import DagsterRunStatus

from tests.pipelines.test_run_control import ROOT, _env, _runs, _wait_for

WORDS = (
    "harbour tide ferry basalt ledger invoice approval policy leave quarter revenue cloud receipt travel "
    "expense audit backup incident supplier contract payroll pension office region market margin"
).split()


def big_corpus(folder, documents: int = 3, paragraphs: int = 120) -> None:
    """Documents of about 15,000 words each: a minute or more of e5 embedding on two cores."""
    rng = random.Random(3)
    for d in range(documents):
        sections = []
        for p in range(paragraphs):
            sentences = [
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 18))).capitalize() + "." for _ in range(8)
            ]
            sections.append(f"## Section {d}.{p}\n\n" + " ".join(sentences))
        (folder / f"report_{d}.md").write_text(f"# Report {d}\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_sigterm_while_e5_embeds_stops_within_seconds(tmp_path):
    env = _env(tmp_path)
    big_corpus(tmp_path / "corpus")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chunkbench_pipelines.cli",
            "run",
            "--strategy",
            "fixed_size",
            "--corpus-model",
            "multilingual-e5-small",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        printed = _wait_for(process, "chunking, embedding and evaluating: fixed_size × multilingual-e5-small")
        # the model is loaded and the chunks are cut when the embedding's first progress line comes (0 of them);
        # two seconds later embedding is under way (about a minute of it in all)
        printed += _wait_for(process, "embedding fixed_size × multilingual-e5-small: 0/")
        time.sleep(2)
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=120)
        seconds = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
    # the chunks were still being embedded: no question was retrieved yet
    assert "retrieval fixed_size × multilingual-e5-small" not in printed + rest, printed + rest
    assert "embedding fixed_size × multilingual-e5-small: 0/" in printed + rest  # progress counted in texts
    assert process.returncode == 128 + signal.SIGTERM, printed + rest
    assert seconds < 12, (seconds, rest)  # a 5 s stop plus marking the run failed and exiting
    assert "stopped by SIGTERM" in rest and "building leaderboard" not in rest
    runs = _runs(env)
    partition_runs = [r for r in runs if r[2].get("dagster/partition") == "multilingual-e5-small|fixed_size"]
    assert partition_runs and all(status == DagsterRunStatus.FAILURE for _, status, _ in partition_runs)
