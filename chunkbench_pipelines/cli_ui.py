"""``chunkbench ui``: the Dagster UI (``dg dev``) with the reports served next to it.

What ``make ui`` runs: prepares the Dagster instance (chunkbench's dagster.yaml, the provider
pools), serves ``$CHUNKBENCH_HOME/reports`` on 127.0.0.1 (``--reports-port``, default the UI
port + 1), tells the code location where (``CHUNKBENCH_REPORTS_URL``), and runs ``dg dev`` on
127.0.0.1 until Ctrl-C, which stops both.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

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


def add_parser(sub) -> None:
    ui = sub.add_parser("ui", help="the Dagster UI (dg dev) on 127.0.0.1, with the HTML reports served next to it")
    ui.add_argument("--port", type=int, default=int(os.environ.get("UI_PORT") or DEFAULT_UI_PORT),
                    help="the UI's port (default: UI_PORT or 3000)")
    ui.add_argument("--reports-port", type=int, default=int(os.environ["REPORTS_PORT"]) if os.environ.get("REPORTS_PORT")
                    else None, help="the reports' port (default: REPORTS_PORT or the UI port + 1)")
    ui.set_defaults(func=command_ui)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def command_ui(args: argparse.Namespace) -> int:
    from .cli import ensure_dagster_home

    signal.signal(signal.SIGTERM, _interrupt)  # a kill stops dg dev too, as Ctrl-C does
    dagster_home = ensure_dagster_home()
    reports = settings.results_dir() / "reports"
    reports_port = args.reports_port if args.reports_port is not None else args.port + 1
    with ReportServer(reports, reports_port) as server:
        env = {**os.environ, "DAGSTER_HOME": str(dagster_home), REPORTS_URL_ENV: server.url}
        print(f"Dagster UI: http://{LOOPBACK}:{args.port}   reports: {server.url}   (Ctrl-C stops both)", flush=True)
        process = subprocess.Popen([dg_executable(), "dev", "--host", LOOPBACK, "--port", str(args.port)],
                                   cwd=PROJECT_ROOT, env=env)
        try:
            return process.wait()
        except KeyboardInterrupt:
            # Ctrl-C in a terminal reaches dg dev too (same process group); a signal sent to this
            # process alone is passed on. Either way dg dev shuts its webserver and daemon down.
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            return 0
