"""Read what the reports need from a ResultsDB, tolerating schemas with more (or fewer) columns.

``load_report_data`` reads:

- ``board``: every ``experiment_metrics`` column of the runs in the ``leaderboard`` view
  (the latest run per strategy x corpus model) with the view's rank, class against the best
  (margin, lower bound, verdict), costs and frontier, in the view's order (by rank);
- ``recommendation`` and ``diagnostics``: the views of the same names;
- ``runs``: every ``experiment_metrics`` row (all runs, for the decision board);
- ``questions``: every ``question_results`` column of the board's runs;
- ``documents``: the ``documents`` table;
- ``question_errors``: the problems of the question sets found by the latest experiment;
- ``chunk_sizes``: token count and characters of every chunk of the build each board run
  retrieved from (restricted to the run's ``chunking_params`` when provenance has them, for
  runs recorded before builds were kept).

``load_report_data(results, runs=selection)`` reads the same for exactly the chosen runs (one
experiment run or one batch, :class:`~chunkbench_core.storage.runs.RunSelection`): the latest of each
configuration among them, ranked by a comparison of those runs computed in memory (the ``comparison``
and ``recommendation`` tables of the latest runs are left as they are).

``load_chunks`` reads chunk rows (with text) for given chunk ids of given builds, for the technical report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Mapping

import pandas as pd

from chunkbench_core.labels import configuration_key, configuration_label
from chunkbench_core.storage.history import run_build
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.runs import RunScope, RunSelection, exclusions

from .columns import natural_key, parse_json, strategy_label
from .html import label_html

CONFIG_KEY = ("strategy", "corpus_model")


def configuration(strategy: Any, corpus_model: Any, retriever: Any = None) -> str:
    """The key of a configuration inside a report (page data, element attributes): ``strategy|corpus_model``,
    ``|retriever`` when it is not dense (:func:`chunkbench_core.labels.configuration_key`); people read
    :func:`chunkbench_core.labels.configuration_label` instead."""
    return configuration_key(strategy, corpus_model, retriever)


def _variant(row: Mapping[str, Any]) -> str:
    provenance = parse_json(row.get("provenance"), {})
    variant = provenance.get("variant") if isinstance(provenance, dict) else None
    return str(variant) if variant else ""


def row_key(row: Mapping[str, Any]) -> str:
    """The key of an ``experiment_metrics`` row's configuration in the pages (``data-configuration``):
    ``strategy|corpus model`` (``|retriever`` when not dense), and ``|variant`` for a sweep step."""
    key = configuration(row["strategy"], row["corpus_model"], _retriever(row))
    return f"{key}|{_variant(row)}" if _variant(row) else key


def row_label(row: Mapping[str, Any]) -> str:
    """The label of an ``experiment_metrics`` row's configuration: strategy (as its provenance names it) ×
    corpus model, and the sweep variant when the row is one."""
    provenance = parse_json(row.get("provenance"), {})
    provenance = provenance if isinstance(provenance, dict) else {}
    return configuration_label(row["strategy"], row["corpus_model"], provenance, _variant(row), _retriever(row))


def _retriever(row: Mapping[str, Any]) -> str | None:
    retriever = row.get("retriever")
    return retriever if isinstance(retriever, str) else None


#: question rows from which the comparison and the reports print progress lines (below: done in seconds)
PROGRESS_ROWS = 5_000


def leaderboard_question_rows(results: ResultsDB) -> int:
    """About how many question rows the leaderboard's runs hold (read from its counts, before the rows are): whether
    the comparison and the reports will take long enough to report progress."""
    try:
        frame = results.query(
            "SELECT coalesce(sum(coalesce(n_questions, 0) + coalesce(n_judge_only, 0)), 0) AS n FROM leaderboard"
        )
        return int(frame["n"].iloc[0])
    except Exception:  # noqa: BLE001 - only decides whether progress lines are printed
        return 0


@dataclass
class ReportData:
    board: pd.DataFrame
    runs: pd.DataFrame
    questions: pd.DataFrame
    documents: pd.DataFrame
    chunk_sizes: pd.DataFrame
    recommendation: dict[str, Any] | None = None  # the ``recommendation`` view's row
    diagnostics: list[dict[str, Any]] = field(default_factory=list)  # the ``diagnostics`` view
    #: what drives the scores: the ``variance_decomposition`` view's rows (evaluation.drivers)
    decomposition: list[dict[str, Any]] = field(default_factory=list)
    #: when an LLM judge ran: the ``judge_agreement`` view's rows (evaluation.judge_agreement)
    judge_agreement: list[dict[str, Any]] = field(default_factory=list)
    #: problems of the question sets (``question_errors``): file, question_id, field, reason
    question_errors: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: the parse ceiling (``parse_ceiling``): per question set, document and evidence kind, found and total
    parse_ceiling: pd.DataFrame = field(default_factory=pd.DataFrame)
    generated_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    #: the chosen run or batch these reports show (None: the latest run of each configuration)
    scope: RunSelection | None = None
    #: runs set aside for good (``chunkbench runs exclude``): run id -> reason
    excluded_runs: dict[str, str] = field(default_factory=dict)
    #: link from a chosen run's reports back to the latest managerial report (set by write_reports)
    latest_href: str | None = None
    #: memo of derived values (per-configuration question subsets, intervals), filled by :mod:`.summary`
    cache: dict[tuple[Any, ...], Any] = field(default_factory=dict, repr=False)

    @property
    def configurations(self) -> list[str]:
        return [
            configuration(r.strategy, r.corpus_model, getattr(r, "retriever", None)) for r in self.board.itertuples()
        ]

    def label(self, strategy: str, corpus_model: str) -> str:
        """The strategy's label in the configuration's latest run (e.g. "contextual_retrieval (heading context)")."""
        return strategy_label(strategy, self.provenance(strategy, corpus_model))

    def configuration_label(self, strategy: Any, corpus_model: Any) -> str:
        """The configuration's one label, as the board (its latest run) names it (looked up once per configuration:
        the question tables ask for it on every row)."""
        key = ("configuration_label", strategy, corpus_model)
        if key not in self.cache:
            rows = self._board_rows(strategy, corpus_model)
            self.cache[key] = (
                str(rows.iloc[0]["label"])
                if not rows.empty and "label" in rows.columns
                else configuration_label(strategy, corpus_model, self.provenance(str(strategy), str(corpus_model)))
            )
        return self.cache[key]

    def label_html(self, strategy: Any, corpus_model: Any) -> str:
        """The configuration's label in a page (marked with its key: :func:`.html.label_html`)."""
        key = ("label_html", strategy, corpus_model)
        if key not in self.cache:
            rows = self._board_rows(strategy, corpus_model)
            mark = (
                str(rows.iloc[0]["key"])
                if not rows.empty and "key" in rows.columns
                else configuration(strategy, corpus_model)
            )
            self.cache[key] = label_html(mark, self.configuration_label(strategy, corpus_model))
        return self.cache[key]

    def _board_rows(self, strategy: Any, corpus_model: Any) -> pd.DataFrame:
        return self.board[(self.board["strategy"] == strategy) & (self.board["corpus_model"] == corpus_model)]

    def provenance(self, strategy: str, corpus_model: str) -> dict[str, Any]:
        key = ("provenance", strategy, corpus_model)
        if key not in self.cache:
            rows = self._board_rows(strategy, corpus_model)
            parsed = (
                {} if rows.empty or "provenance" not in rows.columns else parse_json(rows.iloc[0]["provenance"], {})
            )
            self.cache[key] = parsed if isinstance(parsed, dict) else {}
        return self.cache[key]


def _ranked_board(results: ResultsDB) -> pd.DataFrame:
    order = results.leaderboard()
    # the comparison table (stages.compare_latest_runs) adds the best configuration and each one's
    # paired test against it
    # and the leaderboard's ranking, class, verdict, costs and frontier (one story in every view)
    full = results.query(
        'SELECT m.*, l.rank, l."class", l.tier, l.rank_metric, l.rank_mean, l.rank_ci_low, l.rank_ci_high, '
        "l.verdict, l.margin, l.lower_bound_vs_best, l.questions_to_settle, "
        "l.recommended, l.p_value_adjusted, l.difference_vs_best, l.effect_size, l.n_chunks, l.embedded_tokens, "
        "l.index_seconds, l.index_usd, l.projected_usd, l.cost_usd, l.points, l.storage_bytes, l.on_frontier, l.cost_axis, "
        "c.is_best, c.p_value_vs_best, c.significantly_worse, c.difference_ci_low, c.difference_ci_high "
        "FROM experiment_metrics m JOIN leaderboard l USING (experiment_run_id, strategy, corpus_model) "
        "LEFT JOIN comparison c ON c.experiment_run_id = m.experiment_run_id "
        "AND coalesce(c.strategy || '|' || c.corpus_model, c.configuration) = m.strategy || '|' || m.corpus_model"
    )
    if order.empty or full.empty:
        return full.iloc[0:0].assign(
            configuration=pd.Series(dtype=str), label=pd.Series(dtype=str), key=pd.Series(dtype=str)
        )
    # a run may hold several rows of one configuration (chunk-size sweep variants): the
    # leaderboard's created_at picks the row it ranked
    key = ["experiment_run_id", *CONFIG_KEY]
    exact = "created_at" in order.columns and "created_at" in full.columns
    order = order[[*key, "created_at"] if exact else key].reset_index(drop=True)
    order["_rank"] = range(len(order))
    board = order.merge(full, on=[*key, "created_at"] if exact else key, how="left")
    if exact and board["n_questions"].isna().any():  # timestamps did not line up: fall back to the key
        order = order.drop(columns="created_at")
        board = order.merge(full, on=key, how="left")
    board = board.drop_duplicates(subset=key)
    board = board.sort_values("_rank", kind="stable").drop(columns="_rank").reset_index(drop=True)
    board["configuration"] = [
        configuration(r["strategy"], r["corpus_model"], _retriever(r)) for r in board.to_dict("records")
    ]
    board["strategy_label"] = [
        strategy_label(s, parse_json(p, {}))
        for s, p in zip(board["strategy"], board["provenance"] if "provenance" in board else [None] * len(board))
    ]
    records = board.to_dict("records")
    board["label"] = [row_label(r) for r in records]
    board["key"] = [row_key(r) for r in records]
    return board


def _params_match(chunk_params: Any, run_params: Mapping[str, Any] | None) -> bool:
    if not run_params:
        return True
    parsed = parse_json(chunk_params, None)
    return parsed is None or parsed == dict(run_params)


def restrict_to_run_variant(chunks: pd.DataFrame, board: pd.DataFrame) -> pd.DataFrame:
    """Keep, per configuration, the chunks made with the run's ``chunking_params`` (when recorded).

    A configuration whose recorded parameters match no chunk keeps all its chunks.
    """
    if chunks.empty or "chunking_params" not in chunks.columns or "provenance" not in board.columns:
        return chunks
    kept = []
    for (strategy, model), group in chunks.groupby(list(CONFIG_KEY), sort=False):
        rows = board[(board["strategy"] == strategy) & (board["corpus_model"] == model)]
        provenance = parse_json(rows.iloc[0]["provenance"], {}) if not rows.empty else {}
        params = provenance.get("chunking_params") if isinstance(provenance, dict) else None
        mask = group["chunking_params"].map(lambda p, wanted=params: _params_match(p, wanted))
        kept.append(group[mask] if mask.any() else group)
    return pd.concat(kept, ignore_index=True) if kept else chunks


def configuration_rows(questions: pd.DataFrame, row: Mapping[str, Any]) -> pd.Series:
    """Which question rows are the board row's: its strategy and corpus model, and its run when the rows carry
    one (the dense and the hybrid run of one collection are two configurations, in two runs)."""
    mask = (questions["strategy"] == row["strategy"]) & (questions["corpus_model"] == row["corpus_model"])
    if "experiment_run_id" in questions.columns and not pd.isna(row.get("experiment_run_id")):
        mask &= questions["experiment_run_id"] == row["experiment_run_id"]
    return mask


def _rows_of_board_rows(questions: pd.DataFrame, board: pd.DataFrame) -> pd.DataFrame:
    """Drop question rows of other sweep variants of the same run (they differ in created_at).

    Applied per configuration, only when its rows carry several timestamps and one of
    them is the board row's; otherwise every row is kept.
    """
    if questions.empty or "created_at" not in questions.columns or "created_at" not in board.columns:
        return questions
    keep = pd.Series(True, index=questions.index)
    for row in board.to_dict("records"):
        mask = configuration_rows(questions, row)
        stamps = questions.loc[mask, "created_at"]
        if stamps.nunique() > 1 and (stamps == row["created_at"]).any():
            keep &= ~mask | (questions["created_at"] == row["created_at"])
    return questions[keep]


def load_report_data(results: ResultsDB, runs: RunSelection | None = None, ranking: Any = None) -> ReportData:
    """What the reports show: the latest runs, or exactly ``runs`` (compared in memory with ``ranking``,
    a RankingSettings; default: the defaults)."""
    excluded = {e.experiment_run_id: e.reason for e in exclusions(results).values() if e.excluded}
    chosen = runs
    if runs is not None:
        from chunkbench_core.stages import compare_latest_runs  # the pipeline's own comparison, on these runs

        results = RunScope(results, runs.run_ids)
        compare_latest_runs(results, ranking)
    with results.one_reading():  # the run scores' pivot once for the reads below (the chosen runs' own)
        return _report_data(results, chosen, excluded)


def _report_data(results: ResultsDB, chosen: RunSelection | None, excluded: dict[str, str]) -> ReportData:
    board = _ranked_board(results)
    runs = results.query(
        "SELECT * FROM experiment_metrics ORDER BY created_at, experiment_run_id, strategy, corpus_model"
    )
    questions = results.query(
        """SELECT q.* FROM question_results q JOIN leaderboard l USING (experiment_run_id, strategy, corpus_model)
           ORDER BY q.question_set, q.question_id, q.strategy, q.corpus_model"""
    )
    questions = _rows_of_board_rows(questions, board)
    lengths = results.query(
        "SELECT question_set, question_id, any_value(evidence_length) AS evidence_length "
        "FROM question_evidence GROUP BY ALL"
    )
    if not questions.empty:  # the evidence length bucket of each question (the breakdowns' evidence_length)
        questions = questions.merge(lengths, on=["question_set", "question_id"], how="left")
    if not questions.empty:  # natural order: q2 before q10
        order = sorted(
            range(len(questions)),
            key=lambda i: (
                natural_key(questions["question_set"].iat[i]),
                natural_key(questions["question_id"].iat[i]),
                str(questions["strategy"].iat[i]),
                str(questions["corpus_model"].iat[i]),
            ),
        )
        questions = questions.iloc[order].reset_index(drop=True)
    documents = results.query("SELECT * FROM documents ORDER BY document")
    chunk_sizes = restrict_to_run_variant(load_chunk_sizes(results, board), board)
    question_errors = results.query("SELECT * FROM question_errors ORDER BY file, question_id NULLS FIRST, field")
    parse_ceiling = results.query("SELECT * FROM parse_ceiling ORDER BY question_set, document, kind")
    return ReportData(
        board=board,
        runs=runs,
        questions=questions,
        documents=documents,
        chunk_sizes=chunk_sizes,
        recommendation=results.recommendation(),
        diagnostics=results.diagnostics(),
        decomposition=results.query("SELECT * FROM variance_decomposition").to_dict("records"),
        judge_agreement=results.query("SELECT * FROM judge_agreement ORDER BY configuration").to_dict("records"),
        question_errors=question_errors,
        parse_ceiling=parse_ceiling,
        scope=chosen,
        excluded_runs=excluded,
    )


def load_chunk_sizes(results: ResultsDB, board: pd.DataFrame) -> pd.DataFrame:
    """Token count and characters of every chunk of the build each board run retrieved from."""
    builds = pd.DataFrame(
        sorted(
            {
                (str(r["strategy"]), str(r["corpus_model"]), run_build(r.get("provenance")) or "")
                for r in board.to_dict("records")
            }
        ),
        columns=["strategy", "corpus_model", "build"],
    )
    con = results.connect()
    try:
        con.register("board_builds", builds)
        return con.execute(
            """SELECT c.strategy, c.corpus_model, c.token_count, c.end_offset - c.start_offset AS n_chars,
                      c.chunking_params
               FROM chunks c JOIN board_builds b
                 ON c.strategy = b.strategy AND c.corpus_model = b.corpus_model AND coalesce(c.build, '') = b.build"""
        ).df()
    finally:
        con.close()


def load_chunks(results: ResultsDB, wanted: Iterable[tuple[str, ...]]) -> pd.DataFrame:
    """Chunk rows (every column) for ``wanted`` keys: (strategy, corpus_model, chunk_id, build) looks in that
    build ('' for the rows written before builds were kept), (strategy, corpus_model, chunk_id) in the latest
    build of the collection."""
    wanted = set(wanted)
    exact = pd.DataFrame(
        sorted(w for w in wanted if len(w) == 4), columns=["strategy", "corpus_model", "chunk_id", "build"]
    )
    current = pd.DataFrame(sorted(w for w in wanted if len(w) == 3), columns=["strategy", "corpus_model", "chunk_id"])
    if exact.empty and current.empty:
        return pd.DataFrame(
            columns=[
                "strategy",
                "corpus_model",
                "chunk_id",
                "document",
                "start_offset",
                "end_offset",
                "text",
                "parent_id",
                "build",
            ]
        )
    con = results.connect()
    try:
        con.register("wanted_builds", exact)
        con.register("wanted_current", current)
        return con.execute(
            """SELECT c.* FROM chunks c JOIN wanted_builds w
                 ON c.strategy = w.strategy AND c.corpus_model = w.corpus_model AND c.chunk_id = w.chunk_id
                AND coalesce(c.build, '') = w.build
               UNION ALL BY NAME
               SELECT c.* FROM current_chunks c JOIN wanted_current w USING (strategy, corpus_model, chunk_id)"""
        ).df()
    finally:
        con.close()


def group_results(data: ReportData) -> pd.DataFrame:
    """The board's runs split by format, category, difficulty and document (``evaluation.breakdowns``: the
    same cells as the ``leaderboard_by_group`` view), by the board's ranking metric; computed once per report."""
    from chunkbench_core.evaluation.breakdowns import group_breakdown

    key = ("group_results",)
    if key not in data.cache:
        metrics = data.board["rank_metric"].dropna() if "rank_metric" in data.board.columns else pd.Series([])
        data.cache[key] = group_breakdown(data.questions, str(metrics.iloc[0]) if len(metrics) else None)
    return data.cache[key]
