"""Damaged state never blocks chunkbench: each derived file is repaired where it is read, source files are named.

A small real benchmark is built once with the core functions a run calls (parse a corpus of Markdown and
DOCX files, build a collection with MiniLM through the embedding cache, score a question set, compare),
then copied for each case. One file is truncated or garbled, ``chunkbench doctor`` must find it, and the
next run must go through: a derived file is moved aside with a warning naming it and made again, and the
leaderboard and every question's retrieved chunks equal the clean run's. A damaged source file (a corpus
document, a question file) is never moved: the run names it in one line.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb
import pytest

from chunkbench_core.doctor import DERIVED, MOVED, PENDING, SOURCE, doctor
from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.errors import ChunkbenchError, QuestionSetError
from chunkbench_core.parsing import parse
from chunkbench_core.stages.collections import BuildRequest, build_collection
from chunkbench_core.stages.comparison import compare_latest_runs
from chunkbench_core.stages.documents import ParseRequest, parse_corpus
from chunkbench_core.stages.experiments import ExperimentRequest, run_experiment
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
from chunkbench_core.storage import integrity
from chunkbench_core.storage.context_cache import ContextCache
from chunkbench_core.storage.corpus import ParsedStore, scan_corpus_report
from chunkbench_core.storage.embedding_cache import EmbeddingCache
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore, collection_name
from tests.support.damage import checkpoint, damage, garble, garble_sqlite_pages, truncate

pytestmark = pytest.mark.slow

MODEL = "all-minilm-l6-v2"
STRATEGY = "fixed_size"
SAMPLE = Path(__file__).resolve().parents[3] / "chunkbench_core" / "datasets" / "sample" / "corpus"
TEXTS = {
    "garden.md": "# Garden\n\n"
    + "\n\n".join(
        [
            "Tomatoes need full sun and at least six hours of direct light every day.",
            "Water the tomato plants deeply twice a week rather than a little every day.",
            "Mulch keeps the soil moist and stops weeds from growing around the beds.",
            "Prune the lower leaves of the plants to keep fungal disease away.",
        ]
    ),
    "servers.md": "# Servers\n\n"
    + "\n\n".join(
        [
            "The backup job runs every night at two in the morning and keeps thirty days of snapshots.",
            "Restoring a snapshot requires approval from the on-call engineer.",
            "Database servers are patched on the first Tuesday of every month.",
            "Logs are shipped to the central store and kept for one year.",
        ]
    ),
    "kitchen.md": "# Kitchen\n\n"
    + "\n\n".join(
        [
            "Sourdough needs a starter that is fed with flour and water every day.",
            "The oven is preheated to two hundred and fifty degrees before the loaves go in.",
            "Knives are sharpened on a whetstone once a month.",
        ]
    ),
}
QUESTIONS = [
    ("q1", "How often should tomato plants be watered?", "garden.md", "deeply twice a week"),
    ("q2", "When are database servers patched?", "servers.md", "patched on the first Tuesday of every month"),
    ("q3", "How long are logs kept?", "servers.md", "kept for one year"),
    ("q4", "What temperature is the oven preheated to?", "kitchen.md", "two hundred and fifty degrees"),
    ("q5", "How are knives sharpened?", "kitchen.md", "sharpened on a whetstone once a month"),
]
PARAMS = {"chunk_size": 24, "chunk_overlap": 0}
CONTEXT_KEY = "context-key"


@dataclass
class World:
    root: Path

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def questions(self) -> Path:
        return self.root / "questions"

    @property
    def results(self) -> Path:
        return self.root / "benchmark"

    @property
    def parsed(self) -> Path:
        return self.results / "parsed"

    @property
    def qdrant(self) -> Path:
        return self.results / "qdrant"

    @property
    def cache(self) -> Path:
        return self.root / "embedding_cache.sqlite"

    @property
    def context_cache(self) -> Path:
        return self.root / "contextual_cache.sqlite"

    @property
    def collection(self) -> Path:
        return self.qdrant / collection_name(STRATEGY, MODEL)

    def table_file(self, table: str) -> Path:
        files = sorted(p for p in (self.results / "tables" / table).glob("*.parquet") if not p.name.startswith("_"))
        assert files, f"no {table} file"
        return files[0]

    def record_file(self) -> Path:
        manifest = json.loads((self.parsed / "manifest.json").read_text(encoding="utf-8"))
        entry = next(e for e in manifest["documents"] if e["document"] == "garden.md")
        return self.parsed / entry["record"]

    def doctor(self, repair: bool = False):
        return doctor(
            self.results,
            qdrant_dir=self.qdrant,
            corpus_dir=self.corpus,
            questions_dir=self.questions,
            caches=[self.cache, self.context_cache],
            repair=repair,
        )


@dataclass
class Outcome:
    failed: dict[str, str]
    leaderboard: list[tuple]
    retrieved: dict[str, list[str]]


def make_world(root: Path) -> World:
    world = World(root)
    world.corpus.mkdir(parents=True)
    for name, text in TEXTS.items():
        (world.corpus / name).write_text(text, encoding="utf-8")
    shutil.copy(SAMPLE / "employee_handbook.docx", world.corpus / "employee_handbook.docx")
    world.questions.mkdir()
    (world.questions / "set.json").write_text(
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
    with ContextCache(world.context_cache) as contexts:
        contexts[CONTEXT_KEY] = "A garden and its tomatoes."
    return world


def run(world: World, run_id: str) -> Outcome:
    """What a run does, in its order: the corpus sensor reads the manifest, parse, chunk + embed + store,
    score the questions, compare, refresh the views file."""
    results = ResultsDB(world.results)
    store = ParsedStore(world.parsed, "test-parser")
    store.manifest_fingerprint()
    scan = scan_corpus_report(world.corpus)
    summary = parse_corpus(ParseRequest(scan.documents, store, parse, scan), results)
    results.ensure_database()
    documents = store.load_manifest_documents()
    # the partition's own collection, built with the test's sizes
    spec = replace(
        resolve_collection(CollectionRequest(STRATEGY, MODEL, **PARAMS), SpecContext(builtin_registry())), variant=""
    )
    with EmbeddingCache(world.cache) as cache, VectorStore(local_root=world.qdrant) as vectors:
        embedder = Embedder(get_model(MODEL), cache=cache)
        build_collection(
            BuildRequest(spec, documents, corpus_fingerprint=store.manifest_fingerprint()),
            embedder,
            None,
            vectors,
            results,
        )
        run_experiment(ExperimentRequest(spec, run_id, world.questions, documents), embedder, vectors, results)
    compare_latest_runs(results)
    results.ensure_database()
    return Outcome(summary.failed, *read_back(world, run_id))


def read_back(world: World, run_id: str) -> tuple[list[tuple], dict[str, list[str]]]:
    """The leaderboard as a user reads it from the views file, and each question's retrieved chunks."""
    con = duckdb.connect(str(world.results / "chunkbench.duckdb"), read_only=True)
    try:
        con.execute("SET file_search_path = ?", [world.results.as_posix()])
        board = con.execute(
            "SELECT rank, tier, strategy, corpus_model, n_questions, round(recall, 9), "
            "round(recall_at_512, 9), round(mrr, 9), verdict FROM leaderboard"
        ).fetchall()
        rows = con.execute(
            "SELECT question_id, retrieved FROM question_results WHERE experiment_run_id = ? ORDER BY question_id",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    return board, {q: [hit["chunk_id"] for hit in json.loads(r)] for q, r in rows}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The pristine state after one clean run, and that run's outcome."""
    world = make_world(tmp_path_factory.mktemp("pristine"))
    outcome = run(world, "run-1")
    assert outcome.failed == {} and len(outcome.retrieved) == len(QUESTIONS)
    assert outcome.leaderboard and outcome.leaderboard[0][2] == STRATEGY
    return world, outcome


def copy_world(pristine: World, root: Path) -> World:
    shutil.copytree(pristine.root, root / "world", symlinks=True)
    return World(root / "world")


# -- how files are damaged (tests/support/damage.py) ------------------------------------------------
def damage_cache(world: World) -> Path:
    checkpoint(world.cache)
    assert world.cache.stat().st_size > 8192
    garble_sqlite_pages(world.cache)
    return world.cache


def damage_cache_header(world: World) -> Path:
    checkpoint(world.cache)
    with open(world.cache, "r+b") as handle:
        handle.write(b"this is not SQLite at all")
    return world.cache


def vector_file(world: World) -> Path:
    return next(world.collection.glob("segments/*/vector_storage/vectors/chunk_0.mmap"))


def id_tracker(world: World) -> Path:
    return next(world.collection.glob("segments/*/mutable_id_tracker.mappings"))


DERIVED_CASES = {  # experiment_metrics and question_results are views over experiment_runs, question_rows and scores
    "experiment_runs truncated": damage(truncate, lambda w: w.table_file("experiment_runs")),
    "run_scores truncated": damage(truncate, lambda w: w.table_file("run_scores")),
    "chunks truncated": damage(truncate, lambda w: w.table_file("chunks")),
    "question_rows garbled inside": damage(garble, lambda w: w.table_file("question_rows")),
    "question_scores garbled inside": damage(garble, lambda w: w.table_file("question_scores")),
    "collections truncated": damage(truncate, lambda w: w.table_file("collections")),
    "documents garbled footer": damage(lambda p: garble(p, 0.9, 1.0, 8), lambda w: w.table_file("documents")),
    "schema file truncated": damage(truncate, lambda w: w.results / "tables" / "comparison" / "_schema.parquet"),
    "views file garbled": damage(lambda p: garble(p, 0.0, 1.0, 256), lambda w: w.results / "chunkbench.duckdb"),
    "embedding cache pages garbled": damage_cache,
    "embedding cache header garbled": damage_cache_header,
    "collection vectors truncated": damage(lambda p: truncate(p, 0.0001), vector_file),
    "collection id mappings garbled": damage(lambda p: garble(p, 0.0, 1.0, 2000), id_tracker),
    "parsed record truncated": damage(truncate, World.record_file),
    "parsed manifest truncated": damage(truncate, lambda w: w.parsed / "manifest.json"),
}


@pytest.mark.parametrize("case", sorted(DERIVED_CASES))
def test_a_damaged_derived_file_is_found_repaired_by_the_next_run_and_the_results_are_the_clean_ones(
    case, clean, tmp_path, caplog
):
    pristine, expected = clean
    world = copy_world(pristine, tmp_path)
    damaged = DERIVED_CASES[case](world)

    found = [f for f in world.doctor().findings if f.kind not in (MOVED, PENDING)]
    assert [Path(f.path) for f in found] in ([damaged], [world.collection]), [f.line() for f in found]
    assert found[0].kind in (DERIVED, "cache") and not found[0].repaired

    caplog.set_level(logging.WARNING, logger="chunkbench")
    outcome = run(world, "run-2")  # no exception: the run goes through
    assert outcome.failed == {}
    assert outcome.leaderboard == expected.leaderboard
    assert outcome.retrieved == expected.retrieved

    report = world.doctor()
    assert report.healthy, report.lines()
    moved = [Path(f.path) for f in report.findings if f.kind == MOVED]
    rebuilt_in_place = case in (
        "chunks truncated",
        "collections truncated",
        "documents garbled footer",
        "parsed manifest truncated",
    )
    if moved:  # moved aside beside itself, named in a warning
        assert all(integrity.CORRUPT_MARK in p.name for p in moved)
        warned = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
        named = world.collection if damaged.is_relative_to(world.collection) else damaged
        assert str(named) in warned
    else:  # the run rewrote the file before anything read it (atomically: the damaged one is simply replaced)
        assert rebuilt_in_place, f"{case}: nothing was moved aside"


def test_doctor_repairs_every_derived_file_at_once(clean, tmp_path):
    pristine, expected = clean
    world = copy_world(pristine, tmp_path)
    for case in (
        "experiment_runs truncated",
        "views file garbled",
        "embedding cache pages garbled",
        "collection vectors truncated",
        "parsed record truncated",
    ):
        DERIVED_CASES[case](world)
    report = world.doctor(repair=True)
    problems = [f for f in report.findings if f.kind not in (MOVED, PENDING)]
    assert len(problems) == 5 and all(f.repaired for f in problems), report.lines()
    after = world.doctor()
    assert after.healthy, after.lines()
    assert [f.kind for f in after.findings if f.kind != MOVED] == [PENDING]  # the record: the next parse makes it
    # the views file works at once; what was moved aside is made again by the next run, with the clean results
    con = duckdb.connect(str(world.results / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [world.results.as_posix()])
    assert con.execute("SELECT count(*) FROM leaderboard").fetchone()[0] == 0  # its only run's metrics are gone
    con.close()
    outcome = run(world, "run-2")
    assert outcome.leaderboard == expected.leaderboard and outcome.retrieved == expected.retrieved


def test_a_damaged_contextual_cache_reads_as_empty_and_is_moved_aside(clean, tmp_path, caplog):
    pristine, _ = clean
    world = copy_world(pristine, tmp_path)
    checkpoint(world.context_cache)
    with open(world.context_cache, "r+b") as handle:
        handle.write(b"garbage garbage garbage")
    assert [Path(f.path) for f in world.doctor().findings] == [world.context_cache]
    caplog.set_level(logging.WARNING, logger="chunkbench")
    with ContextCache(world.context_cache) as contexts:
        assert contexts.get(CONTEXT_KEY) is None  # a miss: the LLM is asked again
        contexts[CONTEXT_KEY] = "asked again"
        assert contexts[CONTEXT_KEY] == "asked again"
    assert any(str(world.context_cache) in r.getMessage() for r in caplog.records)
    assert world.doctor().healthy


def test_a_damaged_corpus_document_is_named_and_never_moved(clean, tmp_path):
    pristine, _ = clean
    world = copy_world(pristine, tmp_path)
    document = world.corpus / "employee_handbook.docx"
    truncate(document, 0.3)
    before = document.read_bytes()
    outcome = run(world, "run-2")  # the other documents go on
    assert list(outcome.failed) == ["employee_handbook.docx"]
    message = outcome.failed["employee_handbook.docx"]
    assert str(document) in message and "\n" not in message
    assert document.read_bytes() == before and not integrity.quarantined_files(world.corpus)
    sources = [f for f in world.doctor().findings if f.kind == SOURCE]
    assert [Path(f.path) for f in sources] == [document]
    assert "fix or replace the file" in sources[0].repair


def test_a_damaged_question_file_is_named_with_the_fix_and_never_moved(clean, tmp_path):
    pristine, _ = clean
    world = copy_world(pristine, tmp_path)
    questions = world.questions / "set.json"
    truncate(questions, 0.6)
    before = questions.read_bytes()
    with pytest.raises(QuestionSetError) as raised:
        run(world, "run-2")
    message = str(raised.value)
    assert isinstance(raised.value, ChunkbenchError) and str(questions) in message and "\n" not in message
    assert "JSON syntax error at line 1" in message
    assert questions.read_bytes() == before and not integrity.quarantined_files(world.questions)
    sources = [f for f in world.doctor().findings if f.kind == SOURCE]
    assert [Path(f.path) for f in sources] == [questions] and "fix the file" in sources[0].repair
