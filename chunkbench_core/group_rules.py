"""How results are split by group: the dimensions, the group names, and the metrics a cell shows.

The DuckDB view ``leaderboard_by_group`` (``storage.results_db``) and its Python twin ``evaluation.breakdowns`` (which
documents the rule in full) both read these, so the two never split a question differently.
"""

from __future__ import annotations

from chunkbench_core.metric_catalog import CATALOG

#: the dimensions, in display order
DIMENSIONS: tuple[str, ...] = ("format", "category", "evidence_length", "difficulty", "document")
#: the dimension of a question label is this prefix and the label's name
LABEL_PREFIX = "label:"
#: the group of a question without a category / difficulty, or of a document without an extension
NO_GROUP = "(none)"
#: a cell with this many questions with evidence or fewer is flagged ``too_small``
TOO_SMALL = 3
# the extension of a path: what follows its last dot, when the dot is neither first in the file name
# nor last (the same expression runs in DuckDB's regexp_extract)
EXTENSION_PATTERN = r"[^/\\]\.([^./\\]+)$"
# blanks trimmed from a label (the same class in DuckDB's regexp_replace)
BLANK_ENDS_PATTERN = r"^[ \t\n\r\f\v]+|[ \t\n\r\f\v]+$"


def evidence_metrics() -> dict[str, str]:
    """The metrics of a cell: output name -> question_results column (means over questions with evidence), the
    listed metrics the groups show (chunkbench_core/metric_catalog.py)."""
    return {m.run_name: m.name for m in CATALOG.shown_in("by_group") if m.group in ("evidence", "budget")}
