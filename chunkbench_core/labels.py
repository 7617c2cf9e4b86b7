"""How a configuration is named wherever people read it: one function, one separator.

A configuration is a chunking strategy with a corpus model and a retriever (and, for a sweep step, a
variant); the dense retriever, every run's before retrievers were a setting, is left out of names and keys,
so ``fixed_size|all-minilm-l6-v2`` still names the dense configuration and ``fixed_size|all-minilm-l6-v2|hybrid``
the hybrid one (:func:`configuration_key`). For people:
``configuration_label("fixed_size", "all-minilm-l6-v2")`` is ``"fixed_size × all-minilm-l6-v2"``;
contextual_retrieval built without an LLM reads ``"contextual_retrieval (heading context) × ..."``
(:func:`chunkbench_core.provenance.strategy_label`). Plots, tables, the three reports and the text
views use this function, so one configuration has one name everywhere.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from chunkbench_core.provenance import strategy_label

#: between the strategy and the corpus model of a configuration
SEPARATOR = " × "


#: the retriever a configuration has when it names none
DEFAULT_RETRIEVER = "dense"
#: between the parts of a configuration's key
KEY_SEPARATOR = "|"


def named_retriever(retriever: Any) -> str | None:
    """The retriever as names show it: None for the dense one (or none recorded), else its name."""
    return None if retriever in (None, "", DEFAULT_RETRIEVER) or retriever != retriever else str(retriever)


def configuration_key(strategy: Any, corpus_model: Any, retriever: Any = None) -> str:
    """``strategy|corpus_model``, and ``|retriever`` when it is not dense (the key of comparisons and the
    recommendation)."""
    key = f"{strategy}{KEY_SEPARATOR}{corpus_model}"
    other = named_retriever(retriever)
    return f"{key}{KEY_SEPARATOR}{other}" if other else key


def split_configuration_key(key: str) -> tuple[str, str, str]:
    """(strategy, corpus model, retriever) of a :func:`configuration_key` (corpus model "" when the key has none)."""
    strategy, _, rest = str(key).partition(KEY_SEPARATOR)
    corpus_model, _, retriever = rest.partition(KEY_SEPARATOR)
    return strategy, corpus_model, retriever or DEFAULT_RETRIEVER


def configuration_label(
    strategy: Any,
    corpus_model: Any,
    provenance: Mapping[str, Any] | None = None,
    variant: Any = None,
    retriever: Any = None,
) -> str:
    """``strategy × corpus model``, with the strategy named by its run's provenance, `` × retriever`` when it is
    not dense, and a sweep variant in brackets (``fixed_size × minilm × hybrid [size256_overlap32]``)."""
    label = f"{strategy_label(strategy, provenance)}{SEPARATOR}{corpus_model}"
    other = named_retriever(retriever)
    if other:
        label = f"{label}{SEPARATOR}{other}"
    return f"{label} [{variant_text(variant, provenance)}]" if variant not in (None, "") else label


#: the part of a variant's key that stands for the chunker options a user set (stages.spec.variant_label)
_OPTIONS_PART = re.compile(r"opts[0-9a-f]{8}")


def variant_text(variant: Any, provenance: Mapping[str, Any] | None = None) -> str:
    """A sweep variant as people read it: the key's options digest replaced by the options the run recorded
    (``optsc0b5868d`` -> ``document_context=true``); the key itself when the run recorded none."""
    text = str(variant or "")
    options = (provenance or {}).get("chunker_options")
    if not isinstance(options, Mapping) or not options or not _OPTIONS_PART.search(text):
        return text
    readable = ", ".join(
        f"{name}={value if isinstance(value, str) else json.dumps(value)}" for name, value in sorted(options.items())
    )
    rest = _OPTIONS_PART.sub("", text).strip("_")
    return f"{rest}, {readable}" if rest else readable
