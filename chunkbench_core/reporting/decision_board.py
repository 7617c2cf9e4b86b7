"""The decision board: every experiment run over time and across sweeps, side by side.

Reads every ``experiment_metrics`` row (not only the latest per configuration). Each row's
``provenance`` JSON gives the settings that make runs comparable or not: corpus model,
``boundary_model``, neighbor settings (``neighbors.neighbor_prev/neighbor_next`` or the
top-level ``neighbor_prev``/``neighbor_next``), ``top_k``, ``chunking_params.chunk_size``,
``question_set_hash`` (shown by file name, ``question_files``, the hash on hover), ``variant`` (a chunk-size sweep step: part of the
configuration's identity, shown in brackets). Metrics shown are the catalog metrics present in the table.

A "run" on the board is a batch of results launched together (see :func:`assign_batches`):
with one Dagster run per partition, each experiment run id holds one configuration, so the
board groups them; the run list names the experiment run ids of each batch.

The page (script ``static/board.js``, styles ``static/board.css``) lets the user filter by corpus model, pick the metric,
exclude runs, read a heat map of configuration x run (stage one), pick candidate cells
for a side-by-side comparison of every metric (stage two), and follow a metric over
time. A warning appears whenever the runs being compared differ in neighbor settings, question set or
top k, when one configuration was scored with several boundary models, or - read from the
collections they scored - in parsed corpus, in one strategy's chunker settings, or in
where contextual_retrieval's context came from (LLM or headings); each run carries the
neighbor badge ``±P/N``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Mapping, Sequence

import pandas as pd

from chunkbench_core.metric_catalog import CATALOG

from . import plots
from .columns import has_values, metrics_catalog, missing, number, parse_json, plural, run_settings
from .data import ReportData, row_key, row_label
from .html import esc, json_script, nav, page
from .scope import scope_banner
from .webfiles import scripts, stylesheet

BOARD_HTML = """
<section id="board" aria-labelledby="board-title">
<h2 id="board-title">Compare runs</h2>
<noscript><p class="warning">The decision board needs JavaScript.</p></noscript>
<div class="controls">
<label>Corpus model <select id="corpus-filter"></select></label>
<label>Metric <select id="metric-picker"></select></label>
<button type="button" id="include-all">Show every run</button>
</div>
<div id="mismatch-warning" class="warning" role="alert" hidden></div>
<h3>Runs</h3>
<p class="note">Untick a run to hide it from every view below, on this page only (nothing is saved: to set a bad
run aside for good, use <code>chunkbench runs exclude RUN_ID --reason TEXT</code>). The badge ±P/N is the
neighbor expansion of the run: P previous and N next chunks added around each hit.</p>
<div class="scroll"><table id="run-list"></table></div>
<h3>Stage 1 · heat map (configuration × run)</h3>
<p class="note">Darker is better for the chosen metric. Activate a cell (click, or Tab then Enter) to add it to the
stage-2 comparison.</p>
<div class="scroll"><table id="heatmap" class="heatmap"></table></div>
<h3>Stage 2 · candidates side by side</h3>
<p class="note" id="candidate-note"></p>
<div class="scroll"><table id="candidates"></table></div>
<h3>Over time</h3>
<div class="scroll"><svg id="trend" role="img" aria-label="metric per configuration over runs"
xmlns="http://www.w3.org/2000/svg"></svg></div>
</section>
"""


#: provenance keys that name a batch of partitions launched together (first present wins)
BATCH_KEYS = ("batch_id", "backfill_id", "sweep_id")
#: single-configuration runs further apart than this never share a batch
BATCH_GAP = timedelta(minutes=30)


def _signature(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["topK"], row["prev"], row["next"], row["variant"] or "", row["questionSet"], row["filter"])


def assign_batches(rows: list[dict[str, Any]]) -> None:
    """Give every row a ``batch`` (the board's column) and a ``batchLabel``.

    A "run" on the board is what a user launched at once. Dagster gives each partition
    its own run id when partitions are launched one by one, so rows are grouped:

    1. rows whose provenance names a batch (``batch_id``, ``backfill_id``, ``sweep_id``) by that;
    2. else rows of an experiment run id that covers several configurations by that id;
    3. else single-configuration runs, in time order, join the previous one's batch while
       their settings (top k, neighbors, variant, question set, document filter) are the
       same, the gap is under 30 minutes and the configuration is not already in it.
    """
    per_run: dict[str, int] = {}
    for row in rows:
        per_run[row["run"]] = per_run.get(row["run"], 0) + 1
    current: dict[str, Any] | None = None
    for row in sorted(rows, key=lambda r: (r["_stamp"] is None, r["_stamp"] or datetime.min, r["run"])):
        if row["_batch"]:
            row["batch"] = f"batch:{row['_batch']}"
            row["batchLabel"] = str(row["_batch"])
            continue
        if per_run[row["run"]] > 1:
            row["batch"], row["batchLabel"] = row["run"], row["run"]
            continue
        config = (row["strategy"], row["model"], row["variant"] or "")
        joins = (
            current is not None
            and row["_stamp"] is not None
            and current["last"] is not None
            and row["_stamp"] - current["last"] <= BATCH_GAP
            and _signature(row) == current["signature"]
            and config not in current["configs"]
        )
        if not joins:
            current = {"id": row["run"], "rows": [], "configs": set(), "signature": _signature(row), "last": None}
        assert current is not None
        current["rows"].append(row)
        current["configs"].add(config)
        current["last"] = row["_stamp"]
        row["batch"] = current["id"]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if "batchLabel" not in row:
            groups.setdefault(row["batch"], []).append(row)
    for batch, members in groups.items():
        if len(members) == 1:
            members[0]["batchLabel"] = members[0]["run"]
            continue
        first = min((m["created"] or "") for m in members)
        for m in members:
            m["batch"] = f"batch:{batch}"
            m["batchLabel"] = f"batch {first[:16]} ({len(members)} runs)"


def question_set_label(provenance: Mapping[str, Any]) -> str | None:
    """The question sets of a run by file name (``question_files``), else by set name; None when unrecorded."""
    for key in ("question_files", "question_sets"):
        named = provenance.get(key)
        if isinstance(named, Mapping) and named:
            return ", ".join(sorted(str(n) for n in named))
    return None


def board_payload(data: ReportData) -> dict[str, Any]:
    """The page's data: every run not set aside for good (those are listed apart, :func:`_set_aside`)."""
    runs = data.runs
    if data.excluded_runs and not runs.empty:
        runs = runs[~runs["experiment_run_id"].astype(str).isin(set(data.excluded_runs))]
    metrics = [m for m in metrics_catalog() if has_values(runs, m.name)]
    rows = []
    for row in runs.to_dict("records"):
        settings = run_settings(parse_json(row.get("provenance"), {}), row)
        created = row.get("created_at")
        if isinstance(created, pd.Timestamp):
            created = created.to_pydatetime()
        provenance = parse_json(row.get("provenance"), {})
        provenance = provenance if isinstance(provenance, dict) else {}
        rows.append(
            {
                "_stamp": created if isinstance(created, datetime) and not pd.isna(created) else None,
                "_batch": next((provenance[k] for k in BATCH_KEYS if provenance.get(k)), None),
                "filter": provenance.get("filter_by_document"),
                "run": str(row.get("experiment_run_id")),
                "created": created.isoformat(sep=" ", timespec="seconds")
                if isinstance(created, datetime) and not pd.isna(created)
                else None,
                "strategy": str(row["strategy"]),
                "model": str(row["corpus_model"]),
                "label": row_label(row),
                "key": row_key(row),
                "metrics": {m.name: number(row.get(m.name)) for m in metrics},
                "n": number(row.get("n_questions")),
                "failed": number(row.get("n_failed")),
                "boundary": settings.boundary_model,
                "prev": settings.neighbor_prev,
                "next": settings.neighbor_next,
                "badge": settings.neighbor_badge,
                "topK": settings.top_k,
                "chunkSize": settings.chunk_size if isinstance(settings.chunk_size, (int, float, str)) else None,
                "questionSet": settings.question_set_hash,
                "questionSetName": question_set_label(provenance),
                "variant": settings.variant,
                "corpus": settings.corpus_fingerprint,
                "settings": settings.settings_fingerprint,
                "context": settings.context_source,
            }
        )
    assign_batches(rows)
    for row in rows:
        for private in ("_stamp", "_batch", "filter"):
            row.pop(private)
    rank_metric = str((data.recommendation or {}).get("rank_metric") or "")
    ordered = sorted(metrics, key=lambda m: m.name != rank_metric)  # the ranking metric first: the default pick
    return {
        "rows": rows,
        "colors": configuration_colors(data, rows),
        "metrics": [
            {"name": m.name, "label": m.label, "kind": m.kind, "higherIsBetter": m.higher_is_better} for m in ordered
        ],
    }


#: how the page script keys a configuration (strategy, corpus model, variant)
KEY_SEPARATOR = "\u001f"


def configuration_colors(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The trend chart's colour of each configuration: the leaderboard's order first (the colours of the
    managerial report's plots), then every other configuration of the board in name order."""

    def key(strategy: Any, model: Any, variant: Any) -> str:
        return KEY_SEPARATOR.join((str(strategy), str(model), str(variant or "")))

    order: list[str] = []
    for row in data.board.to_dict("records"):
        provenance = parse_json(row.get("provenance"), {})
        variant = provenance.get("variant") if isinstance(provenance, dict) else None
        order.append(key(row["strategy"], row["corpus_model"], variant))
    others = sorted({key(r["strategy"], r["model"], r["variant"]) for r in rows} - set(order))
    return {k: plots.color(i) for i, k in enumerate(dict.fromkeys([*order, *others]))}


def _set_aside(data: ReportData) -> str:
    """The runs set aside for good (``chunkbench runs exclude``), struck through, each with its reason."""
    if data.runs.empty or not data.excluded_runs:
        return ""
    runs = data.runs[data.runs["experiment_run_id"].astype(str).isin(set(data.excluded_runs))]
    if runs.empty:
        return ""
    metric = str((data.recommendation or {}).get("rank_metric") or "recall")
    column = CATALOG.run_name_of(metric)
    column = column if column in runs.columns else "recall"
    rows = []
    for row in runs.to_dict("records"):
        created = row.get("created_at")
        created_text = "–" if created is None or pd.isna(created) else pd.Timestamp(created).strftime("%Y-%m-%d %H:%M")
        value = number(row.get(column))
        run = str(row.get("experiment_run_id"))
        rows.append(
            f"<tr class='set-aside' data-run='{esc(run)}'><td class='struck'>{esc(run)}</td>"
            f"<td class='struck'>{esc(row_label(row))}</td><td class='struck'>{esc(created_text)}</td>"
            f"<td class='struck num'>{'–' if value is None else f'{value:.3f}'}</td>"
            f"<td class='reason'>{esc(data.excluded_runs[run])}</td></tr>"
        )
    return (
        "<section id='set-aside' aria-labelledby='set-aside-title'><h3 id='set-aside-title'>Set aside for good</h3>"
        "<p class='note'>Excluded with <code>chunkbench runs exclude</code>: left out of the leaderboard, the "
        "comparison, the reports and every view of this board; nothing was deleted. "
        "<code>chunkbench runs include RUN_ID</code> brings one back.</p><div class='scroll'><table>"
        f"<thead><tr><th>experiment run id</th><th>configuration</th><th>created</th><th>{esc(column)}</th>"
        "<th>reason</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table></div></section>"
    )


def _set_aside_count(data: ReportData) -> str:
    if data.runs.empty or not data.excluded_runs:
        return ""
    n = int(data.runs["experiment_run_id"].astype(str).isin(set(data.excluded_runs)).sum())
    return f" ({plural(n, 'configuration result')} set aside for good, listed under Runs)" if n else ""


def _recommendation_banner(data: ReportData) -> str:
    rec = data.recommendation
    if not rec:
        return ""
    from .leaderboard import stability_text

    which = "latest runs" if data.scope is None else "these runs"
    steady = stability_text(rec)
    undecided = (
        ""
        if missing(rec.get("decided")) or bool(rec.get("decided"))
        else " <strong>Not decided yet:</strong> these questions cannot settle the choice (see the warnings of "
        "the managerial report)."
    )
    return (
        f"<div class='recommendation' id='board-recommendation'><p><strong>Recommended ({which}):</strong> "
        f"{data.label_html(rec['strategy'], rec['corpus_model'])}, by {esc(rec['rank_metric'])} "
        f"({esc(rec['metric_definition'])}) and the rule: {esc(rec['rule_text'])}"
        + (f"; {esc(steady)}" if steady else "")
        + f". {esc(rec['reason'])}{undecided}</p>"
        "<p class='note'>The metric picker starts on the ranking metric; the board's \"best\" marks are per "
        "metric and per pick, not the recommendation.</p></div>"
    )


def render_decision_board(data: ReportData, links: Sequence[tuple[str, str]], current: str) -> str:
    payload = board_payload(data)
    n_batches = len({r["batch"] for r in payload["rows"]})
    n_runs = len({r["run"] for r in payload["rows"]})
    body = [
        nav(links, current),
        "<h1>chunkbench decision board</h1>",
        f"<p class='meta'>Generated {esc(data.generated_at.strftime('%Y-%m-%d %H:%M UTC'))} · {plural(n_batches, 'run')} "
        f"made of {plural(n_runs, 'experiment run id')} · {plural(len(payload['rows']), 'configuration result')} · "
        "every run kept "
        f"in the results{_set_aside_count(data)}.</p>",
        scope_banner(data),
    ]
    if not payload["rows"]:
        body.append("<p>No experiment has run yet.</p>" if data.runs.empty else "<p>Every run is set aside.</p>")
        body.append(_set_aside(data))
        return page("chunkbench decision board", "".join(body), css=stylesheet("board.css"))
    body.append(_recommendation_banner(data))
    run_list = '<div class="scroll"><table id="run-list"></table></div>'
    body.append(BOARD_HTML.replace(run_list, run_list + _set_aside(data), 1))
    return page(
        "chunkbench decision board",
        "".join(body),
        css=stylesheet("board.css"),
        scripts=scripts("board.js"),
        data=json_script("board-data", payload),
    )
