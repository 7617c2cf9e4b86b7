"""compare_latest_runs compares each configuration's board row with that row's own questions, on real DuckDB."""

from datetime import datetime, timedelta

import pytest

from chunkbench_core.stages import compare_latest_runs
from chunkbench_core.storage.results_db import ResultsDB

T0 = datetime(2026, 11, 30, 12, 0, 0)


def write_run(
    db: ResultsDB,
    strategy: str,
    run: str,
    created: datetime,
    recall: float,
    variant: str = "",
    default_key: str = "default",
) -> None:
    key = f"{strategy}__m__{variant or default_key}__{run}"
    db.write(
        "experiment_metrics",
        key,
        [
            {
                "experiment_run_id": run,
                "strategy": strategy,
                "corpus_model": "m",
                "n_questions": 4,
                "recall": recall,
                "variant": variant,
                "created_at": created,
            }
        ],
    )
    db.write(
        "question_results",
        key,
        [
            {
                "experiment_run_id": run,
                "strategy": strategy,
                "corpus_model": "m",
                "question_set": "s",
                "question_id": f"q{i}",
                "recall": recall,
                "recall_at_512": recall,
                "error": None,
                "created_at": created,
            }
            for i in range(4)
        ],
    )


@pytest.mark.parametrize("default_key", ["a-default", "zz-default"])  # its file read before or after the variant's
def test_a_sweep_variant_of_the_same_run_does_not_leak_into_the_comparison(tmp_path, default_key):
    db = ResultsDB(tmp_path)
    write_run(db, "fixed_size", "run-1", T0, 0.5, default_key=default_key)
    # the same Dagster run also scored a sweep variant, later, with other numbers
    write_run(db, "fixed_size", "run-1", T0 + timedelta(seconds=5), 1.0, variant="size128_overlap0")
    write_run(db, "recursive", "run-2", T0, 0.25)
    ranking = compare_latest_runs(db)
    means = {c.configuration: (c.mean, c.n_questions) for c in ranking.comparison.configurations}
    assert means == {"fixed_size|m": (0.5, 4), "recursive|m": (0.25, 4)}
