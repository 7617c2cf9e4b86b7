"""Runs set aside for good, and the reports of one past run or batch (chunkbench_core.storage.runs)."""

from __future__ import annotations

import json
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest

from chunkbench_core.errors import ChunkbenchError, ConfigError
from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.reporting import run_reports_folder, write_reports
from chunkbench_core.reporting.data import load_report_data
from chunkbench_core.stages import compare_latest_runs
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.runs import (
    RunScope,
    exclude_run,
    include_run,
    list_runs,
    select_batch,
    select_run,
)

from .fixtures import NOW, ResultsTemplates, _write_run, chunk_documents

RANKING = RankingSettings(rank_metric="recall@k")  # the fixture's questions carry no budgeted recall


class _Tables(HTMLParser):
    """The cell texts of every row of the table with a given id."""

    def __init__(self, element_id: str) -> None:
        super().__init__()
        self.element_id, self.depth, self.rows, self.cell = element_id, 0, [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == self.element_id:
            self.depth = 1
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag in ("td", "th"):
            self.cell = ""

    def handle_endtag(self, tag):
        if self.depth and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell.strip())
            self.cell = None
        elif tag == "table":
            self.depth = 0

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def table_rows(html: str, element_id: str) -> list[list[str]]:
    parser = _Tables(element_id)
    parser.feed(html)
    return [r for r in parser.rows if r]


def ranked(html: str) -> dict[tuple[str, str], list[str]]:
    """The managerial report's leaderboard: (strategy, corpus model) -> its cells."""
    rows = table_rows(html, "ranking")
    return {tuple(r[1].split(" × ")): r for r in rows[1:]}


def recall_cell(row: list[str]) -> str:
    return row[3].split("CI")[0].strip()  # the ranking metric's mean (recall here), without its interval


def board_rows(html: str) -> list[dict]:
    start = html.index('id="board-data"')
    start = html.index(">", start) + 1
    return json.loads(html[start : html.index("</script>", start)])["rows"]


@pytest.fixture()
def results(tmp_path: Path, results_templates: ResultsTemplates) -> ResultsDB:
    """The fixture results, compared on recall@k (``compare_latest_runs(build_results(...), RANKING)``): a copy of
    one made once per session."""
    return results_templates.copy("base-compared", tmp_path / "results")


def refresh(db: ResultsDB, folder: Path):
    """What `chunkbench runs exclude/include` and the leaderboard asset do after a change."""
    compare_latest_runs(db, RANKING)
    return write_reports(db, folder)


def test_an_excluded_run_leaves_every_view_survives_a_new_run_and_comes_back_when_included(
    results: ResultsDB, tmp_path: Path
) -> None:
    before = results.leaderboard()
    assert set(before["experiment_run_id"]) == {"r3-latest"}
    n_rows = {t: len(results.query(f"SELECT * FROM {t}")) for t in ("experiment_metrics", "question_results")}

    exclusion = exclude_run(results, "r3-latest", "  the embedding server was overloaded ")
    assert exclusion.reason == "the embedding server was overloaded"
    assert exclude_run(results, "r3-latest", "the embedding server was overloaded").excluded_at == exclusion.excluded_at
    # a newer run of another configuration arrives after the exclusion
    _write_run(
        results, "r5-newer", NOW + timedelta(hours=2), "fixed_size", "e5-small", 0, chunk_documents("fixed_size"), False
    )
    paths = refresh(results, tmp_path / "reports")

    board = results.leaderboard()
    runs = dict(zip(board["strategy"] + "|" + board["corpus_model"], board["experiment_run_id"]))
    # the previous run of each configuration is its latest again; the new run leads its own configuration
    assert runs == {
        "fixed_size|e5-small": "r5-newer",
        "recursive|e5-small": "r1-baseline",
        "recursive|minilm": "r1-baseline",
        "fixed_size|minilm": "r2-neighbors-3",
    }
    assert "r3-latest" not in set(
        results.query("SELECT experiment_run_id FROM leaderboard_by_setting")["experiment_run_id"]
    )
    assert "r3-latest" not in set(results.query("SELECT experiment_run_id FROM comparison")["experiment_run_id"])
    recommendation = results.recommendation()
    assert recommendation is not None and recommendation["configuration"] in {
        "recursive|e5-small",
        "fixed_size|e5-small",
        "recursive|minilm",
    }
    # nothing of the run is deleted
    assert {t: len(results.query(f"SELECT * FROM {t}")) for t in ("experiment_metrics", "question_results")} == {
        "experiment_metrics": n_rows["experiment_metrics"] + 1,
        "question_results": n_rows["question_results"] + 4,
    }

    managerial = paths.managerial.read_text(encoding="utf-8")
    assert recall_cell(ranked(managerial)[("recursive", "e5-small")]) == "1.000"  # r1-baseline's, not r3's 0.667
    technical = paths.technical.read_text(encoding="utf-8")
    assert {r[1] for r in table_rows(technical, "runs")[1:]} == {"r1-baseline", "r2-neighbors-3", "r5-newer"}
    board_html = paths.decision_board.read_text(encoding="utf-8")
    assert "r3-latest" not in {r["run"] for r in board_rows(board_html)}  # out of the heat map, trend, candidates
    section = board_html[board_html.index("id='set-aside'") :]
    assert section.count("<tr class='set-aside' data-run='r3-latest'>") == 5  # every configuration result of it
    assert "<td class='reason'>the embedding server was overloaded</td>" in section
    assert [r.excluded for r in list_runs(results) if r.experiment_run_id == "r3-latest"] == [True] * 5

    assert include_run(results, "r3-latest").excluded is False
    assert include_run(results, "r3-latest").excluded is False  # again: nothing changes
    paths = refresh(results, tmp_path / "reports")
    board = results.leaderboard()
    runs = dict(zip(board["strategy"] + "|" + board["corpus_model"], board["experiment_run_id"]))
    assert runs == {
        "fixed_size|e5-small": "r5-newer",
        "recursive|e5-small": "r3-latest",
        "recursive|minilm": "r3-latest",
        "fixed_size|minilm": "r3-latest",
    }
    managerial = paths.managerial.read_text(encoding="utf-8")
    assert recall_cell(ranked(managerial)[("recursive", "e5-small")]) == "0.667"
    assert "id='set-aside'" not in paths.decision_board.read_text(encoding="utf-8")


def test_excluding_needs_a_known_run_and_a_reason(results: ResultsDB) -> None:
    with pytest.raises(ConfigError, match="no experiment run 'nope'"):
        exclude_run(results, "nope", "bad")
    with pytest.raises(ConfigError, match="a reason is needed"):
        exclude_run(results, "r1-baseline", "  ")
    assert include_run(results, "r1-baseline") is None  # never excluded
    with pytest.raises(ConfigError, match="no experiment run 'nope'"):
        select_run(results, "nope")


def test_the_report_of_an_older_run_shows_its_own_numbers(results: ResultsDB, tmp_path: Path) -> None:
    latest = write_reports(results, tmp_path / "reports")
    comparison_before = results.query("SELECT * FROM comparison ORDER BY configuration")
    recommendation_before = results.recommendation()
    selection = select_run(results, "r1-baseline")
    folder = run_reports_folder(tmp_path / "reports", selection)
    assert folder == tmp_path / "reports" / "runs" / "run-r1-baseline"
    paths = write_reports(results, folder, runs=selection, ranking=RANKING, latest=tmp_path / "reports")

    old = ranked(paths.managerial.read_text(encoding="utf-8"))
    new = ranked(latest.managerial.read_text(encoding="utf-8"))
    # r1-baseline's means, hand-checked against its experiment_metrics rows; the latest shows r3-latest's
    expected_old = {
        ("recursive", "e5-small"): "1.000",
        ("fixed_size", "minilm"): "0.750",
        ("recursive", "minilm"): "0.750",
        ("fixed_size", "e5-small"): "0.500",
    }
    assert {k: recall_cell(v) for k, v in old.items()} == expected_old
    # (fixed_size x minilm of r3-latest also holds the fixture's sweep-variant questions: left out here)
    assert {k: recall_cell(v) for k, v in new.items() if k != ("fixed_size", "minilm")} == {
        ("fixed_size", "e5-small"): "0.750",
        ("recursive", "e5-small"): "0.667",
        ("recursive", "minilm"): "0.500",
    }
    assert old[("recursive", "e5-small")][0] == "1"  # ranked by its own comparison: the best of that run first
    for path in paths.as_dict().values():
        html = path.read_text(encoding="utf-8")
        assert "These reports show experiment run <code>r1-baseline</code>" in html
        assert "2026-10-29 12:00 UTC" in html  # when the run was made
        assert "href='../../benchmark_report.html'" in html  # back to the latest
    assert "latest run of each" not in paths.technical.read_text(encoding="utf-8")
    assert {r["run"] for r in board_rows(paths.decision_board.read_text(encoding="utf-8"))} == {"r1-baseline"}
    assert {r[1] for r in table_rows(paths.technical.read_text(encoding="utf-8"), "runs")[1:]} == {"r1-baseline"}
    # the latest comparison and recommendation were not touched
    assert results.query("SELECT * FROM comparison ORDER BY configuration").equals(comparison_before)
    assert results.recommendation() == recommendation_before


def test_the_report_of_an_excluded_run_says_so(results: ResultsDB) -> None:
    exclude_run(results, "r1-baseline", "wrong question set")
    data = load_report_data(results, runs=select_run(results, "r1-baseline"), ranking=RANKING)
    assert set(data.board["experiment_run_id"]) == {"r1-baseline"} and len(data.board) == 4
    from chunkbench_core.reporting.scope import scope_banner

    assert "Set aside for good" in scope_banner(data) and "wrong question set" in scope_banner(data)


def test_a_batch_report_compares_the_batch_runs_only(results: ResultsDB, tmp_path: Path) -> None:
    chunks = {s: chunk_documents(s) for s in ("fixed_size", "recursive")}
    for i, (strategy, run) in enumerate((("fixed_size", "b-run-1"), ("recursive", "b-run-2"))):
        _write_run(
            results, run, NOW + timedelta(hours=1, minutes=i), strategy, "minilm", 3 * i, chunks[strategy], False
        )
        key = f"{strategy}__minilm__{run}"
        [row] = results.read("experiment_metrics", key)
        provenance = json.loads(row["provenance"])
        row["provenance"] = json.dumps({**provenance, "batch_id": "2026-11-01T13:00:00Z"})
        results.write("experiment_metrics", key, [row])
    with pytest.raises(ConfigError, match="no experiment run belongs to batch 'other'.*2026-11-01T13:00:00Z"):
        select_batch(results, "other")
    selection = select_batch(results, "2026-11-01T13:00:00Z")
    assert selection.run_ids == ("b-run-1", "b-run-2")
    before = results.query("SELECT * FROM comparison ORDER BY configuration")
    data = load_report_data(results, runs=selection, ranking=RANKING)
    assert sorted(data.board["label"]) == ["fixed_size × minilm", "recursive × minilm"]
    assert data.recommendation is not None and data.recommendation["configuration"] in {
        "fixed_size|minilm",
        "recursive|minilm",
    }
    assert set(data.board["class"]) <= {"best", "within_margin", "undecided", "worse"}
    assert data.board["rank"].notna().all()
    assert results.query("SELECT * FROM comparison ORDER BY configuration").equals(before)
    folder = run_reports_folder(tmp_path, selection)
    assert folder.name == "batch-2026-11-01T13-00-00Z"
    html = write_reports(results, folder, runs=selection, ranking=RANKING).managerial.read_text(encoding="utf-8")
    assert "batch <code>2026-11-01T13:00:00Z</code> (2 experiment runs" in html


def test_a_run_scope_never_writes_to_disk(results: ResultsDB) -> None:
    scope = RunScope(results, ["r1-baseline"])
    with pytest.raises(ChunkbenchError, match="read-only"):
        scope.write("experiment_metrics", "x", [])
    with pytest.raises(ChunkbenchError, match="read-only"):
        scope.ensure_database()
    files = sorted(p.name for p in (results.tables_dir / "comparison").iterdir())
    compare_latest_runs(scope, RANKING)
    assert sorted(p.name for p in (results.tables_dir / "comparison").iterdir()) == files
    assert set(scope.query("SELECT experiment_run_id FROM comparison")["experiment_run_id"]) == {"r1-baseline"}


def test_a_run_id_prefix_of_8_or_more_characters_names_one_run(
    tmp_path: Path, results_templates: ResultsTemplates
) -> None:
    """The short id the Dagster UI shows works wherever a run id is accepted; too short or ambiguous is refused."""
    from chunkbench_core.storage.runs import resolve_run_id

    results = results_templates.copy("base", tmp_path / "results")  # build_results, not compared
    full = "8389844e-5b1d-4c7e-9f0a-2d6c1e7b3a90"
    for run, offset in ((full, 3), ("8389844e-77aa-4c7e-9f0a-000000000000", 4), ("1234abcd-0000-4000-8000-1", 5)):
        _write_run(
            results,
            run,
            NOW + timedelta(hours=offset),
            "fixed_size",
            "e5-small",
            0,
            chunk_documents("fixed_size"),
            False,
        )
    assert resolve_run_id(results, full) == full  # the full id
    assert resolve_run_id(results, "r3-latest") == "r3-latest"  # a full id shorter than 8 characters
    assert resolve_run_id(results, "8389844e-5b") == full
    assert resolve_run_id(results, "1234ABCD") == "1234abcd-0000-4000-8000-1"  # as the UI shows it, any case
    with pytest.raises(
        ConfigError,
        match=r"'8389844e' is ambiguous: it starts 2 runs \(8389844e-5b1d-.*, "
        r"8389844e-77aa-.*\); give more characters",
    ):
        resolve_run_id(results, "8389844e")
    with pytest.raises(ConfigError, match="first 8 characters or more"):
        resolve_run_id(results, "1234abc")
    with pytest.raises(ConfigError, match="no experiment run 'ffffffff'"):
        resolve_run_id(results, "ffffffff")
    # the commands' functions take the prefix and work on the full id
    assert select_run(results, "1234abcd").run_ids == ("1234abcd-0000-4000-8000-1",)
    assert exclude_run(results, "8389844e-5b", "checked").experiment_run_id == full
    assert include_run(results, "8389844e-5b").experiment_run_id == full
