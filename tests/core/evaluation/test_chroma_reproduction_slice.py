"""The Chroma reproduction (chunkbench_core.evaluation.chroma) on small slices of the shipped data set.

The full run is ``chunkbench reproduce chroma`` / ``make bench``.
"""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from chunkbench_core.datasets import CHROMA_DIR, CHROMA_PUBLISHED_MINILM
from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation import chroma

ROOT = Path(__file__).resolve().parents[3]


def load_benchmark():
    spec = importlib.util.spec_from_file_location("chroma_reproduction", ROOT / "benchmarks" / "chroma_reproduction.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_reproduction_slice_runs_the_pipeline_code_and_writes_the_published_columns(tmp_path):
    out = tmp_path / "ours.csv"
    lines: list[str] = []
    reproduction = chroma.run(
        CHROMA_DIR,
        out=out,
        limit=30,
        corpora=["chatlogs"],
        configs=[("fixed_size", 250, 0), ("recursive", 200, 0), ("no_such_chunker", 100, 0)],
        work=tmp_path,
        print_fn=lines.append,
    )
    results = reproduction.results
    assert [r.chunker for r in results] == ["fixed_size", "recursive"]
    assert not reproduction.full and not reproduction.targets_met  # a slice is never checked against the table
    assert any("no_such_chunker" in line and "missing" in line for line in lines)
    assert not any(line.startswith("targets") for line in lines)
    with out.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    with CHROMA_PUBLISHED_MINILM.open(encoding="utf-8", newline="") as handle:
        assert list(rows[0]) == csv.DictReader(handle).fieldnames
    assert [(r["chunker"], r["size"], r["overlap"]) for r in rows] == [
        ("fixed_size", "250", "0"),
        ("recursive", "200", "0"),
    ]
    for r in results:
        s = r.scores
        assert r.n_questions == 30 and r.error is None
        assert 50 < s["recall"] <= 100  # 5 of ~30-40 chunks of one small corpus
        assert 0 < s["iou"] <= s["precision"] <= 100 and s["iou"] <= s["recall"]
        assert 0 < s["precision_omega"] <= 100


def test_the_benchmark_script_is_a_thin_caller_of_the_core_module():
    bench = load_benchmark()
    assert bench.run is chroma.run and bench.run_config is chroma.run_config
    assert bench.DEFAULT_DATA == CHROMA_DIR


def test_target_check_compares_fixed_size_and_recursive_rows_only():
    published = chroma.published_table(CHROMA_DIR)
    assert published[("fixed_size", 250, 0)]["recall"] == 77.1
    close = chroma.ConfigResult(
        "fixed_size", 250, 0, scores={"recall": 79.0, "precision": 3.3, "precision_omega": 16.0, "iou": 3.9}
    )
    far = chroma.ConfigResult(
        "recursive", 200, 0, scores={"recall": 70.0, "precision": 6.5, "precision_omega": 31.2, "iou": 6.5}
    )
    untargeted = chroma.ConfigResult(
        "cluster_semantic", 250, 0, scores={"recall": 10.0, "precision": 1.0, "precision_omega": 1.0, "iou": 1.0}
    )
    as_recursive = chroma.ConfigResult(
        "recursive_chroma", 250, 0, scores={"recall": 78.0, "precision": 5.4, "precision_omega": 26.7, "iou": 7.0}
    )
    misses, diffs = chroma.target_misses([close, far, untargeted, as_recursive], published)
    assert misses == ["recursive 200/0 recall -5.70", "recursive_chroma 250/0 iou +1.60"]
    assert len(diffs) == 3 and diffs[0] == "fixed_size 250/0: recall +1.90, IoU +0.60"


@pytest.mark.parametrize("text", ["fixed_size:250", "fixed_size:x:0", ":250:0", "fixed_size:250:250", "a:0:0"])
def test_malformed_configurations_name_the_item(text):
    with pytest.raises(ConfigError, match="strategy:size:overlap") as info:
        chroma.parse_configs(f"recursive:200:0,{text}")
    assert repr(text) in str(info.value)


def test_a_folder_without_the_data_set_is_an_error_naming_what_is_missing(tmp_path):
    with pytest.raises(ConfigError, match="questions_df.csv"):
        chroma.run(tmp_path, print_fn=lambda line: None)
    with pytest.raises(ConfigError, match="unknown corpus: nope"):
        chroma.load_corpora(CHROMA_DIR, ["chatlogs", "nope"])
    bench = load_benchmark()
    assert bench.main(["--data", str(tmp_path / "nowhere")]) == 2
