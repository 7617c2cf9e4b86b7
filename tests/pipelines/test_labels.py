"""Honest labels in every report: contextual_retrieval without an LLM is named for what it did, no
"nan" / "None" / "1 questions" in the generated pages (the whole graph, on a one-question corpus)."""

import re

import pytest
from dagster import DagsterInstance

from chunkbench_pipelines.runner import run_everything
from tests.pipelines.support.environment import environment_settings

from .support.tides import MODEL, tides_benchmark, use_environment

DOC = "# Tides\n\n## Harbour\n\nThe harbour of Quelm floods twice a day when the spring tide rises above four metres.\n"


@pytest.mark.e2e
def test_reports_label_heading_context_and_print_no_placeholders(tmp_path, monkeypatch):
    tides = tides_benchmark(tmp_path, DOC, "labels")  # its reports: home/benchmarks/labels/reports
    use_environment(monkeypatch, tides, "labels")
    home = tides.home
    assert (
        run_everything(
            environment_settings(),
            strategies=["contextual_retrieval", "fixed_size"],
            corpus_models=[MODEL],
            instance=DagsterInstance.ephemeral(),
        )
        == 0
    )
    folder = home / "benchmarks" / "labels" / "reports"
    reports = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.html")}
    assert set(reports) >= {"benchmark_report.html", "technical_report.html", "decision_board.html"}
    managerial = reports["benchmark_report.html"]
    assert "contextual_retrieval (heading context)" in managerial
    assert "heading path to each chunk" in managerial and "LLM-written" not in managerial
    assert "contextual_retrieval x" not in managerial  # the tier list and the reason name it by its label too
    for name in ("technical_report.html", "decision_board.html"):
        assert "contextual_retrieval (heading context)" in reports[name], name
    for name, html in reports.items():
        visible = re.sub(r"<script.*?</script>|<style.*?</style>|<[^>]+>", " ", html, flags=re.S)
        for placeholder in (r"\bnan\b", r"\bNone\b", r"\bNaT\b", r"\b1 (questions|documents|configurations|runs)\b"):
            assert not re.search(placeholder, visible), (name, placeholder)
    # the same label in the DuckDB views, the CLI table, the recommendation's reason and the Dagster metadata
    from chunkbench_core.reporting.leaderboard import format_table
    from chunkbench_core.storage.results_db import ResultsDB

    db = ResultsDB(home / "benchmarks" / "labels")
    board = db.leaderboard()
    labels = dict(zip(board["strategy"], board["strategy_label"]))
    assert labels == {"contextual_retrieval": "contextual_retrieval (heading context)", "fixed_size": "fixed_size"}
    assert set(db.query("SELECT strategy_label FROM comparison")["strategy_label"]) == set(labels.values())
    assert "contextual_retrieval (heading context)" in format_table(board, db.recommendation())
    reason = db.recommendation()["reason"]
    assert "contextual_retrieval x" not in reason  # named by its label wherever it appears
    from chunkbench_pipelines.assets.reports import leaderboard_table

    from chunkbench_core.labels import configuration_label

    table = leaderboard_table(board)
    assert {r.data["configuration"] for r in table.value.records} == {
        configuration_label(label, model) for label, model in zip(board["strategy_label"], board["corpus_model"])
    }
    assert "contextual_retrieval (heading context) × " in "".join(r.data["configuration"] for r in table.value.records)
    # the leaderboard asset's "recommendation" entry names the row its table marks recommended, by the same label,
    # and a recommended contextual_retrieval by its label (the recommendation view itself has no label column)
    from chunkbench_pipelines.assets.reports import recommendation_metadata

    recommendation = db.recommendation()
    shown = recommendation_metadata(recommendation, board)["recommendation"]
    assert [r.data["configuration"] for r in table.value.records if r.data["verdict"] == "recommended"] == [shown]
    contextual = {**recommendation, "strategy": "contextual_retrieval", "corpus_model": MODEL}
    assert recommendation_metadata(contextual, board)["recommendation"] == configuration_label(
        "contextual_retrieval (heading context)", MODEL
    )
    # "might be as good" names the board's undecided rows by the same labels, in the board's order (the reports'
    # list); one question decides nothing here, so every row is made undecided for the check
    undecided = board.assign(**{"class": "undecided"})
    assert recommendation_metadata(recommendation, undecided)["might_be_as_good"] == ", ".join(
        r.data["configuration"] for r in table.value.records
    )
    assert "might_be_as_good" not in recommendation_metadata(recommendation, board.assign(**{"class": "worse"}))
