"""Report fixtures: two ResultsDBs (base schema, widened schema) and their reports, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.reporting import ReportPaths, write_reports
from chunkbench_core.evaluation.recommendation import RankingSettings
from chunkbench_core.stages import compare_latest_runs
from chunkbench_core.storage.results_db import ResultsDB

from .fixtures import ResultsTemplates, widened_schema


#: the session fixtures built from the fixture results: the tests using one run on one xdist worker (--dist
#: loadgroup), which builds each once, instead of every worker building them all
SHARED_RESULTS = ("results_templates", "base_results", "extended_results", "any_reports")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        uses = set(SHARED_RESULTS) & set(getattr(item, "fixturenames", ()))
        if uses and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group("report_fixture_results"))


@pytest.fixture(scope="session")
def results_templates(tmp_path_factory: pytest.TempPathFactory) -> ResultsTemplates:
    """Fixture results folders built once per session (per worker), copied for each test that writes to them."""
    return ResultsTemplates(tmp_path_factory.mktemp("templates"))


@pytest.fixture(scope="session")
def base_results(tmp_path_factory: pytest.TempPathFactory, results_templates: ResultsTemplates) -> ResultsDB:
    return results_templates.copy("base", tmp_path_factory.mktemp("base") / "results")


@pytest.fixture(scope="session")
def extended_results(tmp_path_factory: pytest.TempPathFactory, results_templates: ResultsTemplates) -> ResultsDB:
    with pytest.MonkeyPatch.context() as mp, widened_schema(mp):
        results = results_templates.copy("extended", tmp_path_factory.mktemp("extended") / "results")
        # ranked, classed and recommended by the pipeline's own comparison (the fixture's questions carry no
        # budgeted recall, so it ranks by recall@k)
        compare_latest_runs(results, RankingSettings(rank_metric="recall@k"))
        return results


@pytest.fixture(scope="session")
def base_reports(base_results: ResultsDB) -> ReportPaths:
    return write_reports(base_results, base_results.root.parent / "reports")


@pytest.fixture(scope="session")
def extended_reports(extended_results: ResultsDB) -> ReportPaths:
    return write_reports(extended_results, extended_results.root.parent / "reports")


@pytest.fixture(scope="session", params=["base", "extended"])
def any_reports(request: pytest.FixtureRequest) -> ReportPaths:
    return request.getfixturevalue(f"{request.param}_reports")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")
