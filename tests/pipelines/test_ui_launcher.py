"""`make ui` = `chunkbench ui`: dg dev on 127.0.0.1 and the reports served next to it, stopped by Ctrl-C or SIGTERM
within 10 s, every child included."""

import json
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

from chunkbench_pipelines.cli_ui import descendants
from chunkbench_pipelines.report_server import DEFAULT_REPORTS_URL, ReportServer, report_link
from tests.llama_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def test_report_links_are_http_urls_of_the_served_folder():
    assert DEFAULT_REPORTS_URL == "http://127.0.0.1:3001/"
    assert (
        report_link(None, "sample", "benchmark_report.html", "frontier")
        == "http://127.0.0.1:3001/sample/benchmark_report.html#frontier"
    )
    assert (
        report_link("http://127.0.0.1:4001", "mine", "decision board.html")
        == "http://127.0.0.1:4001/mine/decision%20board.html"
    )


def test_report_server_serves_the_reports_folder_on_loopback_only(tmp_path):
    (tmp_path / "sample" / "reports").mkdir(parents=True)
    (tmp_path / "sample" / "reports" / "benchmark_report.html").write_text("<h1>Recommendation</h1>", encoding="utf-8")
    with ReportServer(tmp_path, 0) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.url + "sample/benchmark_report.html", timeout=10) as response:
            assert response.status == 200 and b"Recommendation" in response.read()
            assert response.headers["Cache-Control"] == "no-store"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.url + "../pyproject.toml", timeout=10)
        assert missing.value.code == 404
        address = [
            a for a in socket.getaddrinfo(socket.gethostname(), server.port, socket.AF_INET) if a[4][0] != "127.0.0.1"
        ]
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


def _loaded(ui_port: int) -> bool:
    """Whether the UI has loaded the code location (so dg dev's code server is running)."""
    query = json.dumps({"query": "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"})
    request = urllib.request.Request(
        f"http://127.0.0.1:{ui_port}/graphql", data=query.encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            entries = json.loads(response.read())["data"]["workspaceOrError"]["locationEntries"]
    except (OSError, KeyError, TypeError, ValueError):
        return False
    return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)


def _asset_keys(ui_port: int) -> set[str]:
    """The asset keys the UI lists (``benchmark/asset``); empty while it does not answer."""
    query = json.dumps({"query": "{ assetNodes { assetKey { path } } }"})
    request = urllib.request.Request(
        f"http://127.0.0.1:{ui_port}/graphql", data=query.encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            nodes = json.loads(response.read())["data"]["assetNodes"]
    except (OSError, KeyError, TypeError, ValueError):
        return set()
    return {"/".join(n["assetKey"]["path"]) for n in nodes}


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_chunkbench_ui_runs_dg_dev_and_the_report_server_and_stops_every_child_within_10_s(tmp_path, stop):
    home = tmp_path / "home"
    reports = home / "benchmarks" / "ui" / "reports"  # the reports of the benchmark named below
    reports.mkdir(parents=True)
    (reports / "benchmark_report.html").write_text("<h1>the report</h1>", encoding="utf-8")
    ui_port, reports_port = free_port(), free_port()
    # VIRTUAL_ENV unset, as under make ui (which runs .venv/bin/chunkbench without activating the environment)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DAGSTER_HOME", "OPENAI_API_KEY", "CHUNKBENCH_RESULTS_DIR", "VIRTUAL_ENV")
    }
    env.update(
        CHUNKBENCH_HOME=str(home), CHUNKBENCH_BENCHMARK="ui", UI_PORT=str(ui_port), REPORTS_PORT=str(reports_port)
    )
    log = tmp_path / "ui.log"
    # Ctrl-C: started as a shell starts a background job (`make ui &`), with SIGINT ignored, which it must undo; the
    # test no longer depends on how its own process was started (a suite started in the background passes SIGINT
    # ignored down to every process it starts)
    ignore_sigint = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if stop == "ctrl-c" else None
    with open(log, "w") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("chunkbench")), "ui"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=ignore_sigint,
        )
    children: set[int] = set()
    try:
        deadline = time.time() + 300
        while not _loaded(ui_port):
            assert process.poll() is None, log.read_text()
            assert time.time() < deadline, "dg dev did not load the code location within 300 s:\n" + log.read_text()
            time.sleep(1)
        report = urllib.request.urlopen(f"http://127.0.0.1:{reports_port}/ui/benchmark_report.html", timeout=10).read()
        assert b"the report" in report
        index = urllib.request.urlopen(f"http://127.0.0.1:{reports_port}/", timeout=10).read().decode()
        assert "href='ui/benchmark_report.html'" in index  # the index of every benchmark's reports
        children = descendants(process.pid)  # known before anything below can fail: the finally stops them
        if stop == "ctrl-c":  # once: a benchmark registered while the UI runs appears without a reload by hand
            assert "later/leaderboard" not in _asset_keys(ui_port)
            later = home / "benchmarks" / "later"
            for folder in ("corpus", "questions"):
                (tmp_path / "later" / folder).mkdir(parents=True)
            later.mkdir(parents=True)
            (later / "benchmark.json").write_text(
                json.dumps(  # as chunkbench run registers a new benchmark
                    {
                        "name": "later",
                        "corpus": str(tmp_path / "later" / "corpus"),
                        "questions": str(tmp_path / "later" / "questions"),
                    }
                ),
                encoding="utf-8",
            )
            deadline = time.time() + 60
            while "later/leaderboard" not in _asset_keys(ui_port):
                assert time.time() < deadline, "the new benchmark did not appear within 60 s:\n" + log.read_text()
                time.sleep(1)
            assert "new benchmark later: the code location was reloaded" in log.read_text()
        children |= descendants(process.pid)  # the reloaded code location's server too
        assert len(children) >= 3, children  # dg dev, and what it runs: the webserver, the daemon, the code server
        started = time.monotonic()
        if stop == "ctrl-c":
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in a terminal signals the whole foreground group
        else:
            os.kill(process.pid, signal.SIGTERM)  # `kill PID`: chunkbench ui alone
        assert process.wait(timeout=30) == 0, log.read_text()
        while any(_running(pid) for pid in children) and time.monotonic() - started < 30:
            time.sleep(0.1)
        elapsed = time.monotonic() - started
        assert not [pid for pid in children if _running(pid)], log.read_text()
        print(f"{stop}: {len(children)} processes stopped in {elapsed:.1f} s")
        assert elapsed <= 10, f"stopping took {elapsed:.1f} s"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        for pid in children:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
    text = log.read_text()
    assert not _answers(f"http://127.0.0.1:{ui_port}/server_info") and not _answers(f"http://127.0.0.1:{reports_port}/")
    assert "Use 'dg dev' instead" not in text and "superseded" not in text.lower(), text
    # dg's warning that the active virtual environment is not the project's: it runs from the project's, so none
    # (it was printed twice at every start)
    assert "does not match the virtual environment" not in text, text
    assert f"http://127.0.0.1:{reports_port}/" in text
    assert (home / "dagster_home" / "dagster.yaml").exists()  # chunkbench's instance, not a temporary one
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(home / "dagster_home")) as instance:  # Deployment > Concurrency lists them
        assert instance.event_log_storage.get_concurrency_keys() == {"openai", "openai_compatible"}


def _running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting to be reaped has stopped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
