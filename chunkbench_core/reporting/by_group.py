"""The managerial report's "Results by group" section: the leaderboard's metrics per format, category,
difficulty and document, with the question count of every cell, and where the ranking differs.

Every table is rendered here (escaped, no script needed to read the first one); the page's small script
(``static/by_group.js``, styles ``static/by_group.css``) only shows the table of the chosen dimension and
metric (``hidden`` attributes), with no network.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from chunkbench_core.evaluation.breakdowns import (
    DIMENSIONS,
    LABEL_PREFIX,
    TOO_SMALL,
    configuration_name,
    group_leaders,
    ranking_difference,
)

from chunkbench_core.evaluation.evidence_length import bucket_order
from chunkbench_core.metric_catalog import CATALOG

from .columns import Kind, fmt, metric_by_name, metrics_catalog, number, plural
from .data import ReportData, group_results
from .html import esc, label_html

DIMENSION_LABELS: dict[str, str] = {
    "format": "document format",
    "category": "question category",
    "evidence_length": "evidence length",
    "difficulty": "difficulty",
    "document": "document",
}
#: the metrics the section offers besides the ranking metric (shown when any cell has a value)
SECTION_METRICS: tuple[str, ...] = (*(m.run_name for m in CATALOG.shown_in_order("group_section")), "context_tokens")
EXTRA_LABELS: dict[str, tuple[str, Kind]] = {
    "context_tokens": ("Context tokens", "count"),
    "query_ms": ("Query time", "ms"),
}


def dimension_label(dimension: str) -> str:
    """How the section names a dimension: "document format", or a label of the team's sheet by its name."""
    if dimension.startswith(LABEL_PREFIX):
        return dimension[len(LABEL_PREFIX) :]
    return DIMENSION_LABELS.get(dimension, dimension)


def _metric_info(name: str) -> tuple[str, Kind]:
    """(label, kind) of a cell metric or of the ranking metric's column (``reciprocal_rank`` -> MRR)."""
    if name in EXTRA_LABELS:
        return EXTRA_LABELS[name]
    metric = metric_by_name().get(name) or next((m for m in metrics_catalog() if m.question_column == name), None)
    return (metric.label, metric.kind) if metric else (name, "value")


def _cell(raw: Any, kind: Kind, n: Any) -> str:
    """The value and, under it, the number of questions behind it."""
    text = esc(fmt(kind, raw)) if number(raw) is not None else "–"
    return f"{text}<span class='ci'>n={int(number(n) or 0)}</span>"


def _table(
    rows: Sequence[Mapping[str, Any]],
    dimension: str,
    metric: str,
    order: Sequence[str],
    leaders: Mapping[str, Any],
    rank_metric: str,
    names: Mapping[str, str],
) -> str:
    """One table; ``rows``: the cells of ``dimension`` as records; ``names``: the HTML that names each
    configuration of ``order``."""
    label, kind = _metric_info(metric)
    column = "rank_mean" if metric == "rank" else metric
    if metric == "rank":
        label, kind = _metric_info(rank_metric)
    by_group: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        by_group.setdefault(str(row["group"]), {})[
            configuration_name(row["strategy"], row["corpus_model"], row.get("retriever"))
        ] = row
    groups = sorted(by_group, key=lambda g: (-max(int(r["n_questions"]) for r in by_group[g].values()), g))
    if dimension == "evidence_length":  # shortest evidence first: the chunk sizes that serve it read in order
        groups.sort(key=bucket_order)
    head = [
        "<th scope='col'>" + esc(dimension_label(dimension)) + "</th>",
        "<th scope='col'>questions</th>",
        f"<th scope='col'>first by {esc(_metric_info(rank_metric)[0])}</th>",
    ]
    head += [f"<th scope='col'>{names[name]}</th>" for name in order]
    body = []
    for group in groups:
        row_cells = by_group[group]
        n = max(int(r["n_questions"]) for r in row_cells.values())
        leader = leaders.get(group)
        small = n <= TOO_SMALL
        count = esc(plural(n, "question")) + ("<span class='ci bad'>too small to read</span>" if small else "")
        best = f"<td>{names[leader.best]}</td>" if leader is not None else "<td>–</td>"
        tds = [f"<th scope='row'>{esc(group)}</th>", f"<td class='num'>{count}</td>", best]
        for name in order:
            cell_row = row_cells.get(name)
            lead = " lead" if leader is not None and name == leader.best and metric == "rank" else ""
            tds.append(
                f"<td class='num{lead}'>"
                + (_cell(cell_row.get(column), kind, cell_row.get("n_questions")) if cell_row is not None else "–")
                + "</td>"
            )
        body.append(f"<tr class='{'small' if small else ''}'>" + "".join(tds) + "</tr>")
    return (
        f"<div class='scroll' data-dimension='{esc(dimension)}' data-metric='{esc(metric)}'>"
        f"<table id='groups-{esc(dimension)}-{esc(metric)}'><caption>{esc(label)} per "
        f"{esc(dimension_label(dimension))}</caption><thead><tr>{''.join(head)}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def render_by_group(data: ReportData) -> str:
    """The section's HTML (empty text when no question was scored)."""
    cells = group_results(data)
    if cells.empty:
        return ""
    board = data.board.to_dict("records")
    order = [configuration_name(r["strategy"], r["corpus_model"], r.get("retriever")) for r in board]
    labels = {name: str(r["label"]) for name, r in zip(order, board)}
    names = {name: label_html(str(r["key"]), labels[name]) for name, r in zip(order, board)}
    rank_metric = str(cells["rank_metric"].iloc[0])
    metric_label = _metric_info(rank_metric)[0]
    metrics = [
        "rank",
        *(m for m in SECTION_METRICS if m != rank_metric and m in cells.columns and cells[m].notna().any()),
    ]
    dimensions = [d for d in DIMENSIONS if (cells["dimension"] == d).any()]
    dimensions += sorted(d for d in set(cells["dimension"]) if str(d).startswith(LABEL_PREFIX))
    options = "".join(f"<option value='{esc(d)}'>{esc(dimension_label(d))}</option>" for d in dimensions)
    metric_options = "".join(
        f"<option value='{esc(m)}'>{esc(metric_label if m == 'rank' else _metric_info(m)[0])}"
        f"{' (ranking metric)' if m == 'rank' else ''}</option>"
        for m in metrics
    )
    parts = [
        "<div id='by-group'>",
        "<p class='note'>The leaderboard's means over the questions of each group, per configuration (its latest "
        f"run), with the number of questions behind every cell. A question whose evidence is in several documents "
        f"counts in each of them (and in each of their formats). Groups of {TOO_SMALL} questions or fewer are greyed "
        "out: too small to read, and left out of the sentence above each table.</p>",
        "<div class='controls'><label>Split by <select id='group-dimension'>" + options + "</select></label>"
        "<label>Metric <select id='group-metric'>" + metric_options + "</select></label></div>",
        "<noscript><p class='note'>Without JavaScript only the first table is shown; the DuckDB view "
        "leaderboard_by_group holds every cell.</p></noscript>",
    ]
    for i, dimension in enumerate(dimensions):
        leaders = {g.group: g for g in group_leaders(cells, order, dimension)}
        sentence = ranking_difference(cells, order, dimension, rank_metric, labels)
        parts.append(
            f"<div data-dimension='{esc(dimension)}'{'' if i == 0 else ' hidden'}>"
            f"<p class='group-sentence' id='groups-{esc(dimension)}-sentence'>{esc(sentence)}</p>"
        )
        rows = cells[cells["dimension"] == dimension].to_dict("records")  # once per dimension, for every metric
        for j, metric in enumerate(metrics):
            table = _table(rows, dimension, metric, order, leaders, rank_metric, names)
            if i or j:
                table = table.replace("<div class='scroll' ", "<div class='scroll' hidden ", 1)
            parts.append(table)
        parts.append("</div>")
    parts.append(
        f"<p class='note'>Ranking metric: {esc(metric_label)} ({esc(rank_metric)}); "
        "the first column names the configuration with the highest mean in the group (ties go to the "
        "better overall rank).</p></div>"
    )
    return "".join(parts)
