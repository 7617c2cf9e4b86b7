"""Progress lines: a start line, a rate and an ETA, at most every interval and once at the end; labels named by
the configuration in scope; inner loops quiet unless long; the wall time per stage; embedding counted in texts."""

import time

import pytest

from chunkbench_core import progress


@pytest.fixture
def lines():
    seen: list[progress.Progress] = []
    sink = seen.append
    progress.add_sink(sink)
    yield seen
    progress.remove_sink(sink)
    progress.clear_stop()


def test_line_has_done_total_unit_rate_elapsed_and_eta():
    line = progress.Progress("embedding", 1200, 5400, 32.0, "texts").line()
    assert line == "embedding: 1,200/5,400 texts, 38/s, 32 s elapsed, ETA 2 min"
    assert progress.Progress("parsing", 30, 2000, 600.0, "documents").line() == (
        "parsing: 30/2,000 documents, 3.0/min, 10 min elapsed, ETA 10.9 h"
    )
    done = progress.Progress("parsing", 5, 5, 2.0, "documents").line()
    assert done == "parsing: 5/5 documents, 2 s elapsed"  # no rate or ETA once finished


def test_the_eta_follows_the_share_of_the_work_when_items_differ_in_size(lines):
    """One 40 MB document and 2,000 small ones: with the big one done first, the work is almost finished (by
    count it would read as hours); with it still to come, most of the work is ahead."""
    sizes = [40_000_000] + [1_000] * 2000
    tracker = progress.Tracker("parsing", len(sizes), every_s=0.0, unit="documents", weights=sizes)
    time.sleep(0.02)
    tracker.step(1)
    first = lines[-1]
    assert first.share == pytest.approx(40_000_000 / 42_000_000)
    assert first.eta_s < first.elapsed_s * 0.06  # by count: 2,000 times the elapsed time
    by_count = progress.Progress("parsing", 1, 2001, 10.0, "documents")
    assert by_count.eta_s == pytest.approx(20_000.0)
    assert progress.Progress("parsing", 1, 2001, 10.0, "documents", share=0.95).line().endswith("ETA 1 s")
    later = progress.Tracker("parsing", 3, every_s=0.0, unit="documents", weights=[1, 1, 98])
    time.sleep(0.02)
    later.step(2)
    assert lines[-1].share == pytest.approx(0.02) and lines[-1].eta_s > lines[-1].elapsed_s * 40
    with pytest.raises(ValueError, match="2 weights for 3 items"):
        progress.Tracker("parsing", 3, weights=[1, 2])


def test_tracker_reports_start_interval_and_end_once(lines):
    tracker = progress.Tracker("retrieval", 100, every_s=0.15, unit="questions")
    assert [p.done for p in lines] == [0]
    for done in range(1, 50):
        tracker.step(done)  # too soon after the start line: nothing
    assert [p.done for p in lines] == [0]
    time.sleep(0.16)
    tracker.step(50)
    tracker.step(100)
    tracker.step(100)  # the end is said once
    assert [p.done for p in lines] == [0, 50, 100]
    assert lines[1].rate is not None and lines[1].eta_s is not None


def test_one_long_item_still_gets_a_line_every_interval_naming_it(lines):
    """Chunking one 40 MB document among small ones: lines keep coming while it is done, naming it, and stop
    when the loop ends."""
    tracker = progress.Tracker("chunking", 3, every_s=0.2, unit="documents")
    with tracker.heartbeat():
        tracker.begin("small.txt, 900 characters")
        tracker.step(1)
        tracker.begin("big.txt, 40.0 million characters")
        time.sleep(0.75)  # the big one: no step for more than three intervals
        tracker.step(2)
        tracker.begin("other.txt, 800 characters")
        tracker.step(3)
    beats = [p for p in lines if p.current]
    assert len(beats) >= 2 and all(
        p.done == 1 and p.current.startswith("big.txt, 40.0 million characters (") for p in beats
    )
    assert "still on big.txt, 40.0 million characters (" in beats[0].line()
    gaps = [b.elapsed_s - a.elapsed_s for a, b in zip(lines, lines[1:])]
    assert max(gaps) < 0.6  # silent for at most about one interval (a loaded machine wakes threads late)
    count = len(lines)
    time.sleep(0.5)
    assert len(lines) == count and lines[-1].done == 3  # the heartbeat stopped with the block
    assert progress.characters(900) == "900 characters" and progress.characters(40_000_000) == "40.0 million characters"
    assert progress.file_size(2_900) == "3 KB" and progress.file_size(40_000_000) == "40.0 MB"


def test_after_one_long_item_the_short_ones_give_no_line_each(lines):
    tracker = progress.Tracker("chunking", 50, every_s=0.2, unit="documents")
    time.sleep(0.3)  # the first item is long
    tracker.step(1)
    for done in range(2, 40):
        tracker.step(done)
    assert [p.done for p in lines] == [0, 1]


def test_scope_names_the_configuration_and_inner_loops_stay_quiet_unless_long(lines):
    with progress.scope("fixed_size × all-minilm-l6-v2"):
        progress.Tracker("embedding", 10, unit="texts").step(10)
        with progress.inner("boundary model"):
            short = progress.Tracker("embedding", 10, unit="texts")
            short.step(10)  # short: no line at all
            long = progress.Tracker("embedding", 10, every_s=0.01, unit="texts")
            time.sleep(0.02)
            long.step(5)
            long.step(10)
    labels = [(p.label, p.done) for p in lines]
    assert labels == [
        ("embedding fixed_size × all-minilm-l6-v2", 0),
        ("embedding fixed_size × all-minilm-l6-v2", 10),
        ("boundary model embedding fixed_size × all-minilm-l6-v2", 5),
        ("boundary model embedding fixed_size × all-minilm-l6-v2", 10),
    ]


def test_a_stop_request_ends_the_loop_at_its_next_step(lines):
    tracker = progress.Tracker("parsing", 3, unit="documents")
    progress.request_stop("SIGTERM received")
    with pytest.raises(progress.StopRequested, match="SIGTERM"):
        tracker.step(1)


def test_a_broken_sink_does_not_fail_the_work(lines):
    def broken(_p):
        raise OSError("terminal closed")

    with progress.sink(broken):
        progress.Tracker("parsing", 2, unit="documents").step(2)
    assert [p.done for p in lines] == [0, 2]


def test_stage_clock_adds_the_wall_time_of_timed_blocks():
    clock = progress.StageClock()
    progress.add_clock(clock)
    try:
        with progress.timed("embedding"):
            time.sleep(0.05)
        with progress.timed("embedding"):
            time.sleep(0.05)
        progress.add_time("indexing", 1.5)
    finally:
        progress.remove_clock(clock)
    with progress.timed("embedding"):  # no clock registered: nothing counted
        time.sleep(0.01)
    seconds = clock.seconds()
    assert 0.09 <= seconds["embedding"] < 1.0 and seconds["indexing"] == 1.5


def test_embedding_reports_its_progress_in_texts(lines):
    from chunkbench_core.embedding import Embedder, get_model
    from chunkbench_core.embedding.local import MEMO

    MEMO.clear()
    embedder = Embedder(get_model("all-minilm-l6-v2"))
    texts = [f"note {i}: the harbour of Quelm floods {i % 7} times a week" for i in range(300)]
    with progress.scope("fixed_size × all-minilm-l6-v2"):
        embedder.embed(texts, "document")
    embedding = [p for p in lines if p.label == "embedding fixed_size × all-minilm-l6-v2"]
    assert embedding[0].done == 0 and embedding[0].total == 300 and embedding[0].unit == "texts"
    assert embedding[-1].done == 300
    lines.clear()
    embedder.embed(texts[:10], "query")  # a few texts: no lines
    assert lines == []


def test_a_step_that_is_quick_on_most_corpora_says_nothing_unless_it_runs_long(lines):
    quick = progress.Tracker("indexing", 100, every_s=0.2, unit="chunks", only_when_long=True)
    for done in range(0, 101, 10):
        quick.step(done)
    assert lines == []  # neither a start nor an end line
    slow = progress.Tracker("indexing", 100, every_s=0.2, unit="chunks", only_when_long=True)
    slow.step(0)
    time.sleep(0.25)
    slow.step(50)
    slow.step(100)
    assert [p.done for p in lines] == [50, 100] and lines[0].label == "indexing"
