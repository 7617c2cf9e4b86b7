"""How configurations are named: a variant built with chunker options reads as those options, not as its key."""

from __future__ import annotations

from chunkbench_core.labels import configuration_label, variant_text

HEADER = {"chunker_options": {"document_context": True}}


def test_an_options_variant_reads_as_its_options():
    assert (
        configuration_label("page", "minilm", HEADER, "optsc0b5868d", "hybrid")
        == "page × minilm × hybrid [document_context=true]"
    )
    both = {"chunker_options": {"table_chunks": "group", "document_context": False}}
    assert (
        variant_text("size256_overlap32_opts0123abcd", both)
        == "size256_overlap32, document_context=false, table_chunks=group"
    )


def test_a_variant_without_recorded_options_keeps_its_key():
    assert variant_text("optsc0b5868d", {}) == "optsc0b5868d"
    assert variant_text("size256_overlap32", HEADER) == "size256_overlap32"
    assert configuration_label("page", "minilm", None, "") == "page × minilm"


def test_the_by_setting_view_spells_out_a_variants_options(tmp_path):
    import json
    from datetime import datetime

    from chunkbench_core.storage.results_db import ResultsDB

    results = ResultsDB(tmp_path / "results")
    stamp = datetime(2026, 1, 1, 12, 0, 0)
    for variant, provenance in (("", {"chunker_options": {}}), ("optsc0b5868d", HEADER)):
        results.write(
            "experiment_metrics",
            f"page__minilm__{variant or 'default'}",
            [
                {
                    "experiment_run_id": f"run-{variant or 'default'}",
                    "strategy": "page",
                    "corpus_model": "minilm",
                    "variant": variant,
                    "n_questions": 3,
                    "recall": 0.5,
                    "neighbor_prev": 0,
                    "neighbor_next": 0,
                    "provenance": json.dumps(provenance),
                    "created_at": stamp,
                }
            ],
        )
    rows = results.query("SELECT variant, options FROM leaderboard_by_setting ORDER BY variant")
    assert rows.values.tolist() == [["", ""], ["optsc0b5868d", '{"document_context":true}']]
