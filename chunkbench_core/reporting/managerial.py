"""The managerial report: what to use, how sure we are, what it costs, in plain language.

Sections: the recommendation (ranking metric and its definition, the rule, the reason, how
stable the pick is on resamples of the questions, which configurations are shown within the
margin of the best, which might be as good and what would settle them), warnings to read before
trusting the numbers, KPIs of the recommended configuration, the ranked table (class against the
best, verdict, cost, frontier), cost per configuration (index, query, storage), plots (quality
vs cost with the frontier, metric bars with CI whiskers, chunk-size distributions), one
plain-language paragraph per configuration, and the corpus.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.metric_catalog import CATALOG
from chunkbench_core.provenance import heading_context_label

from . import plots
from .columns import (
    KPI_METRICS,
    question_counts,
    fmt,
    fmt_metric,
    metric_by_name,
    number,
    plural,
    present_metrics,
    value,
)
from .by_group import render_by_group
from .data import ReportData
from .html import definition_list, esc, label_html, nav, page, png_img, table
from .intervals import REPORT_CI_NOTE
from .question_problems import render_parse_ceiling, render_question_problems
from .scope import scope_banner, scope_meta
from .webfiles import scripts, stylesheet
from .columns import flag
from chunkbench_core.evaluation.drivers import percent
from chunkbench_core.evaluation.recommendation import questions_needed_text
from .summary import Interval, config_questions, metric_interval, metric_value, n_failed, token_header, token_totals


def strategy_description(strategy: str, label: str | None = None) -> str | None:
    """The registered strategy's one-line description (its heading-context variant when ``label`` names it);
    None for a strategy no longer registered."""
    spec = STRATEGIES.get(strategy)
    if spec is None:
        return None
    if label and label == heading_context_label(strategy) and spec.description_without_llm:
        return spec.description_without_llm
    return spec.description


BAR_METRICS = tuple(m.run_name for m in CATALOG.shown_in_order("bars"))
#: the dollar columns of the cost table (header, leaderboard column), shown when any value is not zero
USD_COLUMNS = (
    ("index $", "index_usd"),
    ("$ per 1,000 questions", "query_usd_per_1000"),
    ("$ index + 1,000 questions", "projected_usd"),
    ("$ this benchmark", "cost_usd"),
)
#: the metrics of the ranked table besides the ranking metric (the KPIs show the rest)
TABLE_METRICS = tuple(m.run_name for m in CATALOG.shown_in_order("ranked_table"))


def _costs_money(rows: Sequence[Mapping[str, Any]], column: str) -> bool:
    """Whether any configuration has a dollar amount other than zero in ``column``."""
    return any((number(r.get(column)) or 0.0) != 0.0 for r in rows)


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:.0f}%"


def _ci(name: str, bounds: Interval) -> str:
    """``low–high`` of an interval, escaped."""
    return esc(f"{fmt_metric(name, bounds.low)}–{fmt_metric(name, bounds.high)}")


def _with_interval(name: str, raw: Any, bounds: Interval | None) -> str:
    text = esc(fmt_metric(name, raw))
    if bounds is not None:
        text += f"<span class='ci'>CI {_ci(name, bounds)}</span>"
    return text


def _questions(n: Any) -> str:
    """ "1 question", "30 questions" ("– questions" when not recorded)."""
    return "– questions" if number(n) is None else plural(number(n), "question")


def _span_questions(row: Mapping[str, Any]) -> Any:
    """How many of a row's scored questions have evidence spans (what recall, precision and MRR average over): the
    scored ones less those that name only their source documents; None when the run recorded no count."""
    scored = number(row.get("n_questions"))
    return None if scored is None else scored - (number(row.get("n_documents_only")) or 0)


def _located_note(row: Mapping[str, Any]) -> str:
    """How many of the scored questions rest on located evidence not reviewed yet ("" when none)."""
    located = int(number(row.get("n_located")) or 0)
    if not located:
        return ""
    return (
        f" {plural(located, 'of them rests', 'of them rest')} on evidence found by <code>chunkbench questions "
        "locate</code> and not reviewed yet (marked <em>located</em> in the technical report's inspector)."
    )


def _label(row: Mapping[str, Any]) -> str:
    """The configuration's one label (strategy × corpus model), marked with its key."""
    return label_html(str(row["key"]), str(row["label"]))


def _config_html(row: Mapping[str, Any]) -> str:
    return f"<strong>{_label(row)}</strong>"


def recommended_row(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The board row of the recommended configuration (the first row before anything was compared)."""
    for row in rows:
        if flag(row.get("recommended")):
            return row
    return rows[0] if rows else None


def _names(rows: Sequence[Mapping[str, Any]]) -> str:
    """The configurations' labels (HTML, each marked with its key)."""
    return ", ".join(_label(r) for r in rows)


def _class_sentence(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> str:
    """Which configurations are shown within the margin of the best, which might be as good (and what would
    settle them), how many are shown worse; the reason gives the numbers."""
    if len(rows) < 2:
        return ""
    rec = data.recommendation or {}
    margin = number(rec.get("margin"))
    m = f"{margin:g}" if margin is not None else "the margin"
    within = [r for r in rows if value(r, "class") in ("best", "within_margin")]
    undecided = [r for r in rows if value(r, "class") == "undecided"]
    worse = [r for r in rows if value(r, "class") == "worse"]
    parts = [
        f"<strong>Shown within {esc(m)} of the best:</strong> {_names(within)}"
        + (" (only the best itself)" if len(within) == 1 else "")
        + "."
    ]
    if undecided:
        parts.append(f"<strong>Might be as good, cannot tell yet:</strong> {_names(undecided)}.")
        needed = questions_needed_text(rec)
        if needed:  # the one "questions needed" figure, as the CLI and the Dagster metadata give it
            parts.append(esc(needed))
    if worse:
        parts.append(f"<strong>Shown worse than the best:</strong> {esc(plural(len(worse), 'configuration'))}.")
    return "<p id='classes'>" + " ".join(parts) + "</p>"


def _stability(rec: Mapping[str, Any]) -> str:
    """How often the rule picks the same configuration on resamples of the questions, and the other picks."""
    share, resamples = number(rec.get("recommendation_stability")), number(rec.get("stability_resamples"))
    if share is None or not resamples:
        return ""
    others = value(rec, "stability_runner_ups")
    text = (
        f"<p id='stability'><strong>Stability {share:.0%}:</strong> the rule picks this configuration in "
        f"{share:.0%} of {resamples:,.0f} resamples of the questions"
        + (f" (otherwise: {esc(others)})" if others else "")
        + "."
    )
    if share < 0.7:
        text += " <strong>Unstable:</strong> the warnings below say how many questions would settle it."
    return text + "</p>"


def _recommendation(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return "<div class='recommendation' id='recommendation'><p>No experiment has run yet.</p></div>"
    best = recommended_row(rows)
    assert best is not None
    rec = data.recommendation
    parts = [f"<p class='headline'>Recommended: {_config_html(best)}.</p>"]
    if rec:
        parts.append(
            f"<p id='rank-metric'>Ranking metric: <strong>{esc(rec['rank_metric'])}</strong>, "
            f"{esc(rec['metric_definition'])}. The recommended configuration scores "
            f"{esc(fmt_metric('recall', rec.get('rank_mean')))}"
            + (
                f" (95% CI {esc(fmt_metric('recall', best.get('rank_ci_low')))}–"
                f"{esc(fmt_metric('recall', best.get('rank_ci_high')))})"
                if number(best.get("rank_ci_low")) is not None
                else ""
            )
            + f" over {esc(_questions(rec.get('n_questions')))}.</p>"
        )
        parts.append(f"<p id='question-counts'>Questions: {esc(question_counts(best))}.{_located_note(best)}</p>")
        parts.append(f"<p id='rule'>Rule: {esc(rec['rule_text'])}.</p>")
        if value(rec, "decided") is not None and not flag(rec.get("decided")):
            parts.append(
                "<p class='warning' id='undecided'><strong>Not decided yet:</strong> these questions "
                "cannot settle the choice; the warnings below say why and how many questions would.</p>"
            )
        parts.append(f"<p id='reason'>{esc(rec['reason'])}</p>")
        parts.append(_stability(rec))
    else:
        parts.append("<p class='note'>Not compared yet: materialize the leaderboard to rank the configurations.</p>")
    recall = metric_value(data, best, "recall")
    parts.append(
        f"<p>Its top {esc(fmt('count', best.get('top_k')))} chunks hold {_pct(recall)} of the evidence text (recall "
        f"{esc(fmt_metric('recall', recall))} over {esc(_questions(_span_questions(best)))}), with precision "
        f"{esc(fmt_metric('precision', metric_value(data, best, 'precision')))} and MRR "
        f"{esc(fmt_metric('mrr', metric_value(data, best, 'mrr')))}; the LLM would read about "
        f"{esc(fmt('count', best.get('context_tokens')))} tokens of context per question.</p>"
    )
    doc_recall = metric_value(data, best, "doc_recall")
    if doc_recall is not None:
        parts.append(
            f"<p id='document-level'>At the document level, its top {esc(fmt('count', best.get('top_k')))} chunks "
            f"come from {_pct(doc_recall)} of each question's source documents (doc recall "
            f"{esc(fmt_metric('doc_recall', doc_recall))}; doc MRR "
            f"{esc(fmt_metric('doc_mrr', metric_value(data, best, 'doc_mrr')))}).</p>"
        )
    similarity = metric_value(data, best, "answer_similarity")
    if similarity is not None:
        hallucination = metric_value(data, best, "hallucination_rate")
        extra = "" if hallucination is None else f"; {_pct(hallucination)} of its answers were flagged as hallucinated"
        parts.append(
            f"<p>With an LLM answering from this context, the judge scored answer similarity "
            f"{esc(fmt_metric('answer_similarity', similarity))}/10{extra}.</p>"
        )
    parts.append(_class_sentence(data, rows))
    return "<div class='recommendation' id='recommendation'>" + "".join(parts) + "</div>"


def _drivers(data: ReportData) -> str:
    """What drives the scores: the plain sentence, the verdict, and each factor's share with its interval."""
    rec = data.recommendation or {}
    rows = [r for r in data.decomposition if number(r.get("share")) is not None]
    if not rows:
        return ""
    sentence, verdict = value(rec, "drivers_sentence"), value(rec, "verdict_sentence")
    parts = []
    if sentence:
        parts.append(f"<p id='drivers-sentence'><strong>{esc(sentence)}</strong></p>")
    if verdict:
        parts.append(f"<p id='drivers-verdict'>{esc(verdict)}</p>")
    body = []
    for r in rows:
        within = value(r, "within")
        name = esc(str(r.get("description") or r.get("factor")))
        levels = int(number(r.get("levels")) or 0)
        css, prefix = (" class='part'", "&nbsp;&nbsp;of which ") if within else ("", "")
        body.append(
            f"<tr{css}><th scope='row'>{prefix}"
            f"{name}</th><td class='num'>{esc(percent(float(r['share'])))}</td>"
            f"<td class='num'>{esc(percent(float(r['ci_low'])))} to {esc(percent(float(r['ci_high'])))}</td>"
            f"<td class='num'>{levels if levels else '–'}</td></tr>"
        )
    n, scored = number(rows[0].get("n_questions")), number(rows[0].get("n_scored"))
    parts.append(
        "<div class='scroll'><table id='drivers'><caption>Share of the differences in "
        f"{esc(str(rows[0].get('metric')))} per source</caption><thead><tr><th scope='col'>source</th>"
        "<th scope='col'>share</th><th scope='col'>95% interval</th><th scope='col'>levels</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
    parts.append(
        "<p class='note'>Each share is the part of the spread of the per-question scores that the source "
        "explains (eta squared of a repeated-measures analysis of variance, the question being the repeated "
        f"unit), over the {int(n or 0):,} questions every configuration scored"
        + (f" (of {int(scored):,})" if scored is not None and scored != n else "")
        + '; intervals by resampling the questions. Rows marked "of which" are parts of the row above '
        "them. A source with one level (one retriever) explains nothing. DuckDB view: "
        "variance_decomposition.</p>"
    )
    return "<div id='what-drives'>" + "".join(parts) + "</div>"


def _diagnostics(data: ReportData) -> str:
    if not data.diagnostics:
        return ""
    items = "".join(f"<li>{esc(d['message'])}</li>" for d in data.diagnostics)
    return "<div class='warnings' id='diagnostics'><h2>Before you trust these numbers</h2><ul>" + items + "</ul></div>"


def _kpis(data: ReportData, best: Mapping[str, Any], metrics: Sequence[str]) -> str:
    cards = []
    for name in metrics:
        info = metric_by_name()[name]
        raw = metric_value(data, best, name)
        if raw is None:
            continue
        bounds = metric_interval(data, best, name)
        ci = f"<div class='ci'>95% CI {_ci(name, bounds)}</div>" if bounds else ""
        # the term explained where it appears, not only on hover
        cards.append(
            f"<div class='kpi' title='{esc(info.description)}'><div class='label'>{esc(info.label)}</div>"
            f"<div class='value'>{esc(fmt_metric(name, raw))}</div>{ci}"
            f"<div class='ci kpi-term'>{esc(info.description)}</div></div>"
        )
    failed = n_failed(data, best)
    judge_only = int(number(best.get("n_judge_only")) or 0)
    cards.append(
        f"<div class='kpi' title='{esc(question_counts(best))}'><div class='label'>Questions scored</div>"
        f"<div class='value'>{esc(fmt('count', best.get('n_questions')))}</div>"
        f"<div class='ci'>{judge_only} judge-only</div>"
        + (f"<div class='ci bad'>{failed} failed</div>" if failed else "")
        + "</div>"
    )
    return "<div class='kpis' id='kpis'>" + "".join(cards) + "</div>"


def _ranked_table(data: ReportData, rows: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> str:
    metric = next((str(r["rank_metric"]) for r in rows if value(r, "rank_metric")), None)
    headers = ["#", "configuration", "questions"]
    if metric:
        headers += [metric, "lower bound vs best"]
    has_cost = _costs_money(rows, "projected_usd")
    headers += [
        *(metric_by_name()[m].label for m in metrics),
        "context tokens",
        *(["$ index + 1,000 questions"] if has_cost else []),
        "frontier",
        "verdict",
    ]
    body = []
    for i, row in enumerate(rows):
        cells = [
            esc(fmt("count", row.get("rank") if number(row.get("rank")) is not None else i + 1)),
            _label(row),
            esc(fmt("count", row.get("n_questions"))),
        ]
        if metric:
            bounds = (
                Interval(float(row["rank_ci_low"]), float(row["rank_ci_high"]), True)
                if number(row.get("rank_ci_low")) is not None
                else None
            )
            cells.append(_with_interval("recall", row.get("rank_mean"), bounds))
            cells.append(esc(fmt("fraction", row.get("lower_bound_vs_best"))))
        cells += [_with_interval(m, metric_value(data, row, m), metric_interval(data, row, m)) for m in metrics]
        cells += [
            esc(fmt("count", row.get("context_tokens"))),
            *([esc(fmt("usd", row.get("projected_usd")))] if has_cost else []),
            "yes" if flag(row.get("on_frontier")) else "",
            esc(value(row, "verdict") or "–"),
        ]
        body.append(cells)
    numeric = (
        [True, False, True]
        + ([True, True] if metric else [])
        + [True] * len(metrics)
        + [True, *([True] if has_cost else []), False, False]
    )
    return table(
        headers,
        body,
        element_id="ranking",
        numeric=numeric,
        row_classes=["best" if r is recommended_row(rows) else "" for r in rows],
    )


def _cost_latency(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> str:
    """Index, query and storage cost per configuration, as the leaderboard records them."""
    columns: list[tuple[str, Any]] = [
        ("chunks", lambda r: fmt("count", r.get("n_chunks"))),
        ("embedded tokens", lambda r: fmt("count", r.get("embedded_tokens"))),
        (
            "index build",
            lambda r: f"{seconds:,.1f} s" if (seconds := number(r.get("index_seconds"))) is not None else "–",
        ),
        ("query (warm)", lambda r: fmt("ms", r.get("query_ms"))),
        ("first query (cold)", lambda r: fmt("ms", r.get("cold_query_ms"))),
        ("context tokens / question", lambda r: fmt("count", r.get("context_tokens"))),
    ]
    # dollar columns only where something costs money (local models cost nothing: a column of $0.0000 says
    # nothing), as the leaderboard in the terminal does
    dollars = [(header, column) for header, column in USD_COLUMNS if _costs_money(rows, column)]
    columns += [(header, lambda r, c=column: fmt("usd", r.get(c))) for header, column in dollars]
    columns.append(
        ("storage", lambda r: f"{size / 1e6:,.1f} MB" if (size := number(r.get("storage_bytes"))) is not None else "–")
    )
    headers = ["configuration", *(header for header, _ in columns)]
    body = [[_label(row), *(esc(show(row)) for _, show in columns)] for row in rows]
    html = table(headers, body, element_id="cost-latency", numeric=[False] + [True] * (len(headers) - 1))
    priced = any(flag(r.get("llm_priced")) for r in rows)
    no_llm_price = (
        "no LLM price (none configured: set CHUNKBENCH_LLM_PRICE_INPUT and _OUTPUT to price the "
        "context an LLM would read)"
    )
    if not dollars:
        money = f"Nothing here costs money (local models, {no_llm_price}), so no dollar column is shown."
    else:
        money = "Dollars use the embedding model's price and " + (
            "the LLM's price for reading the context and answering."
            if priced
            else f"{no_llm_price}; local models cost nothing."
        )
    html += (
        "<p class='note'>Query time is the warm mean of embedding one question and searching; the first call "
        f"(which may load the model) is shown apart and never mixed in. {money}</p>"
    )
    tokens = [token_totals(data, r) for r in rows]
    # the counts the table above does not show already (context tokens per question, embedded tokens), each
    # headed with what it counts: a mean per question or a sum over the questions
    token_columns = sorted({c for t in tokens for c in t} - {"context_tokens", "embedded_tokens"})
    if token_columns:
        html += table(
            ["configuration", *(token_header(c) for c in token_columns)],
            [[_label(r), *(esc(fmt("count", t.get(c))) for c in token_columns)] for r, t in zip(rows, tokens)],
            element_id="token-usage",
            numeric=[False] + [True] * len(token_columns),
        )
    return html


def _plots(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> str:
    out = []
    points, metric, axis = plots.frontier_points(data.board)
    if points:
        out.append(
            "<figure>"
            + png_img(plots.frontier_png(points, metric, axis), "frontier", f"{metric} against cost per configuration")
            + f"<figcaption>Up is better ({esc(metric)}, {esc(_means_over(rows))}), left is cheaper "
            f"({esc(plots.COST_AXIS_LABELS.get(axis, axis))}). Each point is a configuration, numbered by "
            "its rank and named in the legend; its whisker is the 95% confidence interval of its mean. The "
            "star is the recommendation; filled points are the best and the configurations shown within "
            f"the margin of it{esc(_margin_words(data))}; hollow ones are undecided (might be as good, cannot "
            "tell yet); faded ones are shown worse than the best. The dashed line joins the frontier: the "
            "configurations no other one beats on both quality and cost.</figcaption></figure>"
        )
    series, terms = [], []
    for name in BAR_METRICS:
        values = [metric_value(data, r, name) for r in rows]
        if all(v is None for v in values):
            continue
        bounds = [metric_interval(data, r, name) for r in rows]
        lows = [b.low if b else None for b in bounds]
        highs = [b.high if b else None for b in bounds]
        series.append(plots.MetricSeries(metric_by_name()[name].label, values, lows, highs))
        terms.append(f"{metric_by_name()[name].label}: {metric_by_name()[name].description}")
    if series:
        out.append(
            "<figure>"
            + png_img(
                plots.metric_bars_png([str(r["label"]) for r in rows], series),
                "metric-bars",
                "metrics per configuration with confidence intervals",
            )
            + f"<figcaption>Means per configuration, {esc(_means_over(rows))}; whiskers show the 95% "
            "confidence interval. " + esc("; ".join(terms)) + ".</figcaption>"
            "</figure>"
        )
    out.append(_chunk_sizes(data, rows))
    return "".join(out)


def _means_over(rows: Sequence[Mapping[str, Any]]) -> str:
    """What the plotted means are over: "over 30 questions", or "over 24 to 30 questions (each configuration's n is
    in the leaderboard)" when the configurations scored different numbers."""
    counts = sorted({int(n) for n in (number(r.get("n_questions")) for r in rows) if n is not None})
    if not counts:
        return "over the questions each configuration scored"
    if len(counts) == 1:
        return f"over {plural(counts[0], 'question')}"
    return f"over {counts[0]:,} to {plural(counts[-1], 'question')} (each configuration's n is in the leaderboard)"


def _margin_words(data: ReportData) -> str:
    """ " (0.02 in the ranking metric)": the margin the filled points are within, when the comparison recorded it."""
    margin = number((data.recommendation or {}).get("margin"))
    return f" ({margin:g} in the ranking metric)" if margin is not None else ""


def _chunk_sizes(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> str:
    sizes = data.chunk_sizes
    if sizes.empty:
        return "<p class='note'>No chunks were recorded, so chunk sizes cannot be shown.</p>"
    use_tokens = sizes["token_count"].notna().any()
    column, unit = ("token_count", "tokens") if use_tokens else ("n_chars", "characters")
    distributions, stats = [], []
    for row in rows:
        values = sizes[(sizes["strategy"] == row["strategy"]) & (sizes["corpus_model"] == row["corpus_model"])][column]
        values = [float(v) for v in values.dropna()]
        if not values:
            continue
        distributions.append((str(row["label"]), values))
        s = pd.Series(values)
        stats.append(
            [
                _label(row),
                esc(fmt("count", len(values))),
                esc(fmt("count", s.median())),
                esc(fmt("count", s.quantile(0.1))),
                esc(fmt("count", s.quantile(0.9))),
                esc(fmt("count", s.max())),
            ]
        )
    if not distributions:
        return "<p class='note'>No chunks of these configurations were recorded.</p>"
    png = plots.chunk_size_png(distributions, unit)
    return (
        "<figure>"
        + png_img(png, "chunk-sizes", f"chunk size distribution in {unit} per configuration")
        + f"<figcaption>Chunk sizes in {unit}: box = middle half, red line = median, dots = outliers."
        "</figcaption></figure>"
        + table(
            ["configuration", "chunks", f"median {unit}", "10th percentile", "90th percentile", "largest"],
            stats,
            element_id="chunk-size-table",
            numeric=[False, True, True, True, True, True],
        )
    )


def over_questions(scored: Any, total: Any, what: str = "with evidence") -> str:
    """ "over 125 questions with evidence, of 195", or "over 30 questions" when every question counts: the n a mean
    is over, always said with it."""
    n, of = number(scored), number(total)
    if n is None:
        return ""
    if of is None or of == n:
        return f"over {plural(n, 'question')}"
    return f"over {plural(n, 'question')} {what}, of {of:,.0f}"


def _ranking_metric_sentence(data: ReportData, row: Mapping[str, Any]) -> str:
    """The configuration's mean of the ranking metric in words, with its definition and the questions it is over."""
    from chunkbench_core.evaluation.recommendation import metric_definition

    mean, metric = number(row.get("rank_mean")), value(row, "rank_metric")
    if mean is None or not metric:
        return ""
    total = (number(row.get("n_questions")) or 0) + (number(row.get("n_judge_only")) or 0)
    scored = data_scored(data, row, str(metric))
    return (
        f"By the ranking metric, {metric} ({metric_definition(str(metric))}), it scores "
        f"{fmt_metric('recall', mean)} {over_questions(scored, total or None)}."
    )


def data_scored(data: ReportData, row: Mapping[str, Any], metric: str) -> int | None:
    """How many of the configuration's questions have a value of ``metric`` (what its mean is over)."""
    questions = data.questions
    if questions.empty or metric not in questions.columns:
        return None
    mine = config_questions(data, row, scored_only=False)
    return int(mine[metric].notna().sum())


def _first_evidence_rank(data: ReportData, row: Mapping[str, Any]) -> str:
    """Where the first chunk with evidence came, over the questions where the top k held any, and the share where
    it was not in the top k at all (1 / MRR would count those as a rank beyond k)."""
    questions = data.questions
    if questions.empty or "reciprocal_rank" not in questions.columns:
        return ""
    mine = config_questions(data, row, scored_only=False)
    rr = pd.to_numeric(mine["reciprocal_rank"], errors="coerce").dropna()
    if rr.empty:
        return ""
    found = rr[rr > 0]
    k = number(row.get("top_k"))
    top = f"top {k:.0f}" if k is not None else "retrieved chunks"
    missed = 1 - len(found) / len(rr)
    if found.empty:
        return f"No chunk with evidence was in the {top} for any of the {plural(len(rr), 'question')}."
    text = (
        f"The first chunk with evidence came at rank {float((1 / found).mean()):.1f} on average over the "
        f"{plural(len(found), 'question')} where the {top} held one"
    )
    return text + (f"; it was not in the {top} for {_pct(missed)} of the {len(rr):,}." if missed > 0 else ".")


def _strategy_paragraph(data: ReportData, row: Mapping[str, Any], rank: int, total: int) -> str:
    strategy = str(row["strategy"])
    sentences = []
    label = str(row.get("strategy_label") or strategy)
    description = strategy_description(strategy, label)
    if description:
        sentences.append(f"This strategy {description}.")
    ranked = _ranking_metric_sentence(data, row)
    if ranked:  # the metric the ranking is by, so the paragraphs read in the leaderboard's order
        sentences.append(ranked)
    elif (recall := metric_value(data, row, "recall")) is not None:  # not compared yet: no ranking metric
        over = over_questions(_span_questions(row), row.get("n_questions"), "with evidence spans")
        sentences.append(
            f"It found {_pct(recall)} of the evidence text in its top chunks (recall "
            f"{fmt_metric('recall', recall)} {over})."
        )
    precision = metric_value(data, row, "precision")
    if precision is not None and precision > 0:
        other = (1 - precision) / precision
        sentences.append(
            f"{_pct(precision)} of what it retrieved was evidence: for each character of evidence the "
            f"model also reads about {other:.1f} characters of other text."
        )
    elif precision is not None:
        sentences.append("None of the text it retrieved was evidence.")
    first = _first_evidence_rank(data, row)
    if first:
        sentences.append(first)
    sizes = data.chunk_sizes
    if not sizes.empty:
        mine = sizes[(sizes["strategy"] == row["strategy"]) & (sizes["corpus_model"] == row["corpus_model"])]
        tokens = mine["token_count"].dropna()
        if not tokens.empty:
            sentences.append(
                f"Its chunks are typically {tokens.median():.0f} tokens long "
                f"(middle half {tokens.quantile(0.25):.0f}–{tokens.quantile(0.75):.0f})."
            )
    latency = number(row.get("query_ms"))
    if latency is not None:
        sentences.append(f"A query takes {fmt('ms', latency)} (embedding the question and searching, warm).")
    similarity = metric_value(data, row, "answer_similarity")
    if similarity is not None:
        sentences.append(f"The LLM judge rated its answers {similarity:.1f}/10 for similarity to the expected answer.")
    hallucination = metric_value(data, row, "hallucination_rate")
    if hallucination is not None:
        sentences.append(f"{_pct(hallucination)} of its answers were flagged as hallucinated.")
    cls = value(row, "class")
    if len(data.board) > 1 and cls:
        margin = number(row.get("margin"))
        m = f"{margin:g}" if margin is not None else "the margin"
        bound = number(row.get("lower_bound_vs_best"))
        if cls == "best":
            sentences.append("It has the highest mean of the ranking metric.")
        elif cls == "within_margin":
            sentences.append(
                f"It is shown within {m} of the best configuration: at most {-min(bound or 0.0, 0.0):.3f} "
                "below it, with 95% confidence."
            )
        elif cls == "worse":
            sentences.append("It is shown worse than the best configuration.")
        else:
            settle = number(row.get("questions_to_settle"))
            sentences.append(
                "It might be as good as the best configuration; these questions cannot tell yet"
                + (
                    f" (about {settle:,.0f} questions would settle this one, if its observed difference held)."
                    if settle is not None
                    else "."
                )
            )
    failed = n_failed(data, row)
    if failed:
        sentences.append(
            f"{plural(failed, 'question')} failed and {'is' if failed == 1 else 'are'} not in these numbers."
        )
    return (
        f"<div class='strategy'><h3>{rank}. {_label(row)}"
        f"<span class='badge'>rank {rank} of {total}</span></h3><p>{esc(' '.join(sentences))}</p></div>"
    )


def _corpus(data: ReportData) -> str:
    docs = data.documents
    if docs.empty:
        return "<p class='note'>No documents were recorded.</p>"
    failed = int((docs["status"] == "failed").sum())
    n_questions = (
        data.questions[["question_set", "question_id"]].drop_duplicates().shape[0] if not data.questions.empty else 0
    )
    n_sets = data.questions["question_set"].nunique() if n_questions else 0
    summary = (
        f"<p>{plural(len(docs), 'document')} ({failed} failed to parse); {plural(n_questions, 'question')} "
        f"in {plural(n_sets, 'question set')}.</p>"
    )
    rows = [
        [
            esc(r["document"]),
            f"<span class='{'fail' if r['status'] == 'failed' else ''}'>{esc(r['status'])}</span>",
            esc(fmt("count", r.get("n_chars"))),
            esc(value(r, "error") or ""),
        ]
        for _, r in docs.iterrows()
    ]
    return summary + table(
        ["document", "status", "characters", "error"], rows, element_id="documents", numeric=[False, False, True, False]
    )


def _results_by_group(data: ReportData) -> str:
    """The leaderboard's metrics per format, category, difficulty and document, and where the ranking differs."""
    section = render_by_group(data)
    return "<h2 id='results-by-group'>Results by group</h2>" + section if section else ""


def render_managerial(data: ReportData, links: Sequence[tuple[str, str]], current: str) -> str:
    rows: list[dict[str, Any]] = [dict(r) for _, r in data.board.iterrows()]
    body = [
        nav(links, current),
        "<h1>chunkbench: which chunking and embedding to use</h1>",
        f"<p class='meta'>Managerial report · generated {esc(data.generated_at.strftime('%Y-%m-%d %H:%M UTC'))}"
        " · "
        f"{plural(len(rows), 'configuration')}, {scope_meta(data, 'latest run of each')}.</p>",
        scope_banner(data),
    ]
    body.append("<h2>Recommendation</h2>" + _recommendation(data, rows))
    drivers = _drivers(data)
    if drivers:
        body.append("<h2 id='what-drives-the-scores'>What drives the scores</h2>" + drivers)
    body.append(_diagnostics(data))
    if rows:
        metrics = [m.name for m in present_metrics(data.board, KPI_METRICS)]
        metrics += [m for m in KPI_METRICS if m not in metrics and metric_value(data, rows[0], m) is not None]
        metrics = [m for m in KPI_METRICS if m in metrics]
        body.append(
            "<h2>Key figures of the recommendation</h2>"
            + _kpis(data, recommended_row(rows) or rows[0], metrics)
            + render_parse_ceiling(data)
        )
        body.append("<h2>Leaderboard</h2>" + _ranked_table(data, rows, [m for m in TABLE_METRICS if m in metrics]))
        if any(not b.from_results for b in (metric_interval(data, r, "recall") for r in rows) if b is not None):
            body.append(f"<p class='note'>{esc(REPORT_CI_NOTE)}</p>")
        body.append("<h2>Cost and latency</h2>" + _cost_latency(data, rows))
        body.append("<h2>Plots</h2>" + _plots(data, rows))
        body.append(_results_by_group(data))
        body.append(
            "<h2>Each configuration in plain words</h2>"
            + "".join(_strategy_paragraph(data, r, i + 1, len(rows)) for i, r in enumerate(rows))
        )
        definitions = [(m.label, esc(m.description)) for m in (metric_by_name()[n] for n in metrics)]
        if data.recommendation:
            definitions.insert(
                0,
                (
                    str(data.recommendation["rank_metric"]),
                    esc(
                        str(data.recommendation["metric_definition"]).capitalize() + ". It ranks the "
                        "configurations: every one sees the same context budget, so none can rank "
                        "higher by sending more text."
                    ),
                ),
            )
            margin = number(data.recommendation.get("margin"))
            m = f"{margin:g}" if margin is not None else "the margin"
            definitions.insert(
                1,
                (
                    "margin and classes",
                    esc(
                        f"A configuration is shown within {m} of the best when, on the questions both scored, the 95% lower "
                        f"confidence bound of its mean difference to the best is above -{m} (Student t, Bonferroni-corrected "
                        "for the number of configurations compared). It is shown worse when one-sided paired randomization "
                        "tests find it lower after Holm's correction (p < 0.05). Otherwise it is undecided: it might be as "
                        "good, these questions cannot tell yet. Not finding a difference is never taken as proof that there "
                        "is none."
                    ),
                ),
            )
            definitions.insert(
                2,
                (
                    "stability",
                    "The share of 1,000 resamples of the questions (drawn with "
                    "replacement) on which the whole rule picks the same configuration; "
                    "below 70% the pick is called unstable.",
                ),
            )
            definitions.insert(
                3,
                (
                    "frontier",
                    "A configuration is on the cost-quality frontier when no other one "
                    "is both better on the ranking metric and cheaper.",
                ),
            )
        body.append("<h2>What the numbers mean</h2>" + definition_list(definitions))
    body.append("<h2>Corpus</h2>" + _corpus(data))
    body.append(render_question_problems(data))
    return page(
        "chunkbench managerial report", "".join(body), css=stylesheet("by_group.css"), scripts=scripts("by_group.js")
    )
