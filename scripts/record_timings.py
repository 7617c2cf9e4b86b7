"""The timings the README and docs quote: recorded when they are measured, written into the pages from the record.

    python scripts/record_timings.py demo [--results DIR]     the last `chunkbench run` of the sample (make demo)
    python scripts/record_timings.py command NAME -- CMD ...  run CMD, time it, record it as NAME if it passes
                                                              (make test, make test-fast: NAME make_test, ...)
    python scripts/record_timings.py --write                  rewrite the pages' blocks from the record
    python scripts/record_timings.py --check                  exit 1 when a page's block differs from the record

The record is ``docs/timings.json``: one entry per figure, each with the day it was measured and the machine
(CPU model and cores). ``benchmarks/big_inputs.py`` records its full-scale run the same way (``record``). Every
page holds the figures between ``<!-- generated: timings NAME -->`` and ``<!-- end of generated timings -->``;
``--write`` (and every recording) rewrites those blocks, and ``tests/core/test_recorded_timings.py`` fails when a
block is not what the record gives. Nothing here is typed by hand: measure again and the pages follow.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "docs" / "timings.json"
BLOCK = re.compile(
    r"<!-- generated: timings (?P<name>[a-z0-9-]+) -->\n(?P<body>.*?)<!-- end of generated timings -->", re.S
)


def pages() -> list[Path]:
    """The pages that may hold generated timing blocks: the README and every page of docs/."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def machine() -> str:
    """The CPU model and the number of cores, as the figures were measured on them."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    model = re.sub(r"\s+", " ", model or platform.processor() or platform.machine() or "unknown CPU")
    return f"{model} with {os.cpu_count() or 1} cores"


def read_record(path: Path | None = None) -> dict[str, dict[str, Any]]:
    path = path or RECORD
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def record(name: str, figures: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """Keep ``figures`` as the last measurement of ``name``, stamped with today's date and this machine, and
    rewrite the pages' blocks."""
    path = path or RECORD
    entries = read_record(path)
    entry = {"measured_on": datetime.date.today().isoformat(), "machine": machine(), **figures}
    entries[name] = entry
    path.write_text(json.dumps(entries, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    write_pages(entries)
    return entry


# --- how each figure reads --------------------------------------------------------------------------------------


def duration(seconds: float) -> str:
    """``47 s``, ``1 min 33 s``, ``56 min``, ``1 h 5 min``."""
    total = int(round(seconds))
    if total < 90:
        return f"{total} s"
    minutes, rest = divmod(total, 60)
    if minutes >= 60:
        hours, minutes = divmod(minutes, 60)
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes >= 10:
        return f"{minutes + (rest >= 30)} min"
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def about(seconds: float) -> str:
    """A rounded figure for a sentence: ``about 1.5 minutes``, ``about 40 seconds``."""
    if seconds < 60:
        return f"about {max(5, int(round(seconds / 5.0)) * 5)} seconds"
    halves = max(1, round(seconds / 30.0))
    value = f"{halves / 2:.1f}".removesuffix(".0")
    return f"about {value} minute{'' if value == '1' else 's'}"


def stamp(entry: dict[str, Any]) -> str:
    return f"measured {entry['measured_on']} on {entry['machine']}"


def paragraph(text: str) -> str:
    """A paragraph wrapped as the pages are (110 columns), with its line end."""
    return textwrap.fill(text, 110, break_on_hyphens=False, break_long_words=False) + "\n"


def _missing(name: str) -> str:
    return f"(not measured yet: `python scripts/record_timings.py` records {name})\n"


def _demo(entries: dict[str, dict[str, Any]]) -> str:
    entry = entries.get("demo")
    if not entry:
        return _missing("the demo's time after `make demo`")
    estimated = entry.get("estimated_seconds")
    return paragraph(
        f"**How long the demo takes:** {about(entry['seconds'])} ({duration(entry['seconds'])} for "
        f"{entry['configurations']} configurations, {stamp(entry)}"
        + (f"; the run estimated {about(estimated)} at its start" if estimated else "")
        + "). A busy machine takes several times longer; `chunkbench estimate` prints the expected "
        "time on yours."
    )


def _suite(name: str, command: str) -> Callable[[dict[str, dict[str, Any]]], str]:
    def render(entries: dict[str, dict[str, Any]]) -> str:
        entry = entries.get(name)
        if not entry:
            return _missing(f"`{command}` when it is run")
        return paragraph(
            f"Last measured: `{command}` ran {entry['tests']:,} tests in {duration(entry['seconds'])}, {stamp(entry)}."
        )

    return render


def _big_inputs(entries: dict[str, dict[str, Any]]) -> str:
    entry = entries.get("big_inputs")
    if not entry:
        return _missing("the full-scale run of `benchmarks/big_inputs.py`")
    stages = entry["stages"]
    chunks = f" ({entry['chunks']:,} chunks)" if entry.get("chunks") else ""
    rows = [
        ("parsing the documents", stages.get("parsing")),
        (f"chunking them{chunks} and checking each chunk against the model's window", stages.get("chunking")),
        ("embedding the chunks", stages.get("embedding")),
        ("indexing them in the embedded vector store", stages.get("indexing")),
        (
            f"{entry['questions']:,} questions: embedding them, searching, scoring, the intervals",
            stages.get("questions"),
        ),
        ("the leaderboard and the reports after it", stages.get("finishing")),
        ("the whole run", entry.get("wall_seconds")),
    ]
    lines = [
        paragraph(
            f"{entry['documents']:,} documents ({entry['corpus_mb']:.1f} MB), one configuration "
            f"({entry['configuration']}), {entry['questions']:,} questions, {stamp(entry)}"
            + (f"; {entry['note']}" if entry.get("note") else "")
            + ":"
        ).rstrip("\n"),
        "",
        "| stage | time |",
        "| --- | --- |",
    ]
    lines += [f"| {label} | {duration(seconds)} |" for label, seconds in rows if seconds is not None]
    lines += [
        "",
        "| memory | figure |",
        "| --- | --- |",
        f"| the largest summed resident memory of every process at one moment | {entry['peak_gb']:.2f} GB |",
        f"| the largest peak of one process (the run's own) | {entry['peak_process_gb']:.2f} GB |",
    ]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[dict[str, dict[str, Any]]], str]] = {
    "demo": _demo,
    "make-test": _suite("make_test", "make test"),
    "make-test-fast": _suite("make_test_fast", "make test-fast"),
    "big-inputs": _big_inputs,
}


def render_page(text: str, entries: dict[str, dict[str, Any]]) -> str:
    """The page with every timing block filled from ``entries``; an unknown block name is an error."""

    def fill(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in RENDERERS:
            raise ValueError(f"unknown timing block {name!r}: known are {', '.join(RENDERERS)}")
        return f"<!-- generated: timings {name} -->\n{RENDERERS[name](entries)}<!-- end of generated timings -->"

    return BLOCK.sub(fill, text)


def write_pages(entries: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    entries = read_record() if entries is None else entries
    changed = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        new = render_page(text, entries)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


def stale_pages(entries: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    entries = read_record() if entries is None else entries
    return [page for page in pages() if render_page(text := page.read_text(encoding="utf-8"), entries) != text]


# --- measuring ------------------------------------------------------------------------------------------------


def busy_machine() -> str | None:
    """Why the machine was shared with other work over the last minutes, or None. The demo runs on about one core,
    so a five-minute load above the cores plus one means other jobs took CPU from it, and its time would say more
    about them than about chunkbench."""
    try:
        load = os.getloadavg()[1]
    except (AttributeError, OSError):
        return None
    cores = os.cpu_count() or 1
    return f"the machine was busy with other work (load {load:.1f} on {cores} cores)" if load > cores + 1 else None


def demo_figures(results_dir: Path) -> dict[str, Any] | None:
    """The last finished `chunkbench run` of ``results_dir`` (its ``run_estimates`` row), or None."""
    from chunkbench_core.storage.results_db import ResultsDB

    results = ResultsDB(results_dir)
    rows = results.query(
        "SELECT estimated_seconds, actual_seconds, n_partitions, texts_to_embed, texts_cached "
        "FROM run_estimates "
        "WHERE actual_seconds IS NOT NULL ORDER BY created_at DESC LIMIT 1"
    ).to_dict("records")
    if not rows:
        return None
    row = rows[0]
    return {
        "seconds": round(float(row["actual_seconds"]), 1),
        "estimated_seconds": round(float(row["estimated_seconds"]), 1) if row.get("estimated_seconds") else None,
        "configurations": int(row["n_partitions"]),
        "texts_to_embed": int(row["texts_to_embed"] or 0),
        "texts_cached": int(row["texts_cached"] or 0),
    }


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_command(name: str, command: list[str]) -> int:
    """Run ``command`` (its output passed through), and record its wall time and test count if it passed."""
    started = time.perf_counter()
    # the command writes into a pipe here: keep pytest's colours when the terminal shows them
    env = {**os.environ, "PY_COLORS": "1"} if sys.stdout.isatty() and "NO_COLOR" not in os.environ else None
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1, env=env)
    passed = None
    assert process.stdout is not None
    try:
        for line in process.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            # the summary line is the last to say it ("1,267 passed, 2 skipped in ...")
            if (found := re.search(r"\b(\d+) passed\b", ANSI.sub("", line))) is not None:
                passed = int(found.group(1))
    except KeyboardInterrupt:  # Ctrl-C reached the command too: let it stop, record nothing
        process.wait()
        return 130
    code = process.wait()
    seconds = time.perf_counter() - started
    if code == 0 and passed:
        record(name, {"seconds": round(seconds, 1), "tests": passed})
        print(f"recorded in {RECORD.name}: {name} {passed:,} tests in {duration(seconds)}")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite the pages' blocks from the record")
    parser.add_argument("--check", action="store_true", help="exit 1 when a page's block differs from the record")
    sub = parser.add_subparsers(dest="what")
    demo = sub.add_parser("demo", help="record the last chunkbench run of the sample benchmark")
    demo.add_argument("--results", type=Path, help="its results folder (default: the sample's under CHUNKBENCH_HOME)")
    demo.add_argument("--even-if-busy", action="store_true", help="record it even when other work shared the machine")
    command = sub.add_parser("command", help="run a command and record its time")
    command.add_argument("name", choices=("make_test", "make_test_fast"))
    command.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if args.what == "command":
        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        return run_command(args.name, argv)
    if args.what == "demo":
        results = args.results
        if results is None:
            from chunkbench_core.settings import SAMPLE_BENCHMARK, Settings

            results = Settings.load({**os.environ, "CHUNKBENCH_BENCHMARK": SAMPLE_BENCHMARK}).results_dir
        figures = demo_figures(results)
        if figures is None:
            print(f"no finished chunkbench run in {results}: nothing recorded")
            return 1
        if figures["texts_cached"]:
            # a run that found its embeddings cached is not what a newcomer's first make demo takes
            print(
                f"the demo's time not recorded: {figures['texts_cached']:,} texts came from the cache "
                "(make clean, then make demo, for the time of a first run)"
            )
            return 0
        busy = busy_machine()
        if busy and not args.even_if_busy:
            print(f"the demo's time not recorded: {busy} (--even-if-busy records it anyway)")
            return 0
        record("demo", figures)
        print(f"recorded in {RECORD.relative_to(ROOT)}: the demo took {duration(figures['seconds'])}")
        return 0
    if args.check:
        stale = stale_pages()
        for page in stale:
            print(
                f"{page.relative_to(ROOT)}: a timing block differs from {RECORD.relative_to(ROOT)}: "
                "python scripts/record_timings.py --write"
            )
        return 1 if stale else 0
    changed = write_pages()
    print(f"{len(changed)} page(s) rewritten from {RECORD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
