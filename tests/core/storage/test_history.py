"""Collection builds kept side by side in the chunks table: rebuilds, the runs' own chunks, legacy rows, pruning."""

from __future__ import annotations

import json
from dataclasses import replace

import duckdb
import pytest

from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.errors import ConfigError
from chunkbench_core.evaluation.retrieval import ExpansionSettings
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.provenance import build_fingerprint, settings_fingerprint
from chunkbench_core.reporting.data import load_chunks, load_report_data
from chunkbench_core.stages.collections import BuildRequest, build_collection, read_build_chunks, read_collection
from chunkbench_core.stages.comparison import _chunks_per_document, compare_latest_runs
from chunkbench_core.stages.experiments import ExperimentRequest, run_experiment
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
from chunkbench_core.storage.history import describe_plan, list_builds, plan_prune, prune, run_build
from chunkbench_core.storage.results_db import TABLES, ResultsDB, sql_string
from chunkbench_core.storage.vector_store import VectorStore
from chunkbench_core.tokens import cl100k

MODEL = "all-minilm-l6-v2"
TEXTS = {
    "garden.md": "\n\n".join(
        [
            "Tomatoes need full sun and at least six hours of direct light every day.",
            "Water the tomato plants deeply twice a week rather than a little every day.",
            "Mulch keeps the soil moist and stops weeds from growing around the beds.",
            "Prune the lower leaves of the plants to keep fungal disease away.",
        ]
    ),
    "servers.md": "\n\n".join(
        [
            "The backup job runs every night at two in the morning and keeps thirty days of snapshots.",
            "Restoring a snapshot requires approval from the on-call engineer.",
            "Database servers are patched on the first Tuesday of every month.",
            "Logs are shipped to the central store and kept for one year.",
        ]
    ),
}


def collection(strategy: str, size: int = 20, overflow: str = "error", options: dict | None = None):
    """The partition's collection with these settings: always its default collection (a rebuild with other settings
    is another build of it, as after a change of the threshold in force)."""
    spec = resolve_collection(
        CollectionRequest(strategy, MODEL, chunk_size=size, chunk_overlap=0, overflow=overflow, options=options or {}),
        SpecContext(builtin_registry()),
    )
    return replace(spec, variant="")


QUESTIONS = [
    ("q1", "How often should tomato plants be watered?", "garden.md", "deeply twice a week"),
    ("q2", "When are database servers patched?", "servers.md", "patched on the first Tuesday of every month"),
]


@pytest.fixture(scope="module")
def embedder():
    return Embedder(get_model(MODEL))


@pytest.fixture()
def world(tmp_path, embedder):
    documents = [
        ParsedDocument(document=name, markdown=text, tree=TreeNode(node_type="document"), units=[], parser="test")
        for name, text in TEXTS.items()
    ]
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
    store = VectorStore(local_root=tmp_path / "qdrant")
    results = ResultsDB(tmp_path / "results")

    def build(size: int, corpus: str = "corpus-1", overflow: str = "error"):
        return build_collection(
            BuildRequest(collection("fixed_size", size, overflow), documents, corpus_fingerprint=corpus),
            embedder,
            None,
            store,
            results,
        )

    def experiment(run_id: str, neighbors: int = 0):
        return run_experiment(
            ExperimentRequest(
                collection("fixed_size"), run_id, questions, documents, expansion=ExpansionSettings(neighbors, 0)
            ),
            embedder,
            store,
            results,
        )

    yield {"results": results, "build": build, "experiment": experiment, "store": store, "questions": questions}
    store.close()


def count(results: ResultsDB, sql: str) -> int:
    return int(results.query(sql).iloc[0, 0])


def current_build(results: ResultsDB) -> str:
    return read_collection(results, collection("fixed_size"))["build"]


def test_a_rebuild_with_other_settings_adds_a_build_and_the_same_settings_replace_their_own(world):
    results = world["results"]
    small = world["build"](20)
    first = current_build(results)
    assert first == build_fingerprint(small.settings_fingerprint, "corpus-1")
    assert count(results, "SELECT count(DISTINCT build) FROM chunks") == 1

    large = world["build"](60)
    second = current_build(results)
    assert second != first and large.n_chunks < small.n_chunks
    # both builds kept; "the chunks" of the collection are the latest build's
    assert count(results, "SELECT count(*) FROM chunks") == small.n_chunks + large.n_chunks
    assert results.query("SELECT build, count(*) AS n FROM current_chunks GROUP BY build").values.tolist() == [
        [second, large.n_chunks]
    ]

    world["build"](60)  # the same settings from the same corpus: its own rows replaced, nothing duplicated
    assert count(results, "SELECT count(*) FROM chunks") == small.n_chunks + large.n_chunks
    assert [(b.build, b.n_chunks) for b in list_builds(results)] == [(second, large.n_chunks), (first, small.n_chunks)]

    world["build"](20)  # back to the first settings: that build is current again, still once
    assert count(results, "SELECT count(*) FROM chunks") == small.n_chunks + large.n_chunks
    assert results.query("SELECT DISTINCT build FROM current_chunks")["build"].tolist() == [first]

    world["build"](20, corpus="corpus-2")  # the same settings on another parsed corpus: another build
    assert count(results, "SELECT count(DISTINCT build) FROM chunks") == 3
    assert current_build(results) == build_fingerprint(settings_fingerprint(small.settings), "corpus-2")
    # overflow "truncate" may keep chunks the window would split: another build, though not another fingerprint
    truncated = world["build"](20, corpus="corpus-2", overflow="truncate")
    assert truncated.settings_fingerprint == small.settings_fingerprint and truncated.build == current_build(results)
    assert count(results, "SELECT count(DISTINCT build) FROM chunks") == 4


def test_a_run_records_its_build_and_reads_its_own_chunks_after_a_rebuild(world):
    results = world["results"]
    world["build"](20)
    old_build = current_build(results)
    world["experiment"]("run-old")
    world["build"](60)
    world["experiment"]("run-new")
    new_build = current_build(results)

    runs = {r["experiment_run_id"]: r for r in results.query("SELECT * FROM experiment_metrics").to_dict("records")}
    assert run_build(runs["run-old"]["provenance"]) == old_build
    assert run_build(runs["run-new"]["provenance"]) == new_build
    rows = results.query("SELECT * FROM question_results WHERE experiment_run_id = 'run-old'").to_dict("records")
    assert {r["build"] for r in rows} == {old_build}

    # the old run's retrieved chunks resolve, in its own build, to the texts and offsets it retrieved
    wanted = {("fixed_size", MODEL, h["chunk_id"], old_build) for r in rows for h in json.loads(r["retrieved"])}
    found = load_chunks(results, wanted)
    assert len(found) == len(wanted) and set(found["build"]) == {old_build}
    spans = {(h["chunk_id"], h["document"], h["start"], h["end"]) for r in rows for h in json.loads(r["retrieved"])}
    assert {(c.chunk_id, c.document, c.start_offset, c.end_offset) for c in found.itertuples()} == spans
    assert all(TEXTS[c.document][c.start_offset : c.end_offset] == c.text for c in found.itertuples())
    # the latest build holds chunks of the same ids with other offsets: the lookup without a build gets those
    current = load_chunks(results, {w[:3] for w in wanted})
    assert set(current["build"]) == {new_build}
    assert {(c.chunk_id, c.start_offset, c.end_offset) for c in current.itertuples()} != {
        (c.chunk_id, c.start_offset, c.end_offset) for c in found.itertuples()
    }
    # and the next experiment reads the current build
    assert read_build_chunks(results, collection("fixed_size").rows_key)[0] == new_build
    # what means "the chunks" reads one build: the diagnostics the latest, the report's sizes the shown run's
    latest = results.query("SELECT document, count(*) AS n FROM chunks WHERE build = ? GROUP BY ALL", [new_build])
    assert sorted(_chunks_per_document(results)["fixed_size"]) == sorted(latest["n"])
    compare_latest_runs(results)
    data = load_report_data(results)
    assert data.board["experiment_run_id"].tolist() == ["run-new"] and len(data.chunk_sizes) == latest["n"].sum()


def write_old_chunks(results: ResultsDB, key: str, rows: list[dict]) -> None:
    """A chunks file and schema file as an older chunkbench wrote them: no build column."""
    old = [(c, t) for c, t in TABLES["chunks"] if c != "build"]
    folder = results.tables_dir / "chunks"
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        for name, data in ((f"{key}.parquet", rows), ("_schema.parquet", [])):
            values = " UNION ALL ".join(
                "SELECT "
                + ", ".join(
                    f'CAST({sql_string(str(r[c])) if r.get(c) is not None else "NULL"} AS {t}) AS "{c}"' for c, t in old
                )
                for r in data
            )
            empty = "SELECT " + ", ".join(f'CAST(NULL AS {t}) AS "{c}"' for c, t in old) + " LIMIT 0"
            con.execute(f"COPY ({values or empty}) TO {sql_string((folder / name).as_posix())} (FORMAT parquet)")
    finally:
        con.close()


def test_rows_from_before_builds_were_kept_are_one_legacy_build(world, tmp_path):
    root = tmp_path / "old-results"
    text = TEXTS["garden.md"]
    write_old_chunks(
        ResultsDB(root),
        "fixed_size__" + MODEL,
        [
            {
                "chunk_id": "fixed_size_garden_0",
                "strategy": "fixed_size",
                "corpus_model": MODEL,
                "document": "garden.md",
                "chunk_index": 0,
                "start_offset": 0,
                "end_offset": 30,
                "text": text[:30],
                "variant": "",
                "materialized_at": "2026-01-01 00:00:00",
            }
        ],
    )
    results = ResultsDB(root)  # a new object: ensure_schema_files brings the build column
    assert results.query("SELECT chunk_id, build FROM chunks").values.tolist() == [["fixed_size_garden_0", None]]
    assert "build" in ResultsDB._columns(root / "tables" / "chunks" / "_schema.parquet")
    assert count(results, "SELECT count(*) FROM current_chunks") == 1
    legacy = load_chunks(results, {("fixed_size", MODEL, "fixed_size_garden_0", "")})
    assert legacy["text"].tolist() == [text[:30]]
    [build] = list_builds(results)
    assert build.build is None and build.n_chunks == 1 and "before builds were kept" in build.label
    # a legacy run (no build in its provenance) keeps the legacy build through a prune
    results.write(
        "experiment_metrics",
        "old-run",
        [
            {
                "experiment_run_id": "old-run",
                "strategy": "fixed_size",
                "corpus_model": MODEL,
                "variant": "",
                "provenance": "{}",
                "created_at": "2026-01-01 00:00:01",
            }
        ],
    )
    assert plan_prune(results, keep=1).removed == []


def test_prune_keeps_the_recent_builds_and_those_the_shown_runs_retrieved_from(world):
    results = world["results"]
    world["build"](20)
    shown_elsewhere = current_build(results)
    world["experiment"]("run-neighbors", neighbors=1)  # the latest run with neighbors 1/0: still in the reports
    world["build"](30)
    middle = current_build(results)
    world["experiment"]("run-middle")  # replaced below by a later run of the same configuration
    world["build"](60)
    latest = current_build(results)
    world["experiment"]("run-latest")

    with pytest.raises(ConfigError, match="at least 1"):
        plan_prune(results, keep=0)
    plan = plan_prune(results, keep=1)
    assert [b.build for b in plan.kept] == [latest, shown_elsewhere]
    assert [b.build for b in plan.removed] == [middle] and [b.build for b in plan.kept_for_runs] == [shown_elsewhere]
    lines = list(describe_plan(plan, dry_run=True))
    assert lines[0].startswith(f"would remove: fixed_size × {MODEL}, build {middle}: ")
    assert lines[-1].startswith("would remove 1 build (")
    assert len(list_builds(results)) == 3  # planning deletes nothing

    deleted = prune(results, plan)
    # the build's chunk rows and the token ids stored beside them, under the same key
    assert [(p.parent.name, p.name) for p in deleted] == [
        ("chunk_tokens", deleted[1].name),
        ("chunks", deleted[1].name),
    ]
    assert not any(p.exists() for p in deleted)
    assert [b.build for b in list_builds(results)] == [latest, shown_elsewhere]
    assert plan_prune(results, keep=1).removed == []  # idempotent
    # an excluded run no longer holds its build
    assert [b.build for b in plan_prune(results, keep=1, excluded={"run-neighbors"}).removed] == [shown_elsewhere]
    assert [b.build for b in plan_prune(results, keep=2, excluded={"run-neighbors"}).removed] == []


def test_an_old_runs_parent_sections_and_hits_resolve_in_its_own_build(world, embedder):
    """semantic_parent_child: hits, context and parent sections of each run are drawn from its own build."""
    from chunkbench_core.reporting.data import ReportData, configuration
    from chunkbench_core.reporting.inspector import inspector_payload

    results, strategy = world["results"], "semantic_parent_child"
    documents = [
        ParsedDocument(document=name, markdown=text, tree=TreeNode(node_type="document"), units=[], parser="test")
        for name, text in TEXTS.items()
    ]
    questions = world["questions"]

    def build_and_run(parent_size: int, run_id: str) -> None:
        spec = collection(strategy, options={"parent_chunk_size": parent_size, "min_chunk_size": 1})
        build_collection(BuildRequest(spec, documents), embedder, embedder, world["store"], results)
        run_experiment(ExperimentRequest(spec, run_id, questions, documents), embedder, world["store"], results)

    build_and_run(20, "run-old")  # a parent per paragraph
    build_and_run(40, "run-new")  # the same collection rebuilt with bigger parents

    def payload(run_id: str) -> tuple[dict, list[dict]]:
        board = results.query("SELECT * FROM experiment_metrics WHERE experiment_run_id = ?", [run_id])
        board["configuration"] = [configuration(strategy, MODEL)]
        rows = results.query("SELECT * FROM question_results WHERE experiment_run_id = ?", [run_id])
        data = ReportData(
            board=board,
            runs=board,
            questions=rows,
            documents=results.query("SELECT * FROM documents"),
            chunk_sizes=board.iloc[0:0],
        )
        return inspector_payload(data, results), rows.to_dict("records")

    for run_id in ("run-old", "run-new"):
        shown, rows = payload(run_id)
        recorded = {(r["document"], r["start"], r["end"]) for row in rows for r in json.loads(row["expanded"])}
        parents = {
            (r["document"], r["start"], r["end"])
            for row in rows
            for r in json.loads(row["expanded"])
            if r["role"] == "parent"
        }
        entries = shown["chunks"]
        drawn = [entries[node["parent"]] for result in shown["results"].values() for node in result["tree"]]
        assert parents and {(e["doc"], e["start"], e["end"]) for e in drawn} == parents
        # every chunk drawn (hits, context, parents) is the run's own, with the text of its offsets
        assert {(e["doc"], e["start"], e["end"]) for e in entries} == recorded
        assert all(e["text"] == TEXTS[e["doc"]][e["start"] : e["end"]] for e in entries)
    old_parents = {(e["doc"], e["start"], e["end"]) for e in payload("run-old")[0]["chunks"]}
    assert old_parents != {(e["doc"], e["start"], e["end"]) for e in payload("run-new")[0]["chunks"]}


def test_a_build_stores_every_chunks_token_ids_and_counts_its_embedded_tokens_with_them(world):
    from chunkbench_core.stages.collections import read_build_tokens
    from chunkbench_core.tokens import count_tokens

    results, spec = world["results"], collection("fixed_size")
    summary = world["build"](20)
    build, rows = read_build_chunks(results, spec.rows_key)
    tokens = read_build_tokens(results, spec.rows_key, build, rows)
    assert len(rows) == summary.n_chunks > 2 and set(tokens) == {r["text"] for r in rows}
    assert all(tokens[r["text"]].tolist() == cl100k().encode_ordinary(r["text"]) for r in rows)
    # the cost's tokens are counted from the same ids: what encoding every embedded text counts
    [cost] = results.read("index_costs", spec.rows_key)
    assert cost["embedded_tokens"] == sum(count_tokens(r["embedded_text"] or r["text"]) for r in rows) > 0
