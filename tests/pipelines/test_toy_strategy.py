"""A new strategy is one module: a toy registered here alone shows up in the partitions, the command line, the
run config schema, the provenance of the collection it builds and the reports, with nothing else changed.

Everything but the toy is real: the Dagster definitions, the run config, the embedder, Qdrant, DuckDB and the
report writer.
"""

import json

import pytest
from dagster import DagsterInstance
from pydantic import Field

from chunkbench_core.chunking import (
    STRATEGIES,
    Capabilities,
    Chunker,
    StrategyOptions,
    register_strategy,
    sentence_spans,
)
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_pipelines.partitions import partition_key

from .support.partitions import tides_graph
from .support.tides import MODEL, tides_benchmark

TOY = "toy_sentences"
DESCRIPTION = "cuts the text after every few sentences, whatever they say"
DOCUMENT = (
    "# Tides\n\nThe harbour of Quelm floods twice a day. The spring tide rises above four metres. "
    "Boats stay in the outer basin. The gates close at dusk. Fishermen land their catch at dawn.\n"
)


class ToyOptions(StrategyOptions):
    stride: int = Field(2, ge=1, le=10, description="sentences per toy chunk")


class ToySentenceChunker(Chunker):
    """``stride`` sentences per chunk (the sentences of the shipped sentence splitter)."""

    size_driven = False

    def spans(self, text, tokens):
        sentences = sentence_spans(text)
        stride = self.options.stride
        return [
            (group[0][0], group[-1][1])
            for group in (sentences[i : i + stride] for i in range(0, len(sentences), stride))
        ]


@pytest.fixture()
def toy():
    """The toy registered the way a strategy module registers itself (the decorator), then removed again."""
    register_strategy(TOY, options=ToyOptions, description=DESCRIPTION, capabilities=Capabilities(sweepable=True))(
        ToySentenceChunker
    )
    yield STRATEGIES[TOY]
    STRATEGIES.remove(TOY)


def test_the_toy_is_in_the_partitions_the_run_config_and_the_command_line(toy, capsys, tmp_path):
    graph = tides_graph(tides_benchmark(tmp_path, benchmark="toy"), "toy")
    chunks = graph.asset("chunk_collections")
    assert f"{MODEL}|{TOY}" in chunks.partitions_def.get_partition_keys()
    assert f"{MODEL}|{TOY}" in graph.asset("experiment_results").partitions_def.get_partition_keys()
    for asset in ("chunk_collections", "experiment_results"):
        fields = graph.asset(asset).op.config_schema.config_type.fields
        assert "stride" in fields and "sentences per toy chunk" in fields["stride"].description
        assert TOY in fields["stride"].description and "default 2" in fields["stride"].description

    from chunkbench_pipelines.cli import build_parser

    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--help"])
    help_text = capsys.readouterr().out
    assert "--stride STRIDE" in help_text and TOY in help_text and "sentences per toy chunk" in help_text
    args = parser.parse_args(["chunk", "doc.md", "--strategy", TOY])
    assert args.strategy == TOY
    from chunkbench_pipelines.cli.run_settings import run_settings

    given = run_settings(parser.parse_args(["run", "--strategy", TOY, "--stride", "3"]))
    assert given["chunking"] == {"stride": 3}
    with pytest.raises(ValueError, match="stride"):
        run_settings(parser.parse_args(["run", "--stride", "11"]))  # over the declared bound

    from chunkbench_core.sweeps import check_strategies  # the chunk-size sweep reads the registry

    assert TOY in check_strategies([], "sweepable")

    assert TOY in STRATEGIES.with_capability("sweepable")


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_the_toy_builds_scores_and_reports_like_any_strategy(toy, tmp_path):
    tides = tides_benchmark(tmp_path, document=DOCUMENT, benchmark="toy")
    graph = tides_graph(tides, "toy")
    instance = DagsterInstance.ephemeral()
    assert graph.materialize(
        ["source_documents", "parsed_documents"], instance=instance, resources=tides.resources
    ).success
    config = {"config": {"stride": 3}}
    result = graph.materialize(
        ["chunk_collections", "experiment_results"],
        instance=instance,
        partition_key=partition_key(TOY, MODEL),
        resources=tides.resources,
        run_config={"ops": {"chunk_collections": config, "experiment_results": config}},
    )
    assert result.success
    assert graph.materialize(["leaderboard", "benchmark_report"], instance=instance, resources=tides.resources).success

    results = ResultsDB(tides.results)
    chunks = results.query("SELECT text FROM chunks WHERE strategy = ? ORDER BY chunk_index", [TOY])["text"].tolist()
    # the heading and two sentences, then three sentences: stride 3 from the run config reached the chunker
    assert chunks[1] == "Boats stay in the outer basin. The gates close at dusk. Fishermen land their catch at dawn."
    assert len(chunks) == 2 and chunks[0].startswith("# Tides")
    [built] = results.query("SELECT options, variant FROM collections WHERE strategy = ?", [TOY]).to_dict("records")
    assert json.loads(built["options"]) == {"stride": 3} and built["variant"].startswith("opts")  # its provenance
    assert TOY not in results.leaderboard()["strategy"].tolist()  # a variant (an option set) is not ranked

    default = graph.materialize(
        ["chunk_collections", "experiment_results"],
        instance=instance,
        partition_key=partition_key(TOY, MODEL),
        resources=tides.resources,
    )
    assert default.success
    assert graph.materialize(["leaderboard", "benchmark_report"], instance=instance, resources=tides.resources).success
    assert ResultsDB(tides.results).leaderboard()["strategy"].tolist() == [TOY]
    managerial = (tides.results / "reports" / "benchmark_report.html").read_text(encoding="utf-8")
    technical = (tides.results / "reports" / "technical_report.html").read_text(encoding="utf-8")
    assert f"This strategy {DESCRIPTION}." in managerial
    assert TOY in technical
