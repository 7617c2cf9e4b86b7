"""Big question files: how long checking them takes, and how much memory, side by side with the old search.

    python benchmarks/question_files.py [--questions 20000] [--excerpt-mb 2] [--old-excerpt-kb 200]

1. An excerpt not in the corpus (``--excerpt-mb`` of words) is looked for with the whitespace-tolerant
   search: the old one (a regular expression with one ``\\s+`` between words, searched over the document)
   on a smaller excerpt (``--old-excerpt-kb``: the old search is quadratic, a 2 MB excerpt took a minute),
   and the new one (a substring search of the collapsed texts) on the full one. Printed: seconds and
   microseconds per excerpt word for each, and the ratio per word.
2. A question set file of ``--questions`` questions (about 2.6 KB each, so 20,000 make about 53 MB), each
   with one reference into a 100-document corpus, is loaded and checked (``check_questions``: read, validate,
   locate every reference) in a fresh process: seconds and peak resident memory, printed next to the
   file's size and to the process's memory before loading.
3. The same questions as a plain file of answers (no references) get evidence located from their answers
   (``locate_questions``, one pass over the corpus): seconds and peak memory.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VOCABULARY = [f"w{i}" for i in range(6000)]


def corpus(seed: int = 7, documents: int = 100, words: int = 15_000) -> dict[str, str]:
    rng = random.Random(seed)
    out = {}
    for d in range(documents):
        paragraphs = []
        for _ in range(words // 60):
            paragraphs.append(" ".join(rng.choice(VOCABULARY) for _ in range(60)) + f" {rng.randint(1000, 99999):,}.")
        out[f"doc{d:03d}.md"] = "\n\n".join(paragraphs) + "\n"
    return out


def old_search(content: str, markdown: str):
    return re.compile(r"\s+".join(re.escape(word) for word in content.split())).search(markdown)


def excerpt_search(mb: float, old_kb: float) -> None:
    from chunkbench_core.evaluation.questions import find_whitespace_tolerant

    rng = random.Random(1)
    document = " ".join(rng.choice(VOCABULARY) for _ in range(400_000))

    # an excerpt made of the document's own words, in an order it never has: every word is a candidate start
    def excerpt(chars: float) -> str:
        words, size = [], 0
        while size < chars:
            words.append(rng.choice(VOCABULARY[:50]))
            size += len(words[-1]) + 1
        return " ".join(words)

    big, small = excerpt(mb * 1e6), excerpt(old_kb * 1e3)
    t0 = time.perf_counter()
    assert old_search(small, document) is None
    old_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert find_whitespace_tolerant(big, document) is None
    new_s = time.perf_counter() - t0
    old_per_word = old_s / len(small.split()) * 1e6
    new_per_word = new_s / len(big.split()) * 1e6
    print(f"excerpt not in a {len(document) / 1e6:.1f} MB document:")
    print(f"  old search, {len(small) / 1e3:,.0f} KB excerpt: {old_s:.2f} s ({old_per_word:.2f} us per word)")
    print(f"  new search, {len(big) / 1e6:,.1f} MB excerpt: {new_s:.2f} s ({new_per_word:.3f} us per word)")
    print(f"  per word, old / new: {old_per_word / max(new_per_word, 1e-9):,.0f}x")


CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path

def peak_mb():  # this process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited from the parent)
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")

before = peak_mb()
documents = json.loads(Path(sys.argv[3]).read_text())
t0 = time.perf_counter()
if sys.argv[4] == "check":
    from chunkbench_core.evaluation.question_check import check_questions
    check = check_questions(sys.argv[2], documents)
    what = f"{len(check.resolved)} questions usable, {len(check.problems)} problems"
else:
    from chunkbench_core.evaluation.locate import Locator, locate_questions
    from chunkbench_core.evaluation.questions import load_question_sets
    sets, _ = load_question_sets(sys.argv[2])
    _, report = locate_questions(sets[0].questions, Locator(documents))
    what = report.summary()
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "peak_mb": peak_mb(),
                  "before_mb": before, "what": what}))
"""


def big_file(n: int) -> None:
    docs = corpus()
    names = sorted(docs)
    rng = random.Random(3)
    with tempfile.TemporaryDirectory() as tmp:
        folder, plain = Path(tmp) / "questions", Path(tmp) / "plain"
        folder.mkdir()
        plain.mkdir()
        corpus_file = Path(tmp) / "corpus.json"
        corpus_file.write_text(json.dumps(docs))
        questions, answers = [], []
        for i in range(n):
            name = rng.choice(names)
            text = docs[name]
            start = rng.randrange(0, len(text) - 3000)
            start = text.index(" ", start) + 1
            content = text[start : start + 2400].rsplit(" ", 1)[0]
            questions.append(
                {
                    "id": f"q{i:05d}",
                    "question": f"Question {i} about {name}?",
                    "expected_answer": content[:150],
                    "references": [{"document": name, "content": content}],
                }
            )
            answers.append({"id": f"q{i:05d}", "question": f"Question {i}?", "expected_answer": content[:200]})
        path = folder / "big.json"
        path.write_text(json.dumps({"name": "big", "questions": questions}))
        (plain / "plain.json").write_text(json.dumps({"name": "plain", "questions": answers}))
        size = path.stat().st_size / 1e6
        for label, where, mode in (("check", folder, "check"), ("locate from answers", plain, "locate")):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(ROOT), str(where), str(corpus_file), mode],
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(out.stdout)
            print(
                f"{label}: {n:,} questions ({size:.0f} MB file with references), {len(docs)} documents "
                f"({sum(map(len, docs.values())) / 1e6:.0f} MB): {result['seconds']:.1f} s, peak "
                f"{result['peak_mb']:,.0f} MB (the process before reading anything: {result['before_mb']:,.0f} MB); "
                f"{result['what']}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--excerpt-mb", type=float, default=2.0)
    parser.add_argument("--old-excerpt-kb", type=float, default=200.0)
    args = parser.parse_args()
    excerpt_search(args.excerpt_mb, args.old_excerpt_kb)
    big_file(args.questions)
    print(f"(this process's peak: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB)")


if __name__ == "__main__":
    main()
