"""The report server answers only with the reports: real HTTP requests to it on 127.0.0.1.

Each case of a hostile request: a link inside the reports that leads outside, directory listings, dotfiles,
``..`` in every spelling, a foreign ``Host`` (DNS rebinding), and clients that hang up early.
"""

from __future__ import annotations

import http.client
import os
import socket
import struct
import time
from pathlib import Path
from typing import Iterator

import pytest

from chunkbench_pipelines.report_server import ReportServer, report_link

SECRET = "root:x:0:0:not a report"


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``benchmarks/`` with two benchmarks' reports, a run's reports, and traps around them: made once for the
    module (its 32 MB file too), since no test changes it."""
    tmp_path = tmp_path_factory.mktemp("report-server")
    benchmarks = tmp_path / "home" / "benchmarks"
    for name in ("sample", "mine"):
        reports = benchmarks / name / "reports"
        reports.mkdir(parents=True)
        for file in ("benchmark_report.html", "technical_report.html", "decision_board.html"):
            (reports / file).write_text(f"<h1>{name} {file}</h1>", encoding="utf-8")
    run = benchmarks / "sample" / "reports" / "runs" / "run-abc"
    run.mkdir(parents=True)
    (run / "benchmark_report.html").write_text("<h1>run abc</h1>", encoding="utf-8")
    reports = benchmarks / "sample" / "reports"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text(SECRET, encoding="utf-8")
    (reports / "passwd.html").symlink_to(outside / "passwd")  # a link to a file outside
    (reports / "etc").symlink_to(outside, target_is_directory=True)  # a link to a folder outside
    (reports / "same.html").symlink_to(reports / "benchmark_report.html")  # a link that stays inside
    (reports / ".benchmark_report.html.123.tmp").write_text("half-written", encoding="utf-8")
    (reports / ".secret").mkdir()
    (reports / ".secret" / "x.html").write_text("hidden", encoding="utf-8")
    (reports / "hidden.html").symlink_to(reports / ".secret" / "x.html")  # a link to a dotfile
    (benchmarks / "sample" / "chunkbench.duckdb").write_text("results, not a report", encoding="utf-8")
    (reports / "big.bin").write_bytes(os.urandom(32 * 1024 * 1024))
    linked = tmp_path / "elsewhere-reports"
    linked.mkdir()
    (linked / "benchmark_report.html").write_text(SECRET, encoding="utf-8")
    (benchmarks / "linked").mkdir()
    (benchmarks / "linked" / "reports").symlink_to(linked, target_is_directory=True)  # a benchmark linked out
    return benchmarks


@pytest.fixture()
def server(layout: Path) -> Iterator[ReportServer]:
    with ReportServer(layout, 0) as running:
        yield running


def get(server: ReportServer, path: str, host: str | None = None, method: str = "GET") -> tuple[int, bytes, dict]:
    """A raw request (the path is sent exactly as given, no client-side normalisation)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read(), dict(response.getheaders())
    finally:
        connection.close()


def ok(server: ReportServer, path: str) -> tuple[int, bytes, dict]:
    return get(server, path, host=f"127.0.0.1:{server.port}")


def test_serves_each_benchmarks_reports_and_an_index(server: ReportServer) -> None:
    status, body, headers = ok(server, "/sample/benchmark_report.html")
    assert status == 200 and body == b"<h1>sample benchmark_report.html</h1>"
    assert headers["Content-Type"] == "text/html; charset=utf-8" and headers["Cache-Control"] == "no-store"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert ok(server, "/mine/decision_board.html")[1] == b"<h1>mine decision_board.html</h1>"
    assert ok(server, "/sample/runs/run-abc/benchmark_report.html")[1] == b"<h1>run abc</h1>"
    assert ok(server, "/sample/same.html")[0] == 200  # a link that stays inside the reports folder
    assert get(server, "/sample/benchmark_report.html", host=f"localhost:{server.port}")[0] == 200
    status, body, _ = get(server, "/sample/benchmark_report.html", host=f"127.0.0.1:{server.port}", method="HEAD")
    assert status == 200 and body == b""
    status, index, _ = ok(server, "/")
    text = index.decode()
    assert status == 200 and "chunkbench reports" in text and "Directory listing" not in text
    for href in (
        "sample/benchmark_report.html",
        "sample/technical_report.html",
        "sample/decision_board.html",
        "mine/benchmark_report.html",
        "sample/runs/run-abc/benchmark_report.html",
    ):
        assert f"href='{href}'" in text, href
    assert "linked" not in text and "passwd" not in text and "secret" not in text
    assert (
        report_link(server.url, "sample", "runs/run-abc/benchmark_report.html", "frontier")
        == f"{server.url}sample/runs/run-abc/benchmark_report.html#frontier"
    )


@pytest.mark.parametrize(
    "path",
    [
        "/sample/passwd.html",  # a link to a file outside
        "/sample/etc/passwd",  # through a link to a folder outside
        "/linked/benchmark_report.html",  # a benchmark whose reports folder is a link outside
        "/sample/hidden.html",  # a link to a hidden file
        "/sample/.benchmark_report.html.123.tmp",  # a dotfile (a report being written)
        "/sample/.secret/x.html",
        "/sample/%2esecret/x.html",
        "/sample/../chunkbench.duckdb",  # the results next to the reports
        "/sample/%2e%2e/chunkbench.duckdb",
        "/sample/%2E%2E%2Fchunkbench.duckdb",
        "/sample/..%2fchunkbench.duckdb",
        "/sample/..%5cchunkbench.duckdb",
        "/sample/runs/../../chunkbench.duckdb",
        "/..%2f..%2fetc/passwd",
        "//etc/passwd",
        "/sample//benchmark_report.html",
        "/sample/benchmark_report.html%00.png",
        "/sample/%ff.html",
        "/sample/",
        "/sample",
        "/sample/runs/",
        "/sample/runs",  # folders: no listings
        "/missing/benchmark_report.html",
    ],
)
def test_refuses_anything_but_a_report_file(server: ReportServer, path: str) -> None:
    status, body, _ = ok(server, path)
    assert status == 404, (path, status)
    assert SECRET.encode() not in body and b"Directory listing" not in body and b"run-abc" not in body


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",
        "127.0.0.1.nip.io:{port}",
        "127.0.0.1",
        "localhost",
        "127.0.0.1:1",
        "[::1]:{port}",
        "",
        None,
    ],
)
def test_answers_only_for_its_own_address(server: ReportServer, host: str | None) -> None:
    status, body, _ = get(
        server, "/sample/benchmark_report.html", host=None if host is None else host.format(port=server.port)
    )
    assert status == 421 and b"sample" not in body
    assert get(server, "/", host=None if host is None else host.format(port=server.port))[0] == 421


def test_only_get_and_head(server: ReportServer) -> None:
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        assert get(server, "/sample/benchmark_report.html", host=f"127.0.0.1:{server.port}", method=method)[0] == 501


def test_clients_that_hang_up_early_leave_no_traceback(server: ReportServer, capfd: pytest.CaptureFixture) -> None:
    request = f"GET /sample/big.bin HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
    for _ in range(5):  # a closed tab mid-download: reset the connection while the server writes
        client = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.sendall(request)
        client.recv(1024)
        client.close()
    for _ in range(3):  # a client that connects and says nothing, or half a request, then leaves
        client = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        client.sendall(b"GET /sample/bench")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
    time.sleep(1.0)
    assert ok(server, "/sample/benchmark_report.html")[0] == 200  # still serving
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "BrokenPipe" not in captured.err and "Reset" not in captured.err, (
        captured.err
    )
    assert captured.err == ""


@pytest.fixture(scope="module")
def browser():
    from tests.conftest import require_executable, require_tool

    binary = require_executable("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_tool(False, "the Python package playwright (pip install playwright==1.65.2; no browser download)")
        raise
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=binary, args=["--no-sandbox", "--disable-gpu"], headless=True)
        yield instance
        instance.close()


def test_the_index_page_in_a_browser_links_each_benchmarks_reports(tmp_path: Path, browser) -> None:
    """Real reports of two benchmarks (and one chosen run), served; the index opens them at 1,280 px."""
    from chunkbench_core.reporting import write_reports
    from tests.core.reporting.fixtures import build_results

    benchmarks = tmp_path / "benchmarks"
    for name in ("sample", "my-documents"):
        results = build_results(benchmarks / name / "results")
        write_reports(results, benchmarks / name / "reports")
    (benchmarks / "sample" / "reports" / "runs" / "run-r1-baseline").mkdir(parents=True)
    for file in ("benchmark_report.html", "technical_report.html", "decision_board.html"):
        (benchmarks / "sample" / "reports" / "runs" / "run-r1-baseline" / file).write_text(
            (benchmarks / "sample" / "reports" / file).read_text(encoding="utf-8"), encoding="utf-8"
        )
    artifacts = Path(__file__).resolve().parents[2] / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    with ReportServer(benchmarks, 0) as server:
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        try:
            page.goto(server.url)
            assert page.title() == "chunkbench reports"
            assert page.locator("section.benchmark h2").all_inner_texts() == ["my-documents", "sample"]
            assert (
                page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
            )
            page.locator("#benchmark-sample details summary").click()
            page.screenshot(path=str(artifacts / "reports-index.png"), full_page=True)
            page.locator("#benchmark-my-documents a", has_text="Managerial report").click()
            page.wait_for_load_state()
            assert page.url == f"{server.url}my-documents/benchmark_report.html"
            assert page.locator("#recommendation").inner_text().startswith("Recommended:")
            page.go_back()
            page.locator("#benchmark-sample details summary").click()  # the chosen runs' reports fold out
            page.locator("#benchmark-sample .runs a", has_text="Decision board").click()
            page.wait_for_selector("html[data-board=ready]")  # the page scripts run when served, too
            assert page.url == f"{server.url}sample/runs/run-r1-baseline/decision_board.html"
        finally:
            context.close()
