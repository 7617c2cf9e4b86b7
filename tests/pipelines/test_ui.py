"""The Dagster UI in headless Chromium: the asset graph and the experiment_results partitions page."""

import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import require_executable

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic", "--virtual-time-budget=15000"]


def chromium(url: str, *extra: str) -> str:
    binary = require_executable("chromium")
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", "--window-size=1400,900", *extra, url],
                                capture_output=True, text=True, timeout=120)
    return result.stdout


def capture(url: str, name: str) -> str:
    ARTIFACTS.mkdir(exist_ok=True)
    chromium(url, f"--screenshot={ARTIFACTS / name}")
    assert (ARTIFACTS / name).stat().st_size > 10_000, f"blank screenshot {name}"
    return chromium(url, "--dump-dom")


@pytest.mark.e2e
def test_asset_graph_and_partitions_pages_render(dagster_dev):
    require_executable("chromium")
    lineage = capture(f"{dagster_dev.url}/asset-groups", "ui-asset-lineage.png")
    for group in ("documents", "chunks", "experiments", "reports"):
        assert group in lineage, f"group {group} not on the lineage page"
    catalog = capture(f"{dagster_dev.url}/assets", "ui-asset-catalog.png")
    for asset in ("source_documents", "parsed_documents", "chunk_collections", "experiment_results",
                  "leaderboard", "benchmark_report"):
        assert asset in catalog, f"{asset} not in the asset catalog"
    partitions = capture(f"{dagster_dev.url}/assets/experiment_results?view=partitions",
                         "ui-experiment-results-partitions.png")
    assert "experiment_results" in partitions
    assert "all-minilm-l6-v2" in partitions and "fixed_size" in partitions
    assert "Materialized" in partitions or "Missing" in partitions
