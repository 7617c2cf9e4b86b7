"""Results in DuckDB: each partition writes its rows as a Parquet file; DuckDB reads them all.

Layout under the results folder::

    tables/<table>/<key>.parquet   one file per writer (a partition, or a partition x experiment run)
    chunkbench.duckdb              views over the Parquet files, plus the ``leaderboard`` view

Why: DuckDB lets one process write a database file at a time, and backfills run
partitions in parallel processes (or on other machines). Writers never open the
DuckDB file; they atomically replace their own Parquet file (write to a temporary
name, then rename), so re-running a partition replaces its rows, never duplicates
them, and parallel writers never contend for a lock. Users query the DuckDB file
with plain SQL (``SELECT * FROM leaderboard``).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Sequence

import duckdb
import pandas as pd

from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.storage import integrity, space

TABLES: dict[str, list[tuple[str, str]]] = {
    "documents": [
        ("document", "VARCHAR"),
        ("path", "VARCHAR"),
        ("sha256", "VARCHAR"),
        ("size_bytes", "BIGINT"),
        ("status", "VARCHAR"),  # parsed | failed
        ("error", "VARCHAR"),
        ("parser", "VARCHAR"),
        ("n_chars", "BIGINT"),
        ("n_units", "BIGINT"),
        ("warnings", "VARCHAR"),  # JSON list
        ("parsed_at", "TIMESTAMP"),
    ],
    "chunks": [
        ("chunk_id", "VARCHAR"),
        ("point_id", "VARCHAR"),
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("document", "VARCHAR"),
        ("chunk_index", "INTEGER"),
        ("start_offset", "BIGINT"),
        ("end_offset", "BIGINT"),
        ("token_count", "INTEGER"),
        ("content_type", "VARCHAR"),
        ("heading_path", "VARCHAR"),  # JSON list
        ("parent_id", "VARCHAR"),
        ("role", "VARCHAR"),  # chunk | child (retrieved) | parent (context only, not embedded)
        ("previous_chunk_id", "VARCHAR"),
        ("next_chunk_id", "VARCHAR"),
        ("context_source", "VARCHAR"),  # contextual_retrieval: llm | headings
        ("text", "VARCHAR"),
        ("embedded_text", "VARCHAR"),
        ("chunking_params", "VARCHAR"),  # JSON object
        ("variant", "VARCHAR"),  # '' for the default sizes, e.g. size256_overlap32 for a sweep
        ("materialized_at", "TIMESTAMP"),
    ],
    "question_results": [
        ("experiment_run_id", "VARCHAR"),
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("question_set", "VARCHAR"),
        ("question_id", "VARCHAR"),
        ("question", "VARCHAR"),
        ("category", "VARCHAR"),
        ("difficulty", "VARCHAR"),
        ("top_k", "INTEGER"),
        ("n_references", "INTEGER"),
        ("retrieved", "VARCHAR"),  # JSON list of {rank, chunk_id, document, start, end, score}
        ("recall", "DOUBLE"),
        ("precision", "DOUBLE"),
        ("iou", "DOUBLE"),
        ("hit", "DOUBLE"),
        ("reciprocal_rank", "DOUBLE"),
        ("retrieval_ms", "DOUBLE"),
        ("error", "VARCHAR"),
        ("created_at", "TIMESTAMP"),
    ],
    "experiment_metrics": [
        ("experiment_run_id", "VARCHAR"),
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("n_questions", "INTEGER"),
        ("n_failed", "INTEGER"),
        ("recall", "DOUBLE"),
        ("precision", "DOUBLE"),
        ("iou", "DOUBLE"),
        ("mrr", "DOUBLE"),
        ("hit_rate", "DOUBLE"),
        ("top_k", "INTEGER"),
        ("provenance", "VARCHAR"),  # JSON object
        ("created_at", "TIMESTAMP"),
    ],
}

def _doubles(*names: str) -> list[tuple[str, str]]:
    return [(n, "DOUBLE") for n in names]


_RANKED = ("recall", "precision", "iou", "hit", "reciprocal_rank", "ndcg")
_BUDGETED = ("recall_at_256", "recall_at_512", "recall_at_1024", "recall_at_2048", "budget_auc")
# issue 6: precision_omega, nDCG, metrics after neighbor expansion, latency, LLM answer + judge
TABLES["question_results"] += [
    ("expected_answer", "VARCHAR"),
    ("references", "VARCHAR"),  # JSON list of {document, start, end}: the located evidence spans
    *_doubles("precision_omega", "ndcg", *(f"{c}_expanded" for c in _RANKED),
              "embed_ms", "search_ms", "expand_ms", "context_relevance", "answer_similarity", "faithfulness",
              "generate_ms", "judge_ms"),
    *[(n, "INTEGER") for n in ("n_expanded", "judge_attempts", "answer_prompt_tokens", "answer_completion_tokens",
                               "judge_prompt_tokens", "judge_completion_tokens", "llm_context_tokens")],
    ("expanded", "VARCHAR"),  # JSON: hits + neighbors after expansion
    ("expansion_tree", "VARCHAR"),  # JSON: one node per hit with its neighbors
    ("answer", "VARCHAR"),
    ("answer_error", "VARCHAR"),
    ("judge_error", "VARCHAR"),
    ("judge_reasoning", "VARCHAR"),
    ("hallucination", "BOOLEAN"),
    ("context_truncated", "BOOLEAN"),
    # equal context budgets (evaluation.budget): the context in retrieval order, cut at B cl100k tokens
    *_doubles("context_tokens", *_BUDGETED),
    ("budget_recalls", "VARCHAR"),  # JSON {budget: recall} for every configured budget
]
_AGGREGATED = ("recall", "precision", "iou", "mrr", "hit_rate", "precision_omega", "ndcg",
               *(f"{c}_expanded" for c in ("recall", "precision", "iou", "hit_rate", "mrr", "ndcg")))
_JUDGED = ("context_relevance", "answer_similarity", "faithfulness", "hallucination_rate")
TABLES["experiment_metrics"] += [
    ("variant", "VARCHAR"),  # '' = the partition's default chunk sizes; e.g. size256_overlap32 in a sweep
    ("neighbor_prev", "INTEGER"),
    ("neighbor_next", "INTEGER"),
    *_doubles("precision_omega", "ndcg", *(f"{c}_expanded" for c in ("recall", "precision", "iou", "hit_rate", "mrr", "ndcg"))),
    *_doubles(*(f"{m}_ci_{side}" for m in _AGGREGATED for side in ("low", "high"))),
    *_doubles("retrieval_ms", *_JUDGED, *(f"{m}_ci_{side}" for m in _JUDGED for side in ("low", "high")),
              "generate_ms", "judge_ms"),
    *[(n, "INTEGER") for n in ("n_judged", "n_answer_failed", "n_judge_failed")],
    # equal context budgets and query cost (cold first call apart from the warm mean)
    *_doubles("context_tokens", *_BUDGETED, *(f"{m}_ci_{side}" for m in _BUDGETED for side in ("low", "high")),
              "query_ms", "cold_query_ms", "question_tokens", "query_usd_per_1000"),
    ("llm_priced", "BOOLEAN"),  # the LLM's prices were known (else its share of query_usd_per_1000 is 0)
    ("budgets", "VARCHAR"),  # JSON list of the budgets in tokens
    *[(n, "BIGINT") for n in ("answer_prompt_tokens", "answer_completion_tokens", "judge_prompt_tokens",
                              "judge_completion_tokens")],
]

# rank, class and tests of every configuration of the latest runs against the best
# (evaluation.statistics.BEST_RULE), its costs on the frontier, and whether it is the recommendation
# (evaluation.recommendation)
TABLES["comparison"] = [
    ("configuration", "VARCHAR"),
    ("strategy_label", "VARCHAR"),  # how every view names the strategy (provenance.strategy_label)
    ("experiment_run_id", "VARCHAR"),  # the run compared (the leaderboard's latest of the configuration)
    ("rank", "INTEGER"),  # 1 = highest mean of the ranking metric (equal means: the cheaper, then the name)
    ("class", "VARCHAR"),  # best | within_margin | undecided | worse (against the best, see BEST_RULE)
    ("tier", "INTEGER"),  # the class in order: 1 = best or shown within the margin, 2 = undecided, 3 = shown worse
    ("metric", "VARCHAR"),
    ("margin", "DOUBLE"),  # in the metric's units: within this of the best counts as good as the best
    ("n_questions", "INTEGER"),
    ("mean", "DOUBLE"),
    ("ci_low", "DOUBLE"),
    ("ci_high", "DOUBLE"),
    ("is_best", "BOOLEAN"),  # rank 1
    ("recommended", "BOOLEAN"),
    ("n_paired", "INTEGER"),  # questions this configuration and the best both scored
    ("difference_vs_best", "DOUBLE"),  # mean of (this - best) over the paired questions
    ("difference_ci_low", "DOUBLE"),  # 95% bootstrap interval of that mean
    ("difference_ci_high", "DOUBLE"),
    ("lower_bound_vs_best", "DOUBLE"),  # one-sided 95% lower bound of that mean, Bonferroni over n_compared
    ("sd_difference", "DOUBLE"),
    ("effect_size", "DOUBLE"),  # Cohen's d_z against the best
    ("p_value_vs_best", "DOUBLE"),  # one-sided paired randomization test: this one scores lower than the best
    ("p_value_adjusted", "DOUBLE"),  # Holm over n_compared
    ("significantly_worse", "BOOLEAN"),  # p_value_adjusted < 0.05 and lower on average
    ("questions_to_show_within", "BIGINT"),  # questions that would show it within the margin, if its difference held
    ("questions_to_settle", "BIGINT"),  # undecided: questions that would class it either way, if its difference held
    ("n_compared", "INTEGER"),  # configurations compared with the best (the m - 1 of both corrections)
    ("friedman_statistic", "DOUBLE"),
    ("friedman_p", "DOUBLE"),
    ("n_complete", "INTEGER"),
    ("min_detectable_difference", "DOUBLE"),
    ("questions_to_separate", "BIGINT"),
    ("on_frontier", "BOOLEAN"),
    ("cost_axis", "VARCHAR"),  # projected_usd, or context_tokens when no configuration costs money
    ("rule", "VARCHAR"),
    ("compared_at", "TIMESTAMP"),
]

TABLES["recommendation"] = [  # one row: the configuration to use, by the documented rule, and why
    ("strategy", "VARCHAR"),
    ("corpus_model", "VARCHAR"),
    ("rule", "VARCHAR"),  # cheapest_within_margin | highest_mean
    ("reason", "VARCHAR"),
    ("recommendation_stability", "DOUBLE"),  # share of resamples of the questions where the rule picks the same
    ("stability_resamples", "INTEGER"),
    ("stability_runner_ups", "VARCHAR"),  # the other picks on those resamples, with their shares
    ("decided", "BOOLEAN"),  # false: the best only because nothing cheaper could be shown, or an unstable pick
    ("margin", "DOUBLE"),
    ("n_within_margin", "INTEGER"),  # the best and every configuration shown within the margin of it
    ("within_margin", "VARCHAR"),
    ("undecided", "VARCHAR"),  # might be as good, cannot tell yet
    ("n_worse", "INTEGER"),
    ("n_questions", "INTEGER"),
    ("difference_vs_best", "DOUBLE"),
    ("lower_bound_vs_best", "DOUBLE"),
    ("candidate", "VARCHAR"),  # the nearest cheaper configuration that might be as good
    ("questions_to_settle", "BIGINT"),  # questions that would show it within the margin, if its difference held
    ("questions_for_stable_pick", "BIGINT"),  # questions that would make the pick stable (70% of resamples)
    ("cost_tolerance", "DOUBLE"),
    ("min_detectable_difference", "DOUBLE"),
    ("configuration", "VARCHAR"),
    ("rule_text", "VARCHAR"),
    ("rank_metric", "VARCHAR"),
    ("metric_definition", "VARCHAR"),
    ("rank_mean", "DOUBLE"),
    ("questions_to_separate", "BIGINT"),
    ("highest_mean", "VARCHAR"),
    ("cost_axis", "VARCHAR"),
    ("compared_at", "TIMESTAMP"),
]

TABLES["diagnostics"] = [
    ("code", "VARCHAR"),
    ("message", "VARCHAR"),
    ("compared_at", "TIMESTAMP"),
]

# what building each collection took (evaluation.cost): one row per collection build
TABLES["index_costs"] = [
    ("strategy", "VARCHAR"),
    ("corpus_model", "VARCHAR"),
    ("variant", "VARCHAR"),
    ("collection", "VARCHAR"),
    ("n_chunks", "BIGINT"),
    ("n_embedded", "BIGINT"),
    ("embedded_tokens", "BIGINT"),
    ("boundary_tokens", "BIGINT"),
    ("index_seconds", "DOUBLE"),
    ("index_usd", "DOUBLE"),  # embedding_usd + context_usd
    ("points", "BIGINT"),
    ("storage_bytes", "BIGINT"),
    ("built_at", "TIMESTAMP"),
]

# dollars (evaluation.cost): per question (the question embedded, the answer, the judge) and per
# partition (index, captions, questions), counted as if nothing were cached
TABLES["question_results"] += _doubles("embedding_usd", "answer_usd", "judge_usd", "cost_usd")
TABLES["experiment_metrics"] += _doubles("index_usd", "caption_usd", "questions_usd", "answer_usd", "judge_usd",
                                         "cost_usd")
# the images a vision model captioned while parsing (evaluation.cost.caption_usd)
TABLES["documents"] += [("n_captions", "INTEGER"), ("caption_tokens", "BIGINT")]
# contextual_retrieval's LLM calls (every context, cached or not) and the two parts of index_usd
TABLES["index_costs"] += [*[(n, "BIGINT") for n in ("context_calls", "context_input_tokens", "context_output_tokens")],
                          *_doubles("embedding_usd", "context_usd")]

TABLES["embedding_usage"] = [
    ("strategy", "VARCHAR"),
    ("corpus_model", "VARCHAR"),
    ("stage", "VARCHAR"),  # chunks (corpus embeddings) | boundary (semantic cuts) | queries
    ("model_id", "VARCHAR"),
    ("provider", "VARCHAR"),
    ("texts", "BIGINT"),
    ("unique_texts", "BIGINT"),
    ("cache_hits", "BIGINT"),
    ("embedded", "BIGINT"),
    ("requests", "BIGINT"),
    ("retries", "BIGINT"),
    ("prompt_tokens", "BIGINT"),
    ("truncated", "BIGINT"),
    ("seconds", "DOUBLE"),
    ("hit_rate", "DOUBLE"),
    ("dagster_run_id", "VARCHAR"),
    ("recorded_at", "TIMESTAMP"),
]

# Questions without evidence references (judge-only): left out of the evidence metrics (their recall etc. are
# NULL, never 0), answered and judged when an LLM is configured; counted per run in n_judge_only.
TABLES["question_results"] += [("judge_only", "BOOLEAN")]
TABLES["experiment_metrics"] += [("n_judge_only", "INTEGER")]
# Every problem of the question sets (a bad file, or one question dropped alone), as of the latest check.
TABLES["question_errors"] = [
    ("file", "VARCHAR"),
    ("question_set", "VARCHAR"),
    ("question_id", "VARCHAR"),  # NULL when the whole file is at fault
    ("field", "VARCHAR"),
    ("reason", "VARCHAR"),
    ("checked_at", "TIMESTAMP"),
]
# one row per collection build (replaced by the next build of the same collection): what it was
# built from; experiments copy it into their provenance (chunkbench_core.provenance)
TABLES["collections"] = [
    ("collection", "VARCHAR"),
    ("strategy", "VARCHAR"),
    ("corpus_model", "VARCHAR"),
    ("variant", "VARCHAR"),
    ("settings", "VARCHAR"),  # JSON: every requested setting that decides the chunks
    ("settings_fingerprint", "VARCHAR"),
    ("options", "VARCHAR"),  # JSON: the chunker options set by the user (run config, CLI)
    ("chunker_params", "VARCHAR"),  # JSON: what the chunker reported (its params)
    ("boundary_model", "VARCHAR"),
    ("threshold", "DOUBLE"),
    ("threshold_source", "VARCHAR"),  # run config | override | registry
    ("threshold_mode", "VARCHAR"),
    ("context_sources", "VARCHAR"),  # JSON: embedded texts per context source (llm, headings, headings_fallback)
    ("parse_options", "VARCHAR"),  # JSON
    ("parser_version", "VARCHAR"),
    ("corpus_fingerprint", "VARCHAR"),
    ("n_documents", "INTEGER"),
    ("n_chunks", "INTEGER"),
    ("dagster_run_id", "VARCHAR"),  # the chunk_collections materialization's run
    ("code_version", "VARCHAR"),
    ("built_at", "TIMESTAMP"),
]

# runs set aside for good (chunkbench runs exclude / include; storage.runs): one row per experiment run
# ever excluded, keyed by its id. An excluded run stays in every results table; the leaderboard views,
# the comparison and the reports leave it out while ``excluded`` is true.
TABLES["run_exclusions"] = [
    ("experiment_run_id", "VARCHAR"),
    ("excluded", "BOOLEAN"),  # false once included again (the row keeps the last reason)
    ("reason", "VARCHAR"),
    ("excluded_at", "TIMESTAMP"),
    ("included_at", "TIMESTAMP"),
]
# Collection builds kept side by side (storage.history): every chunk row names the build it belongs to (the
# digest of the collection's settings and parsed-corpus fingerprints, provenance.build_fingerprint; NULL in
# rows written before builds were kept: one legacy build per collection), each experiment's question rows
# the build they retrieved from, and the collection row its build.
TABLES["chunks"] += [("build", "VARCHAR")]
TABLES["collections"] += [("build", "VARCHAR")]
TABLES["question_results"] += [("build", "VARCHAR")]

# persistent defaults shared by every machine using this results folder (embedding.thresholds)
TABLES["defaults"] = [
    ("setting", "VARCHAR"),  # semantic_threshold:<model id> | boundary_model
    ("value", "VARCHAR"),  # JSON
    ("changed_at", "TIMESTAMP"),
]


LEADERBOARD_COLUMNS = ("rank", "class", "strategy", "corpus_model", "n_questions", "rank_metric", "rank_mean",
                       "recall", "precision", "iou", "mrr", "hit_rate", "recall_expanded", "context_tokens",
                       "recall_at_512", "budget_auc", "query_ms", "projected_usd", "cost_usd", "on_frontier",
                       "verdict")

# The latest run per strategy x corpus model, in the order of the ``comparison`` table (ranking
# metric, classes against the best: evaluation.statistics.BEST_RULE; the recommendation: evaluation.recommendation),
# with its costs, so the leaderboard, the recommendation view and the reports never disagree. A run
# the comparison has not seen yet (the leaderboard asset not re-materialized) has no rank and comes last.
LEADERBOARD_SQL = """
WITH latest AS (
    SELECT *
    FROM experiment_metrics
    -- default settings only: chunk-size variants and neighbor levels are compared in leaderboard_by_setting
    WHERE coalesce(variant, '') = '' AND coalesce(neighbor_prev, 0) = 0 AND coalesce(neighbor_next, 0) = 0
      AND experiment_run_id NOT IN (SELECT experiment_run_id FROM excluded_runs)  -- runs set aside for good
    QUALIFY row_number() OVER (PARTITION BY strategy, corpus_model
                               ORDER BY created_at DESC, experiment_run_id DESC) = 1
), idx AS (
    SELECT * FROM index_costs WHERE coalesce(variant, '') = ''
    QUALIFY row_number() OVER (PARTITION BY strategy, corpus_model ORDER BY built_at DESC) = 1
)
SELECT c.rank, c."class", c.tier, l.strategy, coalesce(c.strategy_label, l.strategy) AS strategy_label,
       l.corpus_model, l.n_questions, l.recall, l.precision, l.iou, l.mrr, l.hit_rate,
       l.recall_expanded, l.iou_expanded, c.metric AS rank_metric, c.mean AS rank_mean,
       c.ci_low AS rank_ci_low, c.ci_high AS rank_ci_high, c.margin, c.difference_vs_best, c.lower_bound_vs_best,
       c.p_value_vs_best, c.p_value_adjusted, c.effect_size, c.questions_to_settle,
       CASE WHEN c.rank IS NULL THEN 'not compared yet'
            WHEN c.recommended THEN 'recommended'
            WHEN c.is_best THEN 'highest mean'
            WHEN c."class" = 'within_margin' THEN 'within ' || printf('%g', c.margin) || ' of best'
            WHEN c."class" = 'worse' THEN 'worse than best'
            ELSE 'undecided' END AS verdict,
       coalesce(c.recommended, false) AS recommended,
       l.context_tokens, l.recall_at_256, l.recall_at_512, l.recall_at_1024, l.recall_at_2048, l.budget_auc,
       i.n_chunks, i.embedded_tokens, i.index_seconds, l.query_ms, l.cold_query_ms,
       coalesce(i.index_usd, 0) AS index_usd, l.query_usd_per_1000,
       -- what building the index and answering 1,000 questions would cost (the recommendation's cost)
       CASE WHEN i.index_usd IS NULL AND l.query_usd_per_1000 IS NULL THEN NULL  -- nothing measured
            ELSE coalesce(i.index_usd, 0) + coalesce(l.query_usd_per_1000, 0) END AS projected_usd,
       -- what this configuration cost in this benchmark: index, captions, questions (answers, judge)
       l.cost_usd, l.caption_usd, l.answer_usd, l.judge_usd,
       i.points, i.storage_bytes, c.on_frontier, c.cost_axis,
       l.experiment_run_id, l.created_at
FROM latest l
LEFT JOIN comparison c ON c.experiment_run_id = l.experiment_run_id
                       AND c.configuration = l.strategy || '|' || l.corpus_model  -- a run may hold several
LEFT JOIN idx i ON i.strategy = l.strategy AND i.corpus_model = l.corpus_model
ORDER BY c.rank NULLS LAST, l.recall DESC, l.iou DESC, l.strategy, l.corpus_model
"""

# Sweeps (chunk sizes, neighbor levels) side by side: the latest run of every
# strategy x corpus model x setting.
LEADERBOARD_BY_SETTING_SQL = """
SELECT strategy, corpus_model, coalesce(variant, '') AS variant, coalesce(neighbor_prev, 0) AS neighbor_prev,
       coalesce(neighbor_next, 0) AS neighbor_next, n_questions, recall, precision, iou, mrr, hit_rate,
       recall_expanded, precision_expanded, iou_expanded, context_tokens, recall_at_256, recall_at_512,
       recall_at_1024, recall_at_2048, budget_auc, query_ms, experiment_run_id, created_at
FROM experiment_metrics
WHERE experiment_run_id NOT IN (SELECT experiment_run_id FROM excluded_runs)  -- runs set aside for good
QUALIFY row_number() OVER (PARTITION BY strategy, corpus_model, coalesce(variant, ''), coalesce(neighbor_prev, 0),
                                        coalesce(neighbor_next, 0)
                           ORDER BY created_at DESC, experiment_run_id DESC) = 1
ORDER BY strategy, corpus_model, variant, neighbor_prev, neighbor_next
"""

def _leaderboard_by_group_sql() -> str:
    """Every per-question mean of the leaderboard per configuration x group (evaluation.breakdowns documents
    the groups and the formulas; ``breakdowns.group_breakdown`` is the same computation in Python)."""
    from chunkbench_core.evaluation import breakdowns as b  # the formulas' one home; it imports no storage

    evidence = ",\n       ".join(f"avg(q.{column}) FILTER (WHERE NOT q.judge_only) AS {name}"
                                  for name, column in b.EVIDENCE_METRICS.items())
    numeric = [c for c, t in TABLES["question_results"] if t == "DOUBLE"]
    rank_value = "CASE m.rank_metric " + " ".join(f"WHEN '{c}' THEN q.{c}" for c in numeric) + " END"
    none, blank = sql_string(b.NO_GROUP), sql_string(b.BLANK_ENDS_PATTERN)
    return f"""
WITH board AS (
    SELECT DISTINCT experiment_run_id, strategy, corpus_model, created_at FROM leaderboard
), m AS (  -- the leaderboard's ranking metric (the default before anything was compared)
    SELECT coalesce(max(rank_metric), {sql_string(b.DEFAULT_RANK_METRIC)}) AS rank_metric FROM leaderboard
), rows AS (  -- the board row's questions (a run's sweep variants carry other timestamps: dropped)
    SELECT q.*, coalesce(q.judge_only, false) AS is_judge_only
    FROM question_results q JOIN board l USING (experiment_run_id, strategy, corpus_model)
    QUALIFY q.created_at = l.created_at
         OR NOT coalesce(bool_or(q.created_at = l.created_at) OVER (PARTITION BY q.strategy, q.corpus_model), false)
), scored AS (
    SELECT * REPLACE (is_judge_only AS judge_only),
           list_distinct(coalesce(json_extract_string("references", '$[*].document'), [])) AS documents
    FROM rows WHERE coalesce(error, '') = ''
), grouped AS (
    SELECT 'format' AS dimension, g.group_name AS "group", s.* FROM scored s,
        (SELECT DISTINCT CASE WHEN e = '' THEN {none} ELSE lower(e) END AS group_name
         FROM (SELECT regexp_extract(d, {sql_string(b.EXTENSION_PATTERN)}, 1) AS e
               FROM (SELECT unnest(s.documents) AS d))) g
    UNION ALL
    SELECT 'category', coalesce(nullif(regexp_replace(category, {blank}, '', 'g'), ''), {none}), * FROM scored
    UNION ALL
    SELECT 'difficulty', coalesce(nullif(regexp_replace(difficulty, {blank}, '', 'g'), ''), {none}), * FROM scored
    UNION ALL
    SELECT 'document', d.document, s.* FROM scored s, (SELECT unnest(s.documents) AS document) d
)
SELECT q.dimension, q."group", q.strategy, q.corpus_model,
       count(*) FILTER (WHERE NOT q.judge_only) AS n_questions,
       count(*) FILTER (WHERE q.judge_only) AS n_judge_only,
       count(*) FILTER (WHERE NOT q.judge_only) <= {b.TOO_SMALL} AS too_small,
       m.rank_metric, avg({rank_value}) AS rank_mean,
       {evidence},
       avg(q.context_tokens) AS context_tokens,
       avg(coalesce(q.embed_ms, 0) + coalesce(q.search_ms, 0))
           FILTER (WHERE q.embed_ms IS NOT NULL OR q.search_ms IS NOT NULL) AS query_ms,
       q.experiment_run_id
FROM grouped q, m
GROUP BY q.dimension, q."group", q.strategy, q.corpus_model, q.experiment_run_id, m.rank_metric
ORDER BY CASE q.dimension {" ".join(f"WHEN '{d}' THEN {i}" for i, d in enumerate(b.DIMENSIONS))} END,
         q."group", rank_mean DESC NULLS LAST, q.strategy, q.corpus_model
"""


# The ids of the runs set aside now (what the leaderboard views leave out).
EXCLUDED_RUNS_SQL = """
SELECT experiment_run_id FROM run_exclusions WHERE excluded AND experiment_run_id IS NOT NULL
"""


# The chunks of the latest build of every collection (strategy x corpus model x variant): what "the chunks"
# means everywhere but in a run's own history (the ``chunks`` view holds every build kept).
CURRENT_CHUNKS_SQL = """
SELECT * FROM chunks
QUALIFY dense_rank() OVER (PARTITION BY strategy, corpus_model, coalesce(variant, '')
                           ORDER BY materialized_at DESC, coalesce(build, '') DESC) = 1
"""


def sql_string(text: str) -> str:
    """``text`` as a SQL string literal (quotes doubled): for paths where DuckDB takes no parameter (views, COPY)."""
    return "'" + text.replace("'", "''") + "'"


_SAFE_KEY = re.compile(r"[^A-Za-z0-9._=-]+")
SCHEMA_FILE = "_schema.parquet"


def _key_file(key: str) -> str:
    safe = _SAFE_KEY.sub("-", key).strip("-")
    if not safe or safe.startswith("_"):
        raise ChunkbenchError(f"invalid results key {key!r}")
    return f"{safe}.parquet"


class ResultsDB:
    """The results folder: Parquet tables written per partition, one DuckDB file to query them."""

    def __init__(self, root: str | Path, database_name: str = "chunkbench.duckdb") -> None:
        self.root = Path(root).resolve()
        self.database_path = self.root / database_name
        self.tables_dir = self.root / "tables"
        self._schema_checked = False

    # -- writing ------------------------------------------------------------------------
    def _copy_parquet(self, table: str, frame: pd.DataFrame, path: Path) -> None:
        columns = TABLES[table]
        frame = frame.reindex(columns=[c for c, _ in columns])
        casts = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in columns)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        # a full disk: one line, the half-written file removed, the previous file left as it was
        with space.guard_writes(path, f"the {table} results", cleanup=[tmp]):
            con = duckdb.connect()  # in-memory: never locks the shared database file
            try:
                con.register("frame", frame)
                con.execute(f"COPY (SELECT {casts} FROM frame) TO {sql_string(tmp.as_posix())} (FORMAT parquet)")
            finally:
                con.close()
            os.replace(tmp, path)

    def write(self, table: str, key: str, rows: Sequence[dict[str, Any]] | pd.DataFrame) -> Path:
        """Replace the rows of ``table`` written under ``key`` with ``rows`` (atomically)."""
        if table not in TABLES:
            raise ChunkbenchError(f"unknown results table {table!r}")
        self.ensure_schema_files()
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
        path = self.tables_dir / table / _key_file(key)
        self._copy_parquet(table, frame, path)
        return path

    def read(self, table: str, key: str) -> list[dict[str, Any]]:
        """The rows written under ``key`` (empty when nothing was written)."""
        path = self.tables_dir / table / _key_file(key)
        # an unreadable file is moved aside with a warning, and reads as nothing written: the caller rebuilds it
        return integrity.read_parquet_rows(path, integrity.table_rebuilt_by(path)) or []

    def delete(self, table: str, key: str) -> bool:
        path = self.tables_dir / table / _key_file(key)
        if path.exists():
            path.unlink()
            return True
        return False

    @staticmethod
    def _columns(path: Path) -> list[str]:
        con = duckdb.connect()
        try:
            return [row[0] for row in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [path.as_posix()]).fetchall()]
        finally:
            con.close()

    def ensure_schema_files(self) -> None:
        """An empty Parquet file per table so the views work before any partition wrote (checked once per object)."""
        if self._schema_checked:
            return
        for table in TABLES:
            folder = self.tables_dir / table
            folder.mkdir(parents=True, exist_ok=True)
            schema = folder / SCHEMA_FILE
            if not schema.exists() or integrity.parquet_problem(schema) is not None \
                    or self._columns(schema) != [c for c, _ in TABLES[table]]:
                # a results folder from an older version: the empty schema file brings the new columns
                self._copy_parquet(table, pd.DataFrame(columns=[c for c, _ in TABLES[table]]), schema)
        self._schema_checked = True

    # -- the DuckDB file ----------------------------------------------------------------
    def _view_sql(self, relative: bool = False) -> list[str]:
        """The views; ``relative``: Parquet paths relative to the results folder (the DuckDB file's own views,
        so a copied folder reads its own data: open it from its folder, or ``SET file_search_path``)."""
        statements = []
        for table in TABLES:
            base = self.tables_dir.relative_to(self.root) if relative else self.tables_dir
            pattern = sql_string((base / table / "*.parquet").as_posix())
            statements.append(f"CREATE OR REPLACE VIEW {table} AS {self._table_view(table, pattern)}")
        statements.append(f"CREATE OR REPLACE VIEW excluded_runs AS {EXCLUDED_RUNS_SQL}")
        statements.append(f"CREATE OR REPLACE VIEW leaderboard AS {LEADERBOARD_SQL}")
        statements.append(f"CREATE OR REPLACE VIEW leaderboard_by_setting AS {LEADERBOARD_BY_SETTING_SQL}")
        statements.append(f"CREATE OR REPLACE VIEW leaderboard_by_group AS {_leaderboard_by_group_sql()}")
        statements.append(f"CREATE OR REPLACE VIEW current_chunks AS {CURRENT_CHUNKS_SQL}")
        return statements

    def _table_view(self, table: str, pattern: str) -> str:
        """The SELECT behind a table's view (``pattern``: its Parquet files); storage.runs.RunScope narrows it."""
        return f"SELECT * FROM read_parquet({pattern}, union_by_name=true)"

    def ensure_database(self, attempts: int = 20) -> None:
        """Create (or refresh) the views in the DuckDB file; retries while another process holds it. The file
        holds views only: one DuckDB cannot open is moved aside and created again."""
        integrity.repair_results_tables(self.tables_dir)  # a damaged table file would fail its view
        self.ensure_schema_files()
        wanted = self._view_sql(relative=True)
        replaced = False

        def create_views() -> None:
            with space.guard_writes(self.database_path, "the DuckDB views file"):
                con = duckdb.connect(str(self.database_path))
                try:
                    con.execute("SET file_search_path = ?", [self.root.as_posix()])  # the views' relative paths
                    for statement in wanted:
                        con.execute(statement)
                finally:
                    con.close()

        for attempt in range(attempts):
            try:
                integrity.with_table_repair(self.tables_dir, create_views)
                return
            except duckdb.Error as exc:
                locked = isinstance(exc, duckdb.IOException) and "lock" in str(exc).lower()
                if not locked and not replaced and self.database_path.exists():
                    integrity.replace_views_file(self.database_path, f"DuckDB: {integrity.one_line(exc)}")
                    replaced = True
                    continue
                if not locked or attempt == attempts - 1:
                    raise ChunkbenchError(f"cannot open {self.database_path}: {exc}") from exc
                time.sleep(min(0.05 * 2**attempt, 2.0))

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A connection for reading: an in-memory DuckDB with the same views, absolute paths (never locks the file).
        A truncated or garbled table file is moved aside first (with a warning): it would fail every view."""
        integrity.repair_results_tables(self.tables_dir)
        self.ensure_schema_files()

        def views() -> duckdb.DuckDBPyConnection:
            con = duckdb.connect()
            try:
                for statement in self._view_sql():
                    con.execute(statement)
            except BaseException:
                con.close()
                raise
            return con

        return integrity.with_table_repair(self.tables_dir, views)

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        def run() -> pd.DataFrame:
            con = self.connect()
            try:
                return con.execute(sql, params or []).df()
            finally:
                con.close()

        # a table file damaged inside (its footer intact): read them all, move the bad ones aside, once more
        return integrity.with_table_repair(self.tables_dir, run)

    def leaderboard(self) -> pd.DataFrame:
        return self.query("SELECT * FROM leaderboard")

    def recommendation(self) -> dict[str, Any] | None:
        """The one row of the ``recommendation`` view, or None before the leaderboard compared anything."""
        rows = self.query("SELECT * FROM recommendation").to_dict("records")
        return rows[0] if rows else None

    def diagnostics(self) -> list[dict[str, Any]]:
        """The warnings of the last comparison (``diagnostics`` view): code and message."""
        return self.query("SELECT code, message FROM diagnostics ORDER BY code").to_dict("records")
