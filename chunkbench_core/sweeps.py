"""Sweeps: one setting varied over several values, each value its own experiment run, compared side by side in
``leaderboard_by_setting``.

- the neighbor sweep: neighbor expansion levels ``prev:next`` (default 0:0, 1:1, 2:2, 3:3) over the strategies
  whose chunks are windows of running text (those registered with ``neighbor_expansion``), one experiment run
  per level against the default collection;
- the chunk-size sweep: chunk sizes in cl100k tokens (default 128, 256, 512, 1024; overlap one eighth of the
  size) over the strategies registered as ``sweepable``, each size its own collection and experiment run. A size
  above the corpus model's window is left out (the model would silently truncate the chunks).

This module plans a sweep (which steps, with which settings); the Dagster job runs the steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.errors import ConfigError
from chunkbench_core.labels import configuration_label

NEIGHBOR_LEVELS: tuple[tuple[int, int], ...] = ((0, 0), (1, 1), (2, 2), (3, 3))
SWEEP_SIZES: tuple[int, ...] = (128, 256, 512, 1024)
MAX_NEIGHBORS = 5
MIN_SIZE, MAX_SIZE = 16, 8192
OVERLAP_SHARE = 8  # overlap = size // 8


def format_levels(levels: Iterable[tuple[int, int]]) -> str:
    return ",".join(f"{p}:{n}" for p, n in levels)


def parse_levels(text: str | Sequence[str]) -> list[tuple[int, int]]:
    """``"0:0,1:1,2:2"`` (or a list of ``"p:n"``) as (prev, next) pairs, each 0..5, in the order given, once each."""
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if str(t).strip()]
    if not items:
        raise ConfigError("no neighbor level given: write them as prev:next, e.g. 0:0,1:1,2:2")
    levels: list[tuple[int, int]] = []
    for item in items:
        parts = str(item).split(":")
        try:
            prev, nxt = (int(parts[0]), int(parts[1])) if len(parts) == 2 else (None, None)
        except ValueError:
            prev = nxt = None
        if prev is None or nxt is None:
            raise ConfigError(
                f"neighbor level {item!r}: write it as prev:next (chunks added before and after each hit), e.g. 1:1"
            )
        if not (0 <= prev <= MAX_NEIGHBORS and 0 <= nxt <= MAX_NEIGHBORS):
            raise ConfigError(f"neighbor level {item!r}: each side must be 0..{MAX_NEIGHBORS}")
        if (prev, nxt) not in levels:
            levels.append((prev, nxt))
    return levels


def parse_sizes(text: str | Sequence[int | str]) -> list[int]:
    """``"128,256,512"`` (or a list) as chunk sizes in tokens, each 16..8192, ascending, once each."""
    items = [str(t).strip() for t in (text.split(",") if isinstance(text, str) else text) if str(t).strip()]
    if not items:
        raise ConfigError("no chunk size given: write them in tokens, e.g. 128,256,512")
    sizes: set[int] = set()
    for item in items:
        try:
            size = int(item)
        except ValueError:
            raise ConfigError(f"chunk size {item!r}: a whole number of tokens, e.g. 256") from None
        if not MIN_SIZE <= size <= MAX_SIZE:
            raise ConfigError(f"chunk size {size}: must be {MIN_SIZE}..{MAX_SIZE} tokens")
        sizes.add(size)
    return sorted(sizes)


def check_strategies(strategies: Sequence[str], capability: str) -> list[str]:
    """The strategies to sweep: those given (each must be registered), else those registered with ``capability``."""
    if not strategies:
        return list(STRATEGIES.with_capability(capability))
    unknown = [s for s in strategies if s not in STRATEGIES.names()]
    if unknown:
        raise ConfigError(f"unknown strategy {', '.join(unknown)}: choose from {', '.join(STRATEGIES.names())}")
    return list(dict.fromkeys(strategies))


@dataclass(frozen=True)
class SweepStep:
    """One experiment run of a sweep: a strategy x corpus model with its chunking and retrieval settings."""

    strategy: str
    corpus_model: str
    chunking: Mapping[str, int]  # chunk_size / chunk_overlap ({} = the default collection)
    neighbor_prev: int = 0
    neighbor_next: int = 0

    @property
    def slug(self) -> str:
        """The step in an experiment run id: ``fixed_size-minilm-n1-1`` or ``fixed_size-minilm-s256``."""
        setting = f"s{self.chunking['chunk_size']}" if self.chunking else f"n{self.neighbor_prev}-{self.neighbor_next}"
        return re.sub(r"[^A-Za-z0-9._-]+", "-", f"{self.strategy}-{self.corpus_model}-{setting}")

    @property
    def label(self) -> str:
        if self.chunking:
            return f"{configuration_label(self.strategy, self.corpus_model)} at {self.chunking['chunk_size']} tokens"
        return f"{configuration_label(self.strategy, self.corpus_model)} with neighbors -{self.neighbor_prev}/+{self.neighbor_next}"


def neighbor_steps(
    strategies: Sequence[str], corpus_models: Sequence[str], levels: Sequence[tuple[int, int]]
) -> list[SweepStep]:
    return [SweepStep(s, m, {}, p, n) for m in corpus_models for s in strategies for p, n in levels]


def size_steps(
    strategies: Sequence[str], corpus_models: Sequence[str], sizes: Sequence[int], windows: Mapping[str, int]
) -> tuple[list[SweepStep], list[str]]:
    """(the steps, what was left out and why): sizes above a corpus model's window are left out."""
    steps: list[SweepStep] = []
    skipped: list[str] = []
    for model in corpus_models:
        window = windows[model]
        too_big = [size for size in sizes if size > window]
        if too_big:
            skipped.append(
                f"{model}: sizes {', '.join(map(str, too_big))} left out (above its window of {window:,} tokens)"
            )
        for strategy in strategies:
            steps += [
                SweepStep(strategy, model, {"chunk_size": size, "chunk_overlap": size // OVERLAP_SHARE})
                for size in sizes
                if size <= window
            ]
    return steps, skipped


def format_sweep(rows, metric: str) -> str:
    """The sweep's rows of ``leaderboard_by_setting`` (a DataFrame) as a plain-text table: configuration, setting,
    questions, the ranking metric, recall, context tokens and the experiment run id (what ``chunkbench report --run``
    takes; a sweep's steps share the first characters, their Dagster run's id)."""
    from chunkbench_core.reporting.leaderboard import cell

    if rows is None or len(rows) == 0:
        return "(no sweep result yet)"
    header = ("configuration", "setting", "n", metric, "recall", "context_tokens", "experiment_run_id")
    body = []
    for row in rows.to_dict("records"):
        setting = (
            f"neighbors -{int(row['neighbor_prev'])}/+{int(row['neighbor_next'])}"
            if not row["variant"]
            else str(row["variant"])
        )
        body.append(
            (
                configuration_label(row["strategy"], row["corpus_model"]),
                setting,
                cell("n_questions", row.get("n_questions")),
                cell(metric, row.get(metric)),
                cell("recall", row.get("recall")),
                cell("context_tokens", row.get("context_tokens")),
                str(row["experiment_run_id"]),
            )
        )
    widths = [max(len(str(r[i])) for r in (header, *body)) for i in range(len(header))]
    numeric = {2, 3, 4, 5}
    return "\n".join(
        "  ".join(
            str(c).rjust(w) if i in numeric else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths))
        ).rstrip()
        for r in (header, *body)
    )
