"""Confidence intervals the report computes itself when the results carry none.

When ``experiment_metrics`` has ``<metric>_ci_low`` / ``<metric>_ci_high`` the reports
show those. Otherwise they compute a percentile bootstrap of the mean of the
per-question values (2,000 resamples, seed 0, 95%) and say so on the page.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

REPORT_CI_NOTE = (
    "95% intervals computed by the report: percentile bootstrap of the mean over questions (2,000 resamples, seed 0)."
)


def bootstrap_interval(
    values: Iterable[float | None], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the mean; None without values, (v, v) for one value."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None
    if x.size == 1 or np.all(x == x[0]):
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)
