"""The managerial report: what to use, how sure we are, what it costs, in plain language.

Sections: recommendation (with confidence intervals and the significance of the lead
when the results carry it), KPIs of the recommended configuration, the ranked table,
cost and latency per configuration, plots (recall vs precision, metric bars with CI
whiskers, chunk-size distributions), one plain-language paragraph per configuration,
and the corpus (documents parsed and failed).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from . import plots
from .columns import (
    HEADING_CONTEXT_LABEL,
    KPI_METRICS,
    METRIC_BY_NAME,
    fmt,
    fmt_metric,
    number,
    plural,
    present_metrics,
    value,
)
from .data import ReportData
from .html import definition_list, esc, nav, page, png_img, table
from .intervals import REPORT_CI_NOTE
from .style import CSS
from .summary import Interval, cost, latency_means, metric_interval, metric_value, n_failed, significance, token_totals

#: plain-language description of the strategies the product ships (unknown names get none)
STRATEGY_DESCRIPTIONS: dict[str, str] = {
    "fixed_size": "cuts the text into windows of a fixed number of tokens, ignoring its structure",
    "recursive": "splits at headings, then paragraphs, lines and sentences, and merges pieces up to a target size",
    "semantic": "groups consecutive sentences while their meaning stays similar (a boundary embedding model decides)",
    "semantic_parent_child": "retrieves small semantic chunks and hands the model their larger parent section",
    "contextual_retrieval": "adds an LLM-written context line to each chunk before embedding it",
    HEADING_CONTEXT_LABEL: "adds the document's title and the chunk's heading path to each chunk before embedding "
                           "it (no LLM was configured)",
    "structural": "follows the document's own structure (headings, lists, tables)",
    "cluster_semantic": "clusters sentences by meaning into chunks of bounded size",
}

BAR_METRICS = ("recall", "precision", "iou", "mrr", "ndcg")


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
    """"1 question", "30 questions" ("– questions" when not recorded)."""
    return "– questions" if number(n) is None else plural(number(n), "question")


def _config_html(row: Mapping[str, Any]) -> str:
    return (f"<strong>{esc(row.get('strategy_label') or row['strategy'])}</strong> with "
            f"<strong>{esc(row['corpus_model'])}</strong>")


def _recommendation(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return "<div class='recommendation' id='recommendation'><p>No experiment has run yet.</p></div>"
    best = rows[0]
    recall = metric_value(data, best, "recall")
    bounds = metric_interval(data, best, "recall")
    parts = [f"<p class='headline'>Recommended: {_config_html(best)}.</p>"]
    ci = f" (95% CI {_ci('recall', bounds)})" if bounds else ""
    parts.append(
        f"<p>It retrieves {_pct(recall)} of the evidence text on average: recall {esc(fmt_metric('recall', recall))}"
        f"{ci} over {esc(_questions(best.get('n_questions')))}, with precision "
        f"{esc(fmt_metric('precision', metric_value(data, best, 'precision')))}, IoU "
        f"{esc(fmt_metric('iou', metric_value(data, best, 'iou')))} and MRR "
        f"{esc(fmt_metric('mrr', metric_value(data, best, 'mrr')))}.</p>"
    )
    similarity = metric_value(data, best, "answer_similarity")
    if similarity is not None:
        hallucination = metric_value(data, best, "hallucination_rate")
        extra = "" if hallucination is None else f"; {_pct(hallucination)} of its answers were flagged as hallucinated"
        parts.append(f"<p>With an LLM answering from this context, the judge scored answer similarity "
                     f"{esc(fmt_metric('answer_similarity', similarity))}/10{extra}.</p>")
    if len(rows) == 1:
        parts.append("<p>Only one configuration ran, so there is nothing to compare it with.</p>")
    else:
        parts.append(_lead(data, best, rows[1]))
    if "is_best" in data.board.columns and bool(data.board["is_best"].fillna(False).astype(bool).sum() == 1):
        parts.append("<p class='note'>The evaluation's own best-configuration rule chose this configuration.</p>")
    else:
        parts.append("<p class='note'>Configurations are ranked as in the leaderboard (highest recall first, "
                     "ties broken by IoU).</p>")
    return "<div class='recommendation' id='recommendation'>" + "".join(parts) + "</div>"


def _lead(data: ReportData, best: Mapping[str, Any], second: Mapping[str, Any]) -> str:
    r1, r2 = metric_value(data, best, "recall"), metric_value(data, second, "recall")
    b1, b2 = metric_interval(data, best, "recall"), metric_interval(data, second, "recall")
    text = (f"<p>The runner-up, {_config_html(second)}, reaches recall {esc(fmt_metric('recall', r2))}"
            + (f" (CI {_ci('recall', b2)})" if b2 else "") + ". ")
    sig = significance(second)
    if sig is not None:
        p_text = f" (p = {sig.p_value:.3g})" if sig.p_value is not None else ""
        if sig.significant is True:
            text += ("<span class='sig good' id='significance'>The lead is statistically significant"
                     f"{esc(p_text)}.</span>")
        elif sig.significant is False:
            text += (f"<span class='sig' id='significance'>The lead is not statistically significant{esc(p_text)}: "
                     "treat the two as tied and decide on cost and latency.</span>")
        else:
            text += f"<span class='sig' id='significance'>Paired test against the best{esc(p_text)}.</span>"
    elif b1 and b2 and r1 is not None and r2 is not None:
        if b2.high >= b1.low:
            text += ("<span id='significance'>Their confidence intervals overlap, so the lead may be chance "
                     "(no significance test was recorded).</span>")
        else:
            text += "<span id='significance'>Their confidence intervals do not overlap.</span>"
    return text + "</p>"


def _kpis(data: ReportData, best: Mapping[str, Any], metrics: Sequence[str]) -> str:
    cards = []
    for name in metrics:
        info = METRIC_BY_NAME[name]
        raw = metric_value(data, best, name)
        if raw is None:
            continue
        bounds = metric_interval(data, best, name)
        ci = f"<div class='ci'>95% CI {_ci(name, bounds)}</div>" if bounds else ""
        cards.append(f"<div class='kpi' title='{esc(info.description)}'><div class='label'>{esc(info.label)}</div>"
                     f"<div class='value'>{esc(fmt_metric(name, raw))}</div>{ci}</div>")
    failed = n_failed(data, best)
    cards.append(f"<div class='kpi'><div class='label'>Questions scored</div><div class='value'>"
                 f"{esc(fmt('count', best.get('n_questions')))}</div>"
                 + (f"<div class='ci bad'>{failed} failed</div>" if failed else "") + "</div>")
    return "<div class='kpis' id='kpis'>" + "".join(cards) + "</div>"


def _ranked_table(data: ReportData, rows: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> str:
    has_sig = any(significance(r) is not None for r in rows)
    headers = ["#", "strategy", "corpus model", "questions", *(METRIC_BY_NAME[m].label for m in metrics)]
    if has_sig:
        headers.append("vs best")
    headers.append("latency / question")
    body = []
    for i, row in enumerate(rows):
        cells = [str(i + 1), esc(row.get("strategy_label") or row["strategy"]), esc(row["corpus_model"]),
                 esc(fmt("count", row.get("n_questions")))]
        cells += [_with_interval(m, metric_value(data, row, m), metric_interval(data, row, m)) for m in metrics]
        if has_sig:
            sig = significance(row)
            if i == 0:
                cells.append("best")
            elif sig is None:
                cells.append("–")
            else:
                label = {True: "significantly different", False: "not significant", None: "tested"}[sig.significant]
                p = f" (p = {sig.p_value:.3g})" if sig.p_value is not None else ""
                cells.append(esc(label + p))
        latency = latency_means(data, row).get("retrieval_ms")
        cells.append(esc(fmt("ms", latency)))
        body.append(cells)
    numeric = [True, False, False, True, *([True] * len(metrics))] + ([False] if has_sig else []) + [True]
    return table(headers, body, element_id="ranking", numeric=numeric,
                 row_classes=["best" if i == 0 else "" for i in range(len(rows))])


def _cost_latency(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> str:
    latencies = [latency_means(data, r) for r in rows]
    tokens = [token_totals(data, r) for r in rows]
    costs = [cost(r) for r in rows]
    latency_columns = [c for c in ("retrieval_ms", "embed_ms", "search_ms", "expand_ms", "generate_ms", "judge_ms")
                       if any(c in lat for lat in latencies)]
    latency_columns += sorted({c for lat in latencies for c in lat} - set(latency_columns))
    token_columns = sorted({c for t in tokens for c in t})
    has_cost = any(c is not None for c in costs)
    if not latency_columns and not token_columns and not has_cost:
        return "<p class='note'>No latency, token or cost figures were recorded.</p>"
    headers = ["configuration", *(f"{c.removesuffix('_ms')} (mean)" for c in latency_columns),
               *(c.replace("_", " ") for c in token_columns)]
    if has_cost:
        headers.append("cost")
    body = []
    for row, lat, tok, usd in zip(rows, latencies, tokens, costs):
        cells = [esc(row["configuration"])]
        cells += [esc(fmt("ms", lat.get(c))) for c in latency_columns]
        cells += [esc(fmt("count", tok.get(c))) for c in token_columns]
        if has_cost:
            cells.append(esc(fmt("usd", usd)))
        body.append(cells)
    html = table(headers, body, element_id="cost-latency", numeric=[False] + [True] * (len(headers) - 1))
    if not token_columns:
        html += "<p class='note'>No token usage was recorded (local embedding models cost no tokens).</p>"
    values = [v for v in (lat.get("retrieval_ms") for lat in latencies) if v is not None]
    if values and len(values) == len(rows):
        png = plots.bar_png([r["configuration"] for r in rows], values,
                            "mean retrieval latency per question (ms)")
        html += ("<figure>" + png_img(png, "latency-plot", "mean retrieval latency per configuration")
                 + "<figcaption>Mean retrieval latency per question (embedding the question, search, expansion)."
                 "</figcaption></figure>")
    return html


def _plots(data: ReportData, rows: Sequence[Mapping[str, Any]]) -> str:
    out = []
    best_config = rows[0]["configuration"]
    points = []
    for row in rows:
        precision, recall = metric_value(data, row, "precision"), metric_value(data, row, "recall")
        if precision is None or recall is None:
            continue
        pb, rb = metric_interval(data, row, "precision"), metric_interval(data, row, "recall")
        points.append(plots.ScatterPoint(row["configuration"], precision, recall,
                                         (pb.low, pb.high) if pb else None, (rb.low, rb.high) if rb else None,
                                         best=row["configuration"] == best_config))
    if points:
        out.append("<figure>" + png_img(plots.recall_precision_png(points), "recall-precision",
                                        "recall against precision per configuration")
                   + "<figcaption>Up and right is better: up finds more evidence, right wastes less of the "
                     "model's context on other text. Bars: 95% confidence intervals.</figcaption></figure>")
    series = []
    for name in BAR_METRICS:
        values = [metric_value(data, r, name) for r in rows]
        if all(v is None for v in values):
            continue
        bounds = [metric_interval(data, r, name) for r in rows]
        lows = [b.low if b else None for b in bounds]
        highs = [b.high if b else None for b in bounds]
        series.append(plots.MetricSeries(METRIC_BY_NAME[name].label, values, lows, highs))
    if series:
        out.append("<figure>" + png_img(plots.metric_bars_png([r["configuration"] for r in rows], series),
                                        "metric-bars", "metrics per configuration with confidence intervals")
                   + "<figcaption>Mean per configuration; whiskers show the 95% confidence interval.</figcaption>"
                     "</figure>")
    out.append(_chunk_sizes(data, rows))
    return "".join(out)


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
        distributions.append((row["configuration"], values))
        s = pd.Series(values)
        stats.append([esc(row["configuration"]), esc(fmt("count", len(values))), esc(fmt("count", s.median())),
                      esc(fmt("count", s.quantile(0.1))), esc(fmt("count", s.quantile(0.9))),
                      esc(fmt("count", s.max()))])
    if not distributions:
        return "<p class='note'>No chunks of these configurations were recorded.</p>"
    png = plots.chunk_size_png(distributions, unit)
    return ("<figure>" + png_img(png, "chunk-sizes", f"chunk size distribution in {unit} per configuration")
            + f"<figcaption>Chunk sizes in {unit}: box = middle half, red line = median, dots = outliers."
              "</figcaption></figure>"
            + table(["configuration", "chunks", f"median {unit}", "10th percentile", "90th percentile", "largest"],
                    stats, element_id="chunk-size-table", numeric=[False, True, True, True, True, True]))


def _strategy_paragraph(data: ReportData, row: Mapping[str, Any], rank: int, total: int) -> str:
    strategy = str(row["strategy"])
    sentences = []
    label = str(row.get("strategy_label") or strategy)
    description = STRATEGY_DESCRIPTIONS.get(label) or STRATEGY_DESCRIPTIONS.get(strategy)
    if description:
        sentences.append(f"This strategy {description}.")
    recall, precision = metric_value(data, row, "recall"), metric_value(data, row, "precision")
    if recall is not None:
        sentences.append(f"It found {_pct(recall)} of the evidence text (recall {fmt_metric('recall', recall)}).")
    if precision is not None and precision > 0:
        other = (1 - precision) / precision
        sentences.append(f"{_pct(precision)} of what it retrieved was evidence: for each character of evidence the "
                         f"model also reads about {other:.1f} characters of other text.")
    elif precision is not None:
        sentences.append("None of the text it retrieved was evidence.")
    mrr = metric_value(data, row, "mrr")
    if mrr:
        sentences.append(f"The first chunk with evidence came at about rank {1 / mrr:.1f} on average (MRR {mrr:.2f}).")
    sizes = data.chunk_sizes
    if not sizes.empty:
        mine = sizes[(sizes["strategy"] == row["strategy"]) & (sizes["corpus_model"] == row["corpus_model"])]
        tokens = mine["token_count"].dropna()
        if not tokens.empty:
            sentences.append(f"Its chunks are typically {tokens.median():.0f} tokens long "
                             f"(middle half {tokens.quantile(0.25):.0f}–{tokens.quantile(0.75):.0f}).")
    latency = latency_means(data, row).get("retrieval_ms")
    if latency is not None:
        sentences.append(f"Retrieval takes {fmt('ms', latency)} per question.")
    similarity = metric_value(data, row, "answer_similarity")
    if similarity is not None:
        sentences.append(f"The LLM judge rated its answers {similarity:.1f}/10 for similarity to the expected answer.")
    hallucination = metric_value(data, row, "hallucination_rate")
    if hallucination is not None:
        sentences.append(f"{_pct(hallucination)} of its answers were flagged as hallucinated.")
    sig = significance(row)
    if rank > 1 and sig is not None and sig.significant is not None:
        sentences.append("It is significantly behind the recommended configuration." if sig.significant
                         else "Its gap to the recommended configuration is not statistically significant.")
    failed = n_failed(data, row)
    if failed:
        sentences.append(f"{plural(failed, 'question')} failed and {'is' if failed == 1 else 'are'} not in these "
                         "numbers.")
    return (f"<div class='strategy'><h3>{rank}. {esc(label)} · {esc(row['corpus_model'])}"
            f"<span class='badge'>rank {rank} of {total}</span></h3><p>{esc(' '.join(sentences))}</p></div>")


def _corpus(data: ReportData) -> str:
    docs = data.documents
    if docs.empty:
        return "<p class='note'>No documents were recorded.</p>"
    failed = int((docs["status"] == "failed").sum())
    n_questions = data.questions[["question_set", "question_id"]].drop_duplicates().shape[0] \
        if not data.questions.empty else 0
    n_sets = data.questions["question_set"].nunique() if n_questions else 0
    summary = (f"<p>{plural(len(docs), 'document')} ({failed} failed to parse); {plural(n_questions, 'question')} "
               f"in {plural(n_sets, 'question set')}.</p>")
    rows = [[esc(r["document"]), f"<span class='{'fail' if r['status'] == 'failed' else ''}'>{esc(r['status'])}</span>",
             esc(fmt("count", r.get("n_chars"))), esc(value(r, "error") or "")] for _, r in docs.iterrows()]
    return summary + table(["document", "status", "characters", "error"], rows, element_id="documents",
                           numeric=[False, False, True, False])


def render_managerial(data: ReportData, links: Sequence[tuple[str, str]], current: str) -> str:
    rows: list[dict[str, Any]] = [dict(r) for _, r in data.board.iterrows()]
    body = [nav(links, current), "<h1>chunkbench: which chunking and embedding to use</h1>",
            f"<p class='meta'>Managerial report · generated {esc(data.generated_at.strftime('%Y-%m-%d %H:%M UTC'))}"
            " · "
            f"{plural(len(rows), 'configuration')}, latest run of each.</p>"]
    body.append("<h2>Recommendation</h2>" + _recommendation(data, rows))
    if rows:
        metrics = [m.name for m in present_metrics(data.board, KPI_METRICS)]
        metrics += [m for m in KPI_METRICS if m not in metrics and metric_value(data, rows[0], m) is not None]
        metrics = [m for m in KPI_METRICS if m in metrics]
        body.append("<h2>Key figures of the recommendation</h2>" + _kpis(data, rows[0], metrics))
        body.append("<h2>Leaderboard</h2>" + _ranked_table(data, rows, metrics))
        if any(not b.from_results for b in (metric_interval(data, r, "recall") for r in rows) if b is not None):
            body.append(f"<p class='note'>{esc(REPORT_CI_NOTE)}</p>")
        body.append("<h2>Cost and latency</h2>" + _cost_latency(data, rows))
        body.append("<h2>Plots</h2>" + _plots(data, rows))
        body.append("<h2>Each configuration in plain words</h2>"
                    + "".join(_strategy_paragraph(data, r, i + 1, len(rows)) for i, r in enumerate(rows)))
        definitions = [(m.label, esc(m.description)) for m in (METRIC_BY_NAME[n] for n in metrics)]
        body.append("<h2>What the numbers mean</h2>" + definition_list(definitions))
    body.append("<h2>Corpus</h2>" + _corpus(data))
    return page("chunkbench managerial report", "".join(body), css=CSS)

