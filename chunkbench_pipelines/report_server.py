"""Serve the HTML reports over HTTP on 127.0.0.1, so the links on the asset pages open them.

Browsers refuse ``file://`` links from a web page such as the Dagster UI; ``make ui`` therefore
starts this small server next to ``dg dev`` (port ``REPORTS_PORT``, default ``UI_PORT`` + 1) and
``benchmark_report`` links to it. The base URL the links use is ``CHUNKBENCH_REPORTS_URL``
(``make ui`` sets it for the code location), else ``http://127.0.0.1:3001/``.
"""

from __future__ import annotations

import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

REPORTS_URL_ENV = "CHUNKBENCH_REPORTS_URL"
DEFAULT_UI_PORT = 3000
LOOPBACK = "127.0.0.1"


def reports_url(port: int) -> str:
    return f"http://{LOOPBACK}:{port}/"


DEFAULT_REPORTS_URL = reports_url(DEFAULT_UI_PORT + 1)


def report_link(base_url: str | None, file_name: str, fragment: str = "") -> str:
    """The URL of one report file under ``base_url`` (default: where ``make ui`` serves the reports)."""
    base = (base_url or DEFAULT_REPORTS_URL).rstrip("/") + "/"
    return base + quote(file_name) + (f"#{fragment}" if fragment else "")


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-store")  # a re-materialized report shows at once
        super().end_headers()


class ReportServer:
    """A threaded static file server for one folder, bound to 127.0.0.1 only."""

    def __init__(self, folder: Path, port: int) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"reports port must be between 0 and 65535, got {port}")
        folder.mkdir(parents=True, exist_ok=True)
        handler = functools.partial(_QuietHandler, directory=str(folder))
        try:
            self._server = ThreadingHTTPServer((LOOPBACK, port), handler)
        except OSError as exc:
            raise OSError(f"cannot serve the reports on {LOOPBACK}:{port} ({exc.strerror}); "
                          f"choose another port with REPORTS_PORT") from exc
        self._server.daemon_threads = True
        self.folder = folder
        self.port = self._server.server_address[1]
        self.url = reports_url(self.port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="chunkbench-reports", daemon=True)

    def __enter__(self) -> "ReportServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
