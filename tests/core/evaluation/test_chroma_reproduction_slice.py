"""benchmarks/chroma_reproduction.py on a small slice of the Chroma data (the full run is `make bench`)."""

from __future__ import annotations

import csv
import importlib.util
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool

ROOT = Path(__file__).resolve().parents[3]
CHROMA_DATA = Path(os.environ.get("CHUNKBENCH_CHROMA_DATA") or ROOT.parent / "shared" / "data" / "chroma-general-evaluation")


def load_benchmark():
    spec = importlib.util.spec_from_file_location("chroma_reproduction", ROOT / "benchmarks" / "chroma_reproduction.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_reproduction_slice_runs_the_pipeline_code_and_writes_the_published_columns(tmp_path):
    require_tool((CHROMA_DATA / "questions_df.csv").is_file(), f"Chroma evaluation data at {CHROMA_DATA}")
    bench = load_benchmark()
    out = tmp_path / "ours.csv"
    lines: list[str] = []
    results = bench.run(CHROMA_DATA, out=out, limit=30, corpora=["chatlogs"],
                        configs=[("fixed_size", 250, 0), ("recursive", 200, 0), ("no_such_chunker", 100, 0)],
                        work=tmp_path, print_fn=lines.append)
    assert [r.chunker for r in results] == ["fixed_size", "recursive"]
    assert any("no_such_chunker" in line and "missing" in line for line in lines)
    with out.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    with (CHROMA_DATA / "published_minilm.csv").open(encoding="utf-8", newline="") as handle:
        assert list(rows[0]) == csv.DictReader(handle).fieldnames
    assert [(r["chunker"], r["size"], r["overlap"]) for r in rows] == [("fixed_size", "250", "0"), ("recursive", "200", "0")]
    for r in results:
        s = r.scores
        assert r.n_questions == 30 and r.error is None
        assert 50 < s["recall"] <= 100  # 5 of ~30-40 chunks of one small corpus
        assert 0 < s["iou"] <= s["precision"] <= 100 and s["iou"] <= s["recall"]
        assert 0 < s["precision_omega"] <= 100


def test_missing_data_is_a_skip_for_make_bench_and_an_error_when_asked(tmp_path, monkeypatch, capsys):
    bench = load_benchmark()
    monkeypatch.setenv("CHUNKBENCH_CHROMA_DATA", str(tmp_path / "nowhere"))
    assert bench.main([]) == 0 and "skipped" in capsys.readouterr().out
    assert bench.main(["--data", str(tmp_path / "nowhere")]) == 2
