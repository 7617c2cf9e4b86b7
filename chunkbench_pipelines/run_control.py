"""``chunkbench run`` ends promptly on a signal, says how far it got, and cleans up after a killed run.

- :func:`run_interruptibly` runs the work in a worker thread while the main thread keeps the SIGTERM and
  SIGINT handlers (Dagster only takes over signals on the main thread, and would turn one into a
  failed cell of one question). A signal asks every loop of the work to stop at its next item
  (:func:`chunkbench_core.progress.request_stop`); after a grace period the runs this process started
  that are still STARTED are marked failed in the Dagster instance, and the exit code is 128 + the
  signal number (130 for Ctrl-C, 143 for SIGTERM).
- :func:`fail_orphaned_runs`: a run killed with -9 cannot say anything, and Dagster's run monitoring
  only watches runs a run launcher started (not in-process ones). Every run ``chunkbench run`` starts is
  tagged with its host and process id, so the next ``chunkbench run`` marks failed the STARTED runs whose
  process is gone.
- :func:`print_progress`: progress lines of long loops (done / total, rate, elapsed, ETA).
- :func:`terminal`: the terminal as it was when the command started. While a step runs, Dagster sends the
  process's standard output to the step's compute log (and copies it to the terminal only later, if the
  process lives long enough); progress and signal messages are written to this copy of the terminal
  instead, so they are seen at once, and seen even when the run is stopped.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import socket
import threading
from typing import Callable, TextIO

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from chunkbench_core.configuration import registry_of
from chunkbench_core import progress

PID_TAG = "chunkbench/pid"
HOST_TAG = "chunkbench/host"
GRACE_SECONDS = 5.0


def check_run_arguments(strategies: list[str] | None, corpus_models: list[str] | None, settings) -> None:
    """Refuse an unknown strategy or corpus model (of the registry of ``settings``) before any work starts
    (ConfigError: the CLI exits 2)."""
    from chunkbench_core.chunking import STRATEGIES
    from chunkbench_core.errors import ConfigError

    for strategy in strategies or ():
        if strategy not in STRATEGIES.names():
            raise ConfigError(f"unknown strategy {strategy!r}; choose from: {', '.join(STRATEGIES.names())}")
    if corpus_models:
        registry = registry_of(settings)  # a bad registry file raises ConfigError naming it
        for model in corpus_models:
            if model not in registry:
                raise ConfigError(
                    f"unknown corpus model {model!r}; registered: {', '.join(registry)} "
                    "(add models with a file named by CHUNKBENCH_MODELS)"
                )


def process_tags() -> dict[str, str]:
    """Tags naming this process, put on every run it starts."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _started_runs(instance: DagsterInstance) -> list:
    return list(
        instance.get_runs(
            RunsFilter(
                statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING], tags={HOST_TAG: socket.gethostname()}
            )
        )
    )


def fail_orphaned_runs(instance: DagsterInstance, say: Callable[[str], None] | None = None) -> list[str]:
    """Mark failed the STARTED runs of ``chunkbench run`` on this host whose process is gone; returns their ids."""
    failed = []
    for run in _started_runs(instance):
        pid = run.tags.get(PID_TAG, "")
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        instance.report_run_failed(
            run,
            message=f"the chunkbench run process (pid {pid}) ended without finishing "
            "this run (killed?); marked failed by the next chunkbench run",
        )
        failed.append(run.run_id)
    if failed and say is not None:
        say(f"marked {len(failed)} run(s) of a killed chunkbench run as failed: {', '.join(r[:8] for r in failed)}")
    return failed


def fail_own_runs(instance: DagsterInstance, reason: str) -> list[str]:
    """Mark failed the runs this process started that are still STARTED."""
    failed = []
    for run in _started_runs(instance):
        if run.tags.get(PID_TAG) == str(os.getpid()):
            instance.report_run_failed(run, message=reason)
            failed.append(run.run_id)
    return failed


def terminal(stream: TextIO | None = None) -> TextIO:
    """A text stream on a duplicate of ``stream``'s file descriptor (default: standard output), taken now: what
    is written to it goes where the stream went when this was called, whatever redirects the descriptor later.
    A stream without a descriptor (a test's buffer) is returned as it is."""
    stream = stream or sys.stdout
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        return stream
    stream.flush()
    return open(
        os.dup(fd),
        "w",
        buffering=1,
        encoding=getattr(stream, "encoding", None) or "utf-8",
        errors="replace",
        closefd=True,
    )


def print_progress(out: TextIO) -> Callable[[progress.Progress], None]:
    def sink(p: progress.Progress) -> None:
        print(f"    {p.line()}", file=out, flush=True)

    return sink


def run_interruptibly(
    work: Callable[[], int], instance: DagsterInstance, out: TextIO, grace_seconds: float = GRACE_SECONDS
) -> int:
    """Run ``work`` (returns an exit code) in a thread; a SIGTERM/SIGINT stops it within ``grace_seconds``."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover - signals need the main thread
        return work()
    received: list[int] = []
    done = threading.Event()
    # what the worker thread hands back: its exit code, or the exception it raised
    codes: list[int] = []
    errors: list[BaseException] = []

    def handler(signo: int, _frame: object) -> None:
        received.append(signo)
        progress.request_stop(f"{signal.Signals(signo).name} received")

    def target() -> None:
        try:
            codes.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append(exc)
        finally:
            done.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    sink = print_progress(out)
    progress.add_sink(sink)
    thread = threading.Thread(target=target, name="chunkbench-run", daemon=True)
    try:
        thread.start()
        while not done.wait(0.2):
            if received:
                print(
                    f"\n{signal.Signals(received[0]).name} received: stopping (at most {grace_seconds:g} s) ...",
                    file=out,
                    flush=True,
                )
                done.wait(grace_seconds)
                break
    finally:
        for signo, old in previous.items():
            signal.signal(signo, old)
        progress.remove_sink(sink)
    if received:
        name = signal.Signals(received[0]).name
        failed = fail_own_runs(instance, f"chunkbench run stopped by {name}")
        print(
            f"stopped by {name}; {len(failed)} unfinished run(s) marked failed in Dagster"
            + ("" if done.is_set() else " (a request still in flight was abandoned)"),
            file=out,
            flush=True,
        )
        progress.clear_stop()
        return 128 + received[0]
    if errors:
        raise errors[0]
    return int(codes[0]) if codes else 1


def runs_tagged_with_batch(instance, batch: str) -> list[str]:
    """The ids of the Dagster runs of one ``chunkbench run`` (``chunkbench/batch``) or backfill (``dagster/backfill``)."""
    found: set[str] = set()
    for tag in ("chunkbench/batch", "dagster/backfill"):
        found |= {r.run_id for r in instance.get_runs(filters=RunsFilter(tags={tag: batch}))}
    return sorted(found)
