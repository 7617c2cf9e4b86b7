"""One real ``dagster dev`` for the tests that need the webserver and daemon (backfill, UI), and the one
patch of Dagster internals the pipeline tests need (with a guard on the Dagster version it was written for)."""

import json

import dagster
import pytest

from chunkbench_pipelines.report_server import ReportServer

from .support.dagster_server import DagsterServer, free_port

DOCS = {
    "rivers.md": "# Rivers\n\nThe Almo river floods its lower valley every April after the snow melts.\n",
    "bridges.md": "# Bridges\n\nThe Tarn footbridge was rebuilt in 1987 with a steel deck and oak rails.\n",
    "mills.md": "# Mills\n\nThe old Halden mill ground barley until 1952, powered by a twelve-metre wheel.\n",
}
QUESTIONS = [
    ("r1", "When does the Almo river flood?", "rivers.md", "floods its lower valley every April"),
    ("b1", "When was the Tarn footbridge rebuilt?", "bridges.md", "rebuilt in 1987 with a steel deck"),
    ("m1", "What did the Halden mill grind?", "mills.md", "ground barley until 1952"),
]


#: the Dagster release whose internals ``no_leftover_dagster_state_storage`` patches: after an upgrade, check
#: that the patch is still needed and still right (dagster/_core/storage/defs_state/base.py), then update this
PATCHED_DAGSTER_VERSION = "1.13.27"


def check_patched_dagster_version(version: str = dagster.__version__) -> None:
    """Fail loudly (every pipeline test) when Dagster is not the release the patch below was written for."""
    if version != PATCHED_DAGSTER_VERSION:
        pytest.fail(
            f"tests/pipelines/conftest.py patches Dagster internals written for dagster "
            f"{PATCHED_DAGSTER_VERSION}, but dagster {version} is installed: check "
            "no_leftover_dagster_state_storage against the new release, then update PATCHED_DAGSTER_VERSION",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def no_leftover_dagster_state_storage(monkeypatch):
    """Each pipeline test starts without a current Dagster defs-state storage, and never sees a dangling one.

    The current storage is a context variable set when an instance is entered. In the full suite, a
    storage whose instance had already been garbage-collected was still current when a later
    ``materialize`` loaded its definitions, which then failed with "Attempted to resolve undefined
    DagsterInstance weakref" (twice in CI, never when the test ran alone). A storage without a live
    instance counts as none here, which is what Dagster does when no instance was entered. Only the
    pipeline tests run Dagster in-process, so only they get the patch.
    """
    check_patched_dagster_version()
    from dagster._core.storage.defs_state.base import DefsStateStorage, _current_storage

    def current(cls):
        storage = _current_storage.get()
        weakref = getattr(storage, "_instance_weakref", None) if storage is not None else None
        return storage if weakref is not None and weakref() is not None else None

    monkeypatch.setattr(DefsStateStorage, "get", classmethod(current))
    token = _current_storage.set(None)
    yield
    _current_storage.reset(token)


def start_server(root):
    corpus, questions, home = root / "corpus", root / "questions", root / "home"
    corpus.mkdir()
    questions.mkdir()
    for name, text in DOCS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    (questions / "set.json").write_text(
        json.dumps(
            {
                "questions": [
                    {"id": i, "question": q, "references": [{"document": d, "content": c}]} for i, q, d, c in QUESTIONS
                ]
            }
        ),
        encoding="utf-8",
    )
    # the reports served on 127.0.0.1 as `make ui` serves them, and the code location told where
    reports = ReportServer(home / "benchmarks", free_port()).__enter__()
    env = {
        "CHUNKBENCH_HOME": str(home),
        "CHUNKBENCH_CORPUS": str(corpus),
        "CHUNKBENCH_QUESTIONS": str(questions),
        "CHUNKBENCH_BENCHMARK": "backfill",
        "CHUNKBENCH_REPORTS_URL": reports.url,
    }
    try:
        server = DagsterServer(root / "dagster_home", env, root / "dagster-dev.log")
    except BaseException:
        reports.__exit__(None, None, None)
        raise
    server.home = home  # type: ignore[attr-defined]  # the test's own attribute on the object
    server.log_path = root / "dagster-dev.log"  # type: ignore[attr-defined]  # the test's own attribute on the object
    server.reports = reports  # type: ignore[attr-defined]  # the test's own attribute on the object
    return server


def stop_server(server):
    server.stop()
    server.reports.__exit__(None, None, None)


@pytest.fixture(scope="session")
def dagster_dev(tmp_path_factory):
    """dagster dev with the default (SQLite) instance storage."""
    server = start_server(tmp_path_factory.mktemp("dagster-dev"))
    yield server
    stop_server(server)
