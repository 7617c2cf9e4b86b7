"""One list of metrics: every view, report table, alias and the judge's fields read chunkbench_core/metric_catalog.py,
and no other module holds its own list of metric names."""

import ast
from pathlib import Path

import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.metric_catalog import CATALOG, MetricCatalog, MetricInfo

ROOT = Path(__file__).resolve().parents[2]

#: modules that may write two metric names side by side, and why (none of them is a list the views read)
ALLOWED = {
    # the published Chroma report's CSV columns and the reproduction's tolerances: an outside data set's format
    "chunkbench_core/evaluation/chroma.py": "the Chroma report's own columns",
    # one formula computes these together; each value is bound to its listed metric by name
    "chunkbench_core/evaluation/metrics.py": "recall, precision and IoU of one question computed at once",
    "chunkbench_core/evaluation/ranking.py": "ir-measures' measures computed at once, under the listed names",
}


def _names() -> set[str]:
    return set(CATALOG.names()) | set(CATALOG.run_names()) | set(CATALOG.aliases())


def metric_name_lists(root: Path, packages=("chunkbench_core", "chunkbench_pipelines")) -> list[str]:
    """Every tuple, list, set or dict literal (keys and values) holding two metric names or more, as
    'path:line: names'."""
    names = _names()
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                    elements = list(node.elts)
                elif isinstance(node, ast.Dict):
                    elements = [k for k in node.keys if k is not None] + list(node.values)
                else:
                    continue
                listed = [e.value for e in elements if isinstance(e, ast.Constant) and e.value in names]
                if len(listed) >= 2:
                    found.append(f"{relative}:{node.lineno}: {listed}")
    return found


def test_no_module_holds_its_own_list_of_metric_names():
    offenders = [f for f in metric_name_lists(ROOT) if f.split(":")[0] not in ALLOWED]
    assert offenders == []


def test_the_scan_finds_a_list_and_an_alias_map(tmp_path):
    (tmp_path / "chunkbench_core").mkdir()
    (tmp_path / "chunkbench_core" / "board.py").write_text(
        'COLUMNS = ("recall", "precision", "context_tokens")\nALIAS = {"reciprocal_rank": "mrr"}\n', encoding="utf-8"
    )
    assert metric_name_lists(tmp_path, ("chunkbench_core",)) == [
        "chunkbench_core/board.py:1: ['recall', 'precision']",
        "chunkbench_core/board.py:2: ['reciprocal_rank', 'mrr']",
    ]


def _view(name: str) -> list[str]:
    return [m.run_name for m in CATALOG.shown_in_order(name)]


def test_each_view_shows_the_metrics_the_list_names_for_it():
    from chunkbench_core.evaluation import llm, statistics
    from chunkbench_core.evaluation.breakdowns import evidence_metrics
    from chunkbench_core.reporting import by_group, columns, inspector, managerial
    from chunkbench_core.storage.results_db import LEADERBOARD_COLUMNS, leaderboard_by_setting_sql, leaderboard_sql

    listed = set(CATALOG.run_names())
    assert [c for c in LEADERBOARD_COLUMNS if c in listed] == _view("board")
    assert set(columns.KPI_METRICS) == set(_view("kpis")) and columns.KPI_METRICS[0] == "recall_at_512"
    assert list(managerial.BAR_METRICS) == _view("bars") and list(managerial.TABLE_METRICS) == _view("ranked_table")
    assert [m for m in by_group.SECTION_METRICS if m in listed] == _view("group_section")
    assert list(evidence_metrics()) == [
        m.run_name for m in CATALOG.shown_in("by_group") if m.group in ("evidence", "budget")
    ]
    for sql, view in ((leaderboard_sql(), "leaderboard"), (leaderboard_by_setting_sql(), "by_setting")):
        shown = {m.run_name for m in CATALOG.shown_in(view)}
        assert shown and all(f"{name}" in sql for name in shown)
        assert not [
            m.run_name
            for m in CATALOG.values()
            if m.run_name not in shown
            and any(f"{p}{m.run_name}," in sql or f"{p}{m.run_name}\n" in sql for p in (", l.", " l.", ", "))
        ]
    assert list(llm.JUDGE_SCORES) == ["context_relevance", "answer_similarity", "faithfulness"]
    assert list(inspector.JUDGE_FIELDS) == [*llm.JUDGE_SCORES, "hallucination"]
    assert statistics.JUDGE_METRICS == set(llm.JUDGE_SCORES)
    assert statistics.METRIC_ALIASES == CATALOG.aliases()


def test_aliases_run_names_and_definitions_come_from_the_list():
    from chunkbench_core.evaluation.recommendation import RankingSettings, metric_definition
    from chunkbench_core.evaluation.statistics import canonical_metric

    assert canonical_metric("MRR@k") == canonical_metric("mrr") == "reciprocal_rank"
    assert canonical_metric("success@k") == canonical_metric("hit_rate") == "hit"
    assert canonical_metric("doc_hit_rate") == "doc_hit" and canonical_metric("recall") == "recall"
    assert canonical_metric("no_such_metric") == "no_such_metric"
    assert CATALOG.run_name_of("reciprocal_rank") == CATALOG.run_name_of("mrr@k") == "mrr"
    assert metric_definition("reciprocal_rank") == "1 / the rank of the first chunk holding evidence (MRR)"
    assert metric_definition("recall_at_300").startswith("the share of the evidence text inside the first 300 tokens")
    assert metric_definition("iou_expanded") == CATALOG["iou_expanded"].description
    with pytest.raises(ConfigError, match="lower is better"):
        RankingSettings(rank_metric="hallucination_rate")


def test_a_metric_added_with_its_formula_joins_the_list_the_storage_floor_reads():
    from chunkbench_core.evaluation.metric_registry import METRICS, Metric, per_question
    from chunkbench_core.storage.results_db import SCORED_TABLES

    METRICS.add(
        Metric("always_one", per_question(lambda q: 1.0), "always_one_rate", "Always one", "a toy", aliases=("one@k",))
    )
    try:
        assert CATALOG["always_one"].run_name == "always_one_rate" and CATALOG.canonical("one@k") == "always_one"
        assert ("always_one", "DOUBLE") in SCORED_TABLES["question_results"].metric_columns()
        assert "always_one_rate_ci_high" in dict(SCORED_TABLES["experiment_metrics"].metric_columns())
    finally:
        METRICS.remove("always_one")
    assert "always_one" not in CATALOG and "always_one" not in METRICS


def test_a_listed_metric_without_a_formula_fails_the_registry():
    from chunkbench_core.evaluation.metric_registry import MetricRegistry

    catalog = MetricCatalog()
    catalog.add(MetricInfo("lonely", "lonely", "Lonely", "listed, never bound"))
    with pytest.raises(RuntimeError, match="lonely"):
        MetricRegistry(catalog).check()


def test_a_run_name_is_taken_once():
    catalog = MetricCatalog()
    catalog.add(MetricInfo("reciprocal_rank", "mrr", "MRR", "first"))
    with pytest.raises(ValueError, match="taken"):
        catalog.add(MetricInfo("other", "mrr", "Other", "second"))
