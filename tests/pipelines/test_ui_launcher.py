"""`make ui` = `chunkbench ui`: dg dev on 127.0.0.1 and the reports served next to it, stopped by Ctrl-C."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from chunkbench_pipelines.report_server import DEFAULT_REPORTS_URL, ReportServer, report_link
from tests.llama_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_report_links_are_http_urls_of_the_served_folder():
    assert DEFAULT_REPORTS_URL == "http://127.0.0.1:3001/"
    assert report_link(None, "benchmark_report.html", "frontier") == \
        "http://127.0.0.1:3001/benchmark_report.html#frontier"
    assert report_link("http://127.0.0.1:4001", "decision board.html") == "http://127.0.0.1:4001/decision%20board.html"


def test_report_server_serves_the_reports_folder_on_loopback_only(tmp_path):
    (tmp_path / "benchmark_report.html").write_text("<h1>Recommendation</h1>", encoding="utf-8")
    with ReportServer(tmp_path, 0) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.url + "benchmark_report.html", timeout=10) as response:
            assert response.status == 200 and b"Recommendation" in response.read()
            assert response.headers["Cache-Control"] == "no-store"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.url + "../pyproject.toml", timeout=10)
        assert missing.value.code == 404
        address = [a for a in socket.getaddrinfo(socket.gethostname(), server.port, socket.AF_INET)
                   if a[4][0] != "127.0.0.1"]
        for *_, (host, port) in address:  # not reachable on another interface
            with pytest.raises(OSError):
                socket.create_connection((host, port), timeout=2).close()
    with pytest.raises(OSError):
        urllib.request.urlopen(server.url, timeout=2)  # stopped


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_chunkbench_ui_runs_dg_dev_and_the_report_server_and_stops_on_ctrl_c(tmp_path):
    home = tmp_path / "home"
    reports = home / "benchmarks" / "ui" / "reports"  # the reports of the benchmark named below
    reports.mkdir(parents=True)
    (reports / "benchmark_report.html").write_text("<h1>the report</h1>", encoding="utf-8")
    ui_port, reports_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "OPENAI_API_KEY", "CHUNKBENCH_RESULTS_DIR")}
    env.update(CHUNKBENCH_HOME=str(home), CHUNKBENCH_BENCHMARK="ui", UI_PORT=str(ui_port),
               REPORTS_PORT=str(reports_port))
    log = tmp_path / "ui.log"
    with open(log, "w") as out:
        process = subprocess.Popen([str(Path(sys.executable).with_name("chunkbench")), "ui"], cwd=ROOT, env=env,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 240
        while not _answers(f"http://127.0.0.1:{ui_port}/server_info"):
            assert process.poll() is None, log.read_text()
            assert time.time() < deadline, "dg dev did not answer within 240 s:\n" + log.read_text()
            time.sleep(1)
        report = urllib.request.urlopen(f"http://127.0.0.1:{reports_port}/benchmark_report.html", timeout=10).read()
        assert b"the report" in report
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in a terminal signals the whole foreground group
        assert process.wait(timeout=120) == 0, log.read_text()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    text = log.read_text()
    assert not _answers(f"http://127.0.0.1:{ui_port}/server_info") and not _answers(f"http://127.0.0.1:{reports_port}/")
    assert "Use 'dg dev' instead" not in text and "superseded" not in text.lower(), text
    assert f"http://127.0.0.1:{reports_port}/" in text
    assert (home / "dagster_home" / "dagster.yaml").exists()  # chunkbench's instance, not a temporary one
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home / "dagster_home")) as instance:  # Deployment > Concurrency lists them
        assert instance.event_log_storage.get_concurrency_keys() == {"openai", "openai_compatible"}
