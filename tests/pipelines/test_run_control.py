"""`chunkbench run` stops promptly on SIGTERM/SIGINT (exit non-zero, the run marked failed in Dagster), a run
killed with -9 is marked failed by the next `chunkbench run`, progress is printed, and bad values exit 2 at once."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from tests.core.evaluation.test_llm_faults import Server
from tests.support import calibration

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path, **extra):
    corpus, questions, home, dagster_home = (tmp_path / n for n in ("corpus", "questions", "home", "dagster_home"))
    for folder in (corpus, questions, dagster_home):
        folder.mkdir(exist_ok=True)
    (corpus / "tides.md").write_text("# Tides\n\nThe harbour of Quelm floods twice a day.\n", encoding="utf-8")
    (questions / "q.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": f"t{i}",
                        "question": "How often does Quelm flood?",
                        "expected_answer": "Twice a day.",
                        "references": [{"document": "tides.md", "content": "floods twice a day"}],
                    }
                    for i in range(50)
                ]
            }
        ),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHUNKBENCH_", "OPENAI_", "QDRANT_", "DAGSTER_"))}
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "CHUNKBENCH_HOME": str(home),
            "DAGSTER_HOME": str(dagster_home),
            "CHUNKBENCH_CORPUS": str(corpus),
            "CHUNKBENCH_QUESTIONS": str(questions),
            **extra,
        }
    )
    return env


def _start(env):
    # a fresh home: the engine rates this worker measured, instead of timing MiniLM again (tests/support/calibration.py)
    calibration.give_measured(Path(env["CHUNKBENCH_HOME"]))
    calibration.give_graph(Path(env["CHUNKBENCH_HOME"]))
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chunkbench_pipelines.cli",
            "run",
            "--strategy",
            "fixed_size",
            "--corpus-model",
            "all-minilm-l6-v2",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_for(process, needle: str, seconds: float = 300) -> str:
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} never printed:\n{''.join(seen)}")


def _runs(env, status=None):
    os.environ["DAGSTER_HOME"], previous = env["DAGSTER_HOME"], os.environ.get("DAGSTER_HOME")
    try:
        with DagsterInstance.get() as instance:
            runs = instance.get_runs(RunsFilter(statuses=[status]) if status else None)
            return [(r.run_id, r.status, dict(r.tags)) for r in runs]
    finally:
        if previous is None:
            del os.environ["DAGSTER_HOME"]
        else:
            os.environ["DAGSTER_HOME"] = previous


@pytest.mark.slow
@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_run_within_seconds_and_marks_it_failed(tmp_path, signo):
    server = Server("hang")  # the LLM accepts and never answers: the run is in a 60 s request
    try:
        env = _env(tmp_path, CHUNKBENCH_LLM_MODEL="m", CHUNKBENCH_LLM_BASE_URL=server.url)
        process = _start(env)
        printed = _wait_for(process, "LLM answers fixed_size × all-minilm-l6-v2: 0/50")  # progress, while it runs
        assert "retrieval fixed_size × all-minilm-l6-v2: 50/50 questions" in printed
        time.sleep(1)
        sent = time.monotonic()
        process.send_signal(signo)
        rest, _ = process.communicate(timeout=60)
        seconds = time.monotonic() - sent
    finally:
        server.close()
    assert process.returncode == 128 + signo, printed + rest
    assert seconds < 12, seconds
    assert f"stopped by {signal.Signals(signo).name}" in rest and "building leaderboard" not in rest
    runs = _runs(env)
    partition_runs = [r for r in runs if r[2].get("dagster/partition") == "all-minilm-l6-v2|fixed_size"]
    assert partition_runs and all(status == DagsterRunStatus.FAILURE for _, status, _ in partition_runs)


@pytest.mark.slow
def test_a_run_killed_with_minus_9_is_marked_failed_by_the_next_run(tmp_path):
    from chunkbench_pipelines.run_control import fail_orphaned_runs

    server = Server("hang")
    try:
        env = _env(tmp_path, CHUNKBENCH_LLM_MODEL="m", CHUNKBENCH_LLM_BASE_URL=server.url)
        process = _start(env)
        _wait_for(process, "LLM answers fixed_size × all-minilm-l6-v2: 0/50")
        process.kill()
        process.wait(30)
    finally:
        server.close()
    [(run_id, status, tags)] = _runs(env, DagsterRunStatus.STARTED)
    assert tags["chunkbench/pid"] == str(process.pid)
    os.environ["DAGSTER_HOME"], previous = env["DAGSTER_HOME"], os.environ.get("DAGSTER_HOME")
    try:
        with DagsterInstance.get() as instance:
            assert fail_orphaned_runs(instance) == [run_id]  # what the next chunkbench run does first
            assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
            assert fail_orphaned_runs(instance) == []
    finally:
        if previous is None:
            del os.environ["DAGSTER_HOME"]
        else:
            os.environ["DAGSTER_HOME"] = previous


def _cli(env, *args):
    """A command whose point is its exit status and output, called in this process with exactly ``env``
    (tests/pipelines/support/cli.py); the signal tests above need processes of their own."""
    from tests.pipelines.support.cli import chunkbench

    # no engine rates given to the home: that would create it, and these commands must create nothing
    return chunkbench(args, env, cwd=ROOT, measured_rates=False)


def test_bad_values_exit_2_with_one_line_before_any_work(tmp_path):
    env = _env(tmp_path)
    run = _cli(env, "run", "--strategy", "nope")
    assert run.returncode == 2 and run.stdout == ""
    assert (
        run.stderr.strip().splitlines() == [run.stderr.strip()]
        and "unknown strategy 'nope'; choose from: fixed_size" in run.stderr
    )
    assert not (tmp_path / "home").exists()  # nothing parsed, nothing created
    run = _cli(env, "run", "--corpus-model", "no-such-model")
    assert (
        run.returncode == 2 and "unknown corpus model 'no-such-model'" in run.stderr and "Traceback" not in run.stderr
    )


def test_a_bad_registry_is_one_clean_line(tmp_path):
    bad = tmp_path / "models.toml"
    bad.write_text('[[models]]\nid = "x"\nprovider = "nowhere"\n', encoding="utf-8")
    for command in (("models",), ("run", "--corpus-model", "x")):
        result = _cli(_env(tmp_path, CHUNKBENCH_MODELS=str(bad)), *command)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert "models.toml" in result.stderr
