"""Transitional re-export: token counting moved to :mod:`chunkbench_core.tokens`.

Kept only so branches written against the old path keep importing while they are merged; import
from ``chunkbench_core.tokens``. To be removed once nothing imports it.
"""

from chunkbench_core.tokens import TokenIndex, cl100k, count_tokens  # noqa: F401  (re-exported: the chunkers import them from here)

__all__ = ["TokenIndex", "cl100k", "count_tokens"]
