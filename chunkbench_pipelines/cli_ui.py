"""``chunkbench ui``: the Dagster UI (``dg dev``) with the reports served next to it.

What ``make ui`` runs: prepares the Dagster instance (chunkbench's dagster.yaml, the provider
pools), serves every benchmark's reports (``$CHUNKBENCH_HOME/benchmarks/<name>/reports``, with an index
page at the root) on 127.0.0.1 (``--reports-port``, default the UI port + 1), tells the code location
where (``CHUNKBENCH_REPORTS_URL``), and runs ``dg dev`` on 127.0.0.1 until Ctrl-C or SIGTERM, which stop
dg dev and every process it started within 10 s. Meanwhile it reloads the code location when a benchmark is
registered (``chunkbench run`` of a new one), so the UI shows it without a reload by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from chunkbench_core.settings import BENCHMARK_FILE, make_defaults, process_environment

from .cli import session as settings

from .report_server import DEFAULT_UI_PORT, LOOPBACK, REPORTS_URL_ENV, ReportServer

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def dg_executable() -> str:
    """``dg`` next to this Python (the project's virtualenv), else on PATH."""
    local = Path(sys.executable).with_name("dg")
    found = str(local) if local.exists() else shutil.which("dg")
    if not found:
        raise SystemExit("error: the dg command is missing; install the project (make install) to get dagster-dg-cli")
    return found


def running_virtual_environment() -> dict[str, str]:
    """``VIRTUAL_ENV`` naming the virtual environment this command runs from (empty outside one): dg dev runs from
    it too (:func:`dg_executable`), and dg compares that variable with the project's ``.venv``. Unset, as under
    ``make ui``, which runs ``.venv/bin/chunkbench`` without activating anything, dg dev and the dg process it
    starts each printed a warning that the environments do not match, twice at every start."""
    return {"VIRTUAL_ENV": sys.prefix} if sys.prefix != sys.base_prefix else {}


def add_parser(sub) -> None:
    ui = sub.add_parser("ui", help="the Dagster UI (dg dev) on 127.0.0.1, with the HTML reports served next to it")
    given = make_defaults()
    ui.add_argument(
        "--port",
        type=int,
        default=given.get("UI_PORT", DEFAULT_UI_PORT),
        help="the UI's port (default: UI_PORT or 3000)",
    )
    ui.add_argument(
        "--reports-port",
        type=int,
        default=given.get("REPORTS_PORT"),
        help="the reports' port (default: REPORTS_PORT or the UI port + 1)",
    )
    ui.set_defaults(func=command_ui)


#: how long dg dev gets to stop its webserver, daemon and code server on Ctrl-C or SIGTERM before every
#: process left is killed: the whole stop stays within 10 s
STOP_GRACE_SECONDS = 4.0


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _become_subreaper() -> None:
    """Linux: orphans of our children (a code server whose dg dev already exited) become our children, so
    they can still be found and stopped. Elsewhere nothing happens."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children, their children, ...), read from /proc; empty where there is none."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"  # a zombie has stopped already
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except OSError:
        pass


def stop_process_tree(process: subprocess.Popen, grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop ``process`` (the leader of its own process group) and everything it started.

    SIGINT goes to the whole group (dg dev, the webserver, the daemon, the code server), as Ctrl-C in a
    terminal would; whatever is still running after ``grace`` seconds, in the group or below the process
    (a child that left the group), gets SIGKILL.
    """
    deadline = time.monotonic() + grace
    known = descendants(process.pid) | descendants(os.getpid())
    _signal_group(process.pid, signal.SIGINT)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            known |= descendants(os.getpid())
            if not any(_alive(pid) for pid in known):
                break
        else:
            known |= descendants(process.pid)
        time.sleep(0.1)
    _signal_group(process.pid, signal.SIGKILL)
    for pid in known | descendants(os.getpid()):
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    try:
        process.wait(timeout=2)
    except subprocess.TimeoutExpired:
        pass
    for pid in known:  # reap what became ours (subreaper): no zombie left behind
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


#: how often chunkbench ui looks for a benchmark registered (or its record changed) since the UI loaded it
RELOAD_POLL_SECONDS = 2.0
#: the code location's name (workspace.yaml's location_name, [tool.dg.project] code_location_name)
CODE_LOCATION = "chunkbench"


def benchmark_records(benchmarks: Path) -> dict[str, int]:
    """Each registered benchmark under ``benchmarks`` (a folder holding a benchmark record) with its record's
    modification time: what the code location builds its assets from when it loads."""
    records: dict[str, int] = {}
    for path in benchmarks.glob(f"*/{BENCHMARK_FILE}") if benchmarks.is_dir() else []:
        try:
            records[path.parent.name] = path.stat().st_mtime_ns
        except OSError:  # removed while listed
            continue
    return records


def reload_code_location(port: int) -> bool:
    """Ask the UI on 127.0.0.1:``port`` to load the code location again, as the Reload button of its Deployment
    page does (GraphQL ``reloadRepositoryLocation``); False when the UI does not answer yet or the reload failed."""
    query = json.dumps(
        {
            "query": "mutation { reloadRepositoryLocation(repositoryLocationName: %s) "
            "{ __typename } }" % json.dumps(CODE_LOCATION)
        }
    ).encode()
    request = urllib.request.Request(
        f"http://{LOOPBACK}:{port}/graphql", data=query, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError):
        return False
    typename = ((answer.get("data") or {}).get("reloadRepositoryLocation") or {}).get("__typename")
    return typename == "WorkspaceLocationEntry"


def wait_reloading(process: subprocess.Popen, benchmarks: Path, port: int, poll: float = RELOAD_POLL_SECONDS) -> int:
    """Wait for dg dev to exit; meanwhile, when a benchmark is registered under ``benchmarks`` (``chunkbench run``
    of a new one) or its record changes, reload the code location so the UI shows its assets without the user
    pressing Reload (the code location lists the benchmarks only when it loads)."""
    known = benchmark_records(benchmarks)
    while True:
        try:
            return process.wait(timeout=poll)
        except subprocess.TimeoutExpired:
            pass
        found = benchmark_records(benchmarks)
        if found != known and reload_code_location(port):
            new = sorted(set(found) - set(known))
            what = f"new benchmark {', '.join(new)}" if new else "a benchmark's record changed"
            print(f"{what}: the code location was reloaded, the UI shows it now", flush=True)
            known = found


def command_ui(args: argparse.Namespace) -> int:
    from .cli.instance import ensure_dagster_home

    signal.signal(signal.SIGTERM, _interrupt)  # a kill stops dg dev too, as Ctrl-C does
    # Ctrl-C and `kill -INT` stop it also when it was started in the background (`make ui &`), where a shell
    # starts it with SIGINT ignored, as the cluster's launcher does
    signal.signal(signal.SIGINT, _interrupt)
    _become_subreaper()
    dagster_home = ensure_dagster_home()
    benchmarks = settings.results_dir().parent  # every benchmark's folder: the server's index lists them all
    reports_port = args.reports_port if args.reports_port is not None else args.port + 1
    with ReportServer(benchmarks, reports_port) as server:
        env = process_environment(
            DAGSTER_HOME=str(dagster_home), **{REPORTS_URL_ENV: server.url}, **running_virtual_environment()
        )
        print(f"Dagster UI: http://{LOOPBACK}:{args.port}   reports: {server.url}   (Ctrl-C stops both)", flush=True)
        # its own process group: a stop reaches dg dev and everything it starts, and nothing else
        process = subprocess.Popen(
            [dg_executable(), "dev", "--host", LOOPBACK, "--port", str(args.port)],
            cwd=PROJECT_ROOT,
            env=env,
            process_group=0,
        )
        try:
            return wait_reloading(process, benchmarks, args.port)
        except KeyboardInterrupt:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop short
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print("stopping the Dagster UI and the report server...", flush=True)
            stop_process_tree(process)
    # stopped by the user: dg dev and all it ran are gone, and so is the report server. The interpreter's own
    # teardown (the exit handlers of the libraries loaded) takes seconds on a busy machine and has nothing left
    # to do, so the command ends at once.
    print("stopped", flush=True)
    sys.stderr.flush()
    os._exit(0)
