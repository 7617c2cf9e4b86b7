"""The metric registry: the formula of every metric of the list (chunkbench_core/metric_catalog.py).

A metric function takes the questions of a run (:class:`Scored`, one per question it applies to)
and returns one value per question (``None``: not defined for it); a metric is a per-question formula
lifted with :func:`per_question`, or a formula over the arrays of every question's offsets and ranks
lifted with :func:`over_arrays` (the span and document metrics: :mod:`.evidence_arrays`, equal to their
per-question formulas in :mod:`.metrics`), and the ranking metrics score the whole run at once over arrays
with trec_eval's definitions (:mod:`.ranking`). A shipped metric is a line of the list (its columns, label,
views, direction) and one line here binding its formula; a metric added from outside the package is one line,
its list fields and its formula at once::

    METRICS.add(Metric("on_evidence_documents", per_question(on_evidence_documents), "on_evidence_documents_rate",
                       "On-evidence hits", "share of the retrieved chunks that come from a document holding evidence"))

Everything else follows: the per-question scores (stored long: run, question, configuration, metric, value),
the run's mean with its bootstrap interval, the wide views ``question_results`` and ``experiment_metrics``
(one column per metric, ``<run_name>_ci_low`` / ``_ci_high``), the ``leaderboard`` /
``leaderboard_by_setting`` / ``leaderboard_by_group`` columns, the ``[0, 1]`` asset check, the CLI's
``--wide`` table and the reports' metric catalog. ``expanded=True`` scores the same formula on the context
after neighbor expansion and parent context as well (``<name>_expanded``).

A metric ``applies_to`` a question (default: it has evidence spans); its run mean is over those
questions. ``source="judge"`` metrics read the LLM judge's verdict and are scored after the answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from chunkbench_core.metric_catalog import CATALOG, VIEWS, Group, Kind, MetricCatalog, MetricInfo

from . import budget, evidence_arrays, metrics, page_metrics, ranking
from .questions import Question, Span, match_documents

if TYPE_CHECKING:
    from .llm import LLMResult
    from .retrieval import RetrievedChunk


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
            candidates = [
                *((c.chunk_id, c.span) for c in (self.pool or ())),
                *((c.chunk_id, c.span) for c in (*self.cache.get("hits_before", self.hits), *self.context)),
            ]
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
        """This question with the whole context as the ranking scored (the ``_expanded`` metrics); itself when the
        context is its ranking (no neighbors, no parents), so the two score from the same arrays."""
        if "as_context" not in self.cache and self.cutoff == len(self.context) and self.context == self.hits:
            return self  # not kept in its own cache: a cycle would wait for the collector to free the question
        if "as_context" not in self.cache:
            derived = Scored(  # not dataclasses.replace, which takes 3 to 4 times as long (one per question of a run)
                self.key,
                self.question,
                self.references,
                self.context,
                self.context,
                len(self.context),
                self.pool,
                self.budgets,
                self.llm,
                {"hits_before": self.hits, "qrels": self.qrels, "budget": self.budget_scores},
                self.documents,
            )
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


def over_pool(formula: Callable[[evidence_arrays.EvidenceArrays], Any]) -> MetricFunction:
    """A metric function that computes ``formula`` for every question of the batch at once, from the arrays of
    their pools (:func:`.evidence_arrays.pool_arrays`); None for a question without one (the collection's chunk
    list unknown)."""

    def compute(batch: Sequence[Scored]) -> list[Any]:
        pooled = [q for q in batch if q.pool is not None]
        if len(pooled) < len(batch):
            values = iter(compute(pooled))
            return [None if q.pool is None else next(values) for q in batch]
        return list(formula(evidence_arrays.pool_arrays(batch)).tolist()) if batch else []

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
    """A metric with its formula: the fields of its line in the list of metrics (:class:`MetricInfo`: columns,
    label, views, direction ...), the function that scores it and the questions it ``applies_to``.

    ``Metric(name, function, run_name, label, description, ...)`` added with ``METRICS.add`` puts its line in the
    list as well (how a metric is added from outside the package, as the toy metric's test does)."""

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
    group: Group = "evidence"
    dtype: Literal["DOUBLE", "BOOLEAN"] = "DOUBLE"
    bounded: bool = True
    higher_is_better: bool = True
    base: str | None = None  # for an ``_expanded`` metric: the name of the metric it derives from
    aliases: tuple[str, ...] = ()
    definition: str = ""

    def info(self) -> MetricInfo:
        """Its line in the list of metrics (everything but the formula)."""
        return MetricInfo(**{f.name: getattr(self, f.name) for f in dataclasses.fields(MetricInfo)})

    @classmethod
    def of(
        cls, info: MetricInfo, function: MetricFunction, applies_to: Callable[[Scored], bool] = has_evidence
    ) -> "Metric":
        """The metric of a line of the list, with its formula."""
        return cls(
            function=function,
            applies_to=applies_to,
            **{f.name: getattr(info, f.name) for f in dataclasses.fields(MetricInfo)},
        )

    def expanded_metric(self) -> "Metric":
        """The same formula on the context after expansion (``<name>_expanded``, ``<run_name>_expanded``)."""
        function = self.function
        return Metric.of(
            self.info().expanded_info(), lambda batch: function([q.as_context() for q in batch]), self.applies_to
        )


class MetricRegistry:
    """The formulas of the list of metrics (``catalog``), in its order: every metric of the list has one (see
    :meth:`check`)."""

    def __init__(self, catalog: MetricCatalog = CATALOG) -> None:
        self._catalog = catalog
        self._metrics: dict[str, Metric] = {}

    def bind(self, name: str, function: MetricFunction, applies_to: Callable[[Scored], bool] = has_evidence) -> None:
        """The formula of the listed metric ``name`` (and of its ``_expanded`` variant, when it has one)."""
        metric = Metric.of(self._catalog[name], function, applies_to)
        self._metrics[name] = metric
        if metric.expanded:
            self._metrics[f"{name}_expanded"] = metric.expanded_metric()

    def add(self, metric: Metric) -> Metric:
        """A new metric: its line in the list and its formula."""
        self._catalog.add(metric.info())
        self.bind(metric.name, metric.function, metric.applies_to)
        return metric

    def remove(self, name: str) -> None:
        self._catalog.remove(name)
        self._metrics.pop(name, None)
        self._metrics.pop(f"{name}_expanded", None)

    def check(self) -> None:
        """Every metric of the list has its formula and every formula its line."""
        listed = set(self._catalog.names())
        if listed != set(self._metrics):
            raise RuntimeError(
                f"metrics listed without a formula: {sorted(listed - set(self._metrics))}; "
                f"formulas without a line in the list: {sorted(set(self._metrics) - listed)}"
            )

    def _of(self, infos: Iterable[MetricInfo]) -> list[Metric]:
        return [self._metrics[m.name] for m in infos]

    def values(self, source: str | None = None) -> list[Metric]:
        """Every metric: the plain ones in the list's order, then the ``_expanded`` ones."""
        return self._of(self._catalog.values(source))

    def __iter__(self) -> Iterator[Metric]:
        return iter(self.values())

    def __contains__(self, name: object) -> bool:
        return name in self._metrics

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def get(self, name: str) -> Metric | None:
        return self._metrics.get(name)

    def by_run_name(self, run_name: str) -> Metric | None:
        info = self._catalog.by_run_name(run_name)
        return self._metrics.get(info.name) if info is not None else None

    def names(self) -> list[str]:
        """The per-question columns."""
        return self._catalog.names()

    def run_names(self) -> list[str]:
        """The run-level columns (means; each also has ``_ci_low`` / ``_ci_high``)."""
        return self._catalog.run_names()

    def shown_in(self, view: str, group: str | None = None) -> list[Metric]:
        return self._of(self._catalog.shown_in(view, group))

    def catalog(self) -> list[Metric]:
        """The metrics the reports describe, in their order (:meth:`MetricCatalog.catalog`)."""
        return self._of(self._catalog.catalog())


def score(batch: Sequence[Scored], chosen: Iterable[Metric]) -> list[dict[str, Any]]:
    """Every chosen metric of every question of ``batch`` (in order): name -> value, None where it does not
    apply or is undefined (NaN counts as undefined)."""
    applicable: dict[Callable[[Scored], bool], tuple[list[int], list[Scored]]] = {}
    columns: dict[str, list[Any]] = {}
    for metric in chosen:
        if metric.applies_to not in applicable:  # the questions each test admits, found once for its metrics
            positions = [i for i, q in enumerate(batch) if metric.applies_to(q)]
            applicable[metric.applies_to] = positions, [batch[i] for i in positions]
        positions, questions = applicable[metric.applies_to]
        values = [v if v == v else None for v in metric.function(questions)] if questions else []  # NaN: None
        if len(values) == len(batch):  # every question applies
            columns[metric.name] = values
        else:
            column: list[Any] = [None] * len(batch)
            for i, value in zip(positions, values):
                column[i] = value
            columns[metric.name] = column
    if not columns:
        return [{} for _ in batch]
    return [dict(zip(columns, row)) for row in zip(*columns.values())]


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
    """One ranking measure over the run (Success@k, RR@k, nDCG@k: evaluation.ranking, over arrays), computed
    once per ranking for the three."""

    def compute(batch: Sequence[Scored]) -> list[float]:
        missing = [q for q in batch if "ranking" not in q.cache]
        if missing:
            evidence_arrays.fill_graded_relevance(missing)  # every question's qrels at once
            values = ranking.ranking_arrays(
                [[h.chunk_id for h in q.hits] for q in missing],
                [q.qrels for q in missing],
                [q.cutoff for q in missing],
                with_ndcg=any(q.pool is not None for q in missing),
            )
            # nDCG needs the ideal ordering of every judged chunk: unknown without the collection's chunk list
            values["ndcg"][[q.pool is None for q in missing]] = float("nan")
            columns = {column: values[column].tolist() for column in ranking.MEASURES}
            for i, q in enumerate(missing):
                q.cache["ranking"] = {column: columns[column][i] for column in ranking.MEASURES}
        return [q.cache["ranking"][measure] for q in batch]

    return compute


def _budget(column: str) -> MetricFunction:
    def compute(batch: Sequence[Scored]) -> list[Any]:
        todo: dict[tuple[int, ...], list[Scored]] = {}
        for q in batch:
            if "budget" not in q.cache:
                todo.setdefault(tuple(q.budgets), []).append(q)
        for budgets, questions in todo.items():  # every question's budget scores at once
            scores = budget.batch_budget_scores(
                [list(q.context) for q in questions], [q.references for q in questions], budgets
            )
            for q, values in zip(questions, scores):
                q.cache["budget"] = values
        return [q.budget_scores.get(column) for q in batch]

    return compute


def _judged(name: str) -> MetricFunction:
    def value(q: Scored) -> Any:
        judgement = q.llm.judgement if q.llm is not None else None
        return getattr(judgement, name) if judgement is not None else None

    return per_question(value)


# The formulas of the shipped metrics (their lines: chunkbench_core/metric_catalog.py): .metrics, .ranking, .budget
METRICS = MetricRegistry()
METRICS.bind("recall", over_arrays(evidence_arrays.recall))
METRICS.bind("precision", over_arrays(evidence_arrays.precision))
METRICS.bind("iou", over_arrays(evidence_arrays.iou))
METRICS.bind("reciprocal_rank", _ranking("reciprocal_rank"))
METRICS.bind("hit", _ranking("hit"))
METRICS.bind("ndcg", _ranking("ndcg"))
METRICS.bind("doc_hit", over_arrays(evidence_arrays.document_hit), has_documents)
METRICS.bind("doc_recall", over_arrays(evidence_arrays.document_recall), has_documents)
METRICS.bind("doc_reciprocal_rank", over_arrays(evidence_arrays.document_reciprocal_rank), has_documents)
METRICS.bind("page_hit", per_question(lambda q: page_metrics.page_hit(q.hit_pages, q.cited_pages)), has_pages)
METRICS.bind("page_recall", per_question(lambda q: page_metrics.page_recall(q.hit_pages, q.cited_pages)), has_pages)
METRICS.bind(
    "page_reciprocal_rank",
    per_question(lambda q: page_metrics.page_reciprocal_rank(q.hit_pages, q.cited_pages)),
    has_pages,
)
METRICS.bind("doc_recall_ceiling", over_arrays(evidence_arrays.document_recall_ceiling), has_documents)
METRICS.bind("recall_ceiling", over_pool(evidence_arrays.recall_ceiling))
METRICS.bind("precision_omega", over_pool(evidence_arrays.precision_omega))
for _listed in CATALOG.values():
    if _listed.group == "budget":  # recall_at_B and budget_auc: the context's budget scores
        METRICS.bind(_listed.name, _budget(_listed.name))
    elif _listed.source == "judge":  # a field of the judge's verdict, named as the metric
        METRICS.bind(_listed.name, _judged(_listed.name), was_judged)
METRICS.check()
