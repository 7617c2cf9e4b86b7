"""The technical report: runs, the retrieval inspector, per-question results, usage, provenance, failures.

Columns read when present, beyond the base schema: see :mod:`.inspector` (per question)
and :mod:`.summary` (latency, tokens, cost); ``answer_error`` / ``judge_error`` in the
failures section; every key of ``experiment_metrics.provenance`` in the provenance section.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

import pandas as pd

from chunkbench_core.storage.results_db import ResultsDB

from .columns import (
    Kind,
    flag,
    flatten,
    fmt,
    fmt_metric,
    has_values,
    metrics_catalog,
    number,
    parse_json,
    plural,
    question_counts,
    run_settings,
    text,
    value,
)
from chunkbench_core.evaluation.recommendation import questions_needed_text

from .data import ReportData
from .html import definition_list, esc, json_script_parts, label_html, nav, page_parts, table
from .inspector import InspectorStream
from .question_problems import render_parse_ceiling, render_question_problems
from .scope import scope_banner, scope_meta
from .webfiles import scripts, stylesheet
from .summary import latency_means, n_failed, token_header, token_totals

INSPECTOR_HTML = """
<section id="inspector" aria-labelledby="inspector-title">
<h2 id="inspector-title">Retrieval inspector</h2>
<p class="note">Pick a question on the left and a configuration above the panel. Keyboard: Tab moves between the
question list and the configuration picker; Up/Down (list) and Left/Right (picker) change the selection;
<kbd>j</kbd>/<kbd>k</kbd> and <kbd>[</kbd>/<kbd>]</kbd> work from anywhere. Evidence (reference spans) is
<mark>highlighted</mark> inside the retrieved chunks.</p>
<noscript><p class="warning">The inspector needs JavaScript; the tables below show the same results without it.</p>
</noscript>
<div class="inspector">
<div class="rail"><label for="group-filter">Questions of</label>
<select id="group-filter"><option value="">every group</option></select>
<label for="question-filter">Filter questions</label>
<input id="question-filter" type="search" autocomplete="off" placeholder="text, set or id">
<ol id="question-list" role="listbox" aria-label="Questions"></ol></div>
<div class="main"><div id="strategy-picker" role="tablist" aria-label="Configuration (strategy × corpus model)"></div>
<div id="inspector-panel" role="tabpanel" tabindex="0" aria-live="polite"></div></div>
</div>
</section>
"""


def _label(row: Any) -> str:
    """A board row's configuration label (strategy × corpus model), marked with its key."""
    return label_html(str(row["key"]), str(row["label"]))


def _when(raw: Any) -> str:
    """A run's time to the second, in UTC (no microseconds)."""
    if raw is None or (not isinstance(raw, str) and pd.isna(raw)):
        return "–"
    return f"{pd.Timestamp(raw):%Y-%m-%d %H:%M:%S} UTC"


def _ranking(data: ReportData) -> str:
    """The same ranking, classes and recommendation as the leaderboard and the managerial report, with the tests."""
    rec = data.recommendation
    if not rec:
        return "<p class='note'>Not compared yet: materialize the leaderboard to rank the configurations.</p>"
    from chunkbench_core.evaluation.recommendation import class_words
    from .leaderboard import stability_text

    margin = number(rec.get("margin"))
    compared = max(0, sum(1 for r in data.board.to_dict("records") if number(r.get("rank")) is not None) - 1)
    steady = stability_text(rec)
    head = (
        f"<p id='technical-recommendation'>Recommended: <strong>"
        f"{data.label_html(rec['strategy'], rec['corpus_model'])}</strong> ({esc(rec['rule'])}: "
        f"{esc(rec['rule_text'])})" + (f"; {esc(steady)}" if steady else "") + f". Ranking metric "
        f"<strong>{esc(rec['rank_metric'])}</strong>: {esc(rec['metric_definition'])}. {esc(rec['reason'])}</p>"
    )
    if value(rec, "decided") is not None and not flag(rec.get("decided")):
        # the warnings themselves, not a query to run
        items = "".join(f"<li>{esc(str(d['message']))}</li>" for d in data.diagnostics)
        head += (
            "<div class='warning' id='technical-undecided'><p><strong>Not decided yet:</strong> "
            + (esc(questions_needed_text(rec)) or "these questions cannot settle the choice.")
            + "</p>"
            + (f"<ul>{items}</ul>" if items else "")
            + "</div>"
        )
    if margin is not None:
        head += (
            f"<p class='note' id='margin-note'>Margin {margin:g} in {esc(rec['rank_metric'])}. Lower bound: the "
            f"one-sided 95% lower confidence bound of mean(configuration - best) on the questions both scored, "
            f"Student t at 0.05 / {compared} each (Bonferroni over {esc(plural(compared, 'comparison'))}); "
            f"above -{margin:g} = within the margin. p: one-sided paired randomization test (this one lower, "
            "9,999 sign flips); p (Holm): Holm's correction over the same comparisons; below 0.05 and not within "
            "the margin = worse. Questions to settle: how many questions would class an undecided "
            "configuration either way if its observed difference and spread held.</p>"
        )
    rows = []
    board = data.board.to_dict("records")
    # a dollar column of zeros says nothing (local models, no LLM price): the context tokens, the cost then, instead
    money = any((number(r.get("projected_usd")) or 0) > 0 for r in board)
    cost_kind: Kind
    cost_column, cost_kind, cost_head = (
        ("projected_usd", "usd", "$ index + 1,000 questions")
        if money
        else ("context_tokens", "count", "context tokens / question")
    )
    for row in board:
        rows.append(
            [
                esc(fmt("count", row.get("rank"))),
                _label(row),
                esc(fmt("count", row.get("n_questions"))),
                esc(fmt("fraction", row.get("rank_mean"))),
                esc(fmt("fraction", row.get("difference_vs_best"))),
                esc(fmt("fraction", row.get("lower_bound_vs_best"))),
                esc(fmt("fraction", row.get("effect_size"))),
                esc(fmt("p_value", row.get("p_value_vs_best"))),
                esc(fmt("p_value", row.get("p_value_adjusted"))),
                esc(fmt("count", row.get("questions_to_settle"))),
                esc(class_words(value(row, "class"), margin) if value(row, "class") else "–"),
                esc(fmt(cost_kind, row.get(cost_column))),
                "yes" if flag(row.get("on_frontier")) else "",
                esc(row.get("verdict") or "–"),
            ]
        )
    return head + table(
        [
            "rank",
            "configuration",
            "n",
            rec["rank_metric"],
            "difference vs best",
            "lower bound (95%)",
            "effect size (d_z)",
            "p vs best (one-sided)",
            "p (Holm)",
            "questions to settle",
            "class",
            cost_head,
            "frontier",
            "verdict",
        ],
        rows,
        element_id="tests",
        numeric=[True, False, True, True, True, True, True, True, True, True, False, True, False, False],
    )


def _runs(data: ReportData) -> str:
    rows = []
    for row in data.board.to_dict("records"):
        settings = run_settings(parse_json(row.get("provenance"), {}), row)
        rows.append(
            [
                _label(row),
                esc(text(row.get("experiment_run_id"))),
                esc(_when(row.get("created_at"))),
                esc(fmt("count", row.get("top_k"))),
                f"<span class='badge{' on' if (settings.neighbor_prev or settings.neighbor_next) else ''}'>"
                f"{esc(settings.neighbor_badge)}</span>",
                esc(settings.boundary_model or "–"),
                esc(question_counts(row)),
                esc(fmt("count", row.get("n_located") if number(row.get("n_located")) is not None else 0)),
                esc(str(n_failed(data, row))),
            ]
        )
    return table(
        [
            "configuration",
            "run",
            "created",
            "top k",
            "neighbors",
            "boundary model",
            "questions",
            "with located evidence (not reviewed)",
            "failed",
        ],
        rows,
        element_id="runs",
        numeric=[False, False, False, True, False, False, False, True, True],
    )


#: Rows of the per-question and failed-question tables written into the page. A run of 10,000 questions
#: would otherwise make a page of tens of MB that takes Chromium 30 s to open; every row is in the
#: inspector above (all questions, drawn as you move) and in DuckDB.
TABLE_ROWS = 500


def _row_limit_note(shown: int, total: int, what: str, sql: str) -> str:
    if total <= shown:
        return ""
    return (
        f"<p class='note table-limit'>The first {shown:,} of {total:,} {what} are shown here; every one is in "
        f"the retrieval inspector above and in DuckDB (<code>{esc(sql)}</code>).</p>"
    )


def _question_table(data: ReportData) -> str:
    questions = data.questions
    if questions.empty:
        return "<p class='note'>No question results.</p>"
    total = len(questions)
    questions = questions.iloc[:TABLE_ROWS]
    metrics = [m for m in metrics_catalog() if has_values(questions, m.question_column)]
    headers = ["set", "id", "question", "configuration", *(m.label for m in metrics), "retrieval", "error"]
    rows = []
    classes = []
    for row in questions.to_dict("records"):
        error = value(row, "error")
        question = f"<span dir='auto'>{esc(row.get('question'))}</span>"
        if value(row, "judge_only"):  # no evidence references: evidence metrics empty, judged only
            question += (
                " <span class='badge' title='no evidence references: scored by the LLM judge only'>judge only</span>"
            )
        cells = [
            esc(row["question_set"]),
            esc(row["question_id"]),
            question,
            data.label_html(row["strategy"], row["corpus_model"]),
        ]
        cells += [esc(fmt_metric(m.name, row.get(m.question_column))) for m in metrics]
        cells += [esc(fmt("ms", row.get("retrieval_ms"))), f"<span class='fail'>{esc(error)}</span>" if error else ""]
        rows.append(cells)
        classes.append("failed" if error else "")
    numeric = [False] * 4 + [True] * (len(metrics) + 1) + [False]
    return _row_limit_note(len(rows), total, "rows", "SELECT * FROM question_results") + table(
        headers, rows, element_id="questions", numeric=numeric, row_classes=classes
    )


def _usage(data: ReportData) -> str:
    rows = data.board.to_dict("records")
    latencies = [latency_means(data, r) for r in rows]
    tokens = [token_totals(data, r) for r in rows]
    lat_cols = sorted({k for lat in latencies for k in lat}, key=lambda k: (k != "retrieval_ms", k))
    tok_cols = sorted({k for t in tokens for k in t})
    out = []
    if lat_cols:
        out.append(
            "<h3>Latency (mean per question)</h3>"
            + table(
                ["configuration", *(c.removesuffix("_ms") for c in lat_cols)],
                [[_label(r), *(esc(fmt("ms", lat.get(c))) for c in lat_cols)] for r, lat in zip(rows, latencies)],
                element_id="latency-table",
                numeric=[False] + [True] * len(lat_cols),
            )
        )
    if tok_cols:
        out.append(
            "<h3>Token usage</h3><p class='note'>Per question: the mean over the run's questions; "
            "(index): the chunks embedded to build the index; (sum): over the run's questions.</p>"
            + table(
                ["configuration", *(token_header(c) for c in tok_cols)],
                [[_label(r), *(esc(fmt("count", t.get(c))) for c in tok_cols)] for r, t in zip(rows, tokens)],
                element_id="token-table",
                numeric=[False] + [True] * len(tok_cols),
            )
        )
    else:
        out.append("<p class='note'>No token usage was recorded.</p>")
    return "".join(out)


def _provenance(data: ReportData) -> str:
    parts = []
    for row in data.board.to_dict("records"):
        provenance = parse_json(row.get("provenance"), None)
        items = flatten(provenance) if isinstance(provenance, (dict, list)) else [("provenance", "not recorded")]
        parts.append(
            f"<details class='provenance'><summary>{_label(row)}, run "
            f"{esc(text(row.get('experiment_run_id')))}</summary>"
            + definition_list((k, esc(v)) for k, v in items)
            + "</details>"
        )
    docs = data.documents
    if not docs.empty:
        rows = [
            [
                esc(r["document"]),
                esc(text(r.get("status"))),
                esc(text(r.get("parser"))),
                esc(fmt("count", r.get("n_chars"))),
                f"<code>{esc(r.get('sha256') or '–')}</code>",
                esc(
                    ", ".join(str(w) for w in (parse_json(r.get("warnings"), []) or []))
                    if isinstance(parse_json(r.get("warnings"), []), list)
                    else r.get("warnings")
                ),
            ]
            for r in docs.to_dict("records")
        ]
        parts.append(
            "<h3>Documents</h3>"
            + table(
                ["document", "status", "parser", "characters", "sha256", "warnings"],
                rows,
                element_id="documents",
                numeric=[False, False, False, True, False, False],
            )
        )
    return "".join(parts)


def _failures(data: ReportData) -> str:
    parts = []
    docs = data.documents
    failed_docs = docs[docs["status"] == "failed"] if not docs.empty else docs
    if not failed_docs.empty:
        parts.append(
            "<h3>Documents that failed to parse</h3>"
            + table(
                ["document", "parser", "error"],
                [
                    [esc(r["document"]), esc(text(r.get("parser"))), f"<span class='fail'>{esc(r.get('error'))}</span>"]
                    for r in failed_docs.to_dict("records")
                ],
                element_id="failed-documents",
            )
        )
    q = data.questions
    rows = []
    if not q.empty:
        for r in q.to_dict("records"):
            for column, stage in (("error", "retrieval"), ("answer_error", "answer"), ("judge_error", "judge")):
                message = value(r, column)
                if message:
                    rows.append(
                        [
                            esc(r["question_set"]),
                            esc(r["question_id"]),
                            data.label_html(r["strategy"], r["corpus_model"]),
                            esc(stage),
                            f"<span class='fail'>{esc(message)}</span>",
                        ]
                    )
    if rows:
        parts.append(
            "<h3>Questions that failed</h3>"
            + _row_limit_note(
                TABLE_ROWS,
                len(rows),
                "failures",
                "SELECT * FROM question_results WHERE error IS NOT NULL "
                "OR answer_error IS NOT NULL OR judge_error IS NOT NULL",
            )
            + table(["set", "id", "configuration", "stage", "error"], rows[:TABLE_ROWS], element_id="failed-questions")
        )
    if not parts:
        return "<p class='good' id='no-failures'>Nothing failed.</p>"
    return "".join(parts)


def _judge_agreement(data: ReportData) -> str:
    """When an LLM judge ran: whether it and the evidence spans tell the same story, per configuration."""
    rows = data.judge_agreement
    if not rows:
        return ""

    def span(row: Mapping[str, Any], name: str) -> str:
        value, low, high = (number(row.get(k)) for k in (name, f"{name}_ci_low", f"{name}_ci_high"))
        if value is None:
            return "–"
        return f"{value:.2f}" + (
            f"<span class='ci'>{low:.2f} to {high:.2f}</span>" if low is not None and high is not None else ""
        )

    body = "".join(
        f"<tr><th scope='row'>{esc(str(r.get('configuration')))}</th><td class='num'>{int(number(r.get('n_questions')) or 0)}</td>"
        f"<td class='num'>{span(r, 'spearman')}</td><td class='num'>{span(r, 'kappa')}</td>"
        f"<td class='num'>{(number(r.get('agreement')) or 0):.0%}</td></tr>"
        for r in rows
    )
    first = rows[0]
    return (
        "<h2 id='judge-agreement'>Judge and evidence agreement</h2>"
        f"<p class='note'>On the questions both scored: Spearman's rank correlation between the judge's "
        f"{esc(str(first.get('judge_metric')))} and {esc(str(first.get('evidence_metric')))}, and Cohen's kappa "
        "on hit or miss (the judge's hit: a score of 6 or more out of 10; the evidence's: a top-k chunk holds "
        "evidence), with 95% intervals from resampling the questions. Near 1: the judge and the spans tell the "
        "same story; near 0: no more agreement than chance (DuckDB view judge_agreement).</p>"
        "<div class='scroll'><table id='judge-agreement-table'><thead><tr><th scope='col'>configuration</th>"
        "<th scope='col'>questions</th><th scope='col'>Spearman</th><th scope='col'>kappa (hit or miss)</th>"
        f"<th scope='col'>same hit or miss</th></tr></thead><tbody>{body}</tbody></table></div>"
    )


def render_technical(
    data: ReportData, links: Sequence[tuple[str, str]], current: str, results: ResultsDB | None = None
) -> str:
    """The technical report; ``results`` lets the inspector read chunk texts (else offsets only)."""
    return "".join(technical_parts(data, links, current, results))


def technical_parts(
    data: ReportData, links: Sequence[tuple[str, str]], current: str, results: ResultsDB | None = None
) -> Iterator[str]:
    """:func:`render_technical` in pieces, to write as they come: the inspector's data (tens of MB for
    20,000 question rows) is built while it is written."""
    inspector = InspectorStream(data, results)
    body = [
        nav(links, current),
        "<h1>chunkbench technical report</h1>",
        f"<p class='meta'>Generated {esc(data.generated_at.strftime('%Y-%m-%d %H:%M UTC'))} · "
        f"{scope_meta(data, 'latest run of each configuration')} · {plural(inspector.n_questions, 'question')} × "
        f"{plural(len(inspector.configs), 'configuration')}.</p>",
        scope_banner(data),
        "<h2>Ranking, classes and tests</h2>",
        render_parse_ceiling(data),
        _ranking(data),
        _judge_agreement(data),
        "<h2>Runs in this report</h2>",
        _runs(data),
        INSPECTOR_HTML,
        "<h2>Per-question results</h2>",
        _question_table(data),
        "<h2>Latency and token usage</h2>",
        _usage(data),
        "<h2>Provenance</h2>",
        _provenance(data),
        "<h2 id='failures'>Failures</h2>",
        _failures(data),
        render_question_problems(data),
    ]
    return page_parts(
        "chunkbench technical report",
        "".join(body),
        css=stylesheet("inspector.css"),
        scripts=scripts("inspector.js"),
        data=json_script_parts("inspector-data", inspector.parts()),
    )
