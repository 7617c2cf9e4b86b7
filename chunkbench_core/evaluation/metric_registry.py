"""The metric registry: a metric is one pure function and one registry line.

A metric function takes the questions of a run (:class:`Scored`, one per question it applies to)
and returns one value per question (``None``: not defined for it); a metric is a per-question formula
lifted with :func:`per_question`, or a formula over the arrays of every question's offsets and ranks
lifted with :func:`over_arrays` (the span and document metrics: :mod:`.evidence_arrays`, equal to their
per-question formulas in :mod:`.metrics`), and the ranking metrics score the whole run at once with
ir-measures. The registry line names the per-question column, the run-level name of its mean, its
label, kind and description, and where it is shown::

    METRICS.add(Metric("recall", over_arrays(evidence_arrays.recall), "recall",
                       "Recall", "share of the evidence text that the retrieved chunks contain", expanded=True))

Everything else follows from that line: the per-question scores (stored long: run, question,
configuration, metric, value), the run's mean with its bootstrap interval, the wide views
``question_results`` and ``experiment_metrics`` (one column per metric, ``<run_name>_ci_low`` /
``_ci_high``), the ``leaderboard`` / ``leaderboard_by_setting`` / ``leaderboard_by_group`` columns, the
``[0, 1]`` asset check, the CLI's ``--wide`` table and the reports' metric catalog. ``expanded=True``
registers the same formula on the context after neighbor expansion and parent context as well
(``<name>_expanded``).

A metric ``applies_to`` a question (default: it has evidence spans); its run mean is over those
questions. ``source="judge"`` metrics read the LLM judge's verdict and are scored after the answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from . import budget, evidence_arrays, metrics, page_metrics, ranking
from .questions import Question, Span, match_documents

if TYPE_CHECKING:
    from .llm import LLMResult
    from .retrieval import RetrievedChunk

Kind = Literal["fraction", "score10", "ms", "count", "usd", "value"]
#: where a metric's run mean is shown: the leaderboard (its quality columns), the sweeps side by side, the groups
VIEWS = frozenset({"leaderboard", "by_setting", "by_group"})


@dataclass(frozen=True)
class Scored:
    """One question of a run as a metric sees it.

    ``hits``: the ranking scored (the top-k hits in rank order, or for an ``_expanded`` metric the whole
    context in retrieval order); ``cutoff``: its k. ``context``: every chunk the LLM receives, in retrieval
    order (hit, its neighbors nearest first, its parent, next hit ...). ``pool``: every chunk of the
    collection in the reference documents (None when the collection's chunk list is unknown).
    ``candidates``: chunks whose graded relevance is judged (the pool, the hits and the context).
    """

    key: str
    question: Question
    references: tuple[Span, ...]
    hits: tuple["RetrievedChunk", ...]
    context: tuple["RetrievedChunk", ...]
    cutoff: int
    pool: tuple[Any, ...] | None = None  # experiment.CollectionChunk: chunk_id and span
    budgets: tuple[int, ...] = budget.DEFAULT_BUDGETS
    llm: "LLMResult | None" = None
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: the question's source documents (its document-level references resolved, and the documents of its spans)
    documents: tuple[str, ...] = ()

    @property
    def has_evidence(self) -> bool:
        return bool(self.references)

    @property
    def has_documents(self) -> bool:
        return bool(self.documents)

    @property
    def hit_documents(self) -> list[str]:
        """The document of each chunk of the scored ranking, in rank order."""
        return [h.document for h in self.hits]

    @property
    def cited_pages(self) -> tuple[tuple[str, int], ...]:
        """The question's cited pages (document, 1-based page), each document named as the corpus names it."""
        if "cited_pages" not in self.cache:
            found = []
            for document, page in self.question.pages:
                names = [document] if document in self.documents else match_documents(document, self.documents)
                found += [(name, page) for name in names]
            self.cache["cited_pages"] = tuple(dict.fromkeys(found))
        return self.cache["cited_pages"]

    @property
    def hit_pages(self) -> list[tuple[str, int | None, int | None]]:
        """The document and page range of each chunk of the scored ranking, in rank order."""
        return [(h.document, getattr(h, "page_start", None), getattr(h, "page_end", None)) for h in self.hits]

    @property
    def spans(self) -> list[Span]:
        """The spans of the scored ranking."""
        return [h.span for h in self.hits]

    @property
    def qrels(self) -> dict[str, int]:
        """Chunk id -> graded relevance (evidence characters) of every candidate that holds evidence."""
        if "qrels" not in self.cache:
            candidates = [*((c.chunk_id, c.span) for c in (self.pool or ())),
                          *((c.chunk_id, c.span) for c in (*self.cache.get("hits_before", self.hits), *self.context))]
            judged: dict[str, int] = {}
            for chunk_id, span in candidates:
                gain = metrics.evidence_characters(span, self.references)
                if gain > 0:
                    judged[chunk_id] = gain
            self.cache["qrels"] = judged
        return self.cache["qrels"]

    @property
    def budget_scores(self) -> dict[str, float]:
        """``context_tokens``, ``recall_at_B`` for each configured budget and ``budget_auc`` of the context."""
        if "budget" not in self.cache:
            self.cache["budget"] = budget.budget_scores(list(self.context), self.references, self.budgets)
        return self.cache["budget"]

    def as_context(self) -> "Scored":
        """This question with the whole context as the ranking scored (the ``_expanded`` metrics)."""
        if "as_context" not in self.cache:
            derived = dataclasses.replace(self, hits=self.context, cutoff=len(self.context), cache={
                "hits_before": self.hits, "qrels": self.qrels, "budget": self.budget_scores})
            self.cache["as_context"] = derived
        return self.cache["as_context"]


MetricFunction = Callable[[Sequence[Scored]], Sequence[Any]]


def per_question(formula: Callable[[Scored], Any]) -> MetricFunction:
    """A metric function that applies ``formula`` to each question on its own."""
    def compute(batch: Sequence[Scored]) -> list[Any]:
        return [formula(q) for q in batch]

    compute.__doc__ = formula.__doc__
    return compute


def over_arrays(formula: Callable[[evidence_arrays.EvidenceArrays], Any]) -> MetricFunction:
    """A metric function that computes ``formula`` for every question of the batch at once, from the batch's
    offsets and ranks (:mod:`.evidence_arrays`, made once for every metric scoring the same questions)."""
    def compute(batch: Sequence[Scored]) -> list[Any]:
        return list(formula(evidence_arrays.arrays_of(batch)).tolist()) if batch else []

    compute.__doc__ = formula.__doc__
    return compute


def has_evidence(q: Scored) -> bool:
    return q.has_evidence


def has_documents(q: Scored) -> bool:
    return q.has_documents


def has_pages(q: Scored) -> bool:
    return bool(q.cited_pages)


def was_judged(q: Scored) -> bool:
    return q.llm is not None


@dataclass(frozen=True)
class Metric:
    """One registry line (see the module docstring).

    ``name``: the per-question column; ``run_name``: its mean's column (``mrr`` for ``reciprocal_rank``);
    ``views``: where the run mean is shown; ``dtype``: the per-question column's SQL type (``BOOLEAN``
    for a yes/no verdict, whose mean is a rate); ``bounded``: its values lie in [0, 1] (checked).
    """

    name: str
    function: MetricFunction
    run_name: str
    label: str
    description: str
    kind: Kind = "fraction"
    expanded: bool = False
    views: frozenset[str] = VIEWS
    expanded_views: frozenset[str] = frozenset()
    applies_to: Callable[[Scored], bool] = has_evidence
    source: Literal["retrieval", "judge"] = "retrieval"
    group: Literal["evidence", "ceiling", "budget", "judge"] = "evidence"
    dtype: Literal["DOUBLE", "BOOLEAN"] = "DOUBLE"
    bounded: bool = True
    higher_is_better: bool = True
    base: str | None = None  # for an ``_expanded`` metric: the name of the metric it derives from

    def expanded_metric(self) -> "Metric":
        """The same formula on the context after expansion (``<name>_expanded``, ``<run_name>_expanded``)."""
        function = self.function
        return dataclasses.replace(
            self, name=f"{self.name}_expanded", run_name=f"{self.run_name}_expanded",
            label=f"{self.label} (context)", description=f"{self.description}, in the context after neighbor "
                                                         "expansion / parent context",
            function=lambda batch: function([q.as_context() for q in batch]), expanded=False,
            views=self.expanded_views, expanded_views=frozenset(), base=self.name)


class MetricRegistry:
    """Metrics by name, in registration order (each ``expanded`` one followed later by its context variant)."""

    def __init__(self) -> None:
        self._metrics: dict[str, Metric] = {}

    def add(self, metric: Metric) -> Metric:
        for one in (metric, *((metric.expanded_metric(),) if metric.expanded else ())):
            for known in self._metrics.values():
                if known.name != one.name and (known.run_name == one.run_name or known.name == one.run_name):
                    raise ValueError(f"metric {one.name!r}: its run name {one.run_name!r} is taken by {known.name!r}")
            self._metrics[one.name] = one
        return metric

    def remove(self, name: str) -> None:
        self._metrics.pop(name, None)
        self._metrics.pop(f"{name}_expanded", None)

    def values(self, source: str | None = None) -> list[Metric]:
        """Every metric: the plain ones in registration order, then the ``_expanded`` ones."""
        ordered = [m for m in self._metrics.values() if m.base is None] + \
                  [m for m in self._metrics.values() if m.base is not None]
        return [m for m in ordered if source is None or m.source == source]

    def __iter__(self):
        return iter(self.values())

    def __contains__(self, name: object) -> bool:
        return name in self._metrics

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def get(self, name: str) -> Metric | None:
        return self._metrics.get(name)

    def by_run_name(self, run_name: str) -> Metric | None:
        return next((m for m in self._metrics.values() if m.run_name == run_name), None)

    def names(self) -> list[str]:
        """The per-question columns."""
        return [m.name for m in self.values()]

    def run_names(self) -> list[str]:
        """The run-level columns (means; each also has ``_ci_low`` / ``_ci_high``)."""
        return [m.run_name for m in self.values()]

    def shown_in(self, view: str, group: str | None = None) -> list[Metric]:
        return [m for m in self.values() if view in m.views and (group is None or m.group == group)]

    def catalog(self) -> list[Metric]:
        """The metrics the reports describe, in their order: the evidence metrics, their context variants that
        a view shows, the ceilings, the budget metrics, the judge's, then any other."""
        plain = [m for m in self.values() if m.base is None]
        context = [m for m in self.values() if m.base is not None and m.views]
        order = {"evidence": 0, "ceiling": 2, "budget": 3, "judge": 4}
        ranked = [(order.get(m.group, 5), i, m) for i, m in enumerate(plain)]
        ranked += [(1, i, m) for i, m in enumerate(context)]
        return [m for _, _, m in sorted(ranked, key=lambda t: (t[0], t[1]))]


def score(batch: Sequence[Scored], chosen: Iterable[Metric]) -> list[dict[str, Any]]:
    """Every chosen metric of every question of ``batch`` (in order): name -> value, None where it does not
    apply or is undefined (NaN counts as undefined)."""
    out: list[dict[str, Any]] = [{} for _ in batch]
    for metric in chosen:
        positions = [i for i, q in enumerate(batch) if metric.applies_to(q)]
        values = list(metric.function([batch[i] for i in positions])) if positions else []
        for i in range(len(batch)):
            out[i][metric.name] = None
        for i, value in zip(positions, values):
            out[i][metric.name] = None if value is None or (isinstance(value, float) and value != value) else value
    return out


def out_of_range(rows: Sequence[Mapping[str, Any]], registry: "MetricRegistry") -> list[str]:
    """Values of the bounded metrics outside [0, 1] (a bug if any): '<question>: <metric>=<value>'."""
    bad = []
    for row in rows:
        for metric in registry.values():
            if not metric.bounded:
                continue
            value = row.get(metric.name)
            if value is not None and value == value and not (0.0 <= float(value) <= 1.0):
                bad.append(f"{row.get('question_set')}/{row.get('question_id')}: {metric.name}={value}")
    return bad


# -- the shipped metrics: formulas in .metrics, .ranking and .budget --------------------------------------
def _ranking(measure: str) -> MetricFunction:
    """One ir-measures measure over the run (Success@k, RR@k, nDCG@k: evaluation.ranking), computed once per
    ranking for the three."""
    def compute(batch: Sequence[Scored]) -> list[float]:
        missing = [q for q in batch if "ranking" not in q.cache]
        if missing:
            evidence_arrays.fill_graded_relevance(missing)  # every question's qrels at once
            rankings = {q.key: [h.chunk_id for h in q.hits] for q in missing}
            cutoffs = {q.key: q.cutoff for q in missing}
            with_ndcg = all(q.pool is not None for q in missing)
            scores = ranking.ranking_scores(rankings, {q.key: q.qrels for q in missing}, cutoffs, with_ndcg=with_ndcg)
            for q in missing:
                q.cache["ranking"] = scores[q.key]
        return [q.cache["ranking"][measure] for q in batch]

    return compute


def _recall_ceiling(q: Scored) -> float | None:
    """The best recall any ``cutoff`` chunks of the collection could reach (None without its chunk list)."""
    return None if q.pool is None else metrics.recall_ceiling([c.span for c in q.pool], q.references, q.cutoff)


def _budget(column: str) -> MetricFunction:
    def compute(batch: Sequence[Scored]) -> list[Any]:
        todo: dict[tuple[int, ...], list[Scored]] = {}
        for q in batch:
            if "budget" not in q.cache:
                todo.setdefault(tuple(q.budgets), []).append(q)
        for budgets, questions in todo.items():  # every question's budget scores at once
            scores = budget.batch_budget_scores([list(q.context) for q in questions],
                                                [q.references for q in questions], budgets)
            for q, values in zip(questions, scores):
                q.cache["budget"] = values
        return [q.budget_scores.get(column) for q in batch]

    return compute


def _judged(name: str) -> MetricFunction:
    def value(q: Scored) -> Any:
        judgement = q.llm.judgement if q.llm is not None else None
        return getattr(judgement, name) if judgement is not None else None

    return per_question(value)


def _precision_omega(q: Scored) -> float | None:
    """Precision when every chunk of the collection that meets a reference is retrieved."""
    return None if q.pool is None else metrics.precision_omega([c.span for c in q.pool], q.references)


METRICS = MetricRegistry()
_BOARD = frozenset({"leaderboard", "by_setting", "by_group"})
METRICS.add(Metric("recall", over_arrays(evidence_arrays.recall), "recall", "Recall",
                   "share of the evidence text that the retrieved chunks contain", expanded=True,
                   expanded_views=_BOARD))
METRICS.add(Metric("precision", over_arrays(evidence_arrays.precision), "precision",
                   "Precision", "share of the retrieved text that is evidence", expanded=True,
                   expanded_views=frozenset({"by_setting"})))
METRICS.add(Metric("iou", over_arrays(evidence_arrays.iou), "iou", "IoU",
                   "evidence retrieved / (retrieved text + evidence missed)", expanded=True, expanded_views=_BOARD))
METRICS.add(Metric("reciprocal_rank", _ranking("reciprocal_rank"), "mrr", "MRR",
                   "1 / rank of the first chunk that holds evidence", expanded=True))
METRICS.add(Metric("hit", _ranking("hit"), "hit_rate", "Hit rate",
                   "share of questions with at least one evidence chunk", expanded=True))
METRICS.add(Metric("ndcg", _ranking("ndcg"), "ndcg", "nDCG", "ranking quality weighted by evidence characters",
                   expanded=True, views=frozenset()))
METRICS.add(Metric("doc_hit", over_arrays(evidence_arrays.document_hit),
                   "doc_hit_rate", "Doc hit@k", "share of questions with a top-k chunk from a source document",
                   applies_to=has_documents))
METRICS.add(Metric("doc_recall", over_arrays(evidence_arrays.document_recall),
                   "doc_recall", "Doc recall@k",
                   "share of the question's source documents among the documents of the top-k chunks",
                   applies_to=has_documents))
METRICS.add(Metric("doc_reciprocal_rank",
                   over_arrays(evidence_arrays.document_reciprocal_rank),
                   "doc_mrr", "Doc MRR", "1 / rank of the first chunk from a source document",
                   applies_to=has_documents))
METRICS.add(Metric("page_hit", per_question(lambda q: page_metrics.page_hit(q.hit_pages, q.cited_pages)),
                   "page_hit_rate", "Page hit@k", "share of questions with a top-k chunk on a cited evidence page",
                   applies_to=has_pages))
METRICS.add(Metric("page_recall", per_question(lambda q: page_metrics.page_recall(q.hit_pages, q.cited_pages)),
                   "page_recall", "Page recall@k", "share of the question's cited evidence pages the top-k chunks "
                   "fall on", applies_to=has_pages))
METRICS.add(Metric("page_reciprocal_rank",
                   per_question(lambda q: page_metrics.page_reciprocal_rank(q.hit_pages, q.cited_pages)),
                   "page_mrr", "Page MRR", "1 / rank of the first chunk on a cited evidence page",
                   applies_to=has_pages))
METRICS.add(Metric("doc_recall_ceiling",
                   per_question(lambda q: metrics.document_recall_ceiling(q.cutoff, q.documents)),
                   "doc_recall_ceiling", "Doc recall ceiling",
                   "best doc recall@k any k chunks can reach: min(1, k / source documents)", views=frozenset(),
                   applies_to=has_documents, group="ceiling"))
METRICS.add(Metric("recall_ceiling", per_question(_recall_ceiling), "recall_ceiling", "Recall ceiling",
                   "best recall@k any k chunks of this chunking can reach (the k chunks holding the most evidence)",
                   views=frozenset(), group="ceiling"))
METRICS.add(Metric("precision_omega", per_question(_precision_omega), "precision_omega", "Precision Ω",
                   "best precision the chunking allows (every chunk that touches evidence retrieved)",
                   views=frozenset()))
for _b in budget.DEFAULT_BUDGETS:
    METRICS.add(Metric(budget.budget_column(_b), _budget(budget.budget_column(_b)), budget.budget_column(_b),
                       f"Recall @ {_b:,} tokens",
                       f"share of the evidence text inside the first {_b:,} tokens of the context the LLM receives",
                       group="budget"))
METRICS.add(Metric("budget_auc", _budget("budget_auc"), "budget_auc", "Budget AUC",
                   "area under evidence recall vs context budget (256 to 2,048 tokens, log scale)", group="budget"))
METRICS.add(Metric("context_relevance", _judged("context_relevance"), "context_relevance", "Context relevance",
                   "LLM judge: how relevant the context is (1-10)", kind="score10", views=frozenset(),
                   applies_to=was_judged, source="judge", group="judge", bounded=False))
METRICS.add(Metric("answer_similarity", _judged("answer_similarity"), "answer_similarity", "Answer similarity",
                   "LLM judge: generated vs expected answer (1-10)", kind="score10", views=frozenset(),
                   applies_to=was_judged, source="judge", group="judge", bounded=False))
METRICS.add(Metric("faithfulness", _judged("faithfulness"), "faithfulness", "Faithfulness",
                   "LLM judge: answer supported by the context (1-10)", kind="score10", views=frozenset(),
                   applies_to=was_judged, source="judge", group="judge", bounded=False))
METRICS.add(Metric("hallucination", _judged("hallucination"), "hallucination_rate", "Hallucination rate",
                   "LLM judge: share of answers flagged as hallucinated", views=frozenset(), applies_to=was_judged,
                   source="judge", group="judge", dtype="BOOLEAN", higher_is_better=False))
