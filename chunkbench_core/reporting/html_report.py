"""Compatibility entry point: ``write_report(results, path)`` as the ``benchmark_report`` asset calls it.

It now writes all three reports (see :mod:`.reports`): the managerial report at ``path``
and, beside it, ``technical_report.html`` and ``decision_board.html``.
"""

from __future__ import annotations

from pathlib import Path

from chunkbench_core.storage.results_db import ResultsDB

from .reports import ReportNames, write_reports


def write_report(results: ResultsDB, path: str | Path) -> Path:
    """Write the three reports; return the managerial report's path (``path``)."""
    path = Path(path)
    return write_reports(results, path.parent, ReportNames(managerial=path.name)).managerial
