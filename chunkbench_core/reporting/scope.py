"""The banner of reports written for one chosen run or batch: what they show, and the way back to the latest."""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from .columns import plural
from .data import ReportData
from .html import esc


def _stamp(value: object) -> datetime | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return pd.Timestamp(value).to_pydatetime()


def scope_meta(data: ReportData, latest: str) -> str:
    """The 'which runs' part of a report's meta line: ``latest`` for the latest reports, else the chosen run."""
    if data.scope is None:
        return latest
    return f"{'experiment run' if data.scope.kind == 'run' else 'batch'} {data.scope.ident} only"


def sample_note(data: ReportData) -> str:
    """'' when every run shown saw the whole corpus; else a paragraph naming the sampled corpus (or corpora)."""
    labels = sorted(
        {
            str(v)
            for v in data.board.get("corpus_sample", [])
            if isinstance(v, str) and v and not v.startswith("whole corpus")
        }
    )
    if not labels:
        return ""
    return (
        "<p class='warning' id='corpus-sample'><strong>These results come from a sampled corpus</strong>: "
        f"{esc('; '.join(labels))}. Every document holding evidence is kept, with fewer distractors than "
        "the whole corpus has, so scores can read higher and the ranking can differ: run on the whole "
        "corpus before deciding.</p>"
    )


def scope_banner(data: ReportData) -> str:
    """'' for the latest reports of a whole corpus; else which run or batch, when, which configurations, and a link
    to the latest, and whether the documents were a sample."""
    scope = data.scope
    sampled = sample_note(data)
    if scope is None:
        return f"<div class='scope' id='report-scope' role='note'>{sampled}</div>" if sampled else ""
    stamps = sorted(s for s in (_stamp(v) for v in data.board.get("created_at", [])) if s is not None)
    if not stamps:
        when = ""
    elif stamps[0].strftime("%Y-%m-%d %H:%M") == stamps[-1].strftime("%Y-%m-%d %H:%M"):
        when = f", made {stamps[0]:%Y-%m-%d %H:%M} UTC"
    else:
        when = f", made {stamps[0]:%Y-%m-%d %H:%M} to {stamps[-1]:%Y-%m-%d %H:%M} UTC"
    configurations = [str(r["label"]) for r in data.board.to_dict("records")]
    if scope.kind == "run":
        what = f"experiment run <code>{esc(scope.ident)}</code>"
    else:
        what = (
            f"batch <code>{esc(scope.ident)}</code> ({esc(plural(len(scope.run_ids), 'experiment run'))}; "
            "its classes and recommendation compare these runs only)"
        )
    parts = [
        f"<p><strong>These reports show {what}</strong>{esc(when)}: "
        f"{esc(', '.join(configurations)) if configurations else 'no configuration at its default settings'}.</p>"
    ]
    if sampled:
        parts.append(sampled)
    excluded = [(run, data.excluded_runs[run]) for run in scope.run_ids if run in data.excluded_runs]
    if excluded:
        parts.append(
            "<p class='warning'>Set aside for good (left out of the latest reports): "
            + "; ".join(f"<code>{esc(run)}</code>, because: {esc(reason)}" for run, reason in excluded)
            + ".</p>"
        )
    if data.latest_href:
        parts.append(
            f"<p>Newer runs may exist: <a id='latest-reports' href='{esc(data.latest_href)}'>the latest "
            "reports</a> show the latest run of every configuration.</p>"
        )
    return "<div class='scope' id='report-scope' role='note'>" + "".join(parts) + "</div>"
