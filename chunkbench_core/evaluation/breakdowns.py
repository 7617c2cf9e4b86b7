"""Results split by group: every per-question mean of the leaderboard, per configuration and group.

A *group* is one value of a *dimension* of the questions:

- ``format``: the file extension of a document the question's evidence is in (``docx``, ``pdf``, ...),
  lower-cased, without the dot;
- ``category`` and ``difficulty``: the question's own labels;
- ``evidence_length``: how long the question's evidence is in tokens, in buckets (``up to 64 tokens`` ...
  ``over 512 tokens``; ``evaluation.evidence_length``), as the last comparison measured it (the
  ``question_evidence`` table); a question without evidence spans is in ``(none)``;
- ``document``: a document the question's evidence is in (its path in the corpus): its source documents
  (the documents its document-level references name, and those of its evidence spans);
- ``label:NAME``: a label of the question (a column of the team's own sheet kept at import, such as
  ``label:Source Chunk Type``), when the rows carry a ``labels`` column (a JSON object); a question
  without that label is in its group ``(none)``.

Rule for questions with evidence in several documents: the question counts once in the group of
*each* distinct document (and of each distinct format) it has evidence in, with its full scores (the
scores of a question are not split by document). Cells of one dimension can therefore add up to more
questions than the run scored. A missing or blank category or difficulty, or a document without an
extension, is the group ``(none)``. Judge-only questions (neither spans nor source documents) have no
document, so they are in no ``format`` or ``document`` group.

Per cell (dimension x group x configuration), over the rows of the configuration's latest run
(the ``leaderboard``'s run) whose retrieval did not fail, exactly as the run-level means are made
(``evaluation.experiment.aggregate``):

- ``n_questions`` = number of questions with evidence (not judge-only) in the group;
  ``n_judge_only`` = judge-only questions in the group;
- evidence metrics, the mean over the ``n_questions`` questions of the per-question value
  (missing values left out): ``recall``, ``precision``, ``iou``, ``mrr`` = mean of ``reciprocal_rank``,
  ``hit_rate`` = mean of ``hit``, ``recall_expanded``, ``iou_expanded``, ``recall_at_256`` ...
  ``recall_at_2048``, ``budget_auc``;
- ``context_tokens`` = mean context tokens over every question of the group, judge-only ones included
  (they send a context to the LLM too); ``query_ms`` = mean of ``embed_ms + search_ms`` over the same;
- ``rank_metric`` / ``rank_mean``: the mean of the metric the leaderboard ranks by (default
  ``recall_at_512``; ``mrr`` is the column ``reciprocal_rank``) over every question of the group;
- ``too_small`` = ``n_questions <= 3`` (:data:`TOO_SMALL`): a mean over so few questions is not worth reading.

The DuckDB view ``leaderboard_by_group`` (``storage.results_db``) computes the same cells in SQL;
:func:`group_breakdown` is the Python twin the reports use (a test keeps the two equal).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from chunkbench_core.evaluation.statistics import DEFAULT_RANK_METRIC, canonical_metric
from chunkbench_core.group_rules import (  # the rule's constants, shared with the DuckDB view
    BLANK_ENDS_PATTERN,
    DIMENSIONS,
    EXTENSION_PATTERN,
    LABEL_PREFIX,
    NO_GROUP,
    TOO_SMALL,
    evidence_metrics,
)
from chunkbench_core.labels import DEFAULT_RETRIEVER, configuration_label
from chunkbench_core.wording import plural


def group_metrics() -> tuple[str, ...]:
    """Every metric of a cell, in column order (context_tokens and query_ms are means over every question)."""
    return (*evidence_metrics(), "context_tokens", "query_ms")


def breakdown_columns() -> tuple[str, ...]:
    """The columns of ``leaderboard_by_group`` and of :func:`group_breakdown`, in order."""
    return (
        "dimension",
        "group",
        "strategy",
        "corpus_model",
        "retriever",
        "n_questions",
        "n_judge_only",
        "too_small",
        "rank_metric",
        "rank_mean",
        *group_metrics(),
        "experiment_run_id",
    )


#: the columns as the shipped metrics make them (the registry may add more: :func:`breakdown_columns`)
EVIDENCE_METRICS: dict[str, str] = evidence_metrics()
GROUP_METRICS: tuple[str, ...] = group_metrics()
BREAKDOWN_COLUMNS: tuple[str, ...] = breakdown_columns()

_EXTENSION = re.compile(EXTENSION_PATTERN)
_BLANK_ENDS = re.compile(BLANK_ENDS_PATTERN)


def document_format(document: str) -> str:
    """``"HR/Policy.DOCX"`` -> ``"docx"``; ``(none)`` for a name without an extension."""
    match = _EXTENSION.search(document)
    return match.group(1).lower() if match else NO_GROUP


def label(raw: Any) -> str:
    """A category or difficulty as a group: stripped text, ``(none)`` when missing or blank."""
    if raw is None or (isinstance(raw, float) and math.isnan(raw)) or type(raw).__name__ in ("NAType", "NaTType"):
        return NO_GROUP
    text = _BLANK_ENDS.sub("", str(raw))
    return text or NO_GROUP


def reference_documents(references: Any) -> list[str]:
    """The distinct documents of a ``references`` value (JSON list of ``{document, start, end}``), in order."""
    if isinstance(references, str):
        try:
            references = json.loads(references)
        except ValueError:
            return []
    if not isinstance(references, list):
        return []
    seen: dict[str, None] = {}
    for ref in references:
        if isinstance(ref, dict) and isinstance(ref.get("document"), str):
            seen.setdefault(ref["document"], None)
    return list(seen)


def source_documents(row: Mapping[str, Any]) -> list[str]:
    """A question row's documents: its source documents (a JSON list), else (rows written before them) the
    documents of its evidence spans."""
    raw = row.get("source_documents")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if isinstance(raw, list) and raw:
        return list(dict.fromkeys(str(d) for d in raw))
    return reference_documents(row.get("references"))


def question_labels(raw: Any) -> dict[str, str]:
    """The labels of a ``labels`` value (a JSON object of label -> text, or a mapping); {} when there are none."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return {str(k): label(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def question_groups(row: Mapping[str, Any], label_names: Sequence[str] = ()) -> dict[str, list[str]]:
    """The groups of one question row, per dimension (a multi-document question is in several); one
    ``label:NAME`` dimension per name of ``label_names``."""
    documents = source_documents(row)
    labels = question_labels(row.get("labels"))
    return {
        "format": list(dict.fromkeys(document_format(d) for d in documents)),
        "category": [label(row.get("category"))],
        "evidence_length": [label(row.get("evidence_length"))],
        "difficulty": [label(row.get("difficulty"))],
        "document": documents,
        **{LABEL_PREFIX + name: [labels.get(name, NO_GROUP)] for name in label_names},
    }


def _flag(raw: Any) -> bool:
    if raw is None or (isinstance(raw, float) and math.isnan(raw)) or type(raw).__name__ == "NAType":
        return False
    return bool(raw)


def _error_free(error: Any) -> bool:
    """The retrieval did not fail: no error, or an empty one."""
    return error is None or (isinstance(error, float) and math.isnan(error)) or error == ""


def _number(raw: Any) -> float | None:
    if raw is None or isinstance(raw, (str, bool)):
        return None
    try:
        x = float(raw)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def group_breakdown(
    questions: pd.DataFrame | Sequence[Mapping[str, Any]], rank_metric: str | None = None
) -> pd.DataFrame:
    """Every cell (dimension x group x configuration) of ``questions`` (the latest runs' question rows).

    ``rank_metric``: the leaderboard's ranking metric (a name such as ``mrr`` or a column), default
    ``recall_at_512``. Rows are ordered by dimension (:data:`DIMENSIONS`), group, then ``rank_mean``
    (highest first), strategy and corpus model; columns are :func:`breakdown_columns`.
    """
    frame = questions if isinstance(questions, pd.DataFrame) else pd.DataFrame([dict(r) for r in questions])
    metric = canonical_metric(rank_metric) if rank_metric else DEFAULT_RANK_METRIC
    if frame.empty:
        return pd.DataFrame(columns=list(breakdown_columns()))
    if "error" in frame.columns:
        frame = frame[frame["error"].map(_error_free)]
    frame = frame.reset_index(drop=True)
    if frame.empty:
        return pd.DataFrame(columns=list(breakdown_columns()))

    def numbers(column: str) -> pd.Series:
        if column not in frame.columns:
            return pd.Series(float("nan"), index=frame.index)
        raw = frame[column]
        if raw.dtype == object:  # text or flags are no measurement
            raw = raw.where(~raw.map(lambda v: isinstance(v, (bool, str))))
        elif raw.dtype == bool:
            return pd.Series(float("nan"), index=frame.index)
        return pd.to_numeric(raw, errors="coerce").astype(float)

    judge_only = (
        frame["judge_only"].map(_flag) if "judge_only" in frame.columns else pd.Series(False, index=frame.index)
    )
    embed, search = numbers("embed_ms"), numbers("search_ms")
    values = pd.DataFrame(
        {
            "strategy": frame["strategy"].astype(str),
            "corpus_model": frame["corpus_model"].astype(str),
            # runs from before retrievers existed were dense
            "retriever": (
                frame["retriever"].fillna(DEFAULT_RETRIEVER).replace("", DEFAULT_RETRIEVER).astype(str)
                if "retriever" in frame.columns
                else DEFAULT_RETRIEVER
            ),
            "experiment_run_id": frame["experiment_run_id"].astype(str),
            "_evidence": (~judge_only).astype(int),
            "_judge_only": judge_only.astype(int),
            "rank_mean": numbers(metric),
            # evidence metrics: judge-only questions left out of the means
            **{name: numbers(column).where(~judge_only) for name, column in evidence_metrics().items()},
            "context_tokens": numbers("context_tokens"),
            "query_ms": (embed.fillna(0.0) + search.fillna(0.0)).where(embed.notna() | search.notna()),
        }
    )
    # one membership row per (question row, dimension, group): a question is in several groups of a dimension
    members = []
    known: dict[tuple[Any, ...], dict[str, list[str]]] = {}  # a question has the same groups in every run

    def column(name: str) -> list[Any]:
        return frame[name].tolist() if name in frame.columns else [None] * len(frame)

    label_names = sorted({name for raw in set(map(str, column("labels"))) for name in question_labels(raw)})
    groups = []
    fields = ("references", "category", "difficulty", "labels", "source_documents", "evidence_length")
    for key in zip(*(column(name) for name in fields)):
        hashable = tuple(None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in key)
        if hashable not in known:
            known[hashable] = question_groups(dict(zip(fields, key)), label_names)
        groups.append(known[hashable])
    for dimension in (*DIMENSIONS, *(LABEL_PREFIX + name for name in label_names)):
        pairs = [(i, g) for i, per_row in enumerate(groups) for g in per_row[dimension]]
        members.append(
            pd.DataFrame({"_row": [i for i, _ in pairs], "dimension": dimension, "group": [g for _, g in pairs]})
        )
    long = pd.concat(members, ignore_index=True).join(values, on="_row")
    keys = ["dimension", "group", "strategy", "corpus_model", "retriever", "experiment_run_id"]
    means = ["rank_mean", *evidence_metrics(), "context_tokens", "query_ms"]
    cells = long.groupby(keys, sort=False)
    out = cells[means].mean()
    out["n_questions"] = cells["_evidence"].sum()
    out["n_judge_only"] = cells["_judge_only"].sum()
    out = out.reset_index()
    out["too_small"] = out["n_questions"] <= TOO_SMALL
    out["rank_metric"] = metric
    frame = out[list(breakdown_columns())].astype({"n_questions": int, "n_judge_only": int, "too_small": bool})
    if frame.empty:
        return frame
    frame["_dim"] = frame["dimension"].map(lambda d: DIMENSIONS.index(d) if d in DIMENSIONS else len(DIMENSIONS))
    frame["_order"] = -frame["rank_mean"].fillna(-math.inf)
    frame = frame.sort_values(
        ["_dim", "dimension", "group", "_order", "strategy", "corpus_model", "retriever"], kind="stable"
    )
    return frame.drop(columns=["_dim", "_order"]).reset_index(drop=True)


def configuration_name(strategy: Any, corpus_model: Any, retriever: Any = None) -> str:
    """A configuration's name in a breakdown (``"recursive × all-minilm-l6-v2"``, ``... × hybrid`` for a retriever
    other than dense): its label without provenance (:func:`ranking_difference` takes the labels the reports
    show)."""
    return configuration_label(strategy, corpus_model, retriever=retriever)


@dataclass(frozen=True)
class GroupLeader:
    """The best configuration of one group by the ranking metric, against the best over all questions."""

    dimension: str
    group: str
    n_questions: int  # questions with evidence in the group (the largest cell's count)
    best: str  # configuration with the highest rank_mean in the group (ties: the better overall rank)
    best_mean: float
    overall_best: str
    overall_mean: float | None  # the overall best's mean in this group (None when it scored none of them)
    too_small: bool  # n_questions <= TOO_SMALL: shown, never read

    @property
    def differs(self) -> bool:
        """The overall best is not (tied) first in this group."""
        return self.overall_mean is None or self.overall_mean < self.best_mean - 1e-12


def group_leaders(breakdown: pd.DataFrame, order: Sequence[str], dimension: str) -> list[GroupLeader]:
    """Per group of ``dimension``: its best configuration by ``rank_mean``.

    ``order``: configuration names (:func:`configuration_name`) in the leaderboard's order; the first is the
    best over all questions, and the order breaks ties inside a group. Groups where no configuration has a
    ``rank_mean`` are left out.
    """
    if breakdown.empty or not order:
        return []
    position = {name: i for i, name in enumerate(order)}
    rows = breakdown[breakdown["dimension"] == dimension].to_dict("records")
    by_group: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_group.setdefault(str(row["group"]), []).append(row)
    overall = order[0]
    leaders = []
    for group, members in by_group.items():
        scored = [r for r in members if _number(r.get("rank_mean")) is not None]
        if not scored:
            continue
        name = {id(r): configuration_name(r["strategy"], r["corpus_model"], r.get("retriever")) for r in scored}
        best = min(scored, key=lambda r: (-float(r["rank_mean"]), position.get(name[id(r)], len(order)), name[id(r)]))
        mine = next((r for r in scored if name[id(r)] == overall), None)
        n = max(int(r["n_questions"]) for r in members)
        leaders.append(
            GroupLeader(
                dimension,
                group,
                n,
                name[id(best)],
                float(best["rank_mean"]),
                overall,
                float(mine["rank_mean"]) if mine is not None else None,
                n <= TOO_SMALL,
            )
        )
    return sorted(leaders, key=lambda g: (-g.n_questions, g.group))


def group_phrase(dimension: str, group: str) -> str:
    """How a sentence names a group: "on pdf documents", "in category policy", "on hard questions"."""
    if dimension == "format":
        return "on documents without an extension" if group == NO_GROUP else f"on {group} documents"
    if dimension == "category":
        return "on questions without a category" if group == NO_GROUP else f"in category {group}"
    if dimension == "difficulty":
        return "on questions without a difficulty" if group == NO_GROUP else f"on {group} questions"
    if dimension == "evidence_length":
        return "on questions without evidence spans" if group == NO_GROUP else f"on evidence of {group}"
    if dimension.startswith(LABEL_PREFIX):
        name = dimension[len(LABEL_PREFIX) :]
        return f"on questions without a {name}" if group == NO_GROUP else f"where {name} is {group}"
    return f"on {group}"


DIMENSION_NOUNS: dict[str, tuple[str, str]] = {
    "format": ("document format", "document formats"),
    "category": ("category", "categories"),
    "evidence_length": ("evidence length", "evidence lengths"),
    "difficulty": ("difficulty", "difficulties"),
    "document": ("document", "documents"),
}


def ranking_difference(
    breakdown: pd.DataFrame,
    order: Sequence[str],
    dimension: str,
    metric: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> str:
    """One sentence: where the best configuration of a group differs from the best over all questions.

    E.g. "On pdf documents (12 questions) semantic × m ranks first by recall_at_512; on docx documents
    (30 questions) recursive × m does, as on all questions." Groups with 3 questions or fewer never drive
    the sentence (it says how many were left out as too small to read). ``labels``: how to name each
    configuration of ``order`` (default: its name).
    """
    labels = labels or {}
    metric = metric or DEFAULT_RANK_METRIC
    leaders = group_leaders(breakdown, order, dimension)
    default = (
        (f"{dimension[len(LABEL_PREFIX) :]} value", f"{dimension[len(LABEL_PREFIX) :]} values")
        if dimension.startswith(LABEL_PREFIX)
        else (dimension, dimension + "s")
    )
    noun, nouns = DIMENSION_NOUNS.get(dimension, default)
    small = [g for g in leaders if g.too_small]
    readable = [g for g in leaders if not g.too_small]
    note = (
        (
            f" ({plural(len(small), noun, nouns)} with {TOO_SMALL} questions or fewer "
            f"{'is' if len(small) == 1 else 'are'} left out: too small to read.)"
        )
        if small
        else ""
    )
    if not readable:
        if not leaders:
            return f"No question has a {noun} to split by."
        return (
            f"Every {noun} has {TOO_SMALL} questions or fewer: too small to compare the ranking "
            f"({plural(len(leaders), noun, nouns)})."
        )
    differing = [g for g in readable if g.differs]
    overall = labels.get(order[0], order[0])
    if not differing:
        return (
            f"{overall} ranks first by {metric} in every {noun} with more than {TOO_SMALL} questions, "
            f"as on all questions.{note}"
        )
    parts = [
        f"{group_phrase(g.dimension, g.group)} ({plural(g.n_questions, 'question')}) {labels.get(g.best, g.best)} ranks first"
        + (f" by {metric}" if i == 0 else "")
        for i, g in enumerate(differing)
    ]
    agreeing = [g for g in readable if not g.differs]
    if agreeing:
        where = ", ".join(
            f"{group_phrase(g.dimension, g.group)} ({plural(g.n_questions, 'question')})" for g in agreeing
        )
        parts.append(f"{where} {overall} does, as on all questions")
    else:
        parts.append(f"on all questions {overall} does")
    sentence = "; ".join(parts)
    return sentence[0].upper() + sentence[1:] + "." + note
