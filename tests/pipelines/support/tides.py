"""A one-document benchmark for pipeline tests: the tides corpus, its one question, and the resources that use it.

Several pipeline tests need the smallest real benchmark (one markdown document, one question with one
evidence span) and the same resource dictionary around it; they differ only in the document's text and
the benchmark's name.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chunkbench_pipelines.resources import (
    DuckDBResource,
    EmbeddingResource,
    LLMResource,
    QdrantResource,
    RankingResource,
    WorkspaceResource,
)

MODEL = "all-minilm-l6-v2"
TIDES = "# Tides\n\nThe harbour of Quelm floods twice a day when the spring tide rises above four metres.\n"
QUESTION = {
    "id": "t1",
    "question": "How often does Quelm flood?",
    "references": [{"document": "tides.md", "content": "floods twice a day"}],
}


@dataclass
class Tides:
    corpus: Path
    questions: Path
    home: Path
    results: Path  # the named benchmark's folder (results tables, parsed documents, collections); else home
    resources: dict[str, Any]


def tides_benchmark(tmp_path: Path, document: str = TIDES, benchmark: str | None = None) -> Tides:
    """``tides.md`` holding ``document`` and ``q.json`` holding :data:`QUESTION` under ``tmp_path``, with the
    resources of benchmark ``benchmark`` (None: the resources' own default, collections in ``home/qdrant``)."""
    corpus, questions, home = tmp_path / "corpus", tmp_path / "questions", tmp_path / "home"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "tides.md").write_text(document, encoding="utf-8")
    (questions / "q.json").write_text(json.dumps({"questions": [QUESTION]}), encoding="utf-8")
    named = {"benchmark": benchmark} if benchmark else {}
    results = home / "benchmarks" / benchmark if benchmark else home
    resources = {
        "workspace": WorkspaceResource(home=str(home), corpus=str(corpus), questions=str(questions), **named),
        "duckdb": DuckDBResource(folder=str(home), **named),
        "qdrant": QdrantResource(local_path=str(results / "qdrant"), **named),
        # the caches (embeddings, contextual prefixes) in the test's own home
        "embeddings": EmbeddingResource(home=str(home)),
        "llm": LLMResource(home=str(home)),
        "ranking": RankingResource(),
    }
    return Tides(corpus, questions, home, results, resources)


def tides_definitions(tides: Tides, benchmark: str = "tides"):
    """The benchmark's part of the code location (its assets under its prefix, jobs, sensors, schedules) with the
    tides resources, and that part alone: (Definitions, the benchmark's Definitions)."""
    from dagster import Definitions

    from chunkbench_core.benchmarks import Benchmark
    from chunkbench_core.settings import Settings
    from chunkbench_pipelines.benchmarks import benchmark_definitions
    from chunkbench_pipelines.scope import Scope

    part = benchmark_definitions(Scope.of(Benchmark(benchmark, tides.corpus, tides.questions)), Settings())
    return Definitions.merge(part, Definitions(resources=tides.resources)), part


def use_environment(monkeypatch: Any, tides: Tides, benchmark: str) -> None:
    """Point the environment at the benchmark, as a user's shell would (for code that reads settings, e.g.
    ``run_everything``); no Qdrant server and no separate results folder."""
    for name, value in (
        ("CHUNKBENCH_HOME", tides.home),
        ("CHUNKBENCH_CORPUS", tides.corpus),
        ("CHUNKBENCH_QUESTIONS", tides.questions),
        ("CHUNKBENCH_BENCHMARK", benchmark),
    ):
        monkeypatch.setenv(name, str(value))
    for name in ("QDRANT_URL", "CHUNKBENCH_RESULTS_DIR", "CHUNKBENCH_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
