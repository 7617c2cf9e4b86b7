"""Serve the HTML reports over HTTP on 127.0.0.1, so the links on the asset pages open them.

Browsers refuse ``file://`` links from a web page such as the Dagster UI; ``make ui`` therefore
starts this small server next to ``dg dev`` (port ``REPORTS_PORT``, default ``UI_PORT`` + 1) and
``benchmark_report`` links to it. The base URL the links use is ``CHUNKBENCH_REPORTS_URL``
(``make ui`` sets it for the code location), else ``http://127.0.0.1:3001/``.

What it answers, and nothing else:

- ``/``: the index page, every benchmark with links to its reports;
- ``/<benchmark>/<file>``: a regular file of ``<benchmarks>/<benchmark>/reports/`` (or of a folder below
  it, such as ``runs/run-<id>/``). The path is resolved first and must stay inside that reports folder:
  a link that leads outside, a directory (no listings), a name starting with a dot and any ``..`` get
  404. Only GET and HEAD.
- Only requests whose ``Host`` names this server (``127.0.0.1:<port>`` or ``localhost:<port>``) are
  answered; any other name gets 421, so a web page cannot reach the reports through a name of its own
  that resolves to 127.0.0.1 (DNS rebinding).

A client that goes away before its answer is sent (a closed tab) is nothing to report: no traceback.
"""

from __future__ import annotations

import mimetypes
import os
import stat
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from chunkbench_core.settings import VARIABLE_OF

REPORTS_URL_ENV = VARIABLE_OF["reports_url"].name  # the settings' name: the code location reads it from there
DEFAULT_UI_PORT = 3000
LOOPBACK = "127.0.0.1"
#: a benchmark's reports inside its folder
REPORTS_FOLDER = "reports"
#: errors that mean the client hung up: expected, never worth a traceback
DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)
CHUNK = 256 * 1024


def reports_url(port: int) -> str:
    return f"http://{LOOPBACK}:{port}/"


DEFAULT_REPORTS_URL = reports_url(DEFAULT_UI_PORT + 1)


def report_link(base_url: str | None, benchmark: str, path: str, fragment: str = "") -> str:
    """The URL of ``path`` (relative to the benchmark's reports folder) on the report server at ``base_url``
    (default: where ``make ui`` serves the reports)."""
    base = (base_url or DEFAULT_REPORTS_URL).rstrip("/") + "/"
    return base + quote(f"{benchmark}/{path}") + (f"#{fragment}" if fragment else "")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class _ReportHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    root: str  # the benchmarks folder, resolved
    allowed_hosts: frozenset[str]

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001 - socketserver's signature
        error = sys.exc_info()[1]
        if isinstance(error, DISCONNECTS):
            return  # the client went away (a closed tab, a cancelled download)
        print(f"report server: could not answer {client_address[0]}: {error!r}", file=sys.stderr, flush=True)


class _Handler(BaseHTTPRequestHandler):
    server: _ReportHTTPServer
    server_version = "chunkbench-reports"
    sys_version = ""

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's signature
        pass

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's naming
        self._answer(with_body=True)

    def do_HEAD(self) -> None:  # noqa: N802  (the name http.server calls)
        self._answer(with_body=False)

    # --- answers -----------------------------------------------------------------------------------------
    def _send(self, status: int, content_type: str, length: int, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.send_header("Cache-Control", "no-store")  # a re-materialized report shows at once
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def _text(self, status: int, text: str, with_body: bool, content_type: str = "text/plain; charset=utf-8") -> None:
        body = text.encode("utf-8")
        self._send(status, content_type, len(body))
        if with_body:
            self.wfile.write(body)

    def _host_allowed(self) -> bool:
        host = (self.headers.get("Host") or "").strip().lower()
        return host in self.server.allowed_hosts

    def _answer(self, with_body: bool) -> None:
        try:
            self._route(with_body)
        except DISCONNECTS:
            self.close_connection = True

    def _route(self, with_body: bool) -> None:
        if not self._host_allowed():
            self._text(
                HTTPStatus.MISDIRECTED_REQUEST,
                "This server answers only for " + " or ".join(sorted(self.server.allowed_hosts)) + ".\n",
                with_body,
            )
            return
        path = urlsplit(self.path).path
        if path in ("/", "/index.html"):
            from chunkbench_core.reporting.index import find_reports, render_index

            self._text(
                HTTPStatus.OK, render_index(find_reports(Path(self.server.root))), with_body, "text/html; charset=utf-8"
            )
            return
        opened = self._open(path)
        if opened is None:
            self._text(HTTPStatus.NOT_FOUND, "Not found. The index of every benchmark's reports is at /.\n", with_body)
            return
        fd, size, name = opened
        with os.fdopen(fd, "rb") as handle:
            content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
            if content_type.startswith("text/") or content_type in ("application/javascript", "application/json"):
                content_type += "; charset=utf-8"
            self._send(HTTPStatus.OK, content_type, size)
            if with_body:
                while chunk := handle.read(CHUNK):
                    self.wfile.write(chunk)

    def _open(self, url_path: str) -> tuple[int, int, str] | None:
        """(open file descriptor, size, name) of the regular file ``url_path`` names, or None.

        ``/<benchmark>/<a>/<b>`` is ``<root>/<benchmark>/reports/<a>/<b>``: every segment is a plain name
        (no empty, ``.``, ``..`` or dot-name segment, no backslash or NUL); the path is resolved (every link
        followed) and must stay inside the benchmark's reports folder, itself inside the root; the file is
        opened without following a last link and must be a regular file.
        """
        try:
            decoded = unquote(url_path, errors="strict")
        except UnicodeDecodeError:
            return None
        segments = decoded.split("/")[1:]
        if len(segments) < 2 or any(not s or s.startswith(".") or "\\" in s or "\x00" in s for s in segments):
            return None
        root = self.server.root
        reports = os.path.realpath(os.path.join(root, segments[0], REPORTS_FOLDER))
        if not _inside(reports, root):
            return None  # the benchmark's reports folder is itself a link to somewhere else
        target = os.path.realpath(os.path.join(reports, *segments[1:]))
        if not _inside(target, reports) or target == reports:
            return None
        if any(part.startswith(".") for part in Path(target).relative_to(reports).parts):
            return None  # a link that leads to a hidden file
        try:
            fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            return None
        return fd, info.st_size, target


class ReportServer:
    """A threaded server for every benchmark's reports under ``benchmarks`` (``<results>/benchmarks/``),
    bound to 127.0.0.1 only."""

    def __init__(self, benchmarks: Path, port: int) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"reports port must be between 0 and 65535, got {port}")
        benchmarks.mkdir(parents=True, exist_ok=True)
        try:
            self._server = _ReportHTTPServer((LOOPBACK, port), _Handler)
        except OSError as exc:
            raise OSError(
                f"cannot serve the reports on {LOOPBACK}:{port} ({exc.strerror}); choose another port with REPORTS_PORT"
            ) from exc
        self.folder = benchmarks
        self.port = self._server.server_address[1]
        self._server.root = os.path.realpath(benchmarks)
        self._server.allowed_hosts = frozenset({f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"})
        self.url = reports_url(self.port)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="chunkbench-reports", daemon=True
        )

    def __enter__(self) -> "ReportServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
