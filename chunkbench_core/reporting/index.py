"""The reports' front page: every benchmark with its reports, as the report server shows at its root.

Each benchmark keeps its reports in ``benchmarks/<name>/reports/`` (the latest run of each
configuration) and ``reports/runs/<run or batch>/`` (the reports of one chosen run). The page links
each of them by a relative address ``<name>/<file>``, the layout the report server answers.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from chunkbench_core.wording import plural

from .html import esc, page
from .reports import ReportNames
from .style import CSS

#: a benchmark's folder name (as ``chunkbench_core.settings`` allows it); anything else is not listed
BENCHMARK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: the folder of a benchmark's reports inside its folder
REPORTS = "reports"
RUNS = "runs"


@dataclass(frozen=True)
class ReportSet:
    """The three reports of one folder: (title, path relative to the benchmark's reports folder) of each
    file present, and when the first was written."""

    folder: str  # "" for the latest reports, else "runs/<name>"
    files: tuple[tuple[str, str], ...]
    written: datetime | None


@dataclass(frozen=True)
class BenchmarkReports:
    name: str
    latest: ReportSet | None
    runs: tuple[ReportSet, ...] = field(default_factory=tuple)


def _regular(path: Path) -> os.stat_result | None:
    """The file's status when it is a regular file and no link (the server would not serve a link out)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info if stat.S_ISREG(info.st_mode) else None


def _report_set(folder: Path, relative: str, names: ReportNames) -> ReportSet | None:
    files, stamps = [], []
    for title, name in names.links():
        info = _regular(folder / name)
        if info is not None:
            files.append((title, f"{relative}/{name}" if relative else name))
            stamps.append(info.st_mtime)
    if not files:
        return None
    return ReportSet(relative, tuple(files), datetime.fromtimestamp(max(stamps), timezone.utc))


def find_reports(benchmarks: Path, names: ReportNames | None = None) -> list[BenchmarkReports]:
    """Every benchmark under ``benchmarks`` (the folder of ``benchmarks/<name>/``) that has reports,
    by name; each with its latest reports and its chosen runs' reports (newest first)."""
    names = names or ReportNames()
    found = []
    try:
        entries = sorted(os.scandir(benchmarks), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        if not BENCHMARK_NAME.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        reports = Path(entry.path) / REPORTS
        if reports.is_symlink() or not reports.is_dir():
            continue
        runs = []
        try:
            run_folders = sorted(os.scandir(reports / RUNS), key=lambda e: e.name)
        except OSError:
            run_folders = []
        for run in run_folders:
            if run.name.startswith(".") or not run.is_dir(follow_symlinks=False):
                continue
            found_set = _report_set(Path(run.path), f"{RUNS}/{run.name}", names)
            if found_set is not None:
                runs.append(found_set)
        latest = _report_set(reports, "", names)
        if latest is None and not runs:
            continue
        runs.sort(key=lambda r: r.written or datetime.min.replace(tzinfo=timezone.utc), reverse=True)
        found.append(BenchmarkReports(entry.name, latest, tuple(runs)))
    return found


def _when(moment: datetime | None) -> str:
    return "" if moment is None else f"written {moment:%Y-%m-%d %H:%M} UTC"


def _links(benchmark: str, report_set: ReportSet) -> str:
    return " · ".join(f"<a href='{esc(benchmark)}/{esc(path)}'>{esc(title)}</a>" for title, path in report_set.files)


def render_index(benchmarks: Sequence[BenchmarkReports]) -> str:
    """The front page: one section per benchmark, its latest reports first, then each chosen run's."""
    body = [
        "<h1>chunkbench reports</h1>",
        "<p class='meta'>Every benchmark of this chunkbench home with its reports. A benchmark's reports show "
        "the latest run of each configuration; a chosen run's reports show that run alone.</p>",
    ]
    if not benchmarks:
        body.append(
            "<p id='no-reports'>No report has been written yet. Run <code>chunkbench run</code>, or "
            "materialize <code>benchmark_report</code> in the Dagster UI, then reload this page.</p>"
        )
    for bench in benchmarks:
        body.append(
            f"<section class='benchmark' id='benchmark-{esc(bench.name)}' data-benchmark='{esc(bench.name)}'>"
            f"<h2>{esc(bench.name)}</h2>"
        )
        if bench.latest is not None:
            body.append(
                f"<p class='latest'>{_links(bench.name, bench.latest)} "
                f"<span class='note'>{esc(_when(bench.latest.written))}</span></p>"
            )
        else:
            body.append("<p class='note'>No reports of the latest runs yet.</p>")
        if bench.runs:
            items = "".join(
                f"<li><strong>{esc(r.folder.removeprefix(RUNS + '/'))}</strong>: "
                f"{_links(bench.name, r)} <span class='note'>{esc(_when(r.written))}</span></li>"
                for r in bench.runs
            )
            body.append(
                f"<details><summary>Reports of chosen runs ({esc(plural(len(bench.runs), 'run'))})"
                f"</summary><ul class='runs'>{items}</ul></details>"
            )
        body.append("</section>")
    return page("chunkbench reports", "".join(body), css=CSS)
