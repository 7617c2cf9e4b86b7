"""Report generation from fixture ResultsDBs: base schema, widened schema, empty results."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from chunkbench_core.labels import configuration_label
from chunkbench_core.reporting.html import esc, label_html
from chunkbench_core.reporting import ReportNames, ReportPaths, write_reports
from chunkbench_core.reporting.columns import flatten, run_settings
from chunkbench_core.reporting.data import load_report_data
from chunkbench_core.reporting.decision_board import assign_batches
from chunkbench_core.reporting.html import ObjectStream, script_json, script_json_parts
from chunkbench_core.reporting.inspector import inspector_payload
from chunkbench_core.reporting.inspector import evidence_ranges
from chunkbench_core.reporting.intervals import REPORT_CI_NOTE
from chunkbench_core.reporting.reports import render_all
from chunkbench_core.storage.results_db import ResultsDB

from .conftest import read
from .fixtures import DOCUMENTS, QUESTIONS, SWEEP_VARIANT, XSS_SCRIPT


def embedded(html: str, element_id: str) -> dict:
    match = re.search(rf'<script type="application/json" id="{element_id}">(.*?)</script>', html, re.DOTALL)
    assert match, f"no #{element_id} data"
    return json.loads(match.group(1))


def test_three_self_contained_files_link_each_other(any_reports: ReportPaths) -> None:
    names = ReportNames()
    for path in any_reports.as_dict().values():
        html = read(path)
        assert html.startswith("<!doctype html>")
        assert "Content-Security-Policy" in html and "default-src &#x27;none&#x27;" in html
        for other in {names.managerial, names.technical, names.decision_board} - {path.name}:
            assert f'href="{other}"' in html
        # nothing is loaded from anywhere: no external URL in src/href
        assert not re.search(r'(src|href)="(https?:)?//', html)


def test_managerial_on_base_schema(base_reports: ReportPaths, base_results: ResultsDB) -> None:
    html = read(base_reports.managerial)
    best = base_results.leaderboard().iloc[0]
    label = configuration_label(best["strategy"], best["corpus_model"])
    assert f"Recommended: <strong>{label_html(best['strategy'] + '|' + best['corpus_model'], label)}</strong>" in html
    assert "<h2>Leaderboard</h2>" in html and "volcano.md" in html
    for plot in ("metric-bars", "chunk-sizes"):  # no frontier: nothing was compared yet
        assert re.search(rf'<img id="{plot}" [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{{200,}}"', html), plot
    # no CI columns in the base schema: the report computes them and says so
    assert REPORT_CI_NOTE in html and "CI " in html
    # optional parts are left out, not shown empty
    for absent in ("Hallucination rate", "Answer similarity", "nDCG", ">cost<", "vs best"):
        assert absent not in html, absent
    assert "Each configuration in plain words" in html and re.search(r"found \d+% of the evidence", html)


def test_managerial_uses_optional_columns(extended_reports: ReportPaths) -> None:
    html = read(extended_reports.managerial)
    labels = ("nDCG", "Precision Ω", "Answer similarity", "Faithfulness", "Hallucination rate", "Context relevance")
    for label in labels:
        assert f"<div class='label'>{label}</div>" in html, label
    # the comparison's story: ranking metric and its definition, the rule, the reason, the classes against the
    # best, the stability of the pick, the frontier plot
    assert "id='rank-metric'" in html and "Ranking metric: <strong>recall</strong>" in html
    assert "id='rule'" in html and "cheapest configuration shown within the margin of the best" in html
    assert "id='reason'" in html and "id='stability'" in html and "resamples of the questions" in html
    assert "id='classes'" in html and "Shown within 0.02 of the best:" in html
    assert re.search(r'<img id="frontier" [^>]*src="data:image/png;base64,[A-Za-z0-9+/=]{200,}"', html)
    assert ">tier<" not in html and ">lower bound vs best<" in html and ">verdict<" in html
    assert "recommended" in html and "margin and classes" in html
    assert "$ this benchmark" in html and "embedding tokens" in html
    assert "$ index + 1,000 questions" not in html  # not recorded for any configuration: no column of dashes
    assert REPORT_CI_NOTE not in html  # the recorded intervals are used
    assert "semantic_parent_child" in html and "larger parent section" in html


def test_technical_inspector_data_on_widened_schema(extended_reports: ReportPaths) -> None:
    data = embedded(read(extended_reports.technical), "inspector-data")
    assert len(data["questions"]) == len(QUESTIONS) and len(data["configs"]) == 5
    assert data["questions"][2]["text"].startswith(XSS_SCRIPT)  # raw text survives, escaped only for transport
    assert data["questions"][0]["expected"] == "It is called lava."
    highlighted = 0
    for key, result in data["results"].items():
        q = data["questions"][int(key.split(":")[0])]
        phrase = next(p for s, i, _, _, p, *_ in QUESTIONS if (s, i) == (q["set"], q["id"]))
        for ref in result["hits"] + result["context"]:
            text = data["chunks"][ref["chunk"]]["text"]
            assert text is not None
            for start, end in ref["ev"]:
                assert text[start:end] in phrase and end > start
                highlighted += 1
    assert highlighted > 10
    strategy_of = {k: data["configs"][int(k.split(":")[1])]["strategy"] for k in data["results"]}
    fixed = next(r for k, r in data["results"].items() if strategy_of[k] == "fixed_size")
    assert any(node["prev"] or node["next"] for node in fixed["tree"])
    assert {ref["role"] for ref in fixed["context"]} == {"hit", "retrieved", "neighbor"}  # retrieved: no evidence
    parent_child = [r for k, r in data["results"].items() if strategy_of[k] == "semantic_parent_child"]
    assert all(node["parent"] is not None for r in parent_child for node in r["tree"])
    assert all(r["parentContext"] for r in parent_child)
    assert fixed["answer"].startswith("Generated answer") and fixed["judge"]["answer_similarity"] >= 1
    assert fixed["tokens"]["answer_prompt"] >= 300 and fixed["latency"]["generate"] == 650.0


def test_contextual_retrieval_is_labelled_by_where_its_context_came_from() -> None:
    from chunkbench_core.reporting.columns import plural, strategy_label

    assert (
        strategy_label("contextual_retrieval", {"context_sources": {"headings": 4}})
        == "contextual_retrieval (heading context)"
    )
    assert strategy_label("contextual_retrieval", {"context_sources": {"llm": 4}}) == "contextual_retrieval"
    assert (
        strategy_label("contextual_retrieval", {"context_sources": {"llm": 3, "headings_fallback": 1}})
        == "contextual_retrieval (LLM context, heading fallback on 1 chunk)"
    )
    assert (
        strategy_label("contextual_retrieval", {"chunking_params": {"context_source": "headings"}})
        == "contextual_retrieval (heading context)"
    )  # older runs: the chunker's own record
    assert strategy_label("fixed_size", {"context_sources": {}}) == "fixed_size"
    assert (plural(1, "question"), plural(2, "question"), plural(0, "run")) == ("1 question", "2 questions", "0 runs")


def test_inspector_marks_hit_only_on_chunks_that_share_evidence(extended_reports: ReportPaths) -> None:
    data = embedded(read(extended_reports.technical), "inspector-data")
    refs = [ref for result in data["results"].values() for ref in result["hits"]]
    roles = {ref["role"] for ref in refs}
    assert roles == {"hit", "retrieved"}  # the fixture retrieves noise chunks next to evidence
    assert all(ref["evChars"] > 0 for ref in refs if ref["role"] == "hit")
    assert all(ref["evChars"] == 0 for ref in refs if ref["role"] == "retrieved")


def test_technical_on_base_schema(base_reports: ReportPaths) -> None:
    html = read(base_reports.technical)
    data = embedded(html, "inspector-data")
    assert len(data["configs"]) == 4
    result = data["results"]["0:0"]
    assert result["hasReferences"] is False and result["tree"] == [] and result["answer"] is None
    assert all(ref["ev"] == [] and data["chunks"][ref["chunk"]]["text"] for ref in result["hits"])
    failed = next(r for r in data["results"].values() if r["error"])
    assert "search timed out" in failed["error"] and failed["hits"] == []
    # failures: the document that did not parse, the question that failed, escaped
    assert 'id="failed-documents"' in html and "broken.pdf" in html
    assert 'id="failed-questions"' in html and "search timed out &lt;script&gt;" in html
    # provenance and per-question table
    assert "question_set_hash" in html and "document_hashes.volcano.md" in html
    assert html.count("<tr") > len(QUESTIONS) * 4


def test_decision_board_keeps_every_run(base_reports: ReportPaths, extended_reports: ReportPaths) -> None:
    base = embedded(read(base_reports.decision_board), "board-data")
    assert {r["run"] for r in base["rows"]} == {"r1-baseline", "r2-neighbors-3", "r3-latest"}
    sweep = next(r for r in base["rows"] if r["run"] == "r2-neighbors-3")
    assert (sweep["prev"], sweep["next"], sweep["badge"]) == (3, 3, "±3/3")
    assert [m["name"] for m in base["metrics"]] == ["recall", "precision", "iou", "mrr", "hit_rate"]
    extended = embedded(read(extended_reports.decision_board), "board-data")
    boundaries = {r["boundary"] for r in extended["rows"] if r["strategy"] == "semantic_parent_child"}
    assert boundaries == {"e5-small", "minilm"}
    assert "answer_similarity" in [m["name"] for m in extended["metrics"]]
    assert next(m for m in extended["metrics"] if m["name"] == "hallucination_rate")["higherIsBetter"] is False


def test_board_rows_carry_the_facts_of_the_scored_collection(extended_reports: ReportPaths) -> None:
    rows = embedded(read(extended_reports.decision_board), "board-data")["rows"]
    assert {r["corpus"] for r in rows} == {"corpus-current", "corpus-older"}
    settings = run_settings(
        {
            "corpus_fingerprint": "c1",
            "settings_fingerprint": "s1",
            "context_sources": {"llm": 3, "headings_fallback": 1},
        }
    )
    assert (settings.corpus_fingerprint, settings.settings_fingerprint) == ("c1", "s1")
    assert settings.context_source == "headings_fallback, llm"
    assert run_settings({"context_sources": {}}).context_source is None


def test_sweep_variant_in_the_same_run_is_kept_apart(base_results: ResultsDB, base_reports: ReportPaths) -> None:
    """The report shows the leaderboard's row of a configuration, never mixes in a sweep variant of that run."""
    data = load_report_data(base_results)
    board = base_results.leaderboard()
    assert len(data.board) == len(board) == 4
    fixed = data.board[(data.board["strategy"] == "fixed_size") & (data.board["corpus_model"] == "minilm")].iloc[0]
    assert json.loads(fixed["provenance"])["variant"] == ""
    mine = data.questions[(data.questions["strategy"] == "fixed_size") & (data.questions["corpus_model"] == "minilm")]
    assert len(mine) == len(QUESTIONS) and mine["created_at"].nunique() == 1
    rows = embedded(read(base_reports.decision_board), "board-data")["rows"]
    assert {r["variant"] for r in rows if r["run"] == "r3-latest"} == {None, SWEEP_VARIANT}


def _board_row(run: str, minute: int, strategy: str, **extra: object) -> dict:
    row = {
        "run": run,
        "strategy": strategy,
        "model": "minilm",
        "variant": None,
        "topK": 5,
        "prev": 0,
        "next": 0,
        "questionSet": "h",
        "filter": False,
        "_batch": None,
        "_stamp": datetime(2026, 11, 1, 10, minute),
        "created": f"2026-11-01 10:{minute:02d}:00",
    }
    row.update(extra)
    return row


def test_runs_launched_together_form_one_board_column() -> None:
    rows = [
        _board_row("a", 0, "fixed_size"),
        _board_row("b", 2, "recursive"),
        _board_row("c", 3, "semantic"),
        _board_row("d", 5, "fixed_size"),  # fixed_size again: a new batch
        _board_row("e", 6, "recursive", prev=3, next=3),  # other neighbor settings: a new batch
        _board_row("f", 50, "semantic", prev=3, next=3),  # 44 minutes later: a new batch
        _board_row("g", 1, "fixed_size", _batch="sweep-7"),
        _board_row("h", 1, "recursive", _batch="sweep-7"),
        _board_row("m", 7, "fixed_size"),
        _board_row("m", 7, "recursive"),  # one run id, two configurations
    ]
    assign_batches(rows)
    batch = {r["run"]: r["batch"] for r in rows}
    assert batch["a"] == batch["b"] == batch["c"] != batch["d"]
    assert len({batch["d"], batch["e"], batch["f"]}) == 3
    assert batch["g"] == batch["h"] == "batch:sweep-7" and batch["m"] == "m"
    labels = {r["run"]: r["batchLabel"] for r in rows}
    assert labels["a"] == "batch 2026-11-01 10:00 (3 runs)" and labels["d"] == "d" and labels["g"] == "sweep-7"


def test_empty_results_give_valid_reports(tmp_path: Path) -> None:
    paths = write_reports(ResultsDB(tmp_path / "results"), tmp_path / "reports")
    assert "No experiment has run yet." in read(paths.managerial)
    assert "No experiment has run yet." in read(paths.decision_board)
    assert embedded(read(paths.technical), "inspector-data")["questions"] == []


def test_without_chunk_texts_the_inspector_shows_offsets(base_results: ResultsDB) -> None:
    html = render_all(load_report_data(base_results), ReportNames(), results=None)[ReportNames().technical]
    data = embedded(html, "inspector-data")
    hit = data["results"]["0:0"]["hits"][0]
    assert data["chunks"][hit["chunk"]]["text"] is None and data["chunks"][hit["chunk"]]["doc"] in DOCUMENTS


def test_script_json_cannot_close_or_open_elements() -> None:
    text = script_json({"a": "</script><script>alert(1)</script>", "b": "<!--", "c": "&amp;\u2028", "n": float("nan")})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"a": "</script><script>alert(1)</script>", "b": "<!--", "c": "&amp;\u2028", "n": None}


def test_json_written_in_pieces_is_the_same_json_and_as_safe() -> None:
    hostile = {"a": "</script><script>alert(1)</script>", "b": "<!--", "c": "&amp;\u2028", "n": float("nan")}
    walked: list[str] = []

    def members():
        for key in ("x", "y"):
            walked.append(key)
            yield key, {"nested": [hostile, 1.5, None], "k": key}

    data = {
        "first": [hostile, {"deep": {"deeper": [float("inf"), 2]}}],
        "stream": ObjectStream(members()),
        "after": lambda: list(walked),
        "empty": {},
        "none": [],
    }
    pieces = list(script_json_parts(data))
    text = "".join(pieces)
    assert len(pieces) > 10  # members and list items are encoded one at a time
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    cleaned = {**hostile, "n": None}
    assert json.loads(text) == {
        "first": [cleaned, {"deep": {"deeper": [None, 2]}}],
        "stream": {k: {"nested": [cleaned, 1.5, None], "k": k} for k in ("x", "y")},
        "after": ["x", "y"],
        "empty": {},
        "none": [],
    }  # "after" is called once walked


def test_the_technical_report_written_in_pieces_holds_the_whole_inspector_payload(base_results: ResultsDB) -> None:
    data = load_report_data(base_results)
    html = render_all(data, ReportNames(), results=base_results)[ReportNames().technical]
    assert embedded(html, "inspector-data") == json.loads(script_json(inspector_payload(data, base_results)))
    assert len(embedded(html, "inspector-data")["results"]) > 1


def test_run_settings_read_both_provenance_shapes() -> None:
    nested = run_settings(
        {
            "neighbors": {"neighbor_prev": 2, "neighbor_next": 1, "applied": True},
            "boundary_model": "e5",
            "chunking_params": {"chunk_size": 250},
            "top_k": 5,
        }
    )
    flat = run_settings({"neighbor_prev": 2, "neighbor_next": 1, "boundary_model": "e5", "chunk_size": 250})
    assert (nested.neighbor_badge, flat.neighbor_badge) == ("±2/1", "±2/1")
    assert nested.chunk_size == flat.chunk_size == 250 and nested.top_k == 5
    assert run_settings({}).neighbor_badge == "±?"
    flat_items = flatten({"a": {"b": [1, 2], "c": None}, "d": [{"e": 1}]})
    assert flat_items == [("a.b", "1, 2"), ("a.c", "–"), ("d[0].e", "1")]


@pytest.mark.parametrize(
    ("span", "text", "expected"),
    [
        (("d", 10, 20), "x" * 10, ([[2, 5], [7, 10]], 6)),
        (("d", 10, 20), "x" * 9, ([], 6)),  # text does not match the offsets: count only, no ranges
        (("e", 10, 20), "x" * 10, ([], 0)),
    ],
)
def test_evidence_ranges(span: tuple[str, int, int], text: str, expected: tuple[list, int]) -> None:
    references = [("d", 12, 14), ("d", 13, 15), ("d", 17, 30), ("e", 0, 5)]
    assert evidence_ranges(span, text, references) == expected


def test_technical_tests_table_shows_n_and_no_column_of_zero_dollars(extended_reports: ReportPaths) -> None:
    """Nothing priced: the tests table's cost is the context tokens, not a dollar column of zeros or dashes; each
    mean sits beside the n it is over."""
    html = read(extended_reports.technical)
    head = html[html.index("<table id='tests'") if "<table id='tests'" in html else html.index('id="tests"') :]
    head = head[: head.index("</thead>")]
    assert ">context tokens / question<" in head and "$ index + 1,000 questions" not in head
    assert ">n<" in head


def test_kpi_tiles_and_the_bars_caption_explain_their_terms(extended_reports: ReportPaths) -> None:
    """A term is explained where it appears: under each key figure and in the bar plot's caption, not only on
    hover."""
    from chunkbench_core.reporting.columns import metric_by_name

    html = read(extended_reports.managerial)
    recall = metric_by_name()["recall"]
    assert f"<div class='ci kpi-term'>{esc(recall.description)}</div>" in html
    caption = html[html.index('id="metric-bars"') :]
    caption = caption[caption.index("<figcaption>") : caption.index("</figcaption>")]
    assert esc(f"{recall.label}: {recall.description}") in caption


def test_the_plot_captions_say_what_the_plots_show_and_what_the_means_are_over(extended_reports: ReportPaths) -> None:
    """The quality-vs-cost caption names the plot's marks as the plot draws them (no "tier 1", which the plot no
    longer says), what the numbers and whiskers are, and the questions each plotted mean is over."""
    html = read(extended_reports.managerial)
    captions = {}
    for plot in ("frontier", "metric-bars"):
        caption = html[html.index(f'id="{plot}"') :]
        captions[plot] = caption[caption.index("<figcaption>") : caption.index("</figcaption>")]
    frontier = captions["frontier"]
    assert not re.search(r"\btier\b", frontier)
    for term in ("numbered by its rank", "95% confidence interval", "undecided", "shown worse", "frontier"):
        assert term in frontier, term
    over = r"over \d+( to \d+)? questions"
    assert re.search(over, frontier) and re.search(over, captions["metric-bars"])


def test_token_counts_say_whether_they_are_per_question_or_summed(extended_reports: ReportPaths) -> None:
    """The context and question tokens are means per question and the embedded tokens the index's: the technical
    report's table was headed "sum over questions" above all of them; each column now says what it counts, and the
    managerial report does not repeat the counts its cost table shows."""
    from chunkbench_core.reporting.summary import TOKEN_HEADERS, token_header

    assert token_header("context_tokens") == "context tokens / question"
    assert token_header("embedded_tokens") == "embedded tokens (index)"
    assert token_header("judge_prompt_tokens") == "judge prompt tokens (sum)"
    technical = read(extended_reports.technical)
    assert "sum over questions)</h3>" not in technical
    head = technical[
        technical.index("id='token-table'")
        if "id='token-table'" in technical
        else technical.index('id="token-table"') :
    ]
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", head[: head.index("</thead>")])[1:]
    assert headers and all(h in TOKEN_HEADERS.values() or h.endswith(" (sum)") for h in headers), headers
    managerial = read(extended_reports.managerial)
    if "token-usage" in managerial:
        usage = managerial[managerial.index("token-usage") :]
        usage = usage[: usage.index("</thead>")]
        assert "context tokens" not in usage and "embedded tokens" not in usage
