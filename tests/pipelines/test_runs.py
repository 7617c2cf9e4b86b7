"""Past runs through the pipeline: each run records its batch; `chunkbench report --run/--batch`, the
benchmark_report asset's run config, and `chunkbench runs list/exclude/include`, on real runs."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from dagster import DagsterInstance

from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.runs import exclude_run, include_run
from chunkbench_pipelines.definitions import build_resources
from tests.pipelines.support.cli import chunkbench
from tests.pipelines.support.environment import environment_settings, run_strategy
from tests.pipelines.support.partitions import environment_graph

from .test_end_to_end import BAKERY, BAKERY_REF, MODEL, VOLCANO, VOLCANO_REF, clean, workspace  # noqa: F401  (the end-to-end fixtures, used by name)

ROOT = Path(__file__).resolve().parents[2]
HARBOUR = "# Harbour\n\nThe harbour of Orsa was rebuilt in 1923 with granite from the northern quarry.\n"


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return chunkbench(args, env, cwd=ROOT)  # in this process (tests/pipelines/support/cli.py)


def precision_cells(html: str) -> list[str]:
    """The precision column of the managerial report's leaderboard (one configuration here)."""
    from tests.core.reporting.test_runs import table_rows

    rows = table_rows(html, "ranking")
    column = rows[0].index("Precision")
    return [r[column].split("CI")[0].strip() for r in rows[1:]]


@pytest.mark.e2e
@pytest.mark.slow
def test_a_past_run_keeps_its_report_and_a_run_can_be_set_aside(workspace):  # noqa: F811  (the fixture imported above, by name)
    clean(workspace)
    home = workspace["home"]
    instance = DagsterInstance.ephemeral()
    run_strategy(instance, MODEL)
    # a third document: the newer run of the same configuration retrieves it too, so its precision falls
    (workspace["corpus"] / "harbour.md").write_text(HARBOUR, encoding="utf-8")
    run_strategy(instance, MODEL)

    results = ResultsDB(home)
    runs = results.query("SELECT experiment_run_id, provenance FROM experiment_metrics ORDER BY created_at")
    assert len(runs) == 2
    old, new = runs["experiment_run_id"].tolist()
    batches = [json.loads(p)["batch_id"] for p in runs["provenance"]]
    tags = {r.run_id: r.tags["chunkbench/batch"] for r in instance.get_runs()}
    assert batches == [tags[old], tags[new]]  # each experiment records its chunkbench run's batch
    refs = (len(VOLCANO_REF) + len(BAKERY_REF)) / 2
    old_precision = f"{refs / (len(VOLCANO) + len(BAKERY)):.3f}"
    new_precision = f"{refs / (len(VOLCANO) + len(BAKERY) + len(HARBOUR)):.3f}"
    assert old_precision != new_precision
    latest = home / "reports" / "benchmark_report.html"
    assert precision_cells(latest.read_text(encoding="utf-8")) == [new_precision]

    # the CLI: the report of the older run, after the newer one exists
    done = cli("report", "--run", old)
    assert done.returncode == 0, done.stderr
    folder = home / "reports" / "runs" / f"run-{old}"
    assert str(folder / "benchmark_report.html") in done.stdout
    html = (folder / "benchmark_report.html").read_text(encoding="utf-8")
    assert precision_cells(html) == [old_precision]
    assert f"These reports show experiment run <code>{old}</code>" in html
    assert "href='../../benchmark_report.html'" in html
    assert precision_cells(latest.read_text(encoding="utf-8")) == [new_precision]  # the latest is left alone
    done = cli("report", "--run", old[:8])  # the short id the Dagster UI shows
    assert done.returncode == 0 and str(folder / "benchmark_report.html") in done.stdout, done.stderr
    done = cli("report", "--batch", batches[0])
    assert done.returncode == 0, done.stderr
    batch_folder = home / "reports" / "runs" / ("batch-" + batches[0].replace(":", "-"))
    assert precision_cells((batch_folder / "benchmark_report.html").read_text(encoding="utf-8")) == [old_precision]
    done = cli("report", "--run", "no-such-run")
    assert done.returncode == 2 and "no experiment run 'no-such-run'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

    # the asset: the same report from run config
    (folder / "benchmark_report.html").unlink()
    graph = environment_graph()
    result = graph.materialize(
        ["benchmark_report"],
        resources=build_resources(environment_settings()),
        instance=instance,
        run_config={"ops": {"benchmark_report": {"config": {"experiment_run_id": old}}}},
    )
    assert result.success
    metadata = result.asset_materializations_for_node(graph.op("benchmark_report"))[0].metadata
    assert metadata["shows"].value == f"experiment run {old}"
    assert metadata["url"].value.endswith(f"runs/run-{old}/benchmark_report.html")
    assert precision_cells((folder / "benchmark_report.html").read_text(encoding="utf-8")) == [old_precision]

    # a run made before experiments recorded their batch is found by its Dagster run's tag (asset, batch config)
    # (the run's row is stored under its results key in experiment_runs, its means in run_scores)
    key = next(p.stem for p in (home / "tables" / "experiment_runs").glob(f"*{old}.parquet"))
    [row] = results.read("experiment_metrics", key)
    row["provenance"] = json.dumps({k: v for k, v in json.loads(row["provenance"]).items() if k != "batch_id"})
    results.write("experiment_metrics", key, [row])
    result = graph.materialize(
        ["benchmark_report"],
        resources=build_resources(environment_settings()),
        instance=instance,
        run_config={"ops": {"benchmark_report": {"config": {"batch": batches[0]}}}},
    )
    assert result.success
    assert (
        result.asset_materializations_for_node(graph.op("benchmark_report"))[0].metadata["shows"].value
        == f"batch {batches[0]} (1 experiment run)"
    )
    assert precision_cells((batch_folder / "benchmark_report.html").read_text(encoding="utf-8")) == [old_precision]
    result = graph.materialize(
        ["benchmark_report"],
        resources=build_resources(environment_settings()),
        instance=instance,
        raise_on_error=False,
        run_config={"ops": {"benchmark_report": {"config": {"experiment_run_id": "no-such-run"}}}},
    )
    assert not result.success

    # the leaderboard asset leaves an excluded run out too (the CLI below also redoes the comparison itself)
    exclude_run(results, new, "checked by the asset")
    assert graph.materialize(
        ["leaderboard", "benchmark_report"], resources=build_resources(environment_settings()), instance=instance
    ).success
    assert results.query("SELECT experiment_run_id FROM comparison")["experiment_run_id"].tolist() == [old]
    assert precision_cells(latest.read_text(encoding="utf-8")) == [old_precision]
    include_run(results, new)

    # set the newer run aside: the older one is the latest again, in every view, until it is included
    done = cli("runs", "exclude", new, "--reason", "harbour.md was added by mistake")
    assert done.returncode == 0, done.stderr
    assert results.leaderboard()["experiment_run_id"].tolist() == [old]
    assert results.query("SELECT experiment_run_id FROM comparison")["experiment_run_id"].tolist() == [old]
    assert precision_cells(latest.read_text(encoding="utf-8")) == [old_precision]
    board = (home / "reports" / "decision_board.html").read_text(encoding="utf-8")
    assert f"<tr class='set-aside' data-run='{new}'>" in board and "harbour.md was added by mistake" in board
    listed = cli("runs", "list")
    assert listed.returncode == 0
    [line] = [x for x in listed.stdout.splitlines() if x.startswith(new)]
    assert line.endswith("yes: harbour.md was added by mistake")
    done = cli("runs", "include", new)
    assert done.returncode == 0, done.stderr
    assert results.leaderboard()["experiment_run_id"].tolist() == [new]
    assert precision_cells(latest.read_text(encoding="utf-8")) == [new_precision]
    done = cli("runs", "exclude", new)
    assert done.returncode == 2 and "exclude needs --reason" in done.stderr
