"""``chunkbench`` called in this test process: what a subprocess gives (exit status, standard output, standard
error), without starting Python, Dagster and the embedding engine again for each command.

For the tests where the command's behaviour is the point, not its entry point. The command sees only the
environment it is given (as a subprocess would), runs in ``cwd``, and both its Python streams and the file
descriptors 1 and 2 (what a library writes there directly) are captured. An exception that escapes ``main``
is printed as a traceback with exit status 1, as the interpreter does. A few tests keep the real subprocess:
the entry point itself (tests/pipelines/test_cli_startup.py), signals, concurrent commands, a full disk.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Iterator, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[3]
#: one command at a time per process: the environment, the working folder and the descriptors are the process's
_ONE_AT_A_TIME = threading.Lock()


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    before = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


@contextlib.contextmanager
def _no_root_handlers() -> Iterator[None]:
    """The root logger without handlers, as in a new process: a warning a command logs goes to standard error
    (logging's last resort) instead of pytest's log capture."""
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        yield
    finally:
        root.handlers[:] = saved


@contextlib.contextmanager
def _captured() -> Iterator[tuple]:
    """fd 1 and 2 (and sys.stdout/sys.stderr on them) into two temporary files."""
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = os.dup(1), os.dup(2)
    streams = sys.stdout, sys.stderr
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)
    try:
        yield out, err
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = streams
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def _text(handle) -> str:
    handle.seek(0)
    return handle.read().decode("utf-8", errors="replace")


#: the commands that time the local engines on a fresh home before they run (tests/support/calibration.py)
CALIBRATING = ("run", "sweep")


def chunkbench(
    args: Sequence[str], env: Mapping[str, str], cwd: Path | str = ROOT, *, measured_rates: bool = True
) -> subprocess.CompletedProcess:
    """Run ``chunkbench ARGS`` in this process with exactly the environment ``env``, in ``cwd``.

    ``measured_rates``: a ``run`` or ``sweep`` on a home without a calibration gets the engine rates this process
    measured already (tests/support/calibration.py) instead of timing the engines again; False for a test whose
    point is the calibration of a fresh home."""
    from chunkbench_pipelines.cli import main, session

    from tests.support import calibration

    args = [str(a) for a in args]
    home = Path(env["CHUNKBENCH_HOME"]) if env.get("CHUNKBENCH_HOME") else None
    calibrating = home is not None and measured_rates and bool(set(args) & set(CALIBRATING))
    if calibrating:
        calibration.give(home)
    # what earlier tests of this process left unreferenced is finalized here, in their thread and before the
    # capture, as a new process has none: an in-memory Dagster instance holds an SQLite connection that logs
    # "Exception during reset" when the collector happens to run in the command's run thread
    gc.collect()
    with _ONE_AT_A_TIME, _environment(env), contextlib.chdir(cwd), _no_root_handlers(), _captured() as (out, err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except Exception:  # noqa: BLE001 - what the interpreter prints for an uncaught exception
            traceback.print_exc()
            code = 1
        finally:
            session._current = None  # the next command builds its own settings, as a new process would
        sys.stdout.flush()
        sys.stderr.flush()
        stdout, stderr = _text(out), _text(err)
    out.close()
    err.close()
    if calibrating:
        calibration.keep(home)
    return subprocess.CompletedProcess(["chunkbench", *args], code, stdout, stderr)
