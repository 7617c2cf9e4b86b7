"""The questions' embeddings are counted in ``embedding_usage`` (stage ``queries``) next to the corpus's, so its
totals are what the run embedded; a run again replaces its own row."""

import json
from pathlib import Path

from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.stages.collections import BuildRequest, build_collection
from chunkbench_core.stages.experiments import ExperimentRequest, run_experiment
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore


def test_an_experiment_records_its_query_embeddings(tmp_path: Path):
    text = " ".join(f"Rule {i}: the harbour of Quelm floods {i % 4} times in week {i}." for i in range(30))
    documents = [
        ParsedDocument(document="rules.md", markdown=text, tree=TreeNode(node_type="document"), units=[], parser="test")
    ]
    questions = tmp_path / "questions"
    questions.mkdir()
    (questions / "set.json").write_text(
        json.dumps(
            {
                "name": "set",
                "questions": [
                    {
                        "id": f"q{i}",
                        "question": f"How often does Quelm flood in week {i}?",
                        "references": [{"document": "rules.md", "content": f"floods {i % 4} times in week {i}."}],
                    }
                    for i in range(6)
                ],
            }
        )
    )
    spec = resolve_collection(
        CollectionRequest("fixed_size", "all-minilm-l6-v2", chunk_size=40, chunk_overlap=0),
        SpecContext(builtin_registry()),
    )
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    results = ResultsDB(tmp_path / "results")
    with VectorStore(local_root=tmp_path / "qdrant") as store:
        build_collection(BuildRequest(spec, documents), embedder, None, store, results)
        for _ in range(2):  # the same run again: its row replaced, not added
            run_experiment(ExperimentRequest(spec, "usage", questions, documents), embedder, store, results)
    results.ensure_database()
    usage = results.query(
        "SELECT stage, strategy, corpus_model, texts, embedded, seconds FROM embedding_usage ORDER BY stage"
    )
    assert list(usage["stage"]) == ["chunks", "queries"]
    queries = usage[usage["stage"] == "queries"].iloc[0]
    assert (queries.strategy, queries.corpus_model) == ("fixed_size", "all-minilm-l6-v2")
    # the six questions in one batch, plus the latency probes (one cold, up to the sample warm), never cached
    assert queries.texts >= 6 + 1 and queries.embedded >= 1 + 6 and queries.seconds > 0
