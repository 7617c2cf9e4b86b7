"""The LLM path through the Dagster assets: answers and judge against a real llama.cpp server on 127.0.0.1.

The packaged gemma-3-270m is a base model, so its answers and verdicts are nonsense; what is
checked is the plumbing: every question gets an answer or a recorded answer error, every
answered question a verdict or a recorded judge error, tokens are counted, the run holds a
slot of the `openai_compatible` pool, and the API key never reaches DuckDB, Parquet,
reports or the event log.
"""

import duckdb
import pytest
from dagster import DagsterInstance

from tests.pipelines.support.partitions import environment_graph
from chunkbench_pipelines.definitions import build_resources
from chunkbench_pipelines.partitions import partition_key
from chunkbench_pipelines.resources import LLMResource
from tests.pipelines.support.environment import environment_settings

from .test_end_to_end import MODEL, workspace  # noqa: F401 - the fixture is used by name

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

SECRET = "sk-chunkbench-test-secret-7d1f"


def test_answers_and_judge_through_the_assets(workspace, llama_server_url, tmp_path):  # noqa: F811  (the fixture imported above, by name)
    home = workspace["home"]
    llm = LLMResource(
        model="gemma",
        base_url=f"{llama_server_url}/v1",
        api_key=SECRET,
        system_prompt_as_user=True,
        home=str(environment_settings().home),
        answer_max_tokens=16,
        judge_max_tokens=16,
        judge_max_tokens_cap=32,
        judge_attempts=1,
        max_context_tokens=200,
        timeout_seconds=120,
    )
    resources = {**build_resources(environment_settings()), "llm": llm}
    (tmp_path / "dagster_home").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "dagster_home")) as instance:
        parse = environment_graph().materialize(
            ["source_documents", "parsed_documents"], instance=instance, resources=resources
        )
        assert parse.success
        key = partition_key("fixed_size", MODEL)
        result = environment_graph().materialize(
            ["chunk_collections", "experiment_results"], partition_key=key, instance=instance, resources=resources
        )
        assert result.success
        [experiment] = result.asset_materializations_for_node(environment_graph().op("experiment_results"))
        assert "openai_compatible" in experiment.metadata["pool_wait_seconds"].value
        info = instance.event_log_storage.get_concurrency_info("openai_compatible")
        assert (info.slot_count, info.active_slot_count) == (2, 0)  # created at the default limit, then freed
        logs = [repr(entry) for run in (parse, result) for entry in instance.all_logs(run.run_id)]
        assert any("holding a slot of pool 'openai_compatible'" in line for line in logs)
        assert not any(SECRET in line for line in logs)
        event = instance.get_latest_materialization_event(environment_graph().key("experiment_results"))
        assert SECRET not in repr(event.asset_materialization.metadata)

    con = duckdb.connect(str(home / "chunkbench.duckdb"), read_only=True)
    con.execute("SET file_search_path = ?", [str(home)])  # the file's views read Parquet paths relative to it
    try:
        rows = con.execute(
            "SELECT question_id, answer, answer_error, answer_prompt_tokens, context_relevance, "
            "judge_error FROM question_results ORDER BY question_id"
        ).fetchall()
        totals = con.execute("SELECT answer_prompt_tokens, answer_completion_tokens FROM experiment_metrics").fetchall()
    finally:
        con.close()
    assert [r[0] for r in rows] == ["b1", "v1"]
    for question_id, answer, answer_error, prompt_tokens, relevance, judge_error in rows:
        assert (answer is not None) != (answer_error is not None), question_id
        if answer is not None:
            assert prompt_tokens > 0
            assert (relevance is not None) or judge_error, question_id
    assert totals and totals[0][0] > 0 and totals[0][1] > 0

    for path in workspace["chunkbench_home"].rglob("*"):
        if path.is_file() and path.suffix in (".parquet", ".html", ".json", ".duckdb", ".md"):
            assert SECRET.encode() not in path.read_bytes(), path
