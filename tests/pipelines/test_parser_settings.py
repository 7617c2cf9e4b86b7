"""parsed_documents reads the benchmark's parser.toml: the heuristics reach the parse, its record and the cache key
(a change to a PDF setting re-parses no markdown file; a Q&A marker reaches Word files)."""

from __future__ import annotations

import pytest
from dagster import DagsterInstance
from docx import Document

from tests.pipelines.support.partitions import tides_graph

from .support.tides import tides_benchmark


def parse_corpus(tides, instance):
    result = tides_graph(tides, "parsing").materialize(
        ["source_documents", "parsed_documents"], instance=instance, resources=tides.resources
    )
    assert result.success
    [materialization] = [
        m for m in result.get_asset_materialization_events() if m.asset_key.path[-1] == "parsed_documents"
    ]
    metadata = materialization.step_materialization_data.materialization.metadata
    return metadata["parsed"].value, metadata["reused_unchanged"].value, metadata["parse_options"].value


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_the_benchmarks_parser_settings_reach_the_parse_and_re_parse_only_what_they_affect(tmp_path):
    tides = tides_benchmark(tmp_path, benchmark="parsing")
    word = Document()
    for text in ("Vraag: Where is the office?", "Antwoord: In Utrecht."):
        word.add_paragraph(text)
    word.save(tides.corpus / "faq.docx")
    instance = DagsterInstance.ephemeral()
    parsed, reused, options = parse_corpus(tides, instance)
    assert (parsed, reused, options["heuristics_changed"]) == (2, 0, {})
    settings = tides.results / "parser.toml"
    settings.write_text("[pdf]\nheading_size_ratio = 1.3\n", encoding="utf-8")
    parsed, reused, options = parse_corpus(tides, instance)
    assert (parsed, reused) == (0, 2)  # a PDF setting: neither the markdown nor the Word file is parsed again
    assert options["heuristics_changed"] == {"pdf": {"heading_size_ratio": 1.3}}
    settings.write_text("[qa]\nquestion_markers = ['vraag']\nanswer_markers = ['antwoord']\n", encoding="utf-8")
    parsed, reused, options = parse_corpus(tides, instance)
    assert (parsed, reused) == (1, 1)  # the Word file only
    from chunkbench_core.storage.corpus import ParsedStore

    [faq] = [d for d in ParsedStore(tides.results / "parsed", "").load_manifest_documents() if d.document == "faq.docx"]
    assert [u.content_type for u in faq.units] == ["qa_pair"]
