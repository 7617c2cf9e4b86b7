"""Where chunkbench keeps its state and finds its inputs.

Every value can be given explicitly (the Dagster resources pass their config here);
otherwise the environment variable is read at call time, never at import time:

- ``CHUNKBENCH_HOME``: all state (default ``.chunkbench/`` in the project root of a source
  checkout, in the current directory for an installed package):
  ``chunkbench.duckdb`` + ``tables/`` (results), ``qdrant/`` (local vector store),
  ``parsed/`` (parsed documents), ``reports/``, ``dagster_home/``.
- ``CHUNKBENCH_CORPUS``: the folder of documents (default: the bundled sample corpus).
- ``CHUNKBENCH_QUESTIONS``: the folder of question sets (default: the sample's question set).
- ``CHUNKBENCH_RESULTS_DIR``: where results, parsed documents and reports go when they must be
  shared by runs on several machines (default: ``CHUNKBENCH_HOME``; see deploy/README.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from chunkbench_core.datasets import SAMPLE_CORPUS, SAMPLE_QUESTIONS

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _default_home() -> Path:
    """``.chunkbench/`` in a source checkout's root; for an installed package (the code sits in
    site-packages, where state does not belong) in the current directory."""
    if (PROJECT_ROOT / "pyproject.toml").is_file():
        return PROJECT_ROOT / ".chunkbench"
    return Path.cwd() / ".chunkbench"


def _pick(explicit: str | os.PathLike[str] | None, variable: str, default: Path) -> Path:
    value = explicit if explicit not in (None, "") else os.environ.get(variable) or None
    return Path(value).expanduser().resolve() if value else default


def home_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    return _pick(explicit, "CHUNKBENCH_HOME", _default_home())


def corpus_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    return _pick(explicit, "CHUNKBENCH_CORPUS", SAMPLE_CORPUS)


def questions_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    return _pick(explicit, "CHUNKBENCH_QUESTIONS", SAMPLE_QUESTIONS)


def results_dir(explicit: str | os.PathLike[str] | None = None, home: Path | None = None) -> Path:
    return _pick(explicit, "CHUNKBENCH_RESULTS_DIR", home or home_dir())


def dagster_home(home: Path) -> Path:
    """DAGSTER_HOME to use when the user has none: inside CHUNKBENCH_HOME, with our dagster.yaml."""
    return home / "dagster_home"
