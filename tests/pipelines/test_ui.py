"""The Dagster UI in headless Chromium: the asset graph, the partitions page, and the report links clicked
from the benchmark_report asset page (opened over HTTP from the reports server)."""

from pathlib import Path

import pytest

from tests.conftest import require_executable, require_tool

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
#: Chromium's flags here (playwright starts it headless)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def capture(browser, url: str, name: str, shows) -> str:
    """The page at ``url`` in the module's Chromium, screenshotted (1400 x 900) once ``shows(html)`` holds for its
    DOM or after 30 s, and its DOM then (the test asserts on it). One browser for the module: a Chromium started
    for each page (twice, for the screenshot and for the DOM, each waiting out a fixed 15 s of the page's virtual
    time) cost about 4 s of CPU per page."""
    import time

    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.goto(url, wait_until="networkidle")
        deadline = time.monotonic() + 30
        html = page.content()
        while not shows(html) and time.monotonic() < deadline:
            page.wait_for_timeout(250)
            html = page.content()
        page.screenshot(path=str(ARTIFACTS / name))
    finally:
        context.close()
    assert (ARTIFACTS / name).stat().st_size > 10_000, f"blank screenshot {name}"
    return html


BENCHMARK = "backfill"  # CHUNKBENCH_BENCHMARK in conftest.start_server: its assets are under this prefix


@pytest.mark.e2e
@pytest.mark.browser
def test_asset_graph_and_partitions_pages_render(dagster_dev, browser):
    on_graph = ("parsed_documents", "chunk_collections", "experiment_results", "leaderboard")
    lineage = capture(
        browser,
        f"{dagster_dev.url}/asset-groups",
        "ui-asset-lineage.png",
        lambda html: all(a in html for a in on_graph),
    )
    for asset in on_graph:
        assert asset in lineage, f"{asset} not on the lineage page"  # one benchmark: Dagster draws no group box
    in_catalog = (
        BENCHMARK,
        "source_documents",
        "parsed_documents",
        "chunk_collections",
        "experiment_results",
        "leaderboard",
        "benchmark_report",
    )
    catalog = capture(
        browser, f"{dagster_dev.url}/assets", "ui-asset-catalog.png", lambda html: all(a in html for a in in_catalog)
    )
    assert BENCHMARK in catalog, "the benchmark (key prefix) is not in the asset catalog"
    for asset in in_catalog[1:]:
        assert asset in catalog, f"{asset} not in the asset catalog"
    on_partitions = ("experiment_results", "all-minilm-l6-v2", "fixed_size")
    partitions = capture(
        browser,
        f"{dagster_dev.url}/assets/{BENCHMARK}/experiment_results?view=partitions",
        "ui-experiment-results-partitions.png",
        lambda html: all(a in html for a in on_partitions) and ("Materialized" in html or "Missing" in html),
    )
    assert "experiment_results" in partitions
    assert "all-minilm-l6-v2" in partitions and "fixed_size" in partitions
    assert "Materialized" in partitions or "Missing" in partitions


# --- the asset pages in a driven browser (playwright on Debian's chromium): links are clicked ----------------
@pytest.fixture(scope="module")
def browser():
    binary = require_executable("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_tool(False, "the Python package playwright (pip install playwright==1.65.2; no browser download)")
        raise
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=binary, args=FLAGS, headless=True)
        yield instance
        instance.close()


MODEL = "all-minilm-l6-v2"


#: the partitions the UI tests show
PARTITIONS = [f"{MODEL}|fixed_size", f"{MODEL}|recursive"]


def _backfilled(server) -> set[str]:
    """The partitions a backfill on this server has already built (a successful run of each), with the default
    settings: the shared server's backfill test builds every strategy with MiniLM before these tests run."""
    return {
        tag["value"]
        for run in server.runs()
        if run["status"] == "SUCCESS" and any(t["key"] == "dagster/backfill" for t in run["tags"])
        for tag in run["tags"]
        if tag["key"] == "dagster/partition"
    }


def _benchmark_once(server) -> None:
    """Parse and two partitions (unless a backfill built them already), then leaderboard and reports, launched
    through the UI's own API."""
    if getattr(server, "benchmarked", False):
        return
    if not set(PARTITIONS) <= _backfilled(server):
        assert server.wait_run(server.launch_run(f"{BENCHMARK}__parse_documents")) == "SUCCESS"
        backfill = server.launch_backfill(
            [f"{BENCHMARK}/chunk_collections", f"{BENCHMARK}/experiment_results"], PARTITIONS
        )
        assert server.wait_backfill(backfill).startswith("COMPLETED")
    assert server.wait_run(server.launch_run(f"{BENCHMARK}__refresh_reports")) == "SUCCESS"
    server.benchmarked = True


def _asset_page(browser, server, asset: str, shot: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.goto(f"{server.url}/assets/{BENCHMARK}/{asset}", wait_until="networkidle")
    page.wait_for_timeout(2000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
    return context, page


@pytest.mark.e2e
@pytest.mark.slow
def test_report_links_on_the_asset_page_open_the_reports_over_http(dagster_dev, browser):
    _benchmark_once(dagster_dev)
    reports_url = dagster_dev.reports.url + "backfill/"  # the benchmark's reports on the report server
    context, page = _asset_page(browser, dagster_dev, "benchmark_report", "ui-benchmark-report-asset.png")
    try:
        link = page.locator(f"a[href='{reports_url}benchmark_report.html']").first
        link.wait_for(timeout=60_000)
        with context.expect_page() as opened:
            link.click()
        report = opened.value
        report.wait_for_load_state()
        assert report.url == f"{reports_url}benchmark_report.html"
        assert report.locator("#recommendation").inner_text().startswith("Recommended:")
        report.screenshot(path=str(ARTIFACTS / "ui-opened-report.png"))

        plots = page.locator(f"a[href='{reports_url}benchmark_report.html#frontier']").first
        with context.expect_page() as opened:
            plots.click()
        plot_page = opened.value
        plot_page.wait_for_load_state()
        assert plot_page.locator("#frontier").is_visible()  # the plot, scrolled to
        for name in ("technical_report.html", "decision_board.html"):
            assert page.locator(f"a[href='{reports_url}{name}']").count() >= 1
    finally:
        context.close()


def _leaderboard_entries(server) -> dict:
    data = server.query(
        """{ assetNodes(assetKeys: [{path: ["%s", "leaderboard"]}]) { description
        assetMaterializations(limit: 1) { metadataEntries { label __typename
          ... on TextMetadataEntry { text } ... on MarkdownMetadataEntry { mdStr }
          ... on TableMetadataEntry { table { records schema { columns { name } } } } } } } }"""
        % BENCHMARK
    )
    [node] = data["assetNodes"]
    [materialization] = node["assetMaterializations"]
    return {"description": node["description"], **{e["label"]: e for e in materialization["metadataEntries"]}}


@pytest.mark.e2e
@pytest.mark.slow
def test_the_leaderboard_page_shows_the_recommended_configuration(dagster_dev, browser):
    import json

    _benchmark_once(dagster_dev)
    entries = _leaderboard_entries(dagster_dev)
    assert entries["description"].startswith(f"Benchmark {BENCHMARK}: ")  # the page names its benchmark
    assert entries["benchmark"]["text"] == BENCHMARK
    recommendation = entries["recommendation"]["text"]
    # the table: rank, configuration, the ranking metric, verdict and cost; the reason a text entry of its own
    table = entries["leaderboard"]["table"]
    assert [c["name"] for c in table["schema"]["columns"]] == [
        "rank",
        "configuration",
        "n",
        "recall_at_512",
        "verdict",
        "tokens",
        "frontier",
    ]
    records = [json.loads(r) for r in table["records"]]
    # this run's two partitions are on the board (the shared server's backfill test may have built others too),
    # and the recommendation names the one row marked recommended
    assert {f"fixed_size × {MODEL}", f"recursive × {MODEL}"} <= {r["configuration"] for r in records}
    assert [r["configuration"] for r in records if r["verdict"] == "recommended"] == [recommendation]
    reason = entries["reason"]
    assert reason["__typename"] == "TextMetadataEntry" and len(reason["text"]) > 80
    labels = list(entries)
    assert labels.index("stability") == labels.index("reason") + 1  # the stability right beside the reason
    context, page = _asset_page(browser, dagster_dev, "leaderboard", "ui-leaderboard-asset.png")
    try:
        page.get_by_text(recommendation).first.wait_for(timeout=30_000)
        for word in ("configuration", "verdict", "recommended", "tokens"):
            page.get_by_text(word, exact=True).first.wait_for(timeout=30_000)
        page.get_by_text(reason["text"][-60:]).first.wait_for(timeout=30_000)  # the end of the reason: not cut
        page.get_by_text(f"Benchmark {BENCHMARK}").first.wait_for(timeout=30_000)
    finally:
        context.close()


@pytest.mark.e2e
@pytest.mark.slow
def test_the_sweep_job_runs_from_the_launchpad(dagster_dev):
    """The neighbor sweep launched with run config as the launchpad launches it; its levels land side by side."""
    import duckdb

    _benchmark_once(dagster_dev)
    config = {
        "ops": {f"{BENCHMARK}__sweep_neighbors": {"config": {"levels": ["0:0", "1:1"], "corpus_models": [MODEL]}}}
    }
    run_id = dagster_dev.launch_run(f"{BENCHMARK}__neighbor_sweep", run_config=config)
    assert dagster_dev.wait_run(run_id) == "SUCCESS"
    state = dagster_dev.home / "benchmarks" / BENCHMARK
    con = duckdb.connect(str(state / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(state)])
    try:
        rows = con.execute(
            "SELECT neighbor_prev, neighbor_next FROM leaderboard_by_setting "
            "WHERE strategy = 'fixed_size' AND starts_with(experiment_run_id, ?) ORDER BY 1",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    assert rows == [(0, 0), (1, 1)]
