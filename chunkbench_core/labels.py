"""How a configuration is named wherever people read it: one function, one separator.

A configuration is a chunking strategy with a corpus model (and, for a sweep step, a variant):
``configuration_label("fixed_size", "all-minilm-l6-v2")`` is ``"fixed_size × all-minilm-l6-v2"``;
contextual_retrieval built without an LLM reads ``"contextual_retrieval (heading context) × ..."``
(:func:`chunkbench_core.provenance.strategy_label`). Plots, tables, the three reports and the text
views use this function, so one configuration has one name everywhere.
"""

from __future__ import annotations

from typing import Any, Mapping

from chunkbench_core.provenance import strategy_label

#: between the strategy and the corpus model of a configuration
SEPARATOR = " × "


def configuration_label(strategy: Any, corpus_model: Any, provenance: Mapping[str, Any] | None = None,
                        variant: Any = None) -> str:
    """``strategy × corpus model``, with the strategy named by its run's provenance and a sweep
    variant in brackets (``fixed_size × minilm [size256_overlap32]``)."""
    label = f"{strategy_label(strategy, provenance)}{SEPARATOR}{corpus_model}"
    return f"{label} [{variant}]" if variant not in (None, "") else label
