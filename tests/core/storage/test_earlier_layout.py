"""The oldest layout's results at the top of a home: found, named in one line, moved whole or not at all."""

from __future__ import annotations

import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.storage.earlier_layout import bring_along, find_earlier_layout


def layout(home, benchmark="sample"):
    folder = home / "benchmarks" / benchmark
    return find_earlier_layout(home, home, folder, folder / "qdrant", benchmark)


def test_a_home_without_them_has_nothing_to_say(tmp_path):
    (tmp_path / "benchmarks" / "sample" / "tables").mkdir(parents=True)
    (tmp_path / "dagster_home").mkdir()
    assert layout(tmp_path) is None


def test_a_benchmark_with_results_of_its_own_takes_nothing_and_another_name_takes_them(tmp_path):
    (tmp_path / "tables" / "experiment_runs").mkdir(parents=True)
    (tmp_path / "tables" / "experiment_runs" / "a.parquet").write_bytes(b"old")
    (tmp_path / "parsed").mkdir()
    mine = tmp_path / "benchmarks" / "sample" / "tables" / "experiment_runs"
    mine.mkdir(parents=True)
    (mine / "b.parquet").write_bytes(b"new")
    found = layout(tmp_path)
    assert "benchmark 'sample' has results of its own" in found.notice() and "\n" not in found.notice()
    with pytest.raises(ConfigError, match="already has"):
        bring_along(found)
    assert (tmp_path / "tables" / "experiment_runs" / "a.parquet").exists() and (tmp_path / "parsed").is_dir()
    moved = bring_along(layout(tmp_path, "earlier"))
    assert [target.name for _, target in moved] == ["tables", "parsed"]
    assert (tmp_path / "benchmarks" / "earlier" / "tables" / "experiment_runs" / "a.parquet").read_bytes() == b"old"
    assert (mine / "b.parquet").read_bytes() == b"new" and layout(tmp_path) is None
