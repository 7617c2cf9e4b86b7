"""Where chunkbench keeps its state and finds its inputs.

Every value can be given explicitly (the Dagster resources pass their config here);
otherwise the environment variable is read at call time, never at import time:

- ``CHUNKBENCH_HOME``: all state (default ``.chunkbench/`` in the project root of a source
  checkout, in the current directory for an installed package). Shared by every benchmark:
  ``embedding_cache.sqlite``, the semantic thresholds, ``dagster_home/``. Each benchmark has its own
  folder ``benchmarks/<name>/``: ``chunkbench.duckdb`` + ``tables/`` (results), ``qdrant/`` (local
  vector store), ``parsed/`` (parsed documents), ``reports/``.
- ``CHUNKBENCH_BENCHMARK``: the benchmark's name (default: ``sample`` for the bundled sample corpus,
  else the name of the ``CHUNKBENCH_CORPUS`` folder). Two benchmarks never share results or collections.
- ``CHUNKBENCH_CORPUS``: the folder of documents (default: the bundled sample corpus).
- ``CHUNKBENCH_QUESTIONS``: the folder of question sets (default: the sample's question set).
- ``CHUNKBENCH_RESULTS_DIR``: where results, parsed documents and reports go when they must be
  shared by runs on several machines (default: ``CHUNKBENCH_HOME``; see deploy/README.md); the
  benchmark's folder ``benchmarks/<name>/`` is made inside it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from chunkbench_core.datasets import SAMPLE_CORPUS, SAMPLE_QUESTIONS
from chunkbench_core.errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_BENCHMARK = "sample"
_BENCHMARK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


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


def benchmark_name(explicit: str | None = None) -> str:
    """The benchmark: ``explicit``, else CHUNKBENCH_BENCHMARK, else ``sample`` for the bundled corpus, else the
    name of the CHUNKBENCH_CORPUS folder (so one's own documents never write into the sample's results)."""
    name = explicit or os.environ.get("CHUNKBENCH_BENCHMARK") or ""
    if not name:
        corpus = os.environ.get("CHUNKBENCH_CORPUS")
        if not corpus or corpus_dir() == SAMPLE_CORPUS.resolve():
            return SAMPLE_BENCHMARK
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", corpus_dir().name).strip("-._") or "documents"
        return name[:64]
    if not _BENCHMARK_NAME.fullmatch(name):
        raise ConfigError(f"benchmark name {name!r} (CHUNKBENCH_BENCHMARK or --benchmark): use up to 64 letters, "
                          "digits, '.', '_' or '-', starting with a letter or digit")
    return name


def benchmark_dir(base: Path, benchmark: str | None = None) -> Path:
    """The folder of one benchmark's results, collections, parsed documents and reports inside ``base``."""
    return base / "benchmarks" / benchmark_name(benchmark)


def results_dir(explicit: str | os.PathLike[str] | None = None, home: Path | None = None,
                benchmark: str | None = None) -> Path:
    """The benchmark's results folder: ``<CHUNKBENCH_RESULTS_DIR or CHUNKBENCH_HOME>/benchmarks/<name>``."""
    return benchmark_dir(_pick(explicit, "CHUNKBENCH_RESULTS_DIR", home or home_dir()), benchmark)


def qdrant_dir(home: Path | None = None, benchmark: str | None = None) -> Path:
    """The embedded Qdrant store of the benchmark (machine-local: under CHUNKBENCH_HOME)."""
    return benchmark_dir(home or home_dir(), benchmark) / "qdrant"


def dagster_home(home: Path) -> Path:
    """DAGSTER_HOME to use when the user has none: inside CHUNKBENCH_HOME, with our dagster.yaml."""
    return home / "dagster_home"
