"""The cold query is what a first question of a fresh process costs (loading the model, its embedding, its search),
so it is never below the warm query time, which is embedding plus search too (it used to leave both the model
load and the search out, and so read lower than the warm time)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import json, sys
from pathlib import Path
from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.embedding.local import LOAD_SECONDS
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.stages.collections import BuildRequest, build_collection
from chunkbench_core.stages.experiments import ExperimentRequest, run_experiment
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore

tmp = Path(sys.argv[1])
text = " ".join(f"Rule {i}: the harbour of Quelm floods {i % 4} times in week {i}." for i in range(60))
documents = [ParsedDocument(document="rules.md", markdown=text, tree=TreeNode(node_type="document"), units=[],
                            parser="test")]
questions = tmp / "questions"
questions.mkdir()
(questions / "set.json").write_text(json.dumps({"name": "set", "questions": [
    {"id": f"q{i}", "question": f"How often does Quelm flood in week {i}?",
     "references": [{"document": "rules.md", "content": f"floods {i % 4} times in week {i}."}]} for i in range(12)]}))
spec = resolve_collection(CollectionRequest("fixed_size", "all-minilm-l6-v2", chunk_size=40, chunk_overlap=0),
                          SpecContext(builtin_registry()))
embedder = Embedder(get_model("all-minilm-l6-v2"))
results = ResultsDB(tmp / "results")
with VectorStore(local_root=tmp / "qdrant") as store:
    build_collection(BuildRequest(spec, documents), embedder, None, store, results)
    summary = run_experiment(ExperimentRequest(spec, "latency", questions, documents), embedder, store, results)
results.ensure_database()
frame = results.query("SELECT cold_query_ms, query_ms, search_seconds FROM experiment_metrics")
print(json.dumps({"cold": float(frame.cold_query_ms[0]), "warm": float(frame.query_ms[0]),
                  "load_ms": LOAD_SECONDS.get("minilm_onnx", 0.0) * 1000,
                  "search_seconds": [float(frame.search_seconds[0]), summary.metrics["search_seconds"]]}))
"""


def test_the_cold_query_includes_the_model_load_and_the_search(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["load_ms"] > 0  # this fresh process loaded the model
    assert figures["cold"] >= figures["load_ms"]
    assert figures["cold"] > figures["warm"]
    # the run's search time is recorded with the run (tests/core/storage/test_scored_tables.py: the leaderboard)
    run, summary = figures["search_seconds"]
    assert 0 < run == summary < 60
