"""The list of metrics: what each metric is, without its formula.

One line per metric says its per-question column, the run-level name of its mean, its label and description,
the names a user may give for it, which way is better, its kind and SQL type, and the views that show it::

    CATALOG.add(MetricInfo("recall", "recall", "Recall", "share of the evidence text that the retrieved chunks "
                           "contain", expanded=True, aliases=("recall@k",)))

The results store reads this list to lay out its tables and views, and the reports, the command line and the
ranking read it for labels, aliases and order. The formulas are work of the evaluation floor
(``evaluation.metric_registry`` binds one to each line by name, and fails at import when a line has none), so
the storage floor lays out every metric's columns without importing evaluation, and the list is complete
whichever module is imported first. ``expanded=True`` adds the same metric on the context after neighbor
expansion and parent context (``<name>_expanded``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

Kind = Literal["fraction", "score10", "ms", "count", "usd", "value"]
Group = Literal["evidence", "ceiling", "budget", "judge"]
#: where a metric's run mean is shown: the leaderboard (its quality columns), the sweeps side by side, the groups
VIEWS = frozenset({"leaderboard", "by_setting", "by_group"})
#: the views of the reports and the command line, which show fewer metrics than the DuckDB views and only the
#: metrics named for them (a new metric joins none until its line says so): ``board``: the metric columns of
#: ``chunkbench leaderboard``'s table; ``kpis``: the managerial report's key figures of the recommendation;
#: ``bars``: its bar chart per configuration; ``ranked_table``: its leaderboard table (besides the ranking
#: metric); ``group_section``: the metrics the results-by-group section offers
REPORT_VIEWS = frozenset({"board", "kpis", "bars", "ranked_table", "group_section"})
#: The default ranking metric: evidence recall of the first 512 context tokens (evaluation.budget).
#: Budgeted, so no configuration can rank higher by sending the LLM more text; chosen over
#: budget_auc and the other budgets by a measurement on the Chroma corpora (README, "Choosing the
#: ranking metric").
DEFAULT_RANK_METRIC = "recall_at_512"
#: what ranks configurations when the questions have no evidence spans, only source documents
DOCUMENT_RANK_METRIC = "doc_recall"
#: the context budgets (tokens) of the ``recall_at_B`` metrics
BUDGETS: tuple[int, ...] = (256, 512, 1024, 2048)


def budget_column(budget: int) -> str:
    """``recall_at_512`` for 512."""
    return f"recall_at_{budget}"


@dataclass(frozen=True)
class MetricInfo:
    """One metric of the list (see the module docstring).

    ``name``: the per-question column; ``run_name``: its mean's column (``mrr`` for ``reciprocal_rank``);
    ``views``: where the run mean is shown; ``dtype``: the per-question column's SQL type (``BOOLEAN`` for a
    yes/no verdict, whose mean is a rate); ``bounded``: its values lie in [0, 1] (checked); ``aliases``: other
    names a user may give for it (its run name is always one); ``definition``: what the recommendation says it
    is (default: its description).
    """

    name: str
    run_name: str
    label: str
    description: str
    kind: Kind = "fraction"
    expanded: bool = False
    views: frozenset[str] = VIEWS
    expanded_views: frozenset[str] = frozenset()
    source: Literal["retrieval", "judge"] = "retrieval"
    group: Group = "evidence"
    dtype: Literal["DOUBLE", "BOOLEAN"] = "DOUBLE"
    bounded: bool = True
    higher_is_better: bool = True
    base: str | None = None  # for an ``_expanded`` metric: the name of the metric it derives from
    aliases: tuple[str, ...] = ()
    definition: str = ""

    def expanded_info(self) -> "MetricInfo":
        """The same metric on the context after expansion (``<name>_expanded``, ``<run_name>_expanded``)."""
        return dataclasses.replace(
            self,
            name=f"{self.name}_expanded",
            run_name=f"{self.run_name}_expanded",
            label=f"{self.label} (context)",
            description=f"{self.description}, in the context after neighbor expansion / parent context",
            expanded=False,
            views=self.expanded_views,
            expanded_views=frozenset(),
            base=self.name,
            aliases=(),
            definition="",
        )


class MetricCatalog:
    """Metrics by name, in the order they were added (each ``expanded`` one followed later by its context
    variant)."""

    def __init__(self) -> None:
        self._metrics: dict[str, MetricInfo] = {}

    def add(self, metric: MetricInfo) -> MetricInfo:
        for one in (metric, *((metric.expanded_info(),) if metric.expanded else ())):
            for known in self._metrics.values():
                if known.name != one.name and (known.run_name == one.run_name or known.name == one.run_name):
                    raise ValueError(f"metric {one.name!r}: its run name {one.run_name!r} is taken by {known.name!r}")
            self._metrics[one.name] = one
        return metric

    def remove(self, name: str) -> None:
        self._metrics.pop(name, None)
        self._metrics.pop(f"{name}_expanded", None)

    def values(self, source: str | None = None) -> list[MetricInfo]:
        """Every metric: the plain ones in the order they were added, then the ``_expanded`` ones."""
        ordered = [m for m in self._metrics.values() if m.base is None] + [
            m for m in self._metrics.values() if m.base is not None
        ]
        return [m for m in ordered if source is None or m.source == source]

    def __iter__(self) -> Iterator[MetricInfo]:
        return iter(self.values())

    def __contains__(self, name: object) -> bool:
        return name in self._metrics

    def __getitem__(self, name: str) -> MetricInfo:
        return self._metrics[name]

    def get(self, name: str) -> MetricInfo | None:
        return self._metrics.get(name)

    def by_run_name(self, run_name: str) -> MetricInfo | None:
        return next((m for m in self._metrics.values() if m.run_name == run_name), None)

    def names(self) -> list[str]:
        """The per-question columns."""
        return [m.name for m in self.values()]

    def run_names(self) -> list[str]:
        """The run-level columns (means; each also has ``_ci_low`` / ``_ci_high``)."""
        return [m.run_name for m in self.values()]

    def shown_in(self, view: str, group: str | None = None) -> list[MetricInfo]:
        return [m for m in self.values() if view in m.views and (group is None or m.group == group)]

    def catalog(self) -> list[MetricInfo]:
        """The metrics the reports describe, in their order: the evidence metrics, their context variants that
        a view shows, the ceilings, the budget metrics, the judge's, then any other."""
        plain = [m for m in self.values() if m.base is None]
        context = [m for m in self.values() if m.base is not None and m.views]
        order = {"evidence": 0, "ceiling": 2, "budget": 3, "judge": 4}
        ranked = [(order.get(m.group, 5), i, m) for i, m in enumerate(plain)]
        ranked += [(1, i, m) for i, m in enumerate(context)]
        return [m for _, _, m in sorted(ranked, key=lambda t: (t[0], t[1]))]

    def shown_in_order(self, view: str, group: str | None = None) -> list[MetricInfo]:
        """The metrics a view shows, in the reports' order (:meth:`catalog`)."""
        return [m for m in self.catalog() if view in m.views and (group is None or m.group == group)]

    def aliases(self) -> dict[str, str]:
        """Every name a user may give for a metric (lower-cased) -> its per-question column: its aliases and its
        run name."""
        out: dict[str, str] = {}
        for m in self.values():
            for alias in (*m.aliases, m.run_name):
                if alias != m.name:
                    out.setdefault(alias.lower(), m.name)
        return out

    def canonical(self, name: str) -> str:
        """The per-question column behind a metric name a user gave (``recall@k`` -> ``recall``, ``mrr`` ->
        ``reciprocal_rank``); a name the list does not know, as given."""
        key = name.strip()
        return key if key in self._metrics else self.aliases().get(key.lower(), key)

    def run_name_of(self, name: str) -> str:
        """The run-level column of a metric name or alias (``reciprocal_rank`` -> ``mrr``); unknown, as given."""
        known = self.get(self.canonical(name))
        return known.run_name if known is not None else name

    def definition(self, name: str) -> str:
        """What the metric is, for people (its definition, else its description); unknown, the name as given."""
        known = self.get(self.canonical(name))
        return (known.definition or known.description) if known is not None else name

    def judge_scores(self) -> list[str]:
        """The LLM judge's 1-10 scores (their margin and range are the judge's scale)."""
        return [m.name for m in self.values(source="judge") if m.kind == "score10"]


CATALOG = MetricCatalog()
_BOARD = frozenset({"leaderboard", "by_setting", "by_group"})
CATALOG.add(
    MetricInfo(
        "recall",
        "recall",
        "Recall",
        "share of the evidence text that the retrieved chunks contain",
        views=VIEWS | {"board", "kpis", "bars", "ranked_table", "group_section"},
        expanded=True,
        expanded_views=_BOARD | {"board", "group_section"},
        aliases=("recall@k",),
        definition="the share of the evidence text inside the top-k retrieved chunks",
    )
)
CATALOG.add(
    MetricInfo(
        "precision",
        "precision",
        "Precision",
        "share of the retrieved text that is evidence",
        views=VIEWS | {"board", "kpis", "bars", "ranked_table", "group_section"},
        expanded=True,
        expanded_views=frozenset({"by_setting"}),
        aliases=("precision@k",),
        definition="the share of the retrieved text that is evidence",
    )
)
CATALOG.add(
    MetricInfo(
        "iou",
        "iou",
        "IoU",
        "evidence retrieved / (retrieved text + evidence missed)",
        views=VIEWS | {"board", "kpis", "bars", "group_section"},
        expanded=True,
        expanded_views=_BOARD,
        aliases=("iou@k",),
        definition="the overlap of retrieved text and evidence over their union",
    )
)
CATALOG.add(
    MetricInfo(
        "reciprocal_rank",
        "mrr",
        "MRR",
        "1 / rank of the first chunk that holds evidence",
        views=VIEWS | {"board", "kpis", "bars", "ranked_table", "group_section"},
        expanded=True,
        aliases=("mrr@k",),
        definition="1 / the rank of the first chunk holding evidence (MRR)",
    )
)
CATALOG.add(
    MetricInfo(
        "hit",
        "hit_rate",
        "Hit rate",
        "share of questions with at least one evidence chunk",
        views=VIEWS | {"board", "group_section"},
        expanded=True,
        aliases=("success@k",),
        definition="whether any of the top-k chunks holds evidence",
    )
)
CATALOG.add(
    MetricInfo(
        "ndcg",
        "ndcg",
        "nDCG",
        "ranking quality weighted by evidence characters",
        expanded=True,
        views=frozenset({"kpis", "bars"}),
        aliases=("ndcg@k",),
        definition="nDCG of the ranking, graded by evidence characters",
    )
)
CATALOG.add(
    MetricInfo(
        "doc_hit",
        "doc_hit_rate",
        "Doc hit@k",
        "share of questions with a top-k chunk from a source document",
        aliases=("doc_hit@k",),
        views=VIEWS | {"kpis", "group_section"},
        definition="whether any of the top-k chunks comes from a source document of the question",
    )
)
CATALOG.add(
    MetricInfo(
        "doc_recall",
        "doc_recall",
        "Doc recall@k",
        "share of the question's source documents among the documents of the top-k chunks",
        aliases=("doc_recall@k",),
        views=VIEWS | {"kpis", "group_section"},
        definition="the share of the question's source documents among the documents of the top-k chunks",
    )
)
CATALOG.add(
    MetricInfo(
        "doc_reciprocal_rank",
        "doc_mrr",
        "Doc MRR",
        "1 / rank of the first chunk from a source document",
        aliases=("doc_mrr@k",),
        views=VIEWS | {"kpis", "group_section"},
        definition="1 / the rank of the first chunk from a source document of the question (doc MRR)",
    )
)
CATALOG.add(
    MetricInfo(
        "page_hit",
        "page_hit_rate",
        "Page hit@k",
        "share of questions with a top-k chunk on a cited evidence page",
        aliases=("page_hit@k",),
        views=VIEWS | {"kpis", "group_section"},
        definition="whether any of the top-k chunks falls on a cited evidence page",
    )
)
CATALOG.add(
    MetricInfo(
        "page_recall",
        "page_recall",
        "Page recall@k",
        "share of the question's cited evidence pages the top-k chunks fall on",
        aliases=("page_recall@k",),
        views=VIEWS | {"kpis", "group_section"},
        definition="the share of the question's cited evidence pages the top-k chunks fall on",
    )
)
CATALOG.add(
    MetricInfo(
        "page_reciprocal_rank",
        "page_mrr",
        "Page MRR",
        "1 / rank of the first chunk on a cited evidence page",
        aliases=("page_mrr@k",),
        views=VIEWS | {"kpis", "group_section"},
        definition="1 / the rank of the first chunk on a cited evidence page (page MRR)",
    )
)
CATALOG.add(
    MetricInfo(
        "doc_recall_ceiling",
        "doc_recall_ceiling",
        "Doc recall ceiling",
        "best doc recall@k any k chunks can reach: min(1, k / source documents)",
        views=frozenset(),
        group="ceiling",
    )
)
CATALOG.add(
    MetricInfo(
        "recall_ceiling",
        "recall_ceiling",
        "Recall ceiling",
        "best recall@k any k chunks of this chunking can reach (the k chunks holding the most evidence)",
        views=frozenset(),
        group="ceiling",
    )
)
CATALOG.add(
    MetricInfo(
        "precision_omega",
        "precision_omega",
        "Precision Ω",
        "best precision the chunking allows (every chunk that touches evidence retrieved)",
        views=frozenset({"kpis"}),
    )
)
for _b in BUDGETS:
    CATALOG.add(
        MetricInfo(
            budget_column(_b),
            budget_column(_b),
            f"Recall @ {_b:,} tokens",
            f"share of the evidence text inside the first {_b:,} tokens of the context the LLM receives",
            group="budget",
            # the default ranking metric's budget: the one the reports and the command line show
            views=VIEWS
            | ({"board", "kpis", "group_section"} if budget_column(_b) == DEFAULT_RANK_METRIC else frozenset()),
            definition=f"the share of the evidence text inside the first {_b:,} tokens of the context the LLM receives",
        )
    )
CATALOG.add(
    MetricInfo(
        "budget_auc",
        "budget_auc",
        "Budget AUC",
        "area under evidence recall vs context budget (256 to 2,048 tokens, log scale)",
        group="budget",
        views=VIEWS | {"board", "kpis", "group_section"},
        definition="the area under evidence recall vs context budget (256 to 2,048 tokens, log scale)",
    )
)
CATALOG.add(
    MetricInfo(
        "context_relevance",
        "context_relevance",
        "Context relevance",
        "LLM judge: how relevant the context is (1-10)",
        kind="score10",
        views=frozenset({"kpis"}),
        source="judge",
        group="judge",
        bounded=False,
        definition="the LLM judge's 1-10 score of how relevant the context is",
    )
)
CATALOG.add(
    MetricInfo(
        "answer_similarity",
        "answer_similarity",
        "Answer similarity",
        "LLM judge: generated vs expected answer (1-10)",
        kind="score10",
        views=frozenset({"kpis"}),
        source="judge",
        group="judge",
        bounded=False,
        definition="the LLM judge's 1-10 score of the answer against the expected answer",
    )
)
CATALOG.add(
    MetricInfo(
        "faithfulness",
        "faithfulness",
        "Faithfulness",
        "LLM judge: answer supported by the context (1-10)",
        kind="score10",
        views=frozenset({"kpis"}),
        source="judge",
        group="judge",
        bounded=False,
        definition="the LLM judge's 1-10 score of how faithful the answer is to the context",
    )
)
CATALOG.add(
    MetricInfo(
        "hallucination",
        "hallucination_rate",
        "Hallucination rate",
        "LLM judge: share of answers flagged as hallucinated",
        views=frozenset({"kpis"}),
        source="judge",
        group="judge",
        dtype="BOOLEAN",
        higher_is_better=False,
    )
)
