"""Retrievers through the real embedded vector store, MiniLM and the results database: on near-identical
quarterly filings that differ in the period and the figures, the hybrid retriever (dense fused with BM25) finds
the right filing where the dense one confuses them; the same inputs give the same hits; a retriever registered
in this file alone is accepted by the run setting and shown on the leaderboard; a question searched within its
own documents gets hits from those documents only, recorded as a scope of its own beside the shared ranking."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.evaluation.experiment import (
    RetrievalOptions,
    resolve_questions,
    run_retrieval,
)
from chunkbench_core.evaluation.questions import load_question_sets
from chunkbench_core.labels import split_configuration_key
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from chunkbench_core.retrievers import RETRIEVERS, register_retriever
from chunkbench_core.retrievers.hybrid import HybridRetriever, words
from chunkbench_core.run_config import experiment_settings
from chunkbench_core.stages.collections import BuildRequest, build_collection
from chunkbench_core.stages.experiments import ExperimentRequest, run_experiment
from chunkbench_core.stages.spec import (
    CollectionRequest,
    SpecContext,
    resolve_collection,
)
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore

pytestmark = pytest.mark.slow  # builds a collection with MiniLM and runs five experiments

MODEL = "all-minilm-l6-v2"
PERIODS = {  # file -> (period, total net sales in millions, services net sales)
    "apple-10q-2022-q4.md": ("December 31, 2022", "117,154", "20,766"),
    "apple-10q-2023-q1.md": ("April 1, 2023", "94,836", "20,907"),
    "apple-10q-2023-q2.md": ("July 1, 2023", "81,797", "21,213"),
    "apple-10q-2023-q3.md": ("September 30, 2023", "89,498", "22,314"),
}
BOILERPLATE = (
    "The Company designs, manufactures and markets smartphones, personal computers, tablets, wearables "
    "and accessories, and sells a variety of related services. The Company's fiscal year is the 52- or "
    "53-week period that ends on the last Saturday of September."
)


def filing(period: str, total: str, services: str) -> str:
    """A quarter's statement: the same lines as every other quarter's, the period named once among them."""
    return (
        f"# Condensed Consolidated Statements of Operations\n\n{BOILERPLATE}\n\n"
        "Net sales by category, products and services, in millions of U.S. dollars, unaudited. Products net "
        "sales include iPhone, Mac, iPad, and wearables, home and accessories. Cost of sales, gross margin, "
        "research and development, selling, general and administrative expenses and operating income follow. "
        f"Three months ended {period}: total net sales were ${total} million and services net sales were "
        f"${services} million. Other income and expense, provision for income taxes and net income are "
        "reported below, with earnings per share, basic and diluted, and the shares used in computing them.\n\n"
        f"Risk factors are unchanged from the annual report. {BOILERPLATE}\n"
    )


def _questions_folder(folder):
    folder.mkdir()
    questions = [
        {
            "id": f"net-sales-{i}",
            "question": f"What were total net sales for the three months ended {period}?",
            "references": [{"document": name, "content": f"total net sales were ${total} million"}],
        }
        for i, (name, (period, total, _)) in enumerate(PERIODS.items())
    ]
    (folder / "quarters.json").write_text(json.dumps({"name": "quarters", "questions": questions}))
    return folder


class KeywordsOnly(HybridRetriever):
    """The keyword ranking alone: a retriever that only this test file registers."""

    def search_one(self, text, vector, top_k, documents=None):
        from chunkbench_core.evaluation.retrieval import RetrievedChunk

        return [
            RetrievedChunk.from_payload(self.payloads[row], rank=rank, score=score)
            for rank, (row, score) in enumerate(self.keyword_ranking(text, documents, top_k), start=1)
        ]

    def search_all(self, request):
        return [
            self.search_one(t, v, request.top_k, d)
            for t, v, d in zip(request.texts, request.vectors, request.documents)
        ]


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory):
    root = tmp_path_factory.mktemp("hybrid")
    register_retriever("keywords_only_test", description="the keyword ranking alone (a test's)")(KeywordsOnly)
    documents = [
        ParsedDocument(
            document=name, markdown=filing(*facts), tree=TreeNode(node_type="document"), units=[], parser="test"
        )
        for name, facts in PERIODS.items()
    ]
    spec = resolve_collection(CollectionRequest("fixed_size", MODEL), SpecContext(builtin_registry()))
    embedder = Embedder(get_model(MODEL))
    results = ResultsDB(root / "results")
    questions = _questions_folder(root / "questions")
    with VectorStore(local_root=root / "qdrant") as store:
        build_collection(BuildRequest(spec, documents), embedder, None, store, results)
        summaries = {}
        for run_id, retriever, own in (
            ("dense", "dense", False),
            ("hybrid", "hybrid", False),
            ("hybrid-again", "hybrid", False),
            ("keywords", "keywords_only_test", False),
            ("hybrid-own", "hybrid", True),
        ):
            summaries[run_id] = run_experiment(
                ExperimentRequest(
                    spec, run_id, questions, documents, top_k=3, retriever=retriever, filter_by_document=own
                ),
                embedder,
                store,
                results,
            )
        yield {
            "results": results,
            "summaries": summaries,
            "store": store,
            "spec": spec,
            "embedder": embedder,
            "documents": documents,
            "questions": questions,
        }
    RETRIEVERS.unregister("keywords_only_test")


def _hits(results, run_id):
    frame = results.query(
        f"SELECT question_id, retrieved FROM question_results WHERE experiment_run_id = '{run_id}' ORDER BY question_id"
    )
    return {
        q: [(h["rank"], h["chunk_id"], h["document"]) for h in json.loads(r)]
        for q, r in zip(frame.question_id, frame.retrieved)
    }


def test_hybrid_finds_the_quarter_the_dense_retriever_confuses(benchmark):
    results = benchmark["results"]
    results.ensure_database()
    metrics = results.query(
        "SELECT experiment_run_id, retriever, doc_mrr, hit_rate, retriever_index_bytes, "
        "retriever_index_seconds, query_ms FROM experiment_metrics"
    ).set_index("experiment_run_id")
    dense, hybrid = metrics.loc["dense"], metrics.loc["hybrid"]
    assert (dense.retriever, hybrid.retriever) == ("dense", "hybrid")
    assert hybrid.doc_mrr == 1.0  # every quarter's question: that quarter's filing first
    assert dense.doc_mrr < hybrid.doc_mrr
    # the keyword index's figures are recorded with the run (none for dense: the collection is its index)
    assert hybrid.retriever_index_bytes > 0 and hybrid.retriever_index_seconds > 0
    assert dense.retriever_index_bytes == 0 and hybrid.query_ms > 0
    for question, hits in _hits(results, "hybrid").items():
        period = int(question.rsplit("-", 1)[1])
        assert hits[0][2] == list(PERIODS)[period]


def test_the_same_inputs_give_the_same_hits(benchmark):
    results = benchmark["results"]
    first, again = _hits(results, "hybrid"), _hits(results, "hybrid-again")
    assert first == again and all(len(h) == 3 for h in first.values())


def test_the_leaderboard_has_a_row_per_retriever_with_the_one_registered_here(benchmark):
    results = benchmark["results"]
    from chunkbench_core.stages.comparison import compare_latest_runs

    results.ensure_database()
    compare_latest_runs(results)
    board = results.query("SELECT strategy, retriever, experiment_run_id, rank FROM leaderboard")
    # the latest run of each retriever (hybrid-again replaced hybrid); the own-documents run is not ranked here
    assert sorted(zip(board.retriever, board.experiment_run_id)) == [
        ("dense", "dense"),
        ("hybrid", "hybrid-again"),
        ("keywords_only_test", "keywords"),
    ]
    assert board["rank"].notna().all()  # each compared as a configuration of its own
    comparison = results.query("SELECT configuration, retriever FROM comparison ORDER BY configuration")
    assert "fixed_size × all-minilm-l6-v2 × hybrid" in set(comparison.configuration)
    assert "fixed_size × all-minilm-l6-v2" in set(comparison.configuration)  # dense: named as before
    recommended = results.query("SELECT configuration, retriever FROM recommendation").iloc[0]
    assert split_configuration_key(recommended.configuration)[2] == recommended.retriever
    # each row holds its retriever's figures (the ranking metric may tie them on four questions)
    doc_mrr = dict(results.query("SELECT retriever, doc_mrr FROM leaderboard").itertuples(index=False))
    assert doc_mrr["hybrid"] == 1.0 > doc_mrr["dense"]
    # the run setting accepts it (the registry as it is now), and refuses a name nobody registered
    settings = experiment_settings()
    assert settings(retrievers=["dense", "keywords_only_test"]).retrievers == ["dense", "keywords_only_test"]
    with pytest.raises(ValueError, match="unknown retriever 'bm42'.*hybrid"):
        settings(retrievers=["bm42"])


def test_within_its_own_documents_a_question_only_finds_them(benchmark):
    results = benchmark["results"]
    for question, hits in _hits(results, "hybrid-own").items():
        period = int(question.rsplit("-", 1)[1])
        assert {d for _, _, d in hits} == {list(PERIODS)[period]}
    results.ensure_database()
    by_setting = results.query("SELECT retriever, scope, experiment_run_id FROM leaderboard_by_setting")
    assert ("hybrid", "own_documents", "hybrid-own") in set(
        zip(by_setting.retriever, by_setting.scope, by_setting.experiment_run_id)
    )
    assert ("hybrid", "shared", "hybrid-again") in set(
        zip(by_setting.retriever, by_setting.scope, by_setting.experiment_run_id)
    )
    assert "hybrid-own" not in set(results.query("SELECT experiment_run_id FROM leaderboard").experiment_run_id)


def test_a_question_naming_two_documents_searches_both(benchmark):
    """The scope is every document the question's evidence names, searched batched and one at a time alike."""
    folder = benchmark["questions"].parent / "two-documents"
    folder.mkdir()
    names = list(PERIODS)
    (folder / "two.json").write_text(
        json.dumps(
            {
                "name": "two",
                "questions": [
                    {
                        "id": "two",
                        "question": "What were services net sales?",
                        "references": [
                            {"document": names[0], "content": f"${PERIODS[names[0]][2]} million"},
                            {"document": names[3], "content": f"${PERIODS[names[3]][2]} million"},
                        ],
                    }
                ],
            }
        )
    )
    sets, problems = load_question_sets(folder)
    assert not problems
    resolved, errors = resolve_questions(sets, {d.document: d.markdown for d in benchmark["documents"]})
    assert not errors
    for retriever in ("dense", "hybrid"):
        (outcome,) = run_retrieval(
            resolved,
            benchmark["embedder"],
            benchmark["store"],
            benchmark["spec"].collection,
            RetrievalOptions(top_k=6, filter_by_document=True, retriever=retriever),
        )
        assert outcome.error is None and {h.document for h in outcome.retrieved} == {names[0], names[3]}
        alone = RETRIEVERS.open(retriever, benchmark["store"], benchmark["spec"].collection).search_one(
            resolved[0].question.question,
            benchmark["embedder"].embed([resolved[0].question.question], "query")[0],
            6,
            (names[3], names[0]),
        )
        assert [h.chunk_id for h in alone] == [h.chunk_id for h in outcome.retrieved]


def test_persian_words_are_counted_as_english_ones_are():
    assert words("قیمت‌ها در سال ۱۴۰۲ افزايش يافت") == ["قیمت", "ها", "در", "سال", "1402", "افزایش", "یافت"]
    assert words("Net sales, April 1, 2023: $94,836") == ["net", "sales", "april", "1", "2023", "94", "836"]


def test_the_keyword_ranking_finds_a_persian_chunk_by_its_words(tmp_path):
    texts = {
        "report-1401.md": "درآمد عملیاتی شرکت در سال ۱۴۰۱ برابر با ۵۲۰ میلیارد ریال بود.",
        "report-1402.md": "درآمد عملیاتی شرکت در سال ۱۴۰۲ برابر با ۶۱۰ میلیارد ریال بود.",
        "notes.md": "The company's revenue is described in the annual report.",
    }
    chunks = [
        Chunk(make_chunk_id("fixed_size", name, 0), name, "fixed_size", 0, 0, len(text), text, 20)
        for name, text in texts.items()
    ]
    vectors = np.ones((len(chunks), 8), dtype=np.float32)  # every chunk alike to the dense ranking
    with VectorStore(local_root=tmp_path / "qdrant") as store:
        store.ensure_collection("fixed_size__persian", 8)
        store.replace_points("fixed_size__persian", chunks, vectors)
        retriever = RETRIEVERS.open("hybrid", store, "fixed_size__persian")
        ranking = retriever.keyword_ranking("درآمد عملیاتی سال 1402 چقدر بود؟", None)
        assert retriever.payloads[ranking[0][0]]["document"] == "report-1402.md"
        hits = retriever.search_one("درآمد عملیاتی سال 1402 چقدر بود؟", np.ones(8, dtype=np.float32), 2)
        assert [h.document for h in hits] == ["report-1402.md", "report-1401.md"]
        assert hits == retriever.search_one("درآمد عملیاتی سال 1402 چقدر بود؟", np.ones(8, dtype=np.float32), 2)


def test_ask_with_the_hybrid_retriever_finds_each_quarters_figure(benchmark):
    from chunkbench_core.evaluation.ask import AskRequest, ask
    from chunkbench_core.evaluation.ask import query_row
    from chunkbench_core.storage.records import now

    spec = benchmark["spec"]
    for name, (period, total, _) in PERIODS.items():
        request = AskRequest(
            f"What were total net sales for the three months ended {period}?",
            "fixed_size",
            spec.collection,
            top_k=3,
            retriever="hybrid",
        )
        result = ask(request, benchmark["embedder"], benchmark["store"])
        assert result.hits[0].document == name and f"${total} million" in result.hits[0].text
        assert "× hybrid" in result.to_text() and result.to_dict()["retriever"] == "hybrid"
    row = query_row(result, configuration_source="given", created_at=now())
    assert row["configuration"] == "fixed_size × all-minilm-l6-v2 × hybrid"


def test_the_recommendation_names_its_retriever_and_ask_follows_it():
    from chunkbench_core.evaluation.ask import choose_configuration
    from chunkbench_core.labels import configuration_key, configuration_label

    assert configuration_key("recursive", "e5", "dense") == configuration_key("recursive", "e5") == "recursive|e5"
    assert split_configuration_key("recursive|e5|hybrid") == ("recursive", "e5", "hybrid")
    assert split_configuration_key("recursive|e5") == ("recursive", "e5", "dense")
    assert configuration_label("recursive", "e5", retriever="hybrid") == "recursive × e5 × hybrid"
    recommended = {"strategy": "recursive", "corpus_model": "e5", "retriever": "hybrid"}
    choice = choose_configuration(None, None, recommended, ("e5", "registry"), [("recursive", "e5")])
    assert (choice.source, choice.retriever, choice.label) == ("recommended", "hybrid", "recursive × e5 × hybrid")
    # a recommendation recorded before retrievers existed is dense; a retriever asked for wins over it
    assert (
        choose_configuration(
            None, None, {"strategy": "recursive", "corpus_model": "e5"}, ("e5", "registry"), []
        ).retriever
        == "dense"
    )
    other = choose_configuration(None, None, recommended, ("e5", "registry"), [("recursive", "e5")], retriever="dense")
    assert (other.source, other.retriever) == ("defaults", "dense")


def test_the_reports_name_each_retrievers_configuration(benchmark, tmp_path):
    from chunkbench_core.reporting import write_reports
    from chunkbench_core.stages.comparison import compare_latest_runs

    results = benchmark["results"]
    results.ensure_database()
    compare_latest_runs(results)
    paths = write_reports(results, tmp_path / "reports")
    technical = Path(paths.technical).read_text(encoding="utf-8")
    assert "fixed_size × all-minilm-l6-v2 × hybrid" in technical
