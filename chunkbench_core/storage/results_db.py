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

import hashlib
import itertools
import json
import math
import os
import re
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator, Mapping, Sequence

import duckdb
import pandas as pd

from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.metric_catalog import CATALOG, DEFAULT_RANK_METRIC
from chunkbench_core import group_rules as b  # the rule's constants, shared with evaluation.breakdowns
from chunkbench_core.storage import integrity, space
from chunkbench_core.labels import configuration_key
from chunkbench_core.storage.records import CollectionBuild, DocumentRecord, ExperimentRun, IndexCostRecord, UsageRecord
from chunkbench_core.storage.records import rows as record_rows

# Every table, one declaration each: (column, DuckDB type). A results folder from an older version gets
# the new columns through the empty schema file of each table (``ensure_schema_files``).
TABLES: dict[str, list[tuple[str, str]]] = {
    # a chunkbench run's time estimate and, once it ended, what it took (estimate.plan.estimate_row)
    "run_estimates": [
        ("batch", "VARCHAR"),
        ("benchmark", "VARCHAR"),
        ("created_at", "VARCHAR"),
        ("estimated_seconds", "DOUBLE"),
        ("actual_seconds", "DOUBLE"),
        ("ratio", "DOUBLE"),
        ("n_documents", "INTEGER"),
        ("n_partitions", "INTEGER"),
        ("texts_to_embed", "BIGINT"),
        ("texts_cached", "BIGINT"),
        ("corpus_sample", "VARCHAR"),  # JSON: the sampled corpus's record, NULL for the whole corpus
        ("estimate", "VARCHAR"),
        ("actual", "VARCHAR"),  # JSON
    ],
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
        # the images a vision model captioned while parsing (evaluation.cost.caption_usd)
        ("n_captions", "INTEGER"),
        ("caption_tokens", "BIGINT"),
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
        # the collection build the row belongs to (storage.history; NULL in rows written before builds were kept)
        ("build", "VARCHAR"),
        # the first and last page the chunk spans (1-based, as a PDF viewer shows them); NULL without pages
        ("page_start", "INTEGER"),
        ("page_end", "INTEGER"),
    ],
    # the cl100k token ids of each chunk's text, under its build's key like its chunk rows: the budget metrics of
    # every run read them instead of encoding the texts again. A table of its own, not a column of ``chunks``: the
    # chunk rows stay what users, reports and ``chunkbench ask`` read (text, no binary column), and only a run
    # reads these; a build made before has no file here and its runs encode the texts as they did
    "chunk_tokens": [
        ("chunk_id", "VARCHAR"),
        ("build", "VARCHAR"),
        ("n_chars", "INTEGER"),  # the length of the text the ids encode (a run checks it against the chunk row)
        ("token_ids", "BLOB"),  # little-endian unsigned 32-bit integers, one per token
    ],
    # per question of a run: what was asked and retrieved, latencies, the LLM's cells, costs; its metric values
    # are in question_scores, one row per metric (the view ``question_results`` joins them, one column each)
    "question_rows": [
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
        ("retrieval_ms", "DOUBLE"),
        ("error", "VARCHAR"),
        ("created_at", "TIMESTAMP"),
        ("expected_answer", "VARCHAR"),
        # JSON list of {document, start, end, located_by[, score]}: the evidence spans (located_by "" = by hand)
        ("references", "VARCHAR"),
        ("embed_ms", "DOUBLE"),
        ("search_ms", "DOUBLE"),
        ("expand_ms", "DOUBLE"),
        ("generate_ms", "DOUBLE"),
        ("judge_ms", "DOUBLE"),
        ("n_expanded", "INTEGER"),
        ("judge_attempts", "INTEGER"),
        ("answer_prompt_tokens", "INTEGER"),
        ("answer_completion_tokens", "INTEGER"),
        ("judge_prompt_tokens", "INTEGER"),
        ("judge_completion_tokens", "INTEGER"),
        ("llm_context_tokens", "INTEGER"),
        ("expanded", "VARCHAR"),  # JSON: hits + neighbors after expansion
        ("expansion_tree", "VARCHAR"),  # JSON: one node per hit with its neighbors
        ("answer", "VARCHAR"),
        ("answer_error", "VARCHAR"),
        ("judge_error", "VARCHAR"),
        ("judge_reasoning", "VARCHAR"),
        ("context_truncated", "BOOLEAN"),
        # the context in retrieval order, in cl100k tokens (evaluation.budget)
        ("context_tokens", "DOUBLE"),
        ("budget_recalls", "VARCHAR"),  # JSON {budget: recall} for every configured budget
        # dollars (evaluation.cost): the question embedded, the answer, the judge, counted as if nothing were cached
        ("embedding_usd", "DOUBLE"),
        ("answer_usd", "DOUBLE"),
        ("judge_usd", "DOUBLE"),
        ("cost_usd", "DOUBLE"),
        # no evidence references: left out of the evidence metrics (NULL, never 0), answered and judged
        ("judge_only", "BOOLEAN"),
        ("build", "VARCHAR"),  # the collection build retrieved from (storage.history)
        ("labels", "VARCHAR"),  # JSON object label -> text: the team's own columns (grouped by as label:NAME)
        ("source_documents", "VARCHAR"),  # JSON list: the question's source documents (document-level evidence)
        ("n_located_references", "INTEGER"),  # evidence spans found by `questions locate`, not reviewed yet
        ("evidence_origin", "VARCHAR"),  # written | located | mixed | documents | NULL (judge-only)
        # the write this row belongs to (its results key) and its place in that write: join its scores
        ("record", "VARCHAR"),
        ("record_row", "INTEGER"),
        ("retriever", "VARCHAR"),
        ("scope", "VARCHAR"),  # as the run's (experiment_runs)
    ],
    # one row per question x metric of the list of metrics (chunkbench_core/metric_catalog.py)
    "question_scores": [
        ("record", "VARCHAR"),
        ("record_row", "INTEGER"),
        ("experiment_run_id", "VARCHAR"),
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("configuration", "VARCHAR"),  # strategy|corpus_model, as the comparison names it
        ("question_set", "VARCHAR"),
        ("question_id", "VARCHAR"),
        ("metric", "VARCHAR"),
        ("value", "DOUBLE"),
        ("created_at", "TIMESTAMP"),
    ],
    # per strategy x corpus model x experiment run (x sweep setting): counts, latency, costs, provenance; the
    # means of its metrics with their intervals are in run_scores (the view ``experiment_metrics`` joins them)
    "experiment_runs": [
        ("experiment_run_id", "VARCHAR"),
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("n_questions", "INTEGER"),
        ("n_failed", "INTEGER"),
        ("top_k", "INTEGER"),
        ("provenance", "VARCHAR"),  # JSON object
        ("created_at", "TIMESTAMP"),
        ("variant", "VARCHAR"),  # '' = the partition's default chunk sizes; e.g. size256_overlap32 in a sweep
        ("neighbor_prev", "INTEGER"),
        ("neighbor_next", "INTEGER"),
        ("retrieval_ms", "DOUBLE"),
        ("generate_ms", "DOUBLE"),
        ("judge_ms", "DOUBLE"),
        ("n_judged", "INTEGER"),
        ("n_answer_failed", "INTEGER"),
        ("n_judge_failed", "INTEGER"),
        # equal context budgets and query cost (the cold first call apart from the warm mean)
        ("context_tokens", "DOUBLE"),
        ("query_ms", "DOUBLE"),
        ("cold_query_ms", "DOUBLE"),
        ("question_tokens", "DOUBLE"),
        ("query_usd_per_1000", "DOUBLE"),
        ("llm_priced", "BOOLEAN"),  # the LLM's prices were known (else its share of query_usd_per_1000 is 0)
        ("budgets", "VARCHAR"),  # JSON list of the budgets in tokens
        ("answer_prompt_tokens", "BIGINT"),
        ("answer_completion_tokens", "BIGINT"),
        ("judge_prompt_tokens", "BIGINT"),
        ("judge_completion_tokens", "BIGINT"),
        # what the partition cost in this benchmark (evaluation.cost): index, captions, questions
        ("index_usd", "DOUBLE"),
        ("caption_usd", "DOUBLE"),
        ("questions_usd", "DOUBLE"),
        ("answer_usd", "DOUBLE"),
        ("judge_usd", "DOUBLE"),
        ("cost_usd", "DOUBLE"),
        ("n_judge_only", "INTEGER"),  # questions without evidence references, judged only
        ("n_documents_only", "INTEGER"),  # of n_questions: source documents but no spans (document metrics only)
        ("n_located", "INTEGER"),  # of n_questions: with evidence found by `questions locate`, not reviewed yet
        # the write this row belongs to (its results key) and its place in that write: join its scores
        ("record", "VARCHAR"),
        ("record_row", "INTEGER"),
        # the documents the run saw: "whole corpus (N documents)" or "sample of n of N documents (...)"
        ("corpus_sample", "VARCHAR"),
        # wall time of searching, expanding and scoring every question of the run (their embedding apart)
        ("search_seconds", "DOUBLE"),
        # how the chunks were found (chunkbench_core.retrievers; NULL in rows written before: dense) and the
        # build time and size of its own index (a keyword index; 0 for dense, whose index is the collection)
        ("retriever", "VARCHAR"),
        ("retriever_index_seconds", "DOUBLE"),
        ("retriever_index_bytes", "BIGINT"),
        # shared: every question searched every document; own_documents: only those its evidence names
        ("scope", "VARCHAR"),
    ],
    # one row per run x listed metric: the mean over the questions it applies to, and its bootstrap CI
    "run_scores": [
        ("record", "VARCHAR"),
        ("record_row", "INTEGER"),
        ("experiment_run_id", "VARCHAR"),
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("configuration", "VARCHAR"),
        ("variant", "VARCHAR"),
        ("metric", "VARCHAR"),
        ("mean", "DOUBLE"),
        ("ci_low", "DOUBLE"),
        ("ci_high", "DOUBLE"),
        ("created_at", "TIMESTAMP"),
    ],
    # rank, class and tests of every configuration of the latest runs against the best
    # (evaluation.statistics.BEST_RULE), its costs on the frontier, and whether it is the recommendation
    # (evaluation.recommendation)
    "comparison": [
        ("configuration", "VARCHAR"),  # the one label, "strategy × corpus model" (labels.configuration_label)
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("strategy_label", "VARCHAR"),  # how every view names the strategy (provenance.strategy_label)
        ("retriever", "VARCHAR"),  # how the chunks were found (chunkbench_core.retrievers; NULL: dense)
        ("experiment_run_id", "VARCHAR"),  # the run compared (the leaderboard's latest of the configuration)
        ("rank", "INTEGER"),  # 1 = highest mean of the ranking metric (equal means: the cheaper, then the name)
        ("class", "VARCHAR"),  # best | within_margin | undecided | worse (against the best, see BEST_RULE)
        # the class in order: 1 = best or shown within the margin, 2 = undecided, 3 = shown worse
        ("tier", "INTEGER"),
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
        # questions that would show it within the margin, if its difference held
        ("questions_to_show_within", "BIGINT"),
        # undecided: questions that would class it either way, if its difference held
        ("questions_to_settle", "BIGINT"),
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
    ],
    "recommendation": [  # one row: the configuration to use, by the documented rule, and why
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("retriever", "VARCHAR"),  # how it finds chunks (chunkbench_core.retrievers; NULL in rows written before)
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
        # about how many questions would decide the recommendation if the scores held: the larger of
        # questions_to_settle and questions_for_stable_pick; NULL when decided (the one "questions needed")
        ("questions_needed", "BIGINT"),
        ("verdict", "VARCHAR"),  # interchangeable | cannot_tell | matters | single (evaluation.drivers)
        ("verdict_sentence", "VARCHAR"),  # the verdict in words, as every view says it
        ("drivers_sentence", "VARCHAR"),  # where the differences come from (variance_decomposition) in words
    ],
    # what drives the scores: each factor's share of the ranking metric's variance over the questions every
    # configuration scored (eta squared; evaluation.drivers), with its 95% bootstrap interval over the questions
    "variance_decomposition": [
        ("factor", "VARCHAR"),  # question, category, document, configuration, strategy, corpus_model, retriever, ...
        ("description", "VARCHAR"),
        ("share", "DOUBLE"),
        ("ci_low", "DOUBLE"),
        ("ci_high", "DOUBLE"),
        ("levels", "INTEGER"),  # the factor's levels in this comparison (1: it explains nothing)
        ("within", "VARCHAR"),  # question or configuration: a part of that factor's share, not added to it
        ("metric", "VARCHAR"),
        ("n_questions", "INTEGER"),  # questions every configuration scored (the split is over them)
        ("n_scored", "INTEGER"),  # questions any configuration scored
        ("n_configurations", "INTEGER"),
        ("compared_at", "TIMESTAMP"),
    ],
    # each compared question's evidence length in tokens (estimated from its spans' characters and its documents'
    # tokens per character; evaluation.evidence_length) and its bucket: the breakdowns' evidence_length dimension
    "question_evidence": [
        ("question_set", "VARCHAR"),
        ("question_id", "VARCHAR"),
        ("evidence_tokens", "BIGINT"),
        ("evidence_length", "VARCHAR"),
        ("compared_at", "TIMESTAMP"),
    ],
    # when an LLM judge ran: per configuration, whether the judge and the evidence spans tell the same story
    # (evaluation.judge_agreement): Spearman between the judge's score and the ranking metric, Cohen's kappa on
    # hit or miss, each with its 95% bootstrap interval over the questions
    "judge_agreement": [
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("configuration", "VARCHAR"),
        ("judge_metric", "VARCHAR"),
        ("evidence_metric", "VARCHAR"),
        ("n_questions", "INTEGER"),
        ("spearman", "DOUBLE"),
        ("spearman_ci_low", "DOUBLE"),
        ("spearman_ci_high", "DOUBLE"),
        ("kappa", "DOUBLE"),
        ("kappa_ci_low", "DOUBLE"),
        ("kappa_ci_high", "DOUBLE"),
        ("agreement", "DOUBLE"),  # share of questions where both say hit, or both miss
        ("compared_at", "TIMESTAMP"),
    ],
    "diagnostics": [("code", "VARCHAR"), ("message", "VARCHAR"), ("compared_at", "TIMESTAMP")],
    # what building each collection took (evaluation.cost): one row per collection build
    "index_costs": [
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
        # contextual_retrieval's LLM calls (every context, cached or not)
        ("context_calls", "BIGINT"),
        ("context_input_tokens", "BIGINT"),
        ("context_output_tokens", "BIGINT"),
        ("embedding_usd", "DOUBLE"),
        ("context_usd", "DOUBLE"),
        # the index time had nothing been cached: measured (nothing was), derived (the cached texts at the
        # engine's calibrated rate added) or unknown (no rate: the measured time, a lower bound)
        ("index_seconds_uncached", "DOUBLE"),
        ("index_time_source", "VARCHAR"),
        ("cached_texts", "BIGINT"),
    ],
    "embedding_usage": [
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
    ],
    # every problem of the question sets (a bad file, or one question dropped alone), as of the latest check
    "question_errors": [
        ("file", "VARCHAR"),
        ("question_set", "VARCHAR"),
        ("question_id", "VARCHAR"),  # NULL when the whole file is at fault
        ("field", "VARCHAR"),
        ("reason", "VARCHAR"),
        ("checked_at", "TIMESTAMP"),
    ],
    # the parse ceiling as of the latest check: per question set, document and evidence kind, how many of its
    # evidence passages the parsed text holds (evaluation.evidence)
    "parse_ceiling": [
        ("question_set", "VARCHAR"),
        ("document", "VARCHAR"),
        ("kind", "VARCHAR"),
        ("found", "BIGINT"),
        ("total", "BIGINT"),
        ("checked_at", "TIMESTAMP"),
    ],
    # one row per collection build (replaced by the next build of the same collection): what it was
    # built from; experiments copy it into their provenance (chunkbench_core.provenance)
    "collections": [
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
        ("build", "VARCHAR"),  # provenance.build_fingerprint: its chunks' key in the chunks table
    ],
    # runs set aside for good (chunkbench runs exclude / include; storage.runs): one row per experiment run
    # ever excluded, keyed by its id. An excluded run stays in every results table; the leaderboard views,
    # the comparison and the reports leave it out while ``excluded`` is true.
    "run_exclusions": [
        ("experiment_run_id", "VARCHAR"),
        ("excluded", "BOOLEAN"),  # false once included again (the row keeps the last reason)
        ("reason", "VARCHAR"),
        ("excluded_at", "TIMESTAMP"),
        ("included_at", "TIMESTAMP"),
    ],
    # one row per question asked with ``chunkbench ask`` (storage.queries): what was asked of which configuration,
    # what came back and what it took; keyed by the query's id
    "queries": [
        ("query_id", "VARCHAR"),
        ("question", "VARCHAR"),
        ("strategy", "VARCHAR"),
        ("corpus_model", "VARCHAR"),
        ("configuration", "VARCHAR"),  # the one label (labels.configuration_label)
        ("configuration_source", "VARCHAR"),  # given | recommended | defaults: how the configuration was chosen
        ("collection", "VARCHAR"),
        ("build", "VARCHAR"),
        ("top_k", "INTEGER"),
        ("document", "VARCHAR"),  # document: searched in this document only
        ("neighbor_prev", "INTEGER"),
        ("neighbor_next", "INTEGER"),
        ("expansion_applied", "BOOLEAN"),
        ("retrieved", "VARCHAR"),  # JSON list of hits {rank, chunk_id, document, start, end, score, text}
        ("context", "VARCHAR"),  # JSON list: hits, neighbors and parents in prompt order
        ("expansion_tree", "VARCHAR"),  # JSON: one node per hit with its neighbors and parent
        ("answer", "VARCHAR"),
        ("answer_error", "VARCHAR"),
        ("llm_model", "VARCHAR"),
        ("embed_ms", "DOUBLE"),
        ("search_ms", "DOUBLE"),
        ("expand_ms", "DOUBLE"),
        ("generate_ms", "DOUBLE"),
        ("total_ms", "DOUBLE"),
        ("context_tokens", "INTEGER"),
        ("prompt_tokens", "INTEGER"),
        ("completion_tokens", "INTEGER"),
        ("context_truncated", "BOOLEAN"),
        ("created_at", "TIMESTAMP"),
    ],
    # persistent defaults shared by every machine using this results folder (embedding.thresholds)
    "defaults": [
        ("setting", "VARCHAR"),  # semantic_threshold:<model id> | boundary_model
        ("value", "VARCHAR"),  # JSON
        ("changed_at", "TIMESTAMP"),
    ],
}


@dataclass(frozen=True)
class ScoredTable:
    """A wide table whose metric columns are stored long: ``base`` rows plus one ``scores`` row per metric,
    joined by a view named after the wide table on ``KEYS``: the write a row belongs to (its results key) and
    its place in that write (one write may hold several runs, and a run the same question ids as another).
    Its folder also holds the wide files written before scores were stored long (read through the view
    ``legacy_<name>``)."""

    KEYS: ClassVar[tuple[str, str]] = ("record", "record_row")

    name: str
    base: str
    scores: str
    per_question: bool  # the scores are a question's values (else a run's means with their intervals)

    def metric_columns(self) -> list[tuple[str, str]]:
        """The metric columns of the wide view, from the list of metrics as it is now."""
        if self.per_question:
            return [(m.name, m.dtype) for m in CATALOG.values()]
        return [
            (c, "DOUBLE")
            for m in CATALOG.values()
            for c in (m.run_name, f"{m.run_name}_ci_low", f"{m.run_name}_ci_high")
        ]

    def wide_columns(self) -> list[tuple[str, str]]:
        return [c for c in TABLES[self.base] if c[0] not in self.KEYS] + self.metric_columns()

    def pivot_sql(self) -> str:
        """The wide view: the base rows with one column per registered metric, then the older wide files.

        Each metric's cell is ``max(CASE WHEN metric = ... THEN ... END)``, not the same aggregate with a ``FILTER``
        clause: the values are the same (both leave the other metrics' rows out as NULLs), and DuckDB computes about
        a hundred CASE cells of one hash aggregate about four times faster than as many filtered aggregates on a
        small results folder (60 against 15 ms for the run table's view), and 1.4 times faster at 20,000 questions."""
        keys = ", ".join(f'"{k}"' for k in self.KEYS)
        if self.per_question:
            cells = [
                f'CAST(max(CASE WHEN metric = {sql_string(m.name)} THEN value END) AS {m.dtype}) AS "{m.name}"'
                for m in CATALOG.values()
            ]
        else:
            cells = [
                f'max(CASE WHEN metric = {sql_string(m.run_name)} THEN {part} END) AS "{column}"'
                for m in CATALOG.values()
                for part, column in (
                    ("mean", m.run_name),
                    ("ci_low", f"{m.run_name}_ci_low"),
                    ("ci_high", f"{m.run_name}_ci_high"),
                )
            ]
        pivot = (
            f"SELECT {keys}, {', '.join(cells)} FROM {self.scores} GROUP BY {keys}"
            if cells
            else f"SELECT DISTINCT {keys} FROM {self.scores}"
        )
        return (
            f"SELECT b.* EXCLUDE ({keys}), s.* EXCLUDE ({keys}) FROM {self.base} b "
            f"LEFT JOIN ({pivot}) s USING ({keys}) "
            f"UNION ALL BY NAME SELECT * FROM legacy_{self.name}"
        )

    def split(self, key: str, rows: Iterable[Mapping[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Wide rows as (base rows, score rows) under the results key ``key``, both as frames.

        Both are gathered as columns (one list per column, then one frame), never as a dict per row or per
        value, and ``rows`` is read once (it may be a generator): 20,000 questions make about 700,000 score
        rows, which as dicts held about half a gigabyte at once, and a copy of every question row as a dict
        another hundred MB or more."""
        metric_columns = {c for c, _ in self.metric_columns()}
        base: dict[str, list[Any]] = {}
        n_rows = 0
        names = [
            "record",
            "record_row",
            "experiment_run_id",
            "strategy",
            "corpus_model",
            "configuration",
            "created_at",
        ] + (
            ["question_set", "question_id", "metric", "value"]
            if self.per_question
            else ["variant", "metric", "mean", "ci_low", "ci_high"]
        )
        columns: dict[str, list[Any]] = {name: [] for name in names}
        for place, row in enumerate(rows):
            for name, cell in itertools.chain(
                ((k, v) for k, v in row.items() if k not in metric_columns), (("record", key), ("record_row", place))
            ):
                column = base.get(name)
                if column is None:  # a column first seen here: None in the rows before
                    column = base[name] = [None] * place
                column.append(cell)
            n_rows = place + 1
            for column in base.values():  # a column this row did not have
                if len(column) < n_rows:
                    column.append(None)
            ids = (
                key,
                place,
                row.get("experiment_run_id"),
                row.get("strategy"),
                row.get("corpus_model"),
                configuration_key(row.get("strategy"), row.get("corpus_model"), row.get("retriever")),
                row.get("created_at"),
            )
            for metric in CATALOG.values():
                if self.per_question:
                    value = _number(row.get(metric.name))
                    if value is not None:
                        values = (*ids, row.get("question_set"), row.get("question_id"), metric.name, value)
                        for name, cell in zip(names, values):
                            columns[name].append(cell)
                    continue
                cells = (
                    _number(row.get(metric.run_name)),
                    _number(row.get(f"{metric.run_name}_ci_low")),
                    _number(row.get(f"{metric.run_name}_ci_high")),
                )
                if any(v is not None for v in cells):
                    for name, cell in zip(names, (*ids, row.get("variant"), metric.run_name, *cells)):
                        columns[name].append(cell)
        base_frame = pd.DataFrame(base) if n_rows else pd.DataFrame()
        if not columns["record"]:  # no score at all: the frame of no rows the writer expects from an empty list
            return base_frame, pd.DataFrame()
        return base_frame, pd.DataFrame(columns)


def _number(value: Any) -> float | None:
    """A metric value as stored (a yes/no verdict as 1/0), None when missing or NaN."""
    if value is None or isinstance(value, str):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


SCORED_TABLES: dict[str, ScoredTable] = {
    "question_results": ScoredTable("question_results", "question_rows", "question_scores", per_question=True),
    "experiment_metrics": ScoredTable("experiment_metrics", "experiment_runs", "run_scores", per_question=False),
}


def table_columns(table: str) -> list[tuple[str, str]]:
    """The columns of a table or of a wide view (question_results, experiment_metrics)."""
    return SCORED_TABLES[table].wide_columns() if table in SCORED_TABLES else TABLES[table]


def _view_metrics(view: str, group: str | None = None) -> list[str]:
    return [m.run_name for m in CATALOG.shown_in(view, group)]


#: the columns of ``chunkbench leaderboard``'s table: its metrics are those the list of metrics shows on the board
LEADERBOARD_COLUMNS = (
    "rank",
    "class",
    "strategy",
    "corpus_model",
    "retriever",
    "n_questions",
    "rank_metric",
    "rank_mean",
    *(m.run_name for m in CATALOG.shown_in_order("board") if m.group != "budget"),
    "context_tokens",
    *(m.run_name for m in CATALOG.shown_in_order("board", "budget")),
    "query_ms",
    "projected_usd",
    "cost_usd",
    "on_frontier",
    "verdict",
)


def leaderboard_sql() -> str:
    """The latest run per strategy x corpus model x retriever over the shared scope (every question searching every
    document; runs within each question's own documents are beside them in ``leaderboard_by_setting``), in the
    order of the ``comparison`` table (ranking metric, classes against the best: evaluation.statistics.BEST_RULE;
    the recommendation: evaluation.recommendation), with its costs, so the leaderboard, the recommendation view and
    the reports never disagree. A run the comparison has not seen yet (the leaderboard asset not re-materialized)
    has no rank and comes last.
    Its metric columns are the listed metrics shown on the leaderboard (chunkbench_core/metric_catalog.py)."""
    evidence = "".join(f"l.{name}, " for name in _view_metrics("leaderboard", "evidence"))
    budgeted = "".join(f", l.{name}" for name in _view_metrics("leaderboard", "budget"))
    others = "".join(
        f", l.{m.run_name}" for m in CATALOG.shown_in("leaderboard") if m.group not in ("evidence", "budget")
    )
    return f"""
WITH latest AS (
    SELECT *
    FROM experiment_metrics
    -- default settings only: chunk-size variants and neighbor levels are compared in leaderboard_by_setting
    WHERE coalesce(variant, '') = '' AND coalesce(neighbor_prev, 0) = 0 AND coalesce(neighbor_next, 0) = 0
      AND coalesce(scope, 'shared') = 'shared'  -- each question within its own documents: a setting beside it
      AND experiment_run_id NOT IN (SELECT experiment_run_id FROM excluded_runs)  -- runs set aside for good
    QUALIFY row_number() OVER (PARTITION BY strategy, corpus_model, coalesce(retriever, 'dense')
                               ORDER BY created_at DESC, experiment_run_id DESC) = 1
), idx AS (
    SELECT * FROM index_costs WHERE coalesce(variant, '') = ''
    QUALIFY row_number() OVER (PARTITION BY strategy, corpus_model ORDER BY built_at DESC) = 1
)
SELECT c.rank, c."class", c.tier, l.strategy, coalesce(c.strategy_label, l.strategy) AS strategy_label,
       l.corpus_model, coalesce(l.retriever, 'dense') AS retriever, l.n_questions, l.n_judge_only,
       l.n_documents_only, l.n_located, l.n_judged,
       {evidence}c.metric AS rank_metric, c.mean AS rank_mean,
       c.ci_low AS rank_ci_low, c.ci_high AS rank_ci_high, c.margin, c.difference_vs_best, c.lower_bound_vs_best,
       c.p_value_vs_best, c.p_value_adjusted, c.effect_size, c.questions_to_settle,
       CASE WHEN c.rank IS NULL THEN 'not compared yet'
            WHEN c.recommended THEN 'recommended'
            WHEN c.is_best THEN 'highest mean'
            WHEN c."class" = 'within_margin' THEN 'within ' || printf('%g', c.margin) || ' of best'
            WHEN c."class" = 'worse' THEN 'worse than best'
            ELSE 'undecided' END AS verdict,
       coalesce(c.recommended, false) AS recommended,
       l.context_tokens{budgeted}{others},
       -- index time as if nothing had been cached (a warm cache would favour whatever was built last)
       i.n_chunks, i.embedded_tokens, coalesce(i.index_seconds_uncached, i.index_seconds) AS index_seconds,
       coalesce(i.index_time_source, 'measured') AS index_time_source, l.search_seconds, l.query_ms, l.cold_query_ms,
       coalesce(i.index_usd, 0) AS index_usd, l.query_usd_per_1000,
       -- what building the index and answering 1,000 questions would cost (the recommendation's cost)
       CASE WHEN i.index_usd IS NULL AND l.query_usd_per_1000 IS NULL THEN NULL  -- nothing measured
            ELSE coalesce(i.index_usd, 0) + coalesce(l.query_usd_per_1000, 0) END AS projected_usd,
       -- what this configuration cost in this benchmark: index, captions, questions (answers, judge)
       l.cost_usd, l.caption_usd, l.answer_usd, l.judge_usd,
       i.points, i.storage_bytes, coalesce(l.retriever_index_seconds, 0) AS retriever_index_seconds,
       coalesce(l.retriever_index_bytes, 0) AS retriever_index_bytes, c.on_frontier, c.cost_axis,
       l.corpus_sample, l.experiment_run_id, l.created_at
FROM latest l
LEFT JOIN comparison c ON c.experiment_run_id = l.experiment_run_id
                       -- a run may hold several (comparisons written before the strategy column: by their key)
                       AND coalesce(c.strategy || '|' || c.corpus_model, c.configuration) = l.strategy || '|' || l.corpus_model
                       AND coalesce(c.retriever, 'dense') = coalesce(l.retriever, 'dense')
LEFT JOIN idx i ON i.strategy = l.strategy AND i.corpus_model = l.corpus_model
ORDER BY c.rank NULLS LAST, l.recall DESC, l.iou DESC, l.strategy, l.corpus_model, retriever
"""


def leaderboard_by_setting_sql() -> str:
    """Sweeps (chunk sizes, neighbor levels), retrievers and scopes (every document shared, or each question's own
    documents) side by side: the latest run of every strategy x corpus model x setting, with the registered
    metrics shown in this view."""
    evidence = "".join(f"{name}, " for name in _view_metrics("by_setting", "evidence"))
    budgeted = "".join(f", {name}" for name in _view_metrics("by_setting", "budget"))
    others = "".join(f", {m.run_name}" for m in CATALOG.shown_in("by_setting") if m.group not in ("evidence", "budget"))
    return f"""
SELECT strategy, corpus_model, coalesce(variant, '') AS variant,
       -- the chunker options a variant was built with, as the run recorded them ('' for the default settings)
       CASE WHEN coalesce(variant, '') = '' THEN ''
            ELSE coalesce(CAST(json_extract(provenance, '$.chunker_options') AS VARCHAR), '') END AS options,
       coalesce(neighbor_prev, 0) AS neighbor_prev,
       coalesce(neighbor_next, 0) AS neighbor_next, coalesce(retriever, 'dense') AS retriever,
       coalesce(scope, 'shared') AS scope, n_questions, {evidence}context_tokens{budgeted}{others},
       query_ms, experiment_run_id, created_at
FROM experiment_metrics
WHERE experiment_run_id NOT IN (SELECT experiment_run_id FROM excluded_runs)  -- runs set aside for good
QUALIFY row_number() OVER (PARTITION BY strategy, corpus_model, coalesce(variant, ''), coalesce(neighbor_prev, 0),
                                        coalesce(neighbor_next, 0), coalesce(retriever, 'dense'),
                                        coalesce(scope, 'shared')
                           ORDER BY created_at DESC, experiment_run_id DESC) = 1
ORDER BY strategy, corpus_model, variant, neighbor_prev, neighbor_next, retriever, scope
"""


def _leaderboard_by_group_sql() -> str:
    """Every per-question mean of the leaderboard per configuration x group (evaluation.breakdowns documents
    the groups and the formulas; ``breakdowns.group_breakdown`` is the same computation in Python)."""

    evidence = ",\n       ".join(
        f"avg(CASE WHEN NOT q.judge_only THEN q.{column} END) AS {name}"  # as pivot_sql
        for name, column in b.evidence_metrics().items()
    )
    numeric = [c for c, t in table_columns("question_results") if t == "DOUBLE"]
    rank_value = "CASE m.rank_metric " + " ".join(f"WHEN '{c}' THEN q.{c}" for c in numeric) + " END"
    none, blank = sql_string(b.NO_GROUP), sql_string(b.BLANK_ENDS_PATTERN)
    return f"""
WITH board AS (
    SELECT DISTINCT experiment_run_id, strategy, corpus_model, retriever, created_at FROM leaderboard
), m AS (  -- the leaderboard's ranking metric (the default before anything was compared)
    SELECT coalesce(max(rank_metric), {sql_string(DEFAULT_RANK_METRIC)}) AS rank_metric FROM leaderboard
), rows AS (  -- the board row's questions (a run's sweep variants carry other timestamps: dropped)
    SELECT q.* REPLACE (l.retriever AS retriever), coalesce(q.judge_only, false) AS is_judge_only
    FROM question_results q JOIN board l USING (experiment_run_id, strategy, corpus_model)
    QUALIFY q.created_at = l.created_at
         OR NOT coalesce(bool_or(q.created_at = l.created_at)
                         OVER (PARTITION BY q.strategy, q.corpus_model, l.retriever), false)
), scored AS (  -- a question's documents: its source documents, else (rows written before them) its spans'
    SELECT * REPLACE (is_judge_only AS judge_only),
           list_distinct(coalesce(
               CASE WHEN coalesce(source_documents, '[]') <> '[]'
                    THEN json_extract_string(source_documents, '$[*]') END,
               json_extract_string("references", '$[*].document'), [])) AS documents
    FROM rows WHERE coalesce(error, '') = ''
), lengths AS (  -- each question's evidence length bucket, as the last comparison measured it
    SELECT question_set, question_id, any_value(evidence_length) AS evidence_length FROM question_evidence
    GROUP BY ALL
), label_names AS (  -- every label of the team's sheet: one dimension each (label:NAME)
    SELECT DISTINCT unnest(json_keys(labels)) AS name FROM scored
    WHERE labels IS NOT NULL AND json_type(labels) = 'OBJECT'
), grouped AS (
    SELECT 'format' AS dimension, g.group_name AS "group", s.* FROM scored s,
        (SELECT DISTINCT CASE WHEN e = '' THEN {none} ELSE lower(e) END AS group_name
         FROM (SELECT regexp_extract(d, {sql_string(b.EXTENSION_PATTERN)}, 1) AS e
               FROM (SELECT unnest(s.documents) AS d))) g
    UNION ALL
    SELECT 'category', coalesce(nullif(regexp_replace(category, {blank}, '', 'g'), ''), {none}), * FROM scored
    UNION ALL
    SELECT 'evidence_length', coalesce(e.evidence_length, {none}), s.* FROM scored s
        LEFT JOIN lengths e ON e.question_set = s.question_set AND e.question_id = s.question_id
    UNION ALL
    SELECT 'difficulty', coalesce(nullif(regexp_replace(difficulty, {blank}, '', 'g'), ''), {none}), * FROM scored
    UNION ALL
    SELECT 'document', d.document, s.* FROM scored s, (SELECT unnest(s.documents) AS document) d
    UNION ALL
    SELECT {sql_string(b.LABEL_PREFIX)} || n.name,
           coalesce(nullif(regexp_replace(
               json_extract_string(s.labels, '$."' || replace(n.name, '"', '\\"') || '"'), {blank}, '', 'g'), ''),
               {none}), s.*
    FROM scored s, label_names n
)
SELECT q.dimension, q."group", q.strategy, q.corpus_model, q.retriever,
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
GROUP BY q.dimension, q."group", q.strategy, q.corpus_model, q.retriever, q.experiment_run_id, m.rank_metric
ORDER BY CASE q.dimension {" ".join(f"WHEN '{d}' THEN {i}" for i, d in enumerate(b.DIMENSIONS))}
         ELSE {len(b.DIMENSIONS)} END, q.dimension, q."group", rank_mean DESC NULLS LAST, q.strategy, q.corpus_model,
         q.retriever
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
#: the start of the comment on the DuckDB file's last view: what its views were made from (ResultsDB._views_mark)
VIEWS_MARK = "chunkbench views "


def _view_name(statement: str) -> str:
    """The view a ``CREATE OR REPLACE VIEW <name> AS ...`` statement of :meth:`ResultsDB._view_sql` makes."""
    return statement.split()[4]


def _key_file(key: str) -> str:
    safe = _SAFE_KEY.sub("-", key).strip("-")
    if not safe or safe.startswith("_"):
        raise ChunkbenchError(f"invalid results key {key!r}")
    return f"{safe}.parquet"


#: how many results folders' reading DuckDBs and schema checks one process keeps (a run and its reports use one
#: folder; a test process goes through hundreds, and an evicted DuckDB is closed once its last cursor is)
SHARED_FOLDERS_KEPT = 8
#: the tables ``experiment_metrics`` reads: a write to one of them drops a one_reading block's copy of it
READING_COPY_READS = ("experiment_runs", "run_scores")
#: the process's reading DuckDBs, one per results folder and view statements, shared by every ResultsDB object of
#: that folder (each asset, report and command makes its own object; making the views costs ~10 ms of CPU)
_SHARED_VIEWS: dict[tuple[int, str], tuple[list[str], duckdb.DuckDBPyConnection]] = {}
#: the results folders whose schema files this process checked, with what it found then (each file's identity,
#: size and time, and the columns this version wants): the check reads every table's file (~20 ms of CPU), a
#: look at what it found costs well under a millisecond, and any change on disk (a file made, replaced, moved
#: aside or damaged by another process) or a metric registered since makes it check again
_SCHEMA_SEEN: dict[tuple[int, str], tuple[Any, ...]] = {}
_SHARED_LOCK = threading.Lock()


class ResultsDB:
    """The results folder: Parquet tables written per partition, one DuckDB file to query them."""

    #: whether this class's reading views are the folder's alone (shared by every object of the folder in a
    #: process); storage.runs.RunScope's views hold tables of its own object, so it keeps its own
    shares_views: ClassVar[bool] = True

    def __init__(self, root: str | Path, database_name: str = "chunkbench.duckdb") -> None:
        self.root = Path(root).resolve()
        self.database_path = self.root / database_name
        self.tables_dir = self.root / "tables"
        self._schema_checked = False
        # the reading connections' views, made once: (process, statements, the in-memory DuckDB holding them)
        self._views: tuple[int, list[str], duckdb.DuckDBPyConnection] | None = None
        self._views_lock = threading.Lock()
        self._reading = threading.local()  # the cursor of this thread's one_reading block, if any

    # -- writing ------------------------------------------------------------------------
    def _copy_parquet(self, table: str, frame: pd.DataFrame, path: Path) -> None:
        columns = TABLES[table] if table in TABLES else SCORED_TABLES[table].wide_columns()
        frame = frame.reindex(columns=[c for c, _ in columns])
        casts = ", ".join(f'CAST("{c}" AS {t}) AS "{c}"' for c, t in columns)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        # a full disk: one line, the half-written file removed, the previous file left as it was
        with space.guard_writes(path, f"the {table} results", cleanup=[tmp]):
            # the process's in-memory DuckDB (never locks the shared database file): a cursor costs well under a
            # millisecond, a new connection about 25 ms of CPU per write; the frame is registered on this cursor only
            integrity.execute_on_frame(
                integrity.memory_cursor(),
                frame,
                f"COPY (SELECT {casts} FROM frame) TO {sql_string(tmp.as_posix())} (FORMAT parquet)",
            )
            os.replace(tmp, path)

    def write(self, table: str, key: str, rows: Iterable[Mapping[str, Any]] | pd.DataFrame) -> Path:
        """Replace the rows of ``table`` written under ``key`` with ``rows`` (atomically).

        ``question_results`` and ``experiment_metrics`` take wide rows: their metric columns go to the long
        scores table, the rest to the base table, both under ``key`` (a wide file left there by an older
        version is removed, so a re-run replaces its rows, never duplicates them).
        """
        if table in SCORED_TABLES:
            scored = SCORED_TABLES[table]
            # read once, row by row: ``rows`` may be a generator (a run's question rows are never copied whole)
            records = rows.to_dict("records") if isinstance(rows, pd.DataFrame) else rows
            base, scores = scored.split(key, records)
            self.write(scored.scores, key, scores)
            path = self.write(scored.base, key, base)
            legacy = self.tables_dir / table / _key_file(key)
            if legacy.exists():
                legacy.unlink()
            return path
        if table not in TABLES:
            raise ChunkbenchError(f"unknown results table {table!r}")
        if table in READING_COPY_READS:
            self._drop_reading_copy()  # the next query of a one_reading block sees this write
        self.ensure_schema_files()
        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
        path = self.tables_dir / table / _key_file(key)
        self._copy_parquet(table, frame, path)
        return path

    # -- typed records (chunkbench_core.storage.records): what the pipeline stages write -------
    def record_documents(self, records: Sequence["DocumentRecord"]) -> Path:
        """The corpus's documents as the last parse left them (replaces the previous list)."""
        return self.write("documents", "corpus", record_rows(records))

    def record_build(self, build: "CollectionBuild") -> None:
        """One collection build: its chunks (and their token ids) under the build's key (other builds stay), its
        build record, cost and embedding usage under the collection's key (replacing the previous build's)."""
        self.write("embedding_usage", f"{build.rows_key}__chunks", record_rows(build.usage))
        # the token ids before the rows they belong to, under the same key: a rebuild replaces both
        if build.token_ids:
            self.write("chunk_tokens", build.chunks_key, build.token_rows())
        else:
            self.delete("chunk_tokens", build.chunks_key)  # none given: never leave another write's ids beside
        self.write("chunks", build.chunks_key, record_rows(build.chunks))
        self.write("collections", build.rows_key, [build.collection])

    def record_query_usage(self, key: str, usage: "UsageRecord") -> Path:
        """The query embeddings of one experiment run or one ``chunkbench ask`` (``stage`` queries), under
        ``key``: a run again replaces its own row."""
        return self.write("embedding_usage", f"{key}__queries", [usage.row()])

    def record_index_cost(self, rows_key: str, record: "IndexCostRecord") -> Path:
        """What a collection build took (written once its points are counted)."""
        return self.write("index_costs", rows_key, [record.row()])

    def record_experiment(self, key: str, run: "ExperimentRun") -> None:
        """One experiment run: its question rows and its row, under ``key`` (the collection's key and the run)."""
        self.write("question_results", key, run.question_rows())
        self.write("experiment_metrics", key, [run.run_row()])

    def record_question_problems(self, rows: Sequence[dict[str, Any]]) -> Path:
        """The problems of the question sets at the latest check (replacing the previous ones; empty when none)."""
        return self.write("question_errors", "latest", rows)

    def record_parse_ceiling(self, rows: Sequence[dict[str, Any]]) -> Path:
        """The parse ceiling of the question sets at the latest check (replacing the previous one)."""
        return self.write("parse_ceiling", "latest", rows)

    def read(self, table: str, key: str) -> list[dict[str, Any]]:
        """The rows written under ``key`` (empty when nothing was written); wide rows for a scored table."""
        if table in SCORED_TABLES:
            return self._read_scored(SCORED_TABLES[table], key)
        path = self.tables_dir / table / _key_file(key)
        # an unreadable file is moved aside with a warning, and reads as nothing written: the caller rebuilds it
        return integrity.read_parquet_rows(path, integrity.table_rebuilt_by(path)) or []

    def read_values(self, table: str, key: str, columns: Sequence[str]) -> list[tuple[Any, ...]]:
        """``columns`` of the rows written under ``key``, as tuples (empty when nothing was written): many rows
        read without a frame. A damaged file is moved aside and reads as nothing written, as in ``read``."""
        if table not in TABLES or any(c not in dict(TABLES[table]) for c in columns):
            raise ChunkbenchError(f"unknown results table or column: {table!r} {list(columns)}")
        path = self.tables_dir / table / _key_file(key)
        return integrity.read_parquet_values(path, integrity.table_rebuilt_by(path), columns) or []

    def _read_scored(self, scored: ScoredTable, key: str) -> list[dict[str, Any]]:
        self.ensure_schema_files()

        def read() -> list[dict[str, Any]]:
            con = duckdb.connect()
            try:
                for table, folder in (
                    (scored.base, scored.base),
                    (scored.scores, scored.scores),
                    (f"legacy_{scored.name}", scored.name),
                ):
                    files = [self.tables_dir / folder / SCHEMA_FILE, self.tables_dir / folder / _key_file(key)]
                    listed = ", ".join(sql_string(f.as_posix()) for f in files if f.exists())
                    con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listed}], union_by_name=true)")
                return con.execute(scored.pivot_sql()).df().to_dict("records")
            finally:
                con.close()

        # a damaged file is moved aside with a warning (and reads as nothing written), as in ``read``
        return integrity.with_table_repair(self.tables_dir, read)

    def delete(self, table: str, key: str) -> bool:
        if table in SCORED_TABLES:
            scored = SCORED_TABLES[table]
            return any(
                [
                    self.delete(scored.base, key),
                    self.delete(scored.scores, key),
                    self._unlink(self.tables_dir / table / _key_file(key)),
                ]
            )
        if table in READING_COPY_READS:
            self._drop_reading_copy()
        return self._unlink(self.tables_dir / table / _key_file(key))

    @staticmethod
    def _unlink(path: Path) -> bool:
        if path.exists():
            path.unlink()
            return True
        return False

    @staticmethod
    def _columns(path: Path) -> list[str]:
        con = integrity.memory_cursor()
        try:
            return [
                row[0] for row in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [path.as_posix()]).fetchall()
            ]
        finally:
            con.close()

    def ensure_schema_files(self) -> None:
        """An empty Parquet file per table so the views work before any partition wrote (checked once per object).

        Creating or upgrading them happens under the results folder's setup lock (storage.locks): two processes
        starting on a new or older folder at once make them one after the other, the second finding them made."""
        if self._schema_checked:
            return
        key = (os.getpid(), str(self.tables_dir))
        if _SCHEMA_SEEN.get(key) == self._schema_state():  # this process checked them as they are now
            self._schema_checked = True
            return
        if self._stale_schema_files():
            with self.setting_up():
                for table, columns in self._stale_schema_files():  # again: another process may have made them
                    # a results folder from an older version: the empty schema file brings the new columns (a
                    # scored table's folder: the wide files written before scores were stored long)
                    self._copy_parquet(table, pd.DataFrame(columns=columns), self.tables_dir / table / SCHEMA_FILE)
        with _SHARED_LOCK:
            _SCHEMA_SEEN[key] = self._schema_state()
            while len(_SCHEMA_SEEN) > SHARED_FOLDERS_KEPT:
                del _SCHEMA_SEEN[next(iter(_SCHEMA_SEEN))]
        self._schema_checked = True

    def _schema_state(self) -> tuple[Any, ...]:
        """Each table's schema file as the file system has it (device, inode, size, time; None when missing)
        and the columns this version wants of it."""
        state: list[Any] = []
        for table in (*TABLES, *SCORED_TABLES):
            try:
                st = (self.tables_dir / table / SCHEMA_FILE).stat()
                state.append((table, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                state.append((table, None))
            state.append(tuple(table_columns(table)))
        return tuple(state)

    def setting_up(self):
        """The setup lock of the results folder (re-entrant in the thread that holds it): schema files and views
        are created or upgraded by one process at a time."""
        from chunkbench_core.storage.locks import setup_lock

        return setup_lock(self.root, "its results tables and views")

    def _stale_schema_files(self) -> list[tuple[str, list[str]]]:
        """The tables whose empty schema file is missing, unreadable or has other columns than this version's."""
        stale = []
        for table in (*TABLES, *SCORED_TABLES):
            folder = self.tables_dir / table
            schema = folder / SCHEMA_FILE
            columns = [c for c, _ in table_columns(table)]
            if not schema.exists() or integrity.parquet_problem(schema) is not None or self._columns(schema) != columns:
                folder.mkdir(parents=True, exist_ok=True)
                stale.append((table, columns))
        return stale

    # -- the DuckDB file ----------------------------------------------------------------
    def _view_sql(self, relative: bool = False) -> list[str]:
        """The views; ``relative``: Parquet paths relative to the results folder (the DuckDB file's own views,
        so a copied folder reads its own data: open it from its folder, or ``SET file_search_path``)."""
        statements = []
        base = self.tables_dir.relative_to(self.root) if relative else self.tables_dir
        for table in TABLES:
            pattern = sql_string((base / table / "*.parquet").as_posix())
            statements.append(f"CREATE OR REPLACE VIEW {table} AS {self._table_view(table, pattern)}")
        for table, scored in SCORED_TABLES.items():  # the wide views, generated from the list of metrics
            pattern = sql_string((base / table / "*.parquet").as_posix())
            statements.append(
                f"CREATE OR REPLACE VIEW legacy_{table} AS {self._table_view(f'legacy_{table}', pattern)}"
            )
            statements.append(f"CREATE OR REPLACE VIEW {table} AS {scored.pivot_sql()}")
        statements.append(f"CREATE OR REPLACE VIEW excluded_runs AS {EXCLUDED_RUNS_SQL}")
        statements.append(f"CREATE OR REPLACE VIEW leaderboard AS {leaderboard_sql()}")
        statements.append(f"CREATE OR REPLACE VIEW leaderboard_by_setting AS {leaderboard_by_setting_sql()}")
        statements.append(f"CREATE OR REPLACE VIEW leaderboard_by_group AS {_leaderboard_by_group_sql()}")
        statements.append(f"CREATE OR REPLACE VIEW current_chunks AS {CURRENT_CHUNKS_SQL}")
        return statements

    def _table_view(self, table: str, pattern: str) -> str:
        """The SELECT behind a table's view (``pattern``: its Parquet files); storage.runs.RunScope narrows it."""
        return f"SELECT * FROM read_parquet({pattern}, union_by_name=true)"

    def _views_mark(self, wanted: list[str]) -> str:
        """What the DuckDB file's views were made from: their statements, every table's columns (a view binds the
        columns of its schema file) and the DuckDB version; kept as the comment of the last view made."""
        made_from = [duckdb.__version__, wanted, {t: table_columns(t) for t in (*TABLES, *SCORED_TABLES)}]
        return VIEWS_MARK + hashlib.sha256(json.dumps(made_from, default=str).encode()).hexdigest()

    @staticmethod
    def _views_current(con: duckdb.DuckDBPyConnection, wanted: list[str], mark: str) -> bool:
        """Whether the file holds every wanted view, made from the same statements and columns (``mark``): then
        nothing needs making again (each view reads its files' schemas when it is made, which grows with the
        results folder). Making a view again clears its comment, so a half-finished refresh never looks current."""
        rows = dict(con.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
        names = [_view_name(statement) for statement in wanted]
        return all(name in rows for name in names) and rows.get(names[-1]) == mark

    def ensure_database(self, attempts: int = 20) -> None:
        """Create (or refresh) the views in the DuckDB file; retries while another process holds it. The file
        holds views only: one DuckDB cannot open is moved aside and created again. Views made by this version
        from the same columns are left as they are."""
        integrity.repair_results_tables(self.tables_dir)  # a damaged table file would fail its view
        self.ensure_schema_files()
        wanted = self._view_sql(relative=True)
        mark = self._views_mark(wanted)
        replaced = False

        def create_views() -> None:
            with space.guard_writes(self.database_path, "the DuckDB views file"):
                con = duckdb.connect(str(self.database_path))
                try:
                    if self._views_current(con, wanted, mark):
                        return
                    con.execute("SET file_search_path = ?", [self.root.as_posix()])  # the views' relative paths
                    for statement in wanted:
                        con.execute(statement)
                    con.execute(f"COMMENT ON VIEW {_view_name(wanted[-1])} IS {sql_string(mark)}")
                finally:
                    con.close()

        with self.setting_up():  # one process at a time creates, upgrades or replaces the views file
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
        A truncated or garbled table file is moved aside first (with a warning): it would fail every view.

        The views are made once per results folder object (and again when they change: a metric registered
        since, another process); each call returns a cursor of that DuckDB, to close after use. A view reads
        its Parquet files when it is queried, so every query sees the files as they are then."""
        integrity.repair_results_tables(self.tables_dir)
        self.ensure_schema_files()

        def views() -> duckdb.DuckDBPyConnection:
            statements = self._view_sql()
            if self.shares_views:
                key = (os.getpid(), str(self.tables_dir))
                with _SHARED_LOCK:
                    shared = _SHARED_VIEWS.get(key)
                    if shared is None or shared[0] != statements:
                        _SHARED_VIEWS[key] = shared = (statements, self._made_views(statements))
                        while (
                            len(_SHARED_VIEWS) > SHARED_FOLDERS_KEPT
                        ):  # the oldest folder's, closed by its last cursor
                            del _SHARED_VIEWS[next(iter(_SHARED_VIEWS))]
                    return shared[1].cursor()
            with self._views_lock:
                cached = self._views
                if cached is None or cached[0] != os.getpid() or cached[1] != statements:
                    self._views = cached = (os.getpid(), statements, self._made_views(statements))
                return cached[2].cursor()

        return integrity.with_table_repair(self.tables_dir, views)

    def _made_views(self, statements: list[str]) -> duckdb.DuckDBPyConnection:
        """A new in-memory DuckDB holding this object's tables and the views ``statements`` make."""
        con = duckdb.connect()
        try:
            self._add_tables(con)
            for statement in statements:
                con.execute(statement)
        except BaseException:
            con.close()
            raise
        return con

    def _add_tables(self, con: duckdb.DuckDBPyConnection) -> None:
        """Tables the views read besides the Parquet files, made in the views' DuckDB before them (none here)."""

    @contextmanager
    def one_reading(self) -> Iterator[None]:
        """The queries of this block (in this thread, through this object) compute ``experiment_metrics`` once.

        Every leaderboard view reads that pivot of the run scores (a column per metric, its mean and interval),
        which is most of a leaderboard query's work: about 45 of 55 ms on a small results folder, and a run's
        leaderboard, reports and summary read the leaderboard about ten times. In the block it is a table of the
        block's own cursor, made at the first query, and every view the block's queries read uses it; the other
        views read their files when queried, as outside a block. A write of the run tables through this object
        drops the copy (the next query makes it again); a write by another process during the block is not seen
        by the pivot until the block ends. A block inside a block is the outer one."""
        if getattr(self._reading, "active", False):
            yield
            return
        self._reading.active, self._reading.cursor, self._reading.copied = True, None, False
        try:
            yield
        finally:
            cursor = self._reading.cursor
            self._reading.active, self._reading.cursor, self._reading.copied = False, None, False
            if cursor is not None:
                cursor.close()

    def _drop_reading_copy(self) -> None:
        if getattr(self._reading, "copied", False):
            self._reading.cursor.execute("DROP TABLE IF EXISTS temp.experiment_metrics")
            self._reading.copied = False

    def _reading_cursor(self) -> duckdb.DuckDBPyConnection | None:
        """The cursor of this thread's one_reading block, with its copy of experiment_metrics; None outside one."""
        if not getattr(self._reading, "active", False):
            return None
        if self._reading.cursor is None:
            self._reading.cursor = self.connect()
        if not self._reading.copied:
            self._reading.cursor.execute(
                "CREATE OR REPLACE TEMP TABLE experiment_metrics AS SELECT * FROM main.experiment_metrics"
            )
            self._reading.copied = True
        return self._reading.cursor

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        def run() -> pd.DataFrame:
            reading = self._reading_cursor()
            if reading is not None:
                return reading.execute(sql, params or []).df()
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
