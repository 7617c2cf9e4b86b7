"""The leaderboard and report step says how far it is on big question sets: a line per comparison step, per
report page, and while the technical report's inspector goes through the question rows."""

from __future__ import annotations


from chunkbench_core import progress
from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.reporting import write_reports
from chunkbench_core.stages import compare_latest_runs

from .fixtures import widened_schema


def _lines(tmp_path, monkeypatch, results_templates, rows_for_progress: int) -> list[str]:
    from chunkbench_core.reporting import data, inspector, reports

    for module in (data, inspector, reports):
        monkeypatch.setattr(module, "PROGRESS_ROWS", rows_for_progress)
    # build_results(extended=True) made once per session, copied; the widened schema stays for the whole test
    with widened_schema(monkeypatch):
        results = results_templates.copy("extended", tmp_path / "results")
    seen: list[progress.Progress] = []
    with progress.sink(seen.append):
        compare_latest_runs(results, RankingSettings(rank_metric="recall@k"))
        write_reports(results, tmp_path / "reports")
    return [p.line() for p in seen]


def test_big_question_sets_get_progress_lines_through_comparison_and_reports(tmp_path, monkeypatch, results_templates):
    lines = _lines(
        tmp_path, monkeypatch, results_templates, rows_for_progress=1
    )  # the fixture's 20-odd rows count as big here
    assert any(line.startswith("comparing the runs: 0/5 steps") for line in lines)
    assert any(line.startswith("comparing the runs: 5/5 steps") for line in lines)
    assert any(line.startswith("reports: 0/4 steps") for line in lines)  # said before the rows are read
    assert any(line.startswith("reports: 4/4 steps") for line in lines)
    assert any(line.startswith("report inspector: ") and "question rows" in line for line in lines)


def test_small_question_sets_stay_quiet(tmp_path, monkeypatch, results_templates):
    assert _lines(tmp_path, monkeypatch, results_templates, rows_for_progress=5_000) == []
