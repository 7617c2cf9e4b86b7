"""Hostile corpora through the parsed_documents asset: each bad file fails alone, named, and the rest goes on."""

import pytest
from dagster import DagsterInstance

from chunkbench_core.storage.results_db import ResultsDB
from tests.pipelines.support.partitions import tides_graph

from .support.tides import tides_benchmark

BENCHMARK = "hostile"


@pytest.fixture()
def setup(tmp_path):
    tides = tides_benchmark(tmp_path, benchmark=BENCHMARK)
    corpus, home, results, resources = tides.corpus, tides.home, tides.results, tides.resources
    (tmp_path / "dagster_home").mkdir()
    instance = DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    yield {
        "tmp": tmp_path,
        "corpus": corpus,
        "home": home,
        "results": results,
        "resources": resources,
        "instance": instance,
        "graph": tides_graph(tides, BENCHMARK),
    }
    instance.dispose()


def parse_corpus(setup):
    result = setup["graph"].materialize(
        ["source_documents", "parsed_documents"], instance=setup["instance"], resources=setup["resources"]
    )
    assert result.success
    rows = ResultsDB(setup["results"]).query("SELECT document, status, error FROM documents ORDER BY document")
    return {d: (s, e) for d, s, e in rows.itertuples(index=False)}, result


@pytest.mark.slow
def test_a_document_over_the_memory_limit_fails_alone(setup):
    from chunkbench_pipelines.resources import WorkspaceResource

    workspace = setup["resources"]["workspace"]  # with CHUNKBENCH_PARSE_MEMORY_MB=512, as the settings pass it
    setup["resources"] = {
        **setup["resources"],
        "workspace": WorkspaceResource(
            home=workspace.home,
            corpus=workspace.corpus,
            questions=workspace.questions,
            benchmark=workspace.benchmark,
            parse_memory_mb="512",
        ),
    }
    (setup["corpus"] / "wide.csv").write_bytes(b"name,value\n" + b"x," * 12_000_000 + b"\n")
    documents, _ = parse_corpus(setup)
    assert documents["tides.md"][0] == "parsed"
    status, error = documents["wide.csv"]
    assert status == "failed"
    assert "wide.csv" in error and "memory limit of 512 MB (CHUNKBENCH_PARSE_MEMORY_MB)" in error


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_names_that_sanitise_alike_are_two_documents(setup):
    from chunkbench_pipelines.partitions import partition_key

    for name in ("report 2024.txt", "report-2024.txt"):
        (setup["corpus"] / name).write_text(f"Figures of {name}: sales rose in the north.\n", encoding="utf-8")
    documents, _ = parse_corpus(setup)
    assert documents["report 2024.txt"][0] == documents["report-2024.txt"][0] == "parsed"
    result = setup["graph"].materialize(
        ["chunk_collections"],
        instance=setup["instance"],
        resources=setup["resources"],
        partition_key=partition_key("fixed_size", "all-minilm-l6-v2"),
    )
    assert result.success
    rows = ResultsDB(setup["results"]).query(
        "SELECT document, count(DISTINCT chunk_id) FROM current_chunks GROUP BY document"
    )
    assert dict(rows.itertuples(index=False)) == {"tides.md": 1, "report 2024.txt": 1, "report-2024.txt": 1}


@pytest.mark.e2e  # materializes part of the asset graph (make test-fast leaves it out)
def test_a_link_outside_the_corpus_is_refused_and_hidden_files_are_counted(setup):
    import os

    outside = setup["tmp"] / "outside.md"
    outside.write_text("# Payroll\n\nEveryone's salary, which must never be indexed.\n", encoding="utf-8")
    os.symlink(outside, setup["corpus"] / "payroll.md")
    (setup["corpus"] / ".draft.md").write_text("hidden", encoding="utf-8")
    documents, result = parse_corpus(setup)
    status, error = documents["payroll.md"]
    assert status == "failed" and "payroll.md: symbolic link to a file outside the corpus" in error
    [materialization] = result.asset_materializations_for_node(setup["graph"].op("parsed_documents"))
    assert materialization.metadata["hidden_skipped"].value == 1
    parsed = list((setup["results"] / "parsed").glob("*.json"))
    assert parsed and all("salary" not in p.read_text(encoding="utf-8") for p in parsed)
