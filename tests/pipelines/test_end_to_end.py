"""The whole asset graph, materialized in-process on a tiny corpus, checked against DuckDB and Qdrant."""

import io
import json

import duckdb
import pytest
from dagster import AssetKey, DagsterInstance

from chunkbench_core.reporting.html import esc
from chunkbench_core.reporting.leaderboard import short_verdict
from chunkbench_core.storage.vector_store import VectorStore, collection_name
from chunkbench_pipelines.runner import RunConsole, run_everything
from tests.pipelines.support.environment import environment_settings

MODEL = "all-minilm-l6-v2"

VOLCANO = (
    "# Volcanoes\n\n"
    "Mount Kelvar is a shield volcano on the island of Orsa. It last erupted in 1911, when lava reached the "
    "fishing village of Brenn and destroyed its harbour wall.\n"
)
BAKERY = (
    "# Sourdough\n\n"
    "The Marlow bakery feeds its sourdough starter twice a day with rye flour. Loaves rest for eighteen hours "
    "in a cold room before they are baked at 250 degrees.\n"
)
VOLCANO_REF = "It last erupted in 1911, when lava reached the fishing village of Brenn"
BAKERY_REF = "Loaves rest for eighteen hours in a cold room"


@pytest.fixture()
def workspace(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    questions = tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "volcano.md").write_text(VOLCANO, encoding="utf-8")
    (corpus / "bakery.md").write_text(BAKERY, encoding="utf-8")
    (corpus / "broken.docx").write_bytes(b"PK\x03\x04 this is not really a zip archive")
    (questions / "good.json").write_text(
        json.dumps(
            {
                "name": "good",
                "questions": [
                    {
                        "id": "v1",
                        "question": "When did Mount Kelvar last erupt and which village did the lava reach?",
                        "expected_answer": "1911, Brenn",
                        "category": "fact",
                        "difficulty": "easy",
                        "references": [{"document": "volcano.md", "content": VOLCANO_REF}],
                    },
                    {
                        "id": "b1",
                        "question": "How long do the sourdough loaves rest before baking?",
                        "references": [{"document": "bakery.md", "content": BAKERY_REF}],
                    },
                ],
            }
        ),
        encoding="utf-8",
    )
    (questions / "bad.json").write_text(json.dumps({"questions": [{"id": "x1", "references": []}]}), encoding="utf-8")
    home = tmp_path / "home"
    monkeypatch.setenv("CHUNKBENCH_HOME", str(home))
    monkeypatch.setenv("CHUNKBENCH_CORPUS", str(corpus))
    monkeypatch.setenv("CHUNKBENCH_QUESTIONS", str(questions))
    monkeypatch.setenv("CHUNKBENCH_BENCHMARK", "tiny")
    monkeypatch.delenv("QDRANT_URL", raising=False)
    # the benchmark's folder: results, collections and reports of "tiny"
    return {"home": home / "benchmarks" / "tiny", "corpus": corpus, "questions": questions, "chunkbench_home": home}


def clean(workspace):
    """Only good inputs: a run that drops nothing exits 0."""
    (workspace["corpus"] / "broken.docx").unlink()
    (workspace["questions"] / "bad.json").unlink()


def sql(home, query):
    con = duckdb.connect(str(home / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(home)])  # the file's views read Parquet paths relative to it
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


@pytest.mark.e2e
def test_whole_graph_on_a_tiny_corpus(workspace):
    home = workspace["home"]
    instance = DagsterInstance.ephemeral()
    out = io.StringIO()
    # a document and a question were dropped: exit 1, after the leaderboard of what did run
    assert (
        run_everything(
            environment_settings(),
            strategies=["fixed_size", "recursive"],
            corpus_models=[MODEL],
            console=RunConsole(out),
            instance=instance,
        )
        == 1
    ), out.getvalue()
    printed = out.getvalue()
    assert "fixed_size" in printed and "recursive" in printed and "benchmark_report.html" in printed
    summary = printed[printed.index("benchmark_report.html") :]
    assert "documents not parsed (1)" in summary and "- broken.docx" in summary
    # each question problem printed once (two partitions ran), in the final summary
    assert "question problems (1)" in summary and printed.count("bad.json, question 'x1', field 'question'") == 1
    assert sql(home, "SELECT file, question_id, field FROM question_errors") == [
        (str(workspace["questions"] / "bad.json"), "x1", "question")
    ]

    # documents: the corrupt file fails with a message naming it; the others are parsed
    docs = dict((d, (s, e)) for d, s, e in sql(home, "SELECT document, status, error FROM documents"))
    assert docs["volcano.md"] == ("parsed", None) and docs["bakery.md"] == ("parsed", None)
    assert docs["broken.docx"][0] == "failed" and "broken.docx" in docs["broken.docx"][1]

    # chunks: each short document is one chunk; fixed_size windows keep every character, recursive trims
    chunks = sql(
        home,
        "SELECT strategy, document, chunk_index, start_offset, end_offset, text FROM chunks "
        "ORDER BY strategy, document",
    )
    texts = {"volcano.md": VOLCANO, "bakery.md": BAKERY}
    assert [(s, d, i) for s, d, i, *_ in chunks] == [
        ("fixed_size", "bakery.md", 0),
        ("fixed_size", "volcano.md", 0),
        ("recursive", "bakery.md", 0),
        ("recursive", "volcano.md", 0),
    ]
    for strategy, document, _, start, end, text in chunks:
        expected = texts[document] if strategy == "fixed_size" else texts[document].strip()
        assert text == expected and texts[document][start:end] == text

    # metrics equal the hand-computed values: both chunks are retrieved (top_k 5 > 2 chunks),
    # the relevant one first, so recall = 1, precision = IoU = |reference| / (|chunk A| + |chunk B|)
    rows = sql(
        home,
        "SELECT strategy, question_id, recall, precision, iou, hit, reciprocal_rank FROM question_results "
        "ORDER BY strategy, question_id",
    )
    assert [(s, q) for s, q, *_ in rows] == [
        ("fixed_size", "b1"),
        ("fixed_size", "v1"),
        ("recursive", "b1"),
        ("recursive", "v1"),
    ]
    refs = {"v1": VOLCANO_REF, "b1": BAKERY_REF}
    for strategy, qid, recall, precision, iou, hit, rr in rows:
        total = len(VOLCANO) + len(BAKERY) if strategy == "fixed_size" else len(VOLCANO.strip()) + len(BAKERY.strip())
        assert recall == 1.0 and hit == 1.0 and rr == 1.0
        assert precision == pytest.approx(len(refs[qid]) / total)
        assert iou == pytest.approx(len(refs[qid]) / total)

    board = sql(
        home,
        "SELECT strategy, corpus_model, n_questions, recall, precision, iou, mrr, hit_rate FROM leaderboard "
        "ORDER BY strategy",
    )
    assert [(s, m, n) for s, m, n, *_ in board] == [("fixed_size", MODEL, 2), ("recursive", MODEL, 2)]
    fixed = board[0]
    expected_precision = (len(VOLCANO_REF) + len(BAKERY_REF)) / 2 / (len(VOLCANO) + len(BAKERY))
    assert fixed[3:] == pytest.approx((1.0, expected_precision, expected_precision, 1.0, 1.0))

    # the best configuration by the documented rule, classes, and the recommendation: one story in every view
    comparison = sql(
        home,
        "SELECT strategy || '|' || corpus_model, is_best, n_questions, class, recommended "
        "FROM comparison ORDER BY configuration",
    )
    assert [c for c, *_ in comparison] == [f"fixed_size|{MODEL}", f"recursive|{MODEL}"]
    assert sum(1 for _, best, *_ in comparison if best) == 1 and all(n == 2 for _, _, n, *_ in comparison)
    assert sum(1 for *_, recommended in comparison if recommended) == 1
    [best] = [c for c, is_best, *_ in comparison if is_best]
    [chosen] = [c for c, *_, recommended in comparison if recommended]
    ranked = sql(
        home, "SELECT rank, strategy || '|' || corpus_model, verdict, rank_metric, class, recommended FROM leaderboard"
    )
    assert [r[0] for r in ranked] == [1, 2] and ranked[0][1] == best and ranked[0][3] == "recall_at_512"
    assert {r[1]: r[2] for r in ranked}[chosen] == "recommended"
    [(strategy, model, rule, reason, n_within, stability)] = sql(
        home,
        "SELECT strategy, corpus_model, rule, reason, n_within_margin, recommendation_stability FROM recommendation",
    )
    assert f"{strategy}|{model}" == chosen and rule == "cheapest_within_margin" and reason
    assert n_within == sum(1 for *_, cls, _ in ranked if cls in ("best", "within_margin"))
    assert 0 < stability <= 1
    event = instance.get_latest_materialization_event(AssetKey(["tiny", "leaderboard"]))
    metadata = event.asset_materialization.metadata
    assert metadata["recommendation"].value == f"{strategy} × {model}"
    assert metadata["benchmark"].value == "tiny"
    assert metadata["recommendation_stability"].value == round(stability, 3)
    assert metadata["reason"].value == reason  # whole, as text of its own
    assert list(metadata).index("stability") == list(metadata).index("reason") + 1  # right beside it
    table = metadata["leaderboard"].value
    assert [r.data["configuration"] for r in table.records] == [r[1].replace("|", " × ") for r in ranked]
    # in the CLI table's words (the compact verdict: "within 0.02" for the view's "within 0.02 of best")
    assert [r.data["verdict"] for r in table.records] == [short_verdict(r[2]) for r in ranked]

    # the malformed question file is reported by name; the good one was still evaluated
    event = instance.get_latest_materialization_event(AssetKey(["tiny", "experiment_results"]))
    errors = event.asset_materialization.metadata["question_errors"].value
    assert "bad.json" in errors and "'question'" in errors

    report = (home / "reports" / "benchmark_report.html").read_text(encoding="utf-8")
    assert "Leaderboard" in report and "volcano.md" in report and "<img" in report

    # whether the choice matters, and where the differences come from: one sentence each, the same in the
    # recommendation view, the CLI summary, the Dagster metadata and the report
    [(verdict, verdict_sentence, drivers)] = sql(
        home, "SELECT verdict, verdict_sentence, drivers_sentence FROM recommendation"
    )
    assert verdict in ("interchangeable", "cannot_tell", "matters") and verdict_sentence in reason
    assert metadata["verdict"].value == verdict_sentence
    assert metadata["what_drives_the_scores"].value == drivers
    assert [r.data["factor"] for r in metadata["variance_decomposition"].value.records][0] == "question"
    flat = " ".join(printed.split())
    assert " ".join(verdict_sentence.split()) in flat and " ".join(drivers.split()) in flat
    assert esc(verdict_sentence) in report and esc(drivers) in report
    shares = dict(sql(home, "SELECT factor, share FROM variance_decomposition"))
    assert {"question", "configuration", "strategy", "rest"} <= set(shares)

    # metadata reads well: numbers rounded to 3 places, units in names, nothing empty (a local model waits on no pool)
    for asset in ("chunk_collections", "experiment_results"):
        metadata = instance.get_latest_materialization_event(AssetKey(["tiny", asset])).asset_materialization.metadata
        assert "pool_wait_seconds" not in metadata
        for name, entry in metadata.items():
            assert entry.value not in ({}, [], "", None), (asset, name)
            if isinstance(entry.value, float):
                assert entry.value == round(entry.value, 3), (asset, name, entry.value)
    chunks_metadata = instance.get_latest_materialization_event(
        AssetKey(["tiny", "chunk_collections"])
    ).asset_materialization.metadata
    assert {"median_chunk_tokens", "max_chunk_tokens"} <= set(chunks_metadata)
    assert "recall" in event.asset_materialization.metadata

    # every step ran as the benchmark's job benchmark_everything, tagged, partitions on their runs
    runs = instance.get_runs()
    assert {r.job_name for r in runs} == {"tiny__benchmark_everything"} and len(runs) == 4
    assert {r.tags["chunkbench/trigger"] for r in runs} == {"cli"}
    assert {r.tags[".dagster/repository"] for r in runs} == {"__repository__@chunkbench"}  # the job's Runs page
    assert len({r.tags["chunkbench/batch"] for r in runs}) == 1
    assert {r.tags["chunkbench/benchmark"] for r in runs} == {"sample"} or len(
        {r.tags["chunkbench/benchmark"] for r in runs}
    ) == 1
    assert sorted(r.tags.get("dagster/partition", "") for r in runs) == [
        "",
        "",
        f"{MODEL}|fixed_size",
        f"{MODEL}|recursive",
    ]


@pytest.mark.e2e
def test_rerun_is_idempotent_and_removes_stale_points(workspace):
    home = workspace["home"]
    clean(workspace)
    instance = DagsterInstance.ephemeral()
    assert (
        run_everything(environment_settings(), strategies=["fixed_size"], corpus_models=[MODEL], instance=instance) == 0
    )
    assert (
        run_everything(environment_settings(), strategies=["fixed_size"], corpus_models=[MODEL], instance=instance) == 0
    )
    assert sql(home, "SELECT count(*) FROM chunks") == [(2,)]  # the same build again: its rows replaced
    assert sql(home, "SELECT count(DISTINCT experiment_run_id), count(*) FROM question_results") == [(2, 4)]
    assert sql(home, "SELECT count(*) FROM leaderboard") == [(1,)]

    (workspace["corpus"] / "bakery.md").unlink()
    (workspace["questions"] / "good.json").write_text(
        json.dumps(
            {
                "questions": [
                    {
                        "id": "v1",
                        "question": "When did Mount Kelvar erupt?",
                        "references": [{"document": "volcano.md", "content": VOLCANO_REF}],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    assert (
        run_everything(environment_settings(), strategies=["fixed_size"], corpus_models=[MODEL], instance=instance) == 0
    )
    assert sql(home, "SELECT document FROM current_chunks") == [("volcano.md",)]
    # the build the earlier runs retrieved from is kept beside it (their inspector still shows their chunks)
    assert sql(home, "SELECT count(DISTINCT build), count(*) FROM chunks") == [(2, 3)]
    with VectorStore(local_root=home / "qdrant") as store:
        assert store.count(collection_name("fixed_size", MODEL)) == 1
    assert sql(home, "SELECT n_questions FROM leaderboard") == [(1,)]


@pytest.mark.e2e
def test_unknown_partition_model_fails_with_reason(workspace):
    out = io.StringIO()
    code = run_everything(
        environment_settings(),
        strategies=["fixed_size"],
        corpus_models=["no-such-model"],
        console=RunConsole(out),
        instance=DagsterInstance.ephemeral(),
    )
    assert code == 1
    assert "unknown embedding model 'no-such-model'" in out.getvalue()


@pytest.mark.e2e
def test_neighbor_levels_are_separate_runs_side_by_side(workspace):
    from tests.pipelines.support.partitions import environment_graph
    from chunkbench_pipelines.definitions import build_resources
    from chunkbench_pipelines.partitions import partition_key

    home = workspace["home"]
    clean(workspace)
    instance = DagsterInstance.ephemeral()
    assert (
        run_everything(environment_settings(), strategies=["fixed_size"], corpus_models=[MODEL], instance=instance) == 0
    )
    config = {"ops": {"experiment_results": {"config": {"neighbor_prev": 1, "neighbor_next": 1}}}}
    assert (
        environment_graph()
        .materialize(
            ["experiment_results"],
            partition_key=partition_key("fixed_size", MODEL),
            run_config=config,
            instance=instance,
            resources=build_resources(environment_settings()),
        )
        .success
    )
    rows = sql(
        home,
        "SELECT strategy, neighbor_prev, neighbor_next, n_questions FROM leaderboard_by_setting ORDER BY neighbor_prev",
    )
    assert rows == [("fixed_size", 0, 0, 2), ("fixed_size", 1, 1, 2)]
    # the leaderboard keeps comparing default settings: the (1, 1) run, although newer, is not its row
    default_run = sql(home, "SELECT experiment_run_id FROM experiment_metrics WHERE neighbor_prev = 0")[0][0]
    assert sql(home, "SELECT experiment_run_id FROM leaderboard") == [(default_run,)]
    provenance = json.loads(sql(home, "SELECT provenance FROM experiment_metrics WHERE neighbor_prev = 1")[0][0])
    assert provenance["neighbor_prev"] == 1 and provenance["neighbor_next"] == 1
