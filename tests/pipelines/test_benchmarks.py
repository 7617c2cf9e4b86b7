"""Two benchmarks side by side in one CHUNKBENCH_HOME (with a quote in its path) and one Dagster instance: never mixing."""

import json
import shutil

import duckdb
import pytest
from dagster import AssetKey, DagsterInstance

from chunkbench_core.settings import Settings
from chunkbench_core.errors import ConfigError
from chunkbench_core.storage.vector_store import VectorStore, collection_name
from chunkbench_pipelines.definitions import build_definitions
from tests.pipelines.support.environment import environment_settings, run_strategy

from .test_end_to_end import BAKERY, BAKERY_REF, MODEL, VOLCANO, VOLCANO_REF

BENCHMARKS = {
    "volcanoes": ("volcano.md", VOLCANO, "When did Mount Kelvar last erupt?", VOLCANO_REF),
    "bakery": ("bakery.md", BAKERY, "How long do the loaves rest?", BAKERY_REF),
}


def sql(state, query):
    con = duckdb.connect(str(state / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(state)])
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.mark.e2e
def test_two_benchmarks_in_one_home_never_mix(tmp_path, monkeypatch):
    home = tmp_path / "it's home"  # a quote in the path must not break DuckDB
    monkeypatch.setenv("CHUNKBENCH_HOME", str(home))
    monkeypatch.delenv("QDRANT_URL", raising=False)
    monkeypatch.delenv("CHUNKBENCH_RESULTS_DIR", raising=False)
    instance = DagsterInstance.ephemeral()  # one instance for both benchmarks
    events_after_own_run: dict[str, dict[str, int]] = {}
    for name, (document, text, question, reference) in BENCHMARKS.items():
        corpus, questions = tmp_path / name / "corpus", tmp_path / name / "questions"
        corpus.mkdir(parents=True)
        questions.mkdir()
        (corpus / document).write_text(text, encoding="utf-8")
        (questions / f"{name}.json").write_text(
            json.dumps(
                {
                    "questions": [
                        {"id": "q1", "question": question, "references": [{"document": document, "content": reference}]}
                    ]
                }
            ),
            encoding="utf-8",
        )
        monkeypatch.setenv("CHUNKBENCH_CORPUS", str(corpus))
        monkeypatch.setenv("CHUNKBENCH_QUESTIONS", str(questions))
        monkeypatch.setenv("CHUNKBENCH_BENCHMARK", name)
        printed = run_strategy(instance, MODEL)
        assert f"benchmark {name}:" in printed
        # its first run says how a running UI shows it (the code location lists benchmarks when it loads)
        assert (
            f"new benchmark {name}: a running chunkbench ui shows it within seconds (it reloads its code "
            "location); a dagster dev started otherwise shows it after Reload on its Deployment page"
            in " ".join(printed.split())
        )
        events_after_own_run[name] = materialization_counts(instance, name)
        assert events_after_own_run[name]["leaderboard"] == 1 and events_after_own_run[name]["chunk_collections"] == 1

    # each benchmark is its own part of the graph: its assets under its prefix, its own history
    for name in BENCHMARKS:
        # the second benchmark's run added nothing to the first one's assets
        assert materialization_counts(instance, name) == events_after_own_run[name], name
    definitions = build_definitions(environment_settings())  # the code location finds both (registered by run)
    graph = definitions.resolve_asset_graph()
    for name in BENCHMARKS:
        assert graph.has(AssetKey([name, "leaderboard"])) and graph.has(AssetKey([name, "chunk_collections"]))
        assert graph.get(AssetKey([name, "leaderboard"])).group_name == name
        assert f"Benchmark {name}" in graph.get(AssetKey([name, "leaderboard"])).description
        assert {j.name for j in definitions.resolve_all_job_defs()} >= {
            f"{name}__benchmark_everything",
            f"{name}__neighbor_sweep",
        }
        metadata = instance.get_latest_materialization_event(
            AssetKey([name, "leaderboard"])
        ).asset_materialization.metadata
        assert metadata["benchmark"].value == name
        assert metadata["recommendation"].value == f"fixed_size × {MODEL}"
        assert name in metadata["database"].value
        table = metadata["leaderboard"].value
        assert [c.name for c in table.schema.columns] == [
            "rank",
            "configuration",
            "n",
            "recall_at_512",
            "verdict",
            "tokens",
            "frontier",
        ]
        assert [(r.data["rank"], r.data["configuration"], r.data["verdict"]) for r in table.records] == [
            (1, f"fixed_size × {MODEL}", "recommended")
        ]
        experiment = instance.get_latest_materialization_event(
            AssetKey([name, "experiment_results"])
        ).asset_materialization.metadata
        assert experiment["benchmark"].value == name
    runs = instance.get_runs()
    assert {r.job_name for r in runs} == {f"{n}__benchmark_everything" for n in BENCHMARKS}
    assert all(r.tags["chunkbench/benchmark"] == r.job_name.split("__")[0] for r in runs)

    for name, (document, *_rest) in BENCHMARKS.items():
        state = home / "benchmarks" / name
        other = next(d for n, (d, *_r) in BENCHMARKS.items() if n != name)
        assert sql(state, "SELECT document FROM documents") == [(document,)]
        assert sql(state, "SELECT DISTINCT document FROM chunks") == [(document,)]
        assert sql(state, "SELECT count(*) FROM experiment_metrics") == [(1,)]
        provenance = json.loads(sql(state, "SELECT provenance FROM experiment_metrics")[0][0])
        assert provenance["benchmark"] == name and list(provenance["question_files"]) == [f"{name}.json"]
        with VectorStore(local_root=state / "qdrant") as store:
            hits = store.document_chunks(collection_name("fixed_size", MODEL), document)
            assert hits and store.count(collection_name("fixed_size", MODEL)) == len(hits)
        for report in ("benchmark_report.html", "technical_report.html", "decision_board.html"):
            html = (state / "reports" / report).read_text(encoding="utf-8")
            assert other not in html, (name, report)
        board = (state / "reports" / "decision_board.html").read_text(encoding="utf-8")
        assert f'"questionSetName":"{name}.json"' in board.replace(" ", "")
    # the shared Dagster instance: each benchmark's sensor sees its own collection as current, although the
    # newest materialization of the partition is the other benchmark's
    from chunkbench_pipelines.partitions import partition_key
    from chunkbench_pipelines.resources import EmbeddingResource, WorkspaceResource
    from chunkbench_pipelines.sensors import stale_partitions

    built = str(partition_key("fixed_size", MODEL))
    for name in BENCHMARKS:
        workspace = WorkspaceResource(home=str(home), benchmark=name)
        current, stale = stale_partitions(instance, workspace, EmbeddingResource())
        assert current and built not in {b.partition_key for b in stale}, name
    # the shared parts stay in the home: one embedding cache, one set of thresholds
    assert (home / "embedding_cache.sqlite").exists()
    assert not (home / "chunkbench.duckdb").exists() and not (home / "tables").exists()

    # a copied benchmark folder reads its own data (the views' paths are relative to the folder)
    copy = tmp_path / "copy of 'volcanoes'"
    shutil.copytree(home / "benchmarks" / "volcanoes", copy)
    shutil.rmtree(home / "benchmarks" / "volcanoes" / "tables")
    assert sql(copy, "SELECT document FROM documents") == [("volcano.md",)]


def materialization_counts(instance, benchmark: str) -> dict[str, int]:
    """How many materializations each asset of ``benchmark`` has in ``instance``."""
    from dagster import AssetRecordsFilter

    return {
        asset: len(
            instance.fetch_materializations(
                AssetRecordsFilter(asset_key=AssetKey([benchmark, asset])), limit=100
            ).records
        )
        for asset in (
            "source_documents",
            "parsed_documents",
            "chunk_collections",
            "experiment_results",
            "leaderboard",
            "benchmark_report",
        )
    }


def test_benchmark_names_are_validated_and_default_to_sample_or_the_corpus_folder(tmp_path):
    assert Settings.load({}).benchmark == "sample"
    assert Settings.load({"CHUNKBENCH_CORPUS": str(tmp_path / "HR policies 2026")}).benchmark == "HR-policies-2026"
    with pytest.raises(ConfigError, match="benchmark name '../escape'"):
        Settings.load({"CHUNKBENCH_BENCHMARK": "../escape"})
    with pytest.raises(ConfigError, match="benchmark name '../escape'"):
        Settings.load({}, {"benchmark": "../escape"})  # the --benchmark flag
    hr = Settings.load({"CHUNKBENCH_HOME": str(tmp_path), "CHUNKBENCH_BENCHMARK": "hr"})
    assert hr.results_dir == tmp_path.resolve() / "benchmarks" / "hr"


def test_a_shared_qdrant_server_keeps_benchmarks_apart(tmp_path):
    """Two stores on one server (qdrant-client's in-process engine standing in as the server) with two namespaces."""
    import numpy as np
    from qdrant_client import QdrantClient

    from chunkbench_core.chunking import make_chunker
    from chunkbench_core.parsing.models import ParsedDocument, TreeNode

    server = QdrantClient(location=":memory:")
    document = ParsedDocument(
        document="d.md",
        markdown="one two three four five six",
        tree=TreeNode(node_type="document"),
        units=[],
        parser="test",
    )
    chunks = make_chunker("fixed_size", chunk_size=3, chunk_overlap=0).chunk(document)
    stores = {}
    for name in ("alpha", "beta"):
        store = VectorStore(url="http://127.0.0.1:1", namespace=name)
        store._server_client = server  # the same server for both benchmarks
        stores[name] = store
    stores["alpha"].ensure_collection("fixed_size__m_collection", 4)
    stores["alpha"].replace_points("fixed_size__m_collection", chunks, np.ones((len(chunks), 4), dtype=np.float32))
    assert stores["alpha"].list_collections() == ["fixed_size__m_collection"]
    assert stores["beta"].list_collections() == []
    assert sorted(c.name for c in server.get_collections().collections) == ["alpha__fixed_size__m_collection"]
    with pytest.raises(Exception, match="does not exist"):
        stores["beta"].count("fixed_size__m_collection")
    assert stores["alpha"].count("fixed_size__m_collection") == len(chunks)
