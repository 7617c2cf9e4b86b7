"""Big inputs in bounded memory: many small text files, one big text, many questions, through ``chunkbench run``.

    python benchmarks/big_inputs.py [--small 2000] [--big-mb 40] [--questions 20000]
                                    [--strategy fixed_size] [--corpus-model all-minilm-l6-v2] [--keep] [--core]

In a temporary folder (nothing of yours is read or written), it writes ``--small`` text files of a few hundred
words, one text of ``--big-mb`` MB, and a question file of ``--questions`` questions whose evidence is a sentence
of one of the documents (a tenth of them in the big text). Then it runs ``chunkbench run`` on one configuration
(as a user would: Dagster, the parse workers, the embedded vector store, DuckDB) and, while it runs, reads the
memory of the whole process tree every half second from /proc:

- peak: the largest sum of the resident memory of every process of the tree at one moment (what the machine
  had to hold), and the largest VmHWM (peak resident memory) of any one process;
- time: each stage's wall time, from the run's own progress lines (parsing, chunking, embedding, retrieval)
  and its stage summary; the scoring of the questions is the retrieval stage.

``--core`` runs only parsing, chunking and the chunk checks through the core functions in this process, one
document at a time (no embedding, no Dagster), and prints this process's peak memory after each: the
document-bound stages at full scale in minutes, where the whole run's embedding takes the model's time.

The progress lines are printed as they come, with the seconds since the start, so the benchmark also shows
that every stage reports at least every 10 s. The machine may be shared with other work: times are those of
this one run; the memory figures do not depend on the load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORDS = (
    "harbour tide ferry quay lantern rope anchor gull beacon pier north south river valley bridge mill "
    "barley wheel stone market square tower bell clock winter summer spring autumn rain snow wind storm "
    "ledger invoice contract tenant council permit survey record archive"
).split()


def sentence(rng: random.Random, tag: str) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16)))
    return f"Entry {tag}: the {words} was logged."


def write_inputs(folder: Path, n_small: int, big_mb: float, n_questions: int, seed: int = 0) -> dict[str, object]:
    """The corpus and the question file; returns what was written."""
    rng = random.Random(seed)
    corpus, questions = folder / "corpus", folder / "questions"
    corpus.mkdir(parents=True)
    questions.mkdir()
    evidence: list[tuple[str, str]] = []
    for i in range(n_small):
        lines = [sentence(rng, f"s{i}-{j}") for j in range(rng.randint(20, 40))]
        (corpus / f"small_{i:05d}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        evidence.append((f"small_{i:05d}.txt", lines[rng.randrange(len(lines))]))
    big_bytes = int(big_mb * 1_000_000)
    big_evidence: list[str] = []
    if big_bytes:
        with open(corpus / "big.txt", "w", encoding="utf-8") as handle:
            written, j = 0, 0
            while written < big_bytes:
                line = sentence(rng, f"b{j}")
                if j % 20 == 0:
                    line = "\n" + line  # paragraphs of about twenty sentences
                if j % 997 == 0:
                    big_evidence.append(line.strip())
                handle.write(line + "\n")
                written += len(line) + 1
                j += 1
    items = []
    for q in range(n_questions):
        if big_evidence and q % 10 == 0:
            document, text = "big.txt", big_evidence[(q // 10) % len(big_evidence)]
        else:
            document, text = evidence[q % len(evidence)] if evidence else ("big.txt", big_evidence[0])
        tag = text.split(":")[0]
        items.append(
            {
                "id": f"q{q}",
                "question": f"What was logged at {tag.lower()} (question {q})?",
                "references": [{"document": document, "content": text}],
            }
        )
    (questions / "big.json").write_text(json.dumps({"name": "big", "questions": items}), encoding="utf-8")
    size = sum(p.stat().st_size for p in corpus.iterdir())
    return {"documents": n_small + (1 if big_bytes else 0), "corpus_mb": size / 1e6, "questions": n_questions}


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(_children(current))
    return out


def _status(pid: int) -> dict[str, int]:
    values = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                name, _, rest = line.partition(":")
                if name in ("VmRSS", "VmHWM"):
                    values[name] = int(rest.split()[0]) * 1024
    except OSError:
        pass
    return values


class TreeMemory:
    """Polls the memory of a process tree: the largest summed resident memory, the largest VmHWM of one process."""

    def __init__(self, pid: int, every_s: float = 0.5) -> None:
        self.pid, self.every_s = pid, every_s
        self.peak_sum = 0
        self.peak_process = 0
        self.peak_name = ""
        self.stage = "starting"  # the stage of the last progress line read (set by the reader)
        self.by_stage: dict[str, int] = {}  # the largest summed resident memory seen during each stage
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> "TreeMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.is_set():
            total = 0
            for pid in _tree(self.pid):
                status = _status(pid)
                total += status.get("VmRSS", 0)
                if status.get("VmHWM", 0) > self.peak_process:
                    self.peak_process = status["VmHWM"]
                    try:
                        self.peak_name = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")[:80].decode()
                    except OSError:
                        pass
            self.peak_sum = max(self.peak_sum, total)
            self.by_stage[self.stage] = max(self.by_stage.get(self.stage, 0), total)
            self._stop.wait(self.every_s)


def stage_of(line: str, current: str) -> str:
    """The stage a progress line starts ("    retrieval fixed_size × ...: 5/20 questions" -> "retrieval"), or the
    current one; the summary and report lines after the last loop count as "finishing"."""
    text = line.strip()
    if line.startswith("    ") and ":" in text and "/" in text.split(":", 1)[1]:
        head = text.split(":", 1)[0]
        return head[: head.index("×")].rsplit(" ", 2)[0] if "×" in head else head
    if text.startswith(("rank:", "warnings:", "DuckDB:", "Report:")):
        return "finishing"
    return current


def own_peak() -> int:
    """This process's VmHWM in bytes."""
    return _status(os.getpid()).get("VmHWM", 0)


def core_stages(folder: Path, strategy: str, corpus_model: str) -> None:
    """Parsing, chunking and the chunk checks of every document through the core, in this process, one document
    at a time as the pipeline does (no embedding: its memory is one batch; its time is the model's)."""
    from chunkbench_core import progress
    from chunkbench_core.chunking.checks import check_chunks
    from chunkbench_core.embedding import builtin_registry
    from chunkbench_core.parsing import parse
    from chunkbench_core.stages.collections import build_chunker, chunk_corpus
    from chunkbench_core.stages.spec import CollectionRequest, SpecContext, model_window, resolve_collection
    from chunkbench_core.storage.corpus import ParsedStore, scan_corpus

    sources = scan_corpus(folder / "corpus")
    store = ParsedStore(folder / "parsed", "benchmark")
    started = time.perf_counter()
    for source in sources:
        parsed = parse(source.path)
        parsed.document = source.document
        store.put(source, parsed, None)
    print(
        f"  parsing {len(sources):,} documents: {time.perf_counter() - started:.0f} s, "
        f"peak {gb(own_peak())} (this process)",
        flush=True,
    )
    spec = resolve_collection(CollectionRequest(strategy, corpus_model), SpecContext(builtin_registry()))
    window = model_window(spec.model)
    chunker = build_chunker(spec, window)
    started = time.perf_counter()
    n_chunks = 0
    # the progress lines a run prints while a document is chunked and its chunks checked, with the longest gap
    # between two of them while one document (the big one) is worked on
    last, longest, big = [time.perf_counter()], [0.0], [False]

    def show(line: Any) -> None:
        if not big[0]:  # the small documents' lines: neither shown nor counted
            return
        now = time.perf_counter()
        longest[0] = max(longest[0], now - last[0])
        last[0] = now
        print(f"    [{now - started:6.1f} s] {line.line()}", flush=True)

    with progress.sink(show):
        for source in sources:
            document = store.load_parsed(source)
            assert document is not None
            last[0], big[0] = time.perf_counter(), len(document.markdown) >= 1_000_000
            with progress.scope(source.document):
                chunks = chunk_corpus(spec, chunker, [document])
                check_chunks(
                    chunks,
                    {document.document: document.markdown},
                    spec.model.max_input_tokens,
                    window.count_tokens,
                    spec.overflow,
                    task_prefix=spec.model.document_prefix,
                )
            n_chunks += len(chunks)
    print(
        f"  chunking and checking: {n_chunks:,} chunks in {time.perf_counter() - started:.0f} s, "
        f"peak {gb(own_peak())} (this process, the model's tokenizer loaded); longest gap between progress "
        f"lines while a document of 1 MB or more was chunked and checked: {longest[0]:.1f} s",
        flush=True,
    )


def gb(value: float) -> str:
    return f"{value / 1e9:.2f} GB"


def record_run(folder: Path, written: dict[str, Any], configuration: str, wall: float, memory: Any) -> str:
    """Keep this full-scale run's figures in docs/timings.json (scripts/record_timings.py), which the progress page
    shows: the stages as the run itself timed them (its run_estimates row), the peaks measured here."""
    import importlib.util

    from chunkbench_core.storage.results_db import ResultsDB

    [results_dir] = [p.parent for p in (folder / "home" / "benchmarks").glob("*/chunkbench.duckdb")]
    results = ResultsDB(results_dir)
    actual = json.loads(
        results.query("SELECT actual FROM run_estimates WHERE actual IS NOT NULL ORDER BY created_at DESC LIMIT 1")[
            "actual"
        ].iloc[0]
    )
    chunks = int(results.query("SELECT count(*) AS n FROM current_chunks")["n"].iloc[0])
    # the run's own clock calls the questions' stage retrieval; the semantic cuts' model time is part of chunking
    names = {
        "parsing": "parsing",
        "chunking": "chunking",
        "embedding": "embedding",
        "indexing": "indexing",
        "retrieval": "questions",
        "finishing": "finishing",
    }
    stages = {names[k]: round(v, 1) for k, v in actual["stages"].items() if k in names}
    spec = importlib.util.spec_from_file_location("record_timings", ROOT / "scripts" / "record_timings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.record(
        "big_inputs",
        {
            "documents": written["documents"],
            "corpus_mb": round(written["corpus_mb"], 1),
            "questions": written["questions"],
            "chunks": chunks,
            "configuration": configuration,
            "stages": stages,
            "wall_seconds": round(wall, 1),
            "peak_gb": round(memory.peak_sum / 1e9, 2),
            "peak_process_gb": round(memory.peak_process / 1e9, 2),
        },
    )
    return "recorded in docs/timings.json (the progress page's table rewritten)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=2000, help="small text files (default 2000)")
    parser.add_argument("--big-mb", type=float, default=40.0, help="size of the big text in MB (default 40)")
    parser.add_argument("--questions", type=int, default=20000, help="questions (default 20000)")
    parser.add_argument("--strategy", default="fixed_size")
    parser.add_argument("--corpus-model", default="all-minilm-l6-v2")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    parser.add_argument(
        "--no-record", action="store_true", help="do not keep a full-scale run's figures in docs/timings.json"
    )
    parser.add_argument(
        "--core",
        action="store_true",
        help="only parsing, chunking and the checks, through the core in this process (no embedding, "
        "no Dagster): the memory of the document-bound stages at full scale in minutes",
    )
    args = parser.parse_args()
    print("big inputs through chunkbench run (the machine may be shared: times are this run's)")
    folder = Path(tempfile.mkdtemp(prefix="chunkbench-big-"))
    try:
        started = time.perf_counter()
        written = write_inputs(folder, args.small, args.big_mb, args.questions)
        print(
            f"inputs: {written['documents']:,} documents, {written['corpus_mb']:.1f} MB, "
            f"{written['questions']:,} questions (written in {time.perf_counter() - started:.0f} s) in {folder}"
        )
        if args.core:
            core_stages(folder, args.strategy, args.corpus_model)
            return 0
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHUNKBENCH_", "DAGSTER_"))}
        env.update(
            {
                "CHUNKBENCH_HOME": str(folder / "home"),
                "CHUNKBENCH_CORPUS": str(folder / "corpus"),
                "CHUNKBENCH_QUESTIONS": str(folder / "questions"),
                "PYTHONPATH": str(ROOT),
            }
        )
        command = [
            sys.executable,
            "-m",
            "chunkbench_pipelines.cli",
            "run",
            "--strategy",
            args.strategy,
            "--corpus-model",
            args.corpus_model,
        ]
        started = time.perf_counter()
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        longest_silence, last = 0.0, time.perf_counter()
        stages: list[str] = []
        with TreeMemory(process.pid) as memory:
            assert process.stdout is not None
            for line in process.stdout:
                now = time.perf_counter()
                memory.stage = stage_of(line, memory.stage)
                if line.startswith("    ") or line.startswith("wall time") or line.startswith("estimate against"):
                    longest_silence = max(longest_silence, now - last)
                    last = now
                if (
                    line.startswith(("wall time", "estimate against", "  "))
                    and "×" in line
                    or line.startswith(("wall time", "estimate against", "work:", "total:"))
                ):
                    stages.append(line.rstrip())
                print(f"[{now - started:7.1f} s] {line.rstrip()}", flush=True)
            code = process.wait()
        wall = time.perf_counter() - started
        print("\nresult")
        print(f"  exit code {code}; wall time {wall:.0f} s")
        print(
            f"  peak memory of the process tree: {gb(memory.peak_sum)} (summed resident memory at one moment); "
            f"largest single process: {gb(memory.peak_process)} ({memory.peak_name.strip()})"
        )
        print(f"  longest gap between progress lines: {longest_silence:.1f} s")
        print("  peak summed memory by stage (the stage of the last progress line before it):")
        for stage, peak in memory.by_stage.items():
            print(f"    {stage}: {gb(peak)}")
        for line in stages:
            print(f"  {line}")
        full_scale = (args.small, args.big_mb, args.questions) == (2000, 40.0, 20000)
        if code == 0 and full_scale and not args.no_record:
            print(record_run(folder, written, f"{args.strategy} × {args.corpus_model}", wall, memory))
        return code
    finally:
        if args.keep:
            print(f"kept: {folder}")
        else:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
