"""What a collection was built from, and the check that an experiment scores the collection it asked for.

A ``chunk_collections`` materialization writes one row to the ``collections`` results table
(:func:`collection_row`): the chunker's full settings as requested (sizes, threshold and its
mode and source, minimum units, parent size, base chunker, ...), what the chunker reported
(its params and the count of contextual prefixes by source), the boundary model, the parse
options, the parsed corpus's fingerprint, the code version and the Dagster run id.

``experiment_results`` reads that row back (:func:`read_collection`), copies it into its own
provenance, and refuses to score a collection built from another parsed corpus or other
settings (:func:`check_collection_current`), naming both fingerprints and the partition to
rebuild. The staleness sensor uses the same comparison for every variant.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from chunkbench_core import __version__
from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.errors import ConfigError
from chunkbench_core.wording import plural


@lru_cache(maxsize=1)
def code_version() -> str:
    """The package version, plus the git commit (and ``+dirty``) when running from a git checkout."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    if not commit:
        return __version__
    return f"{__version__}+g{commit}{'.dirty' if dirty else ''}"


def digest(value: Any) -> str:
    """A short, stable digest of a JSON-able value."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str, ensure_ascii=False).encode()).hexdigest()[:12]


def requested_settings(
    strategy: str,
    params: Mapping[str, Any],
    options: Mapping[str, Any],
    overflow: str,
    boundary_model: str | None,
    threshold: float | None,
    threshold_source: str | None,
) -> dict[str, Any]:
    """Everything that decides a collection's chunks, as requested: the settings fingerprint covers these.

    ``options`` are the options the strategy takes (:meth:`chunking.Strategy.options_taken`);
    ``threshold`` is the boundary threshold in force (run config, override or registry).
    """
    out: dict[str, Any] = {"strategy": strategy, **dict(params), **dict(options), "overflow": overflow}
    if boundary_model is not None:
        out.update(boundary_model=boundary_model, threshold=threshold, threshold_source=threshold_source)
    return out


# recorded, but they do not change the chunks: a label, and whether the window check may pass truncation
# (and where the boundary model came from: the model itself is fingerprinted)
NOT_FINGERPRINTED = ("threshold_source", "overflow", "boundary_choice")


def settings_fingerprint(settings: Mapping[str, Any]) -> str:
    """Digest of the requested settings that decide the chunks (not ``threshold_source``, ``overflow``,
    ``boundary_choice``)."""
    return digest({k: v for k, v in settings.items() if k not in NOT_FINGERPRINTED})


def build_fingerprint(
    settings_fingerprint: str | None, corpus_fingerprint: str | None, overflow: str | None = None
) -> str:
    """The build of a collection: its settings and its parsed corpus, as one key.

    The ``chunks`` table keeps every build's rows under this key, so a run's retrieved chunks stay
    readable after the collection is rebuilt with other settings or from another corpus; a rebuild
    with the same settings from the same corpus has the same key and replaces its own rows.
    ``overflow`` "truncate" is part of the key (it lets size-driven chunks overflow the window
    instead of being split, so the chunks differ) although the settings fingerprint leaves it out.
    """
    key = {"settings": settings_fingerprint or "", "corpus": corpus_fingerprint or ""}
    if overflow not in (None, "error"):
        key["overflow"] = overflow
    return digest(key)


def context_source_counts(sources: list[str | None]) -> dict[str, int]:
    """How many embedded texts got their contextual prefix from each source (llm, headings, headings_fallback)."""
    counts: dict[str, int] = {}
    for source in sources:
        if source:
            counts[source] = counts.get(source, 0) + 1
    return dict(sorted(counts.items()))


@dataclass(frozen=True)
class BuildFacts:
    """What one collection build was made from and made (the ``collections`` row's inputs)."""

    collection: str
    strategy: str
    corpus_model: str
    variant: str
    settings: Mapping[str, Any]  # the requested settings that decide the chunks
    options: Mapping[str, Any]  # the options set by the user (and an explicit boundary model)
    chunker_params: Mapping[str, Any]  # what the chunker reported
    context_sources: Mapping[str, int]
    parse_options: Mapping[str, Any] | None
    parser_version: str | None
    corpus_fingerprint: str
    n_documents: int
    n_chunks: int
    dagster_run_id: str | None
    built_at: Any


def collection_row(facts: BuildFacts) -> dict[str, Any]:
    """One row of the ``collections`` table: what this collection was built from."""
    dump = lambda value: json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)  # noqa: E731  (a one-line helper, named for reading)
    f = facts
    fingerprint = settings_fingerprint(f.settings)
    return {
        "collection": f.collection,
        "strategy": f.strategy,
        "corpus_model": f.corpus_model,
        "variant": f.variant,
        "settings": dump(dict(f.settings)),
        "settings_fingerprint": fingerprint,
        "build": build_fingerprint(fingerprint, f.corpus_fingerprint, f.settings.get("overflow")),
        "options": dump(dict(f.options)),
        "chunker_params": dump(dict(f.chunker_params)),
        "boundary_model": f.settings.get("boundary_model"),
        "threshold": f.settings.get("threshold"),
        "threshold_source": f.settings.get("threshold_source"),
        "threshold_mode": f.chunker_params.get("threshold_mode"),
        "context_sources": dump(dict(f.context_sources)),
        "parse_options": dump(dict(f.parse_options or {})),
        "parser_version": f.parser_version,
        "corpus_fingerprint": f.corpus_fingerprint,
        "n_documents": f.n_documents,
        "n_chunks": f.n_chunks,
        "dagster_run_id": f.dagster_run_id,
        "code_version": code_version(),
        "built_at": f.built_at,
    }


def collection_provenance(row: Mapping[str, Any]) -> dict[str, Any]:
    """The collection's facts as an experiment's provenance records them (JSON columns decoded)."""
    load = lambda name: json.loads(row[name]) if row.get(name) else {}  # noqa: E731  (a one-line helper, named for reading)
    return {
        "collection": row.get("collection"),
        "chunker_settings": load("settings"),
        "settings_fingerprint": row.get("settings_fingerprint"),
        # None: a build recorded before builds were kept (the legacy rows)
        "build": row["build"] if isinstance(row.get("build"), str) and row["build"] else None,
        "chunker_options": load("options"),
        "chunking_params": load("chunker_params"),
        "boundary_model": row.get("boundary_model"),
        "threshold": row.get("threshold"),
        "threshold_source": row.get("threshold_source"),
        "threshold_mode": row.get("threshold_mode"),
        "context_sources": load("context_sources"),
        "parse_options": load("parse_options"),
        "parser_version": row.get("parser_version"),
        "corpus_fingerprint": row.get("corpus_fingerprint"),
        "collection_run_id": row.get("dagster_run_id"),
        "collection_code_version": row.get("code_version"),
        "collection_built_at": str(row.get("built_at")) if row.get("built_at") is not None else None,
    }


class StaleCollectionError(ConfigError):
    """The collection on disk was built from another parsed corpus or other settings than requested."""


def staleness(row: Mapping[str, Any] | None, corpus_fingerprint: str, settings: Mapping[str, Any]) -> str | None:
    """Why the collection ``row`` does not match the current corpus and the requested settings, or None."""
    if row is None:
        return "it has no build record (never built, or built by an older chunkbench)"
    reasons = []
    if row.get("corpus_fingerprint") != corpus_fingerprint:
        reasons.append(
            f"it was built from parsed corpus {row.get('corpus_fingerprint') or 'unknown'}, "
            f"the current parsed corpus is {corpus_fingerprint or 'empty'}"
        )
    wanted = settings_fingerprint(settings)
    if row.get("settings_fingerprint") != wanted:
        built = json.loads(row["settings"]) if row.get("settings") else {}
        changed = sorted(
            k for k in set(built) | set(settings) if k not in NOT_FINGERPRINTED and built.get(k) != settings.get(k)
        )
        detail = ", ".join(f"{k} {built.get(k)!r} -> {settings.get(k)!r}" for k in changed)
        reasons.append(
            f"it was built with chunker settings {row.get('settings_fingerprint')}, the requested "
            f"settings are {wanted} ({detail})"
        )
    return "; ".join(reasons) or None


def check_collection_current(
    row: Mapping[str, Any] | None,
    *,
    partition: str,
    variant: str,
    collection: str,
    corpus_fingerprint: str,
    settings: Mapping[str, Any],
) -> None:
    """Raise StaleCollectionError (permanent: a retry cannot fix it) when the collection is not the one requested."""
    reason = staleness(row, corpus_fingerprint, settings)
    if reason is None:
        return
    what = f"partition {partition}" + (f" (variant {variant})" if variant else "")
    raise StaleCollectionError(
        f"cannot score collection {collection}: {reason}. Rebuild it first: materialize chunk_collections for "
        f"{what} with the same settings, then experiment_results"
    )


HEADING_CONTEXT = "heading context"
# how every view names contextual_retrieval built without an LLM: not an LLM's work
HEADING_CONTEXT_LABEL = f"contextual_retrieval ({HEADING_CONTEXT})"


def heading_context_label(strategy: str) -> str:
    """The label of a strategy that writes its contexts with an LLM when it ran without one."""
    return f"{strategy} ({HEADING_CONTEXT})"


def strategy_label(strategy: Any, provenance: Mapping[str, Any] | None) -> str:
    """The strategy's name as the reports show it: a strategy whose contexts come from an LLM (the ``llm``
    capability, e.g. contextual_retrieval) built without one is labelled as such (its prefixes are the title
    and heading path), and an LLM run with heading fallbacks says so."""
    name = str(strategy)
    spec = STRATEGIES.get(name)
    if spec is None or not spec.capabilities.llm:
        return name
    p = provenance if isinstance(provenance, Mapping) else {}
    sources = p.get("context_sources") if isinstance(p.get("context_sources"), Mapping) else None
    if not sources:  # older runs: the chunker's own record of its context source
        raw = p.get("chunking_params")
        params = raw if isinstance(raw, Mapping) else {}
        recorded = params.get("context_source")
        if not recorded:
            return name
        sources = {"llm" if str(recorded).startswith("llm") else "headings": 1}
    if not sources.get("llm"):
        return heading_context_label(name)
    fallback = int(sources.get("headings_fallback") or 0)
    return f"{name} (LLM context, heading fallback on {plural(fallback, 'chunk')})" if fallback else name
