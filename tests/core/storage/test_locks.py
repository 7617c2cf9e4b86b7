"""The setup lock: one process at a time, a waiting process says so after 2 s, a dead holder frees it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from chunkbench_core.storage.locks import LockTimeoutError, setup_lock, waiting_message

PROJECT = Path(__file__).resolve().parents[3]

# Takes the lock, checks nobody else is inside, stays a while, leaves a line in the log.
WORKER = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from chunkbench_core.storage.locks import setup_lock
    folder, log, hold = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    inside = folder / "inside"
    with setup_lock(folder, "the test folder", notify=lambda m: print(m, file=sys.stderr, flush=True)):
        fd = os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails if another process is inside
        started = time.time()
        print("holding", flush=True)
        time.sleep(hold)
        os.close(fd)
        os.unlink(inside)
        with open(log, "a") as handle:
            handle.write(json.dumps({"pid": os.getpid(), "start": started, "end": time.time()}) + "\\n")
""")


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, *args],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


def wait_line(process: subprocess.Popen, text: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if text in line:
            return
        if not line and process.poll() is not None:
            raise AssertionError(f"process ended: {process.stderr.read()}")
    raise AssertionError(f"no {text!r} within {timeout} s")


@pytest.mark.slow
def test_three_processes_set_up_one_folder_one_after_another(tmp_path):
    folder, log = tmp_path / "home", tmp_path / "log.jsonl"
    workers = [start(str(folder), str(log), "0.6") for _ in range(3)]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    spans = sorted((r["start"], r["end"]) for r in map(json.loads, log.read_text().splitlines()))
    assert len(spans) == 3
    assert all(earlier[1] <= later[0] for earlier, later in zip(spans, spans[1:]))  # never two inside at once


@pytest.mark.slow
def test_a_waiting_process_says_so_after_two_seconds_and_only_then(tmp_path):
    folder, log = tmp_path / "home", tmp_path / "log.jsonl"
    holder = start(str(folder), str(log), "3.5")
    wait_line(holder, "holding")
    waiter = start(str(folder), str(log), "0")
    _, err = waiter.communicate(timeout=120)
    holder.communicate(timeout=60)
    assert waiter.returncode == 0
    assert err.strip() == waiting_message(folder, "the test folder")  # once, one line

    quick_holder = start(str(folder), str(log), "0.8")
    wait_line(quick_holder, "holding")
    quick = start(str(folder), str(log), "0")
    _, err = quick.communicate(timeout=120)
    quick_holder.communicate(timeout=60)
    assert quick.returncode == 0 and err.strip() == ""  # waited under 2 s: nothing said


@pytest.mark.slow
def test_a_holder_killed_with_sigkill_frees_the_lock_at_once(tmp_path):
    folder, log = tmp_path / "home", tmp_path / "log.jsonl"
    holder = start(str(folder), str(log), "600")
    wait_line(holder, "holding")
    (folder / "inside").unlink()  # what the dead holder would have cleaned up (the test's own marker)
    os.kill(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=60)
    started = time.monotonic()
    follower = start(str(folder), str(log), "0")
    _, err = follower.communicate(timeout=60)
    assert follower.returncode == 0, err
    assert time.monotonic() - started < 10 and "waiting" not in err


def test_waiting_can_time_out_with_a_message_naming_the_folder(tmp_path):
    folder = tmp_path / "home"
    holder = start(str(folder), str(tmp_path / "log"), "30")
    try:
        wait_line(holder, "holding")
        said: list[str] = []
        with pytest.raises(LockTimeoutError, match=str(folder)):
            with setup_lock(folder, notify=said.append, notify_after=0.1, timeout=0.5):
                pass
        assert said == [waiting_message(folder)]
    finally:
        holder.kill()
        holder.communicate(timeout=60)


def test_the_lock_is_reentrant_in_a_thread_and_serializes_threads(tmp_path):
    folder = tmp_path / "home"
    order: list[str] = []
    with setup_lock(folder):
        with setup_lock(folder):  # the same thread again: no deadlock
            order.append("nested")

        def other() -> None:
            with setup_lock(folder):
                order.append("other thread")

        thread = threading.Thread(target=other)
        thread.start()
        time.sleep(0.3)
        order.append("first done")
    thread.join(timeout=30)
    assert order == ["nested", "first done", "other thread"]
