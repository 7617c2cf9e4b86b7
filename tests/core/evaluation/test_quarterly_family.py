"""Near-identical quarterly reports: each quarter's total net sales is found in the top 3 for that quarter's question.

Four reports of one company (tests/support/quarterly_reports.py) share every statement and differ in the
quarter and the figures; the report for the first quarter of 2024 also prints the first quarter of 2023's
figures as its comparison column. Real MiniLM, a real embedded Qdrant and the real results database: each
configuration is built with the collections stage and asked with the core ``ask``, as ``chunkbench ask`` does.

Measured here (MiniLM, its default sizes, top 3; quarters whose figure is in the top 3, of 4): structural 0
without the document header and 4 with it; page 4 and 4; fixed_size 4 without and 0 with; element 4 and 3;
recursive 1 and 3; contextual_retrieval (headings, the header included by default) 3. The table rows'
header-value pairs ("Three Months Ended March 31, 2023: 86,160") are what lets any configuration name the
quarter's column; the header is what tells structural's one-row chunks of four identical tables apart.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chunkbench_core.embedding import Embedder, builtin_registry, get_model
from chunkbench_core.evaluation.ask import AskRequest, ask
from chunkbench_core.evaluation.questions import load_question_set
from chunkbench_core.parsing import parse
from chunkbench_core.stages.collections import BuildRequest, build_collection, read_build_chunks
from chunkbench_core.stages.spec import CollectionRequest, SpecContext, resolve_collection
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import VectorStore
from tests.support.quarterly_reports import QUARTERS, figure_text, total_net_sales, write_family

pytestmark = pytest.mark.slow  # builds four collections of four PDFs with MiniLM

MODEL = "all-minilm-l6-v2"


@pytest.fixture(scope="module")
def family(tmp_path_factory):
    root = tmp_path_factory.mktemp("quarterly")
    docs, question_file = write_family(root)
    documents = [parse(path) for path in sorted(docs.glob("*.pdf"))]
    embedder = Embedder(get_model(MODEL))
    results = ResultsDB(root / "results")
    store = VectorStore(local_root=root / "qdrant")
    yield {"documents": documents, "questions": question_file, "embedder": embedder, "results": results, "store": store}
    store.close()


def found_quarters(family, strategy: str, document_context: bool) -> list[str]:
    """The quarters whose total net sales are in the top 3 hits for their question."""
    request = CollectionRequest(strategy, MODEL, options={"document_context": document_context})
    spec = resolve_collection(request, SpecContext(builtin_registry()))
    embedder = family["embedder"]
    build_collection(
        BuildRequest(spec, family["documents"]),
        embedder,
        embedder if spec.boundary_model else None,
        family["store"],
        family["results"],
    )
    _, rows = read_build_chunks(family["results"], spec.rows_key)
    questions = json.loads(Path(family["questions"]).read_text(encoding="utf-8"))["questions"]
    found = []
    for question in questions:
        result = ask(
            AskRequest(question["question"], strategy, spec.collection, chunk_rows=rows, top_k=3),
            embedder,
            family["store"],
            None,
            None,
        )
        assert len(result.hits) == 3
        if any(question["metadata"]["figure"] in hit.text for hit in result.hits):
            found.append(question["metadata"]["quarter"])
    return found


def test_the_question_file_cites_each_quarters_row_and_page(family):
    question_set = load_question_set(family["questions"])
    assert not question_set.errors and len(question_set.questions) == len(QUARTERS) >= 4
    by_name = {d.document: d for d in family["documents"]}
    headers = {d.context["header"] for d in family["documents"]}
    assert len(headers) == len(QUARTERS)  # the header is what differs in the documents' words about themselves
    raw = json.loads(Path(family["questions"]).read_text(encoding="utf-8"))["questions"]
    for quarter, question, data in zip(QUARTERS, question_set.questions, raw):
        figure = figure_text(total_net_sales(quarter.key))
        assert quarter.ended in question.question and data["metadata"]["figure"] == figure
        (reference,) = question.references
        document = by_name[reference.document]
        start = document.markdown.index(reference.content)
        assert reference.content.startswith("Total net sales") and reference.content.endswith(figure)
        assert f"Three Months Ended {quarter.ended}: {figure}" in reference.content
        assert reference.page == document.page_span(start, start + len(reference.content))[0] == 1
        assert question.pages == ((reference.document, 1),)


def test_the_document_header_finds_each_quarters_figure_with_structural_chunks(family):
    assert found_quarters(family, "structural", True) == [q.key for q in QUARTERS]
    # without it, the same row of four identical tables is a coin toss between the reports
    assert len(found_quarters(family, "structural", False)) < len(QUARTERS)


def test_page_chunks_find_each_quarters_figure(family):
    assert found_quarters(family, "page", True) == [q.key for q in QUARTERS]
