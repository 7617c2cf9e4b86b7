"""Write the three report files (managerial, technical with the retrieval inspector, decision board).

Each file is self-contained HTML (inline CSS, JS and PNG plots; no CDN, no server) and
links to the other two by relative file name, so the folder can be zipped and shared.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from chunkbench_core.progress import Tracker
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.runs import RunSelection
from chunkbench_core.storage.space import guard_writes

from .data import PROGRESS_ROWS, ReportData, leaderboard_question_rows, load_report_data
from .decision_board import render_decision_board
from .managerial import render_managerial
from .technical import technical_parts


@dataclass(frozen=True)
class ReportNames:
    """File names of the reports inside one folder."""

    managerial: str = "benchmark_report.html"
    technical: str = "technical_report.html"
    decision_board: str = "decision_board.html"

    def links(self) -> list[tuple[str, str]]:
        return [
            ("Managerial report", self.managerial),
            ("Technical report & retrieval inspector", self.technical),
            ("Decision board", self.decision_board),
        ]


@dataclass(frozen=True)
class ReportPaths:
    managerial: Path
    technical: Path
    decision_board: Path

    def as_dict(self) -> dict[str, Path]:
        return {"managerial": self.managerial, "technical": self.technical, "decision_board": self.decision_board}


def page_renderers(
    data: ReportData, names: ReportNames, results: ResultsDB | None = None
) -> list[tuple[str, Callable[[], Iterable[str]]]]:
    """(file name, a function giving the page's HTML in pieces) of each report, in writing order (``results``
    lets the technical report read chunk texts)."""
    links = names.links() + ([("Latest reports", data.latest_href)] if data.latest_href else [])
    return [
        (names.managerial, lambda: [render_managerial(data, links, names.managerial)]),
        (names.technical, lambda: technical_parts(data, links, names.technical, results)),
        (names.decision_board, lambda: [render_decision_board(data, links, names.decision_board)]),
    ]


def render_all(data: ReportData, names: ReportNames, results: ResultsDB | None = None) -> dict[str, str]:
    """name -> HTML of each report (``results`` lets the technical report read chunk texts).
    :func:`write_reports` writes them one at a time instead, each as it is made."""
    return {name: "".join(render()) for name, render in page_renderers(data, names, results)}


def _write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """A full disk: one line naming the folder (StorageFullError), no half-written file, the old report kept.
    ``text`` may come in pieces: they are written as they come."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with guard_writes(path, f"the report {path.name}", cleanup=[tmp]):
        with open(tmp, "w", encoding="utf-8") as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                for piece in text:
                    handle.write(piece)
        tmp.replace(path)


def run_reports_folder(reports_dir: str | Path, runs: RunSelection) -> Path:
    """Where the reports of a chosen run or batch go: ``<reports>/runs/run-<id>`` or ``runs/batch-<id>``."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", runs.folder_name).strip("-.") or runs.kind
    return Path(reports_dir) / "runs" / name


def write_reports(
    results: ResultsDB,
    folder: str | Path,
    names: ReportNames | None = None,
    runs: RunSelection | None = None,
    ranking: Any = None,
    latest: str | Path | None = None,
) -> ReportPaths:
    """Render every report from ``results`` and write them into ``folder`` (atomically, file by file).

    ``runs``: the reports of exactly these runs (compared in memory with ``ranking``, a RankingSettings),
    linking back to the latest reports in the folder ``latest``.
    """
    with results.one_reading():  # the run scores' pivot once for every page's reads
        return _write_reports(results, folder, names or ReportNames(), runs, ranking, latest)


def _write_reports(
    results: ResultsDB,
    folder: str | Path,
    names: ReportNames,
    runs: RunSelection | None,
    ranking: Any,
    latest: str | Path | None,
) -> ReportPaths:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # minutes on tens of thousands of question rows: a line per step, reading the rows then each page (the
    # inspector's question rows report inside)
    tracker = Tracker("reports", 4, unit="steps") if leaderboard_question_rows(results) >= PROGRESS_ROWS else None
    data = load_report_data(results, runs, ranking)
    if tracker is not None:
        tracker.step(1)
    if runs is not None and latest is not None:
        data.latest_href = Path(os.path.relpath(Path(latest) / names.managerial, folder)).as_posix()
    for done, (name, render) in enumerate(page_renderers(data, names, results), start=1):
        _write_atomic(folder / name, render())  # one page at a time, each written as it is made
        if tracker is not None:
            tracker.step(1 + done)
    return ReportPaths(folder / names.managerial, folder / names.technical, folder / names.decision_board)
