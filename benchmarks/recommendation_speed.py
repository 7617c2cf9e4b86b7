"""How long the stability of the recommendation takes: the whole rule on 1,000 resamples of the questions.

    python benchmarks/recommendation_speed.py [--configurations 14] [--questions 500] [--resamples 1000]

Synthetic paired scores (seeded): configurations a few hundredths apart with per-question noise, the
shape of a real benchmark. Printed side by side, measured in one run:

- the comparison itself (means, bounds, the one-sided randomization tests with 9,999 sign flips each,
  Holm), as ``compare_configurations`` runs it once per leaderboard;
- the stability: the whole rule on every resample, vectorised (``stability.stability``);
- the same rule run resample by resample through ``compare_configurations`` + ``recommend`` (what
  "apply the rule to each resample" would cost without the vectorised path), timed on a few resamples
  and scaled to all of them, and the ratio of the two.

The target: 14 configurations x 500 questions x 1,000 resamples well under 10 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.evaluation.recommendation import recommend
from chunkbench_core.evaluation.stability import resample_weights, stability
from chunkbench_core.evaluation.statistics import compare_configurations

TARGET_SECONDS = 10.0


def synthetic(configurations: int, questions: int, seed: int = 0) -> tuple[list[dict], dict[str, dict]]:
    """Rows of ``question_results`` shape and the cost rows of each configuration."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.3, 0.9, questions)
    rows, costs = [], {}
    for c in range(configurations):
        name = f"strategy{c:02d}"
        values = np.clip(base - 0.005 * c + rng.normal(0, 0.08, questions), 0, 1)
        rows += [
            {
                "strategy": name,
                "corpus_model": "model",
                "question_set": "synthetic",
                "question_id": f"q{i:05d}",
                "recall_at_512": float(v),
                "error": None,
            }
            for i, v in enumerate(values)
        ]
        costs[f"{name}|model"] = {
            "projected_usd": 0.0,
            "context_tokens": float(400 + 37 * ((c * 5) % 14)),
            "query_ms": float(10 + c),
            "index_seconds": 30.0,
        }
    return rows, costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configurations", type=int, default=14)
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--by-hand", type=int, default=5, help="resamples run one by one for the ratio")
    args = parser.parse_args()
    rows, costs = synthetic(args.configurations, args.questions)

    start = time.perf_counter()
    comparison = compare_configurations(rows, costs=costs)
    compared = time.perf_counter() - start
    pick = recommend(comparison, costs, resamples=0).configuration

    start = time.perf_counter()
    result = stability(comparison, costs, "cheapest_within_margin", pick, resamples=args.resamples)
    vectorised = time.perf_counter() - start

    scores = comparison.scores
    weights = resample_weights(len(scores.questions), args.by_hand, seed=1)
    start = time.perf_counter()
    for row in weights:
        drawn = [i for i, w in enumerate(row) for _ in range(int(w))]
        resampled = [
            {
                "strategy": n.split("|")[0],
                "corpus_model": "model",
                "question_set": "synthetic",
                "question_id": f"{k}",
                "recall_at_512": float(scores.values[i, j]),
                "error": None,
            }
            for k, i in enumerate(drawn)
            for j, n in enumerate(scores.names)
        ]
        recommend(compare_configurations(resampled, costs=costs), costs, resamples=0)
    by_hand = (time.perf_counter() - start) / args.by_hand * args.resamples

    shape = f"{args.configurations} configurations x {args.questions} questions"
    print(f"{shape}, {args.resamples:,} resamples (seeded); the machine may be shared, so the ratio is the figure")
    print(f"  comparison once (bounds, {args.configurations - 1} randomization tests, Holm): {compared:8.2f} s")
    print(
        f"  stability, vectorised:                                     {vectorised:8.2f} s"
        f"   ({'well under' if vectorised < TARGET_SECONDS / 4 else 'under' if vectorised < TARGET_SECONDS else 'OVER'}"
        f" the {TARGET_SECONDS:.0f} s target)"
    )
    print(
        f"  stability, resample by resample (from {args.by_hand}, scaled):         {by_hand:8.1f} s"
        f"   ({by_hand / vectorised:,.0f}x slower)"
    )
    print(
        f"  pick {pick}: {result.share:.0%} of the resamples; others: "
        + (", ".join(f"{n} {s:.0%}" for n, s in result.runner_ups[:3]) or "none")
    )


if __name__ == "__main__":
    main()
