"""Where the wall time of a test run went, worker by worker, from the timeline pytest wrote (``--timeline PATH``,
which ``make test`` passes: ``test-artifacts/timeline.jsonl``).

    python scripts/test_timeline.py [PATH] [--units N]

Prints, for the whole run and for each worker: when it started and ended, how long its tests took (setup and
teardown included), how long it waited between two tests, and the CPU time of the worker and of the processes it
waited for; then the end of the run (how long the last worker ran alone after each other one ended), and the
longest units (an xdist group, or a module's tests) with the worker that ran them, when, and their wall and CPU
time. A long unit that starts late and ends the run alone is what ``LONG_GROUPS`` in tests/conftest.py is for.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "test-artifacts" / "timeline.jsonl"


def read(path: Path) -> list[dict]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            raise SystemExit(f"{path}:{number}: not a JSON line (was the run stopped while writing it?)") from None
    if not rows:
        raise SystemExit(f"{path}: no test in it (run pytest with --timeline {path})")
    return rows


def unit(test: str) -> str:
    """What moves as a whole between workers: ``test@group`` is its xdist group (read as xdist reads it: an ``@``
    after the parameters' ``]``), else the test's module (whose tests xdist hands out one by one)."""
    if test.rfind("@") > test.rfind("]"):
        return "group " + test.split("@")[-1]
    return test.split("::")[0]


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def report(rows: list[dict], units: int = 15) -> str:
    begin = min(r["start"] for r in rows)
    end = max(r["end"] for r in rows)
    out = [
        f"{len(rows)} tests in {minutes(end - begin)} (min:s); tests' wall time {sum(r['end'] - r['start'] for r in rows):.0f} s, "
        f"CPU of the workers and the processes they waited for {sum(r['cpu'] for r in rows):.0f} s",
        "",
        "worker  start   end      tests  busy s  waiting s  CPU s",
    ]
    by_worker: dict[str, list[dict]] = collections.defaultdict(list)
    for row in sorted(rows, key=lambda r: r["start"]):
        by_worker[row["worker"]].append(row)
    ends = {}
    for worker, mine in sorted(by_worker.items()):
        busy = sum(r["end"] - r["start"] for r in mine)
        waiting = sum(max(0.0, b["start"] - a["end"]) for a, b in zip(mine, mine[1:]))
        ends[worker] = mine[-1]["end"]
        out.append(
            f"{worker:6s}  {minutes(mine[0]['start'] - begin):6s}  {minutes(mine[-1]['end'] - begin):7s}  "
            f"{len(mine):5d}  {busy:6.0f}  {waiting:9.1f}  {sum(r['cpu'] for r in mine):5.0f}"
        )
    out += ["", "the end of the run: each worker's last test ended at"]
    for worker, ended in sorted(ends.items(), key=lambda kv: kv[1]):
        last = by_worker[worker][-1]
        out.append(f"  {minutes(ended - begin)}  {worker}  ({end - ended:.0f} s before the end; last: {last['test']})")

    spans: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        key = (unit(row["test"]), row["worker"])
        span = spans.setdefault(key, [row["start"], row["end"], 0.0, 0.0, 0])
        span[0], span[1] = min(span[0], row["start"]), max(span[1], row["end"])
        span[2] += row["end"] - row["start"]
        span[3] += row["cpu"]
        span[4] += 1
    out += ["", f"the {units} longest units (a group, or a module's tests on one worker):"]
    out.append("  wall s  CPU s  tests  worker  from     to       unit")
    for (name, worker), (first, last, wall, cpu, count) in sorted(spans.items(), key=lambda kv: -kv[1][2])[:units]:
        out.append(
            f"  {wall:6.0f}  {cpu:5.0f}  {count:5d}  {worker:6s}  {minutes(first - begin):7s}  "
            f"{minutes(last - begin):7s}  {name}"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT, help=f"the timeline (default: {DEFAULT})")
    parser.add_argument("--units", type=int, default=15, help="how many of the longest units to list (default 15)")
    args = parser.parse_args(argv)
    if not args.path.exists():
        parser.error(f"{args.path}: no such file (make test writes it; or pytest --timeline {args.path})")
    print(report(read(args.path), args.units))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
