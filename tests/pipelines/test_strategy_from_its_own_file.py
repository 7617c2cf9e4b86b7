"""A strategy is one file: a module written to a package of its own (outside chunkbench, on a temporary path) is
discovered the way the shipped strategies are (every module of the package imported, each registering itself),
listed by ``chunkbench strategies``, estimated from the shape it registered, built and scored by the core run and
shown on the leaderboard and in the reports (the
managerial one says what it does in its registered words), with nothing else told about it.

Everything but the strategy is real: MiniLM, the embedded Qdrant, the results store (DuckDB over Parquet), the
comparison, the command line and the report writer.
"""

import json
from dataclasses import replace
import sys
import textwrap

import pytest

from chunkbench_core.chunking import STRATEGIES, discover_strategies
from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.estimate.predict import StrategyShape, strategy_shape
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.reporting import write_reports
from chunkbench_core.stages.collections import BuildRequest, build_collection
from chunkbench_core.stages.comparison import compare_latest_runs
from chunkbench_core.stages.experiments import ExperimentRequest, run_experiment
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore

MODEL = "all-minilm-l6-v2"
PACKAGE = "own_strategies"
NAME = "every_second_sentence"
DESCRIPTION = "cuts the text after every second sentence"
MODULE = """
from pydantic import Field

from chunkbench_core.chunking import Capabilities, Chunker, StrategyOptions, register_strategy, sentence_spans


class EverySecondOptions(StrategyOptions):
    stride: int = Field(2, ge=1, le=10, description="sentences per chunk")


@register_strategy("every_second_sentence", options=EverySecondOptions,
                   description="cuts the text after every second sentence",
                   capabilities=Capabilities(sweepable=True), shape={"fill": 0.4, "overlap_share": 0.0})
class EverySecondSentenceChunker(Chunker):
    size_driven = False

    def spans(self, text, tokens):
        sentences = sentence_spans(text)
        stride = self.options.stride
        return [(group[0][0], group[-1][1])
                for group in (sentences[i:i + stride] for i in range(0, len(sentences), stride))]
"""
TEXTS = {
    "garden.md": "Tomatoes need full sun. Water the tomato plants deeply twice a week. Mulch keeps the soil moist. "
    "Pick the fruit when it is red.",
    "servers.md": "The backup job runs every night. Database servers are patched on the first Tuesday of every "
    "month. Logs are kept for a year.",
}
QUESTIONS = [
    ("q1", "How often should tomato plants be watered?", "garden.md", "deeply twice a week"),
    ("q2", "When are database servers patched?", "servers.md", "patched on the first Tuesday of every month"),
]


@pytest.fixture()
def own_package(tmp_path, monkeypatch):
    """The strategy's file in a package of its own on a temporary path; unregistered and unimported afterwards."""
    package = tmp_path / "plugins" / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "every_second.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    assert NAME not in STRATEGIES.names()
    yield package
    STRATEGIES.remove(NAME)
    for module in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[module]


def test_a_strategy_file_is_discovered_listed_estimated_run_and_reported(own_package, tmp_path, monkeypatch, capsys):
    assert discover_strategies(PACKAGE) == ["every_second"]
    assert STRATEGIES.names()[-1] == NAME and STRATEGIES[NAME].description == DESCRIPTION
    assert strategy_shape(NAME) == StrategyShape(fill=0.4, overlap_share=0.0)  # the estimate reads its registration

    from chunkbench_pipelines.cli import main

    home = tmp_path / "home"
    monkeypatch.setenv("CHUNKBENCH_HOME", str(home))
    monkeypatch.setenv("CHUNKBENCH_BENCHMARK", "own")
    capsys.readouterr()
    assert main(["strategies"]) == 0
    listed = capsys.readouterr().out
    block = listed[listed.index(f"\n{NAME}\n") :]
    assert block.splitlines()[2] == f"  {DESCRIPTION}" and "--stride" in block and "in the chunk-size sweep" in block

    results = ResultsDB(home / "benchmarks" / "own")
    questions = tmp_path / "questions"
    questions.mkdir()
    (questions / "set.json").write_text(
        json.dumps(
            {
                "name": "set",
                "questions": [
                    {"id": i, "question": q, "references": [{"document": d, "content": c}]} for i, q, d, c in QUESTIONS
                ],
            }
        ),
        encoding="utf-8",
    )
    documents = [
        ParsedDocument(document=name, markdown=text, tree=TreeNode(node_type="document"), units=[], parser="test")
        for name, text in TEXTS.items()
    ]
    embedder = Embedder(get_model(MODEL))
    spec = resolve_collection(
        CollectionRequest(NAME, MODEL, chunk_size=64, chunk_overlap=0), SpecContext(builtin_registry())
    )
    spec = replace(spec, variant="")  # the partition's own collection (64-token chunks), ranked on the board
    with VectorStore(local_root=tmp_path / "qdrant") as store:
        built = build_collection(BuildRequest(spec, documents), embedder, None, store, results)
        summary = run_experiment(
            ExperimentRequest(spec, "run-1", questions, documents, top_k=1), embedder, store, results
        )
    # two sentences a chunk: garden.md's four make two chunks, servers.md's three make two (the last alone)
    assert built.n_chunks == 4
    rows = results.query("SELECT question_id, strategy, recall FROM question_results ORDER BY question_id")
    assert rows["strategy"].tolist() == [NAME, NAME] and rows["recall"].notna().all()
    assert summary.metrics["n_questions"] == 2

    compare_latest_runs(results)
    board = results.leaderboard()
    assert board["strategy"].tolist() == [NAME]
    paths = write_reports(results, results.root / "reports")
    assert NAME in paths.technical.read_text(encoding="utf-8")
    assert DESCRIPTION in paths.managerial.read_text(
        encoding="utf-8"
    )  # the plain-words paragraph of each configuration
