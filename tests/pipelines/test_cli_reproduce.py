"""``chunkbench reproduce chroma`` through the command line, on a one-configuration slice."""

from __future__ import annotations

import csv

import pytest

from chunkbench_pipelines.cli import main


@pytest.mark.slow
def test_reproduce_chroma_prints_ours_published_and_difference_for_the_chosen_config(tmp_path, capsys):
    out = tmp_path / "ours.csv"
    code = main(
        [
            "reproduce",
            "chroma",
            "--configs",
            "fixed_size:250:0",
            "--corpora",
            "state_of_the_union",
            "--limit",
            "12",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "1 corpora, 12 questions, top 5, model all-minilm-l6-v2" in printed and "a slice" in printed
    row = next(line for line in printed.splitlines() if line.startswith("fixed_size"))
    # ours / published (77.1 recall, 3.3 IoU for fixed_size 250/0) / difference
    recall_cell = row.split()[3:8]
    ours, published, diff = float(recall_cell[0]), float(recall_cell[2]), float(recall_cell[4])
    assert published == 77.1 and diff == pytest.approx(ours - published, abs=0.051)
    with out.open(encoding="utf-8", newline="") as handle:
        [written] = list(csv.DictReader(handle))
    assert (written["chunker"], written["size"], written["overlap"]) == ("fixed_size", "250", "0")
    assert float(written["recall"]) == pytest.approx(ours, abs=0.051)


def test_reproduce_rejects_a_bad_configuration_and_pipeline_only_flags(capsys):
    assert main(["reproduce", "chroma", "--configs", "fixed_size:250"]) == 2
    assert "strategy:size:overlap" in capsys.readouterr().err
    assert main(["reproduce", "chroma", "--pipeline", "--limit", "5"]) == 2
    assert "--limit applies only without --pipeline" in capsys.readouterr().err
