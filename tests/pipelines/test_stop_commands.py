"""Ctrl-C and a TERM signal end any command (here `questions import`) with one line and the exit status 130 / 143:
no traceback, and the file being written is neither left half written nor as a temporary file.

A real process and a real signal (the process is the point). The process writes its file slowly, so the signal
surely arrives in the middle of the write: ``Path.write_text`` of a temporary file writes half of the text,
says so on standard error, then waits.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SLOW_WRITE = textwrap.dedent("""
    import pathlib, sys, time
    plain = pathlib.Path.write_text
    def slow(self, text, *args, **kwargs):
        if not self.name.endswith(".tmp"):
            return plain(self, text, *args, **kwargs)
        with open(self, "w", encoding="utf-8") as handle:
            handle.write(text[: len(text) // 2])
            handle.flush()
            print("HALF WRITTEN", file=sys.stderr, flush=True)
            time.sleep(60)
            handle.write(text[len(text) // 2:])
        return len(text)
    pathlib.Path.write_text = slow
    from chunkbench_pipelines.cli import main
    raise SystemExit(main(sys.argv[1:]))
""")


@pytest.mark.parametrize(
    "signo, status, name", [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT (Ctrl-C)")]
)
def test_a_signal_during_questions_import_ends_it_in_one_line_with_nothing_half_written(tmp_path, signo, status, name):
    table = tmp_path / "golden.csv"
    table.write_text(
        "question,answer\nWhen does the Almo flood?,In April.\nWho rebuilt the bridge?,The town.\n", encoding="utf-8"
    )
    out = tmp_path / "set" / "imported.json"
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path),
        "CHUNKBENCH_HOME": str(tmp_path / "home"),
        "CHUNKBENCH_CORPUS": str(tmp_path / "corpus"),
    }
    (tmp_path / "corpus").mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SLOW_WRITE,
            "questions",
            "import",
            str(table),
            "--yes",
            "--no-locate",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 120
        for line in process.stderr:
            if "HALF WRITTEN" in line or time.monotonic() > deadline:
                break
        process.send_signal(signo)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == status, stderr
    assert "Traceback" not in stderr and "Traceback" not in stdout
    [said] = [x for x in stderr.splitlines() if x.strip()]
    assert said == (
        f"chunkbench questions import: stopped by {name}; nothing was left half written (what was "
        "finished is kept); run the command again to finish"
    )
    assert not out.exists() and list(out.parent.glob("*")) == []  # neither the file nor its temporary file
