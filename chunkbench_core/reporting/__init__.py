"""Reports: self-contained HTML files written from a ResultsDB (no server, no CDN, no network).

``write_reports(results, folder)`` writes three files that link to each other:

- ``benchmark_report.html`` (:mod:`.managerial`): recommendation, KPIs, leaderboard,
  cost and latency, plots, one paragraph per configuration, corpus;
- ``technical_report.html`` (:mod:`.technical`): runs, the retrieval inspector,
  per-question results, latency and tokens, provenance, failures;
- ``decision_board.html`` (:mod:`.decision_board`): every run compared over time.

The managerial and technical reports show the latest run per strategy x corpus model
(the ``leaderboard`` view); the decision board shows every ``experiment_metrics`` row, runs set
aside for good (``run_exclusions``) struck through with their reason. ``write_reports(results,
run_reports_folder(folder, selection), runs=selection, latest=folder)`` writes the same three
reports for exactly one chosen run or batch, with a banner naming it and a link back to the latest.

Columns used when present (every one is optional; a part whose columns are absent is
left out or replaced by a one-line note). Names in brackets are accepted aliases.

``experiment_metrics``
    ``precision_omega``, ``ndcg``, ``recall_expanded``, ``precision_expanded``,
    ``iou_expanded``, ``context_relevance``, ``answer_similarity``, ``faithfulness``,
    ``hallucination_rate``; for every metric ``<metric>_ci_low`` / ``<metric>_ci_high``
    (without them the report bootstraps 95% intervals from the per-question values and
    says so); ``significant_vs_best`` [``significantly_worse``] and ``p_value``
    [``p_value_vs_best``] on each non-best row (this row against the best one);
    ``is_best`` (exactly one true row overrides the leaderboard's first place);
    ``cost_usd`` [``estimated_cost_usd``]; any ``*_tokens`` count (e.g.
    ``answer_prompt_tokens``, ``embedding_tokens``); any ``*_ms`` mean;
    ``provenance`` JSON keys: ``boundary_model``, ``neighbors.neighbor_prev`` /
    ``neighbors.neighbor_next`` [top-level ``neighbor_prev`` / ``neighbor_next``],
    ``chunking_params.chunk_size`` [``chunk_size``], ``top_k``, ``question_set_hash``,
    ``variant`` (a sweep step; part of a configuration's identity on the board), and every
    other key (shown flattened in the technical report).

``question_results``
    ``references`` (JSON list of ``{document, start, end}``: the reference spans, needed
    to highlight evidence inside chunks), ``expanded`` (JSON list like ``retrieved`` with
    ``role`` hit/neighbor/parent), ``expansion_tree`` (JSON list of ``{hit, rank, score,
    neighbors_prev: [chunk_id], neighbors_next: [chunk_id], parent: chunk_id}``; ids may
    also be objects with ``chunk_id``), ``parent_context`` (text, or JSON list of texts /
    ``{text}`` objects), ``generated_answer`` [``answer``], ``expected_answer``,
    ``answer_error``, ``judge_error``, ``context_relevance``, ``answer_similarity``,
    ``faithfulness``, ``hallucination`` (bool), ``judge_reasoning``, the per-question
    columns of the metrics above (``precision_omega``, ``ndcg``, ``*_expanded``),
    ``token_usage`` (JSON object of counts, may nest) and any ``*_tokens`` column,
    ``latency_ms`` (JSON object ``{stage: ms}``) and any ``*_ms`` column (``embed_ms``,
    ``search_ms``, ``expand_ms``, ``generate_ms``, ``judge_ms``).

``chunks``
    ``text`` (base) for the inspector, ``embedded_text`` when it differs from ``text``
    (contextual retrieval), ``parent_id`` (parent chunks are looked up by id),
    ``token_count`` / offsets for the chunk-size plots, ``chunking_params`` to pick the
    chunks of the run's variant.

Safety: every value is escaped; data for the page scripts is embedded as JSON with
``<``, ``>``, ``&`` escaped; scripts build the DOM with ``textContent`` only; a
Content-Security-Policy allows only the pages' own scripts (see :mod:`.html`).
"""

from .reports import ReportNames, ReportPaths, run_reports_folder, write_reports

__all__ = ["ReportNames", "ReportPaths", "run_reports_folder", "write_reports"]
