"""Evidence location on a document that is one long line: time grows with the document, not with its square.

    python benchmarks/locate_long_line.py [--mb 5] [--answers 20]

Writes nothing. Builds in memory a document of ``--mb`` MB with no line break (sentences of words and figures,
as a text extracted without its layout), and a fifth of that size, and locates the evidence of ``--answers``
answers (each a sentence of the document, with its figures) in each. Prints the seconds for both and their
ratio: linear time gives a ratio near 5 (the sizes' ratio); the quadratic search it replaced gave about 25 (it
took over two minutes for 1 MB, and would take about an hour for 5 MB). Other work may share the machine: read
the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import random
import time

from chunkbench_core.evaluation.locate import Locator, Search


def document(n_chars: int, seed: int = 7) -> tuple[str, list[str]]:
    rng = random.Random(seed)
    words = [
        f"{a}{b}"
        for a in ("rev", "cost", "net", "cash", "sales", "tax", "fee", "loan")
        for b in ("enue", "ings", "flow", "margin", "ratio", "base", "line", "item")
    ]
    sentences = []
    size = 0
    while size < n_chars:
        figure = f"{rng.randint(100, 999)},{rng.randint(100, 999)}"
        sentence = (
            " ".join(rng.choice(words) for _ in range(rng.randint(8, 20))) + f" was ${figure} million in the period."
        )
        sentences.append(sentence)
        size += len(sentence) + 1
    return " ".join(sentences), sentences


def run(n_chars: int, n_answers: int) -> float:
    text, sentences = document(n_chars)
    rng = random.Random(11)
    answers = [rng.choice(sentences) for _ in range(n_answers)]
    began = time.perf_counter()
    locator = Locator({"one-line.txt": text})
    found = locator.locate([Search(f"q{i}", a, ("one-line.txt",)) for i, a in enumerate(answers)])
    seconds = time.perf_counter() - began
    n_found = sum(bool(v) for v in found.values())
    print(f"{len(text) / 1e6:.1f} MB on one line, {n_answers} answers: {seconds:.1f} s, evidence for {n_found}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=5.0)
    parser.add_argument("--answers", type=int, default=20)
    args = parser.parse_args()
    small = run(int(args.mb * 1e6 / 5), args.answers)
    big = run(int(args.mb * 1e6), args.answers)
    print(f"ratio {big / small:.1f} for 5 times the size (linear: about 5; quadratic: about 25)")


if __name__ == "__main__":
    main()
