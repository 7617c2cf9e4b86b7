"""The settings in force: one object, built once at the edges, then passed down.

The Dagster definitions and the command line's ``main`` build a :class:`Settings` from the
environment they were started with, the files it names and the command-line flags
(:meth:`Settings.load`); everything below them receives that object (or the values it gives)
and never reads the environment itself, so what a run used is what ``chunkbench settings``
prints, with where each value came from.

Where state lives:

- ``home`` (``CHUNKBENCH_HOME``): all state (default ``.chunkbench/`` in the project root of a source
  checkout, in the current directory for an installed package). Shared by every benchmark:
  ``embedding_cache.sqlite``, ``contextual_cache.sqlite``, ``dagster_home/``, ``calibration.json`` (the engines' speed
  here), ``models/`` (the rewritten MiniLM graph, kept between processes). Each benchmark has its own
  folder ``benchmarks/<name>/``: ``chunkbench.duckdb`` + ``tables/`` (results, with the shared defaults:
  boundary model and semantic thresholds), ``qdrant/`` (local vector store), ``parsed/``, ``reports/``.
- ``benchmark`` (``CHUNKBENCH_BENCHMARK``, ``--benchmark``): the benchmark's name (default: ``sample``
  for the bundled sample corpus, else the name of the corpus folder). Two benchmarks never share
  results or collections.
- ``corpus`` / ``questions`` (``CHUNKBENCH_CORPUS`` / ``CHUNKBENCH_QUESTIONS``): the folders of documents
  and question sets (default: for a named benchmark that has run, the folders its last run recorded in its
  ``benchmark.json``; else the bundled sample and its questions).
- ``results_root`` (``CHUNKBENCH_RESULTS_DIR``): where results, parsed documents and reports go when they
  must be shared by runs on several machines (default: ``home``; see deploy/README.md); the
  benchmark's folder ``benchmarks/<name>/`` is made inside it.
- ``vectors_root`` (``CHUNKBENCH_VECTORS_DIR``): where the embedded vector store keeps its collections,
  ``benchmarks/<name>/qdrant/<collection>/`` inside it (default: ``home``). Workers on several machines
  point it at a folder they share: each collection is its own folder, written by one partition's run.
- ``cache_url`` (``CHUNKBENCH_CACHE_URL``): the embedding and contextual caches: a
  ``postgresql://`` URL for one cache that many workers share, or a folder for the SQLite files
  (default: the SQLite files in ``home``).
- ``celery_broker`` (``CHUNKBENCH_CELERY_BROKER``): a ``redis://`` broker; when set, the steps of a run
  are sent to Celery workers (deploy/README.md) instead of running in the run's own process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import unquote, urlsplit

# the floor below the settings: modules that import nothing else of chunkbench (tests/core/test_architecture.py)
from chunkbench_core.cache_url import CacheURL, cache_location, redact_url
from chunkbench_core.datasets import SAMPLE_CORPUS, SAMPLE_QUESTIONS
from chunkbench_core.errors import ChunkbenchError, ConfigError
from chunkbench_core.redaction import register_secret

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_BENCHMARK = "sample"
_BENCHMARK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
DEFAULT_POOL_LIMIT = 2
DEFAULT_VISIBILITY_TIMEOUT = (
    60.0  # seconds; live workers renew their steps' leases (chunkbench_pipelines/celery_app.py)
)
# a dead server (no answer at all) ends a request within about a minute: a 30 s timeout, retried while the
# 60 s budget lasts (chunkbench_core.provider_faults holds the same numbers for code built without settings)
DEFAULT_PROVIDER_TIMEOUT = 30.0
DEFAULT_PROVIDER_RETRY_BUDGET = 60.0
#: the parser heuristics of a benchmark, in its folder
PARSER_SETTINGS_FILE = "parser.toml"


@dataclass(frozen=True)
class Variable:
    """One setting read from the environment: its field, its variable, whether it is a secret, what it is."""

    field: str
    name: str
    description: str
    secret: bool = False
    default: str = "not set"  # what an unset value means, as ``chunkbench settings`` shows it


#: every environment variable chunkbench reads, in the order ``chunkbench settings`` lists them
VARIABLES: tuple[Variable, ...] = (
    Variable("home", "CHUNKBENCH_HOME", "all state: benchmarks, caches, the Dagster instance"),
    Variable("benchmark", "CHUNKBENCH_BENCHMARK", "the benchmark whose results, collections and reports are used"),
    Variable("corpus", "CHUNKBENCH_CORPUS", "the folder of documents"),
    Variable("questions", "CHUNKBENCH_QUESTIONS", "the folder of question sets"),
    Variable("results_root", "CHUNKBENCH_RESULTS_DIR", "where results, parsed documents and reports go"),
    Variable("vectors_root", "CHUNKBENCH_VECTORS_DIR", "where the embedded vector store keeps its collections"),
    Variable(
        "cache_url",
        "CHUNKBENCH_CACHE_URL",
        "the embedding and contextual caches: a postgresql:// URL that workers share, or a folder",
        default="not set (SQLite files in the home folder)",
    ),
    Variable(
        "celery_broker",
        "CHUNKBENCH_CELERY_BROKER",
        "send the steps of runs to Celery workers through this broker",
        default="not set (steps run in the run's process)",
    ),
    Variable(
        "celery_visibility_timeout",
        "CHUNKBENCH_CELERY_VISIBILITY_TIMEOUT",
        "seconds after which the step of a worker that stopped answering goes to another worker",
        default="not set (60)",
    ),
    Variable("dagster_home", "DAGSTER_HOME", "the Dagster instance"),
    Variable(
        "models_file", "CHUNKBENCH_MODELS", "a file of extra embedding models", default="not set (the shipped models)"
    ),
    Variable(
        "corpus_model",
        "CHUNKBENCH_CORPUS_MODEL",
        "the corpus model of ask, queries and sweep on this machine when none is given and the results "
        "database holds no shared default",
        default="not set (the registry's default)",
    ),
    Variable(
        "boundary_model",
        "CHUNKBENCH_BOUNDARY_MODEL",
        "the model that decides semantic cuts on this machine when the results database holds no shared default",
        default="not set (the registry's default)",
    ),
    Variable(
        "openai_api_key", "OPENAI_API_KEY", "OpenAI embedding models (and the LLM's key when it has none)", secret=True
    ),
    Variable("openai_base_url", "OPENAI_BASE_URL", "another endpoint for the OpenAI models"),
    Variable("compatible_url", "CHUNKBENCH_OPENAI_COMPATIBLE_URL", "an OpenAI-compatible embedding server"),
    Variable("compatible_api_key", "CHUNKBENCH_OPENAI_COMPATIBLE_API_KEY", "its key", secret=True),
    Variable("pool_limit", "CHUNKBENCH_PROVIDER_POOL_LIMIT", "partitions calling one remote provider at once"),
    Variable(
        "provider_timeout",
        "CHUNKBENCH_PROVIDER_TIMEOUT_S",
        "seconds one request to an embedding server or the LLM may go unanswered before it is retried",
        default=f"not set ({DEFAULT_PROVIDER_TIMEOUT:g})",
    ),
    Variable(
        "provider_retry_budget",
        "CHUNKBENCH_PROVIDER_RETRY_BUDGET_S",
        "seconds all the attempts of one request to an embedding server or the LLM may take, waits included",
        default=f"not set ({DEFAULT_PROVIDER_RETRY_BUDGET:g})",
    ),
    Variable(
        "qdrant_url",
        "QDRANT_URL",
        "a Qdrant server instead of the embedded engine",
        default="not set (the embedded engine)",
    ),
    Variable("qdrant_api_key", "QDRANT_API_KEY", "its key", secret=True),
    Variable(
        "llm_model",
        "CHUNKBENCH_LLM_MODEL",
        "the chat model: answers, judge, contextual prefixes",
        default="not set (no LLM: evidence metrics only)",
    ),
    Variable("llm_base_url", "CHUNKBENCH_LLM_BASE_URL", "its OpenAI-compatible endpoint", default="not set (OpenAI)"),
    Variable("llm_api_key", "CHUNKBENCH_LLM_API_KEY", "its key (else OPENAI_API_KEY)", secret=True),
    Variable("vision_model", "CHUNKBENCH_VISION_MODEL", "captions document images (same endpoint)"),
    Variable(
        "llm_price_input",
        "CHUNKBENCH_LLM_PRICE_INPUT",
        "the LLM's USD per million input tokens",
        default="not set (the model's known price, else 0)",
    ),
    Variable(
        "llm_price_output",
        "CHUNKBENCH_LLM_PRICE_OUTPUT",
        "the LLM's USD per million output tokens",
        default="not set (the model's known price, else 0)",
    ),
    Variable(
        "rank_metric",
        "CHUNKBENCH_RANK_METRIC",
        "the metric that ranks configurations",
        default="not set (recall_at_512)",
    ),
    Variable(
        "recommendation_rule",
        "CHUNKBENCH_RECOMMENDATION_RULE",
        "cheapest_within_margin or highest_mean",
        default="not set (cheapest_within_margin)",
    ),
    Variable(
        "margin",
        "CHUNKBENCH_MARGIN",
        "how far below the best still counts as good as the best",
        default="not set (0.02; 0.2 for the judge's 1-10 scores)",
    ),
    Variable(
        "cost_tolerance",
        "CHUNKBENCH_COST_TOLERANCE",
        "costs within this share of each other are equal",
        default="not set (0.05)",
    ),
    Variable(
        "interchangeable_share",
        "CHUNKBENCH_INTERCHANGEABLE_SHARE",
        "below this share of the scores' differences, the configurations are interchangeable",
        default="not set (0.02)",
    ),
    Variable(
        "budgets",
        "CHUNKBENCH_BUDGETS",
        "context budgets in tokens (recall_at_B, budget_auc)",
        default="not set (256,512,1024,2048)",
    ),
    Variable(
        "parse_memory_mb",
        "CHUNKBENCH_PARSE_MEMORY_MB",
        "memory one document may take to parse (MB)",
        default="not set (2048)",
    ),
    Variable(
        "parse_timeout_s",
        "CHUNKBENCH_PARSE_TIMEOUT_S",
        "seconds one document may take to parse",
        default="not set (120)",
    ),
    Variable("automation", "CHUNKBENCH_AUTOMATION", "start the automation and folder sensors (on/off)"),
    Variable(
        "reports_url",
        "CHUNKBENCH_REPORTS_URL",
        "where the reports are served (set by chunkbench ui)",
        default="not set (http://127.0.0.1:3001/)",
    ),
)
VARIABLE_OF: dict[str, Variable] = {v.field: v for v in VARIABLES}
#: command-line flags that set a field (``chunkbench --benchmark NAME``)
FLAGS: dict[str, str] = {"benchmark": "--benchmark"}


def _default_home() -> Path:
    """``.chunkbench/`` in a source checkout's root; for an installed package (the code sits in
    site-packages, where state does not belong) in the current directory."""
    if (PROJECT_ROOT / "pyproject.toml").is_file():
        return PROJECT_ROOT / ".chunkbench"
    return Path.cwd() / ".chunkbench"


def _path(value: str | os.PathLike[str]) -> Path:
    return Path(value).expanduser().resolve()


def home_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``explicit``, else the default home (a pure function: the environment is read by :meth:`Settings.load`)."""
    return _path(explicit) if explicit not in (None, "") else _default_home()


def validate_benchmark_name(name: str) -> str:
    if not _BENCHMARK_NAME.fullmatch(name):
        raise ConfigError(
            f"benchmark name {name!r} (CHUNKBENCH_BENCHMARK or --benchmark): use up to 64 letters, "
            "digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


def default_benchmark_name(corpus: Path) -> str:
    """``sample`` for the bundled corpus, else the corpus folder's name (so one's own documents never write into
    the sample's results)."""
    if corpus.resolve() == SAMPLE_CORPUS.resolve():
        return SAMPLE_BENCHMARK
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", corpus.name).strip("-._") or "documents"
    return name[:64]


def benchmark_dir(base: Path, benchmark: str) -> Path:
    """The folder of one benchmark's results, collections, parsed documents and reports inside ``base``."""
    return base / "benchmarks" / validate_benchmark_name(benchmark)


#: the record of a benchmark's folders in its results folder, written by each run (chunkbench_core.benchmarks)
BENCHMARK_FILE = "benchmark.json"


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: its name and the folders it reads (documents, question sets)."""

    name: str
    corpus: Path
    questions: Path

    def __post_init__(self) -> None:
        validate_benchmark_name(self.name)

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "corpus": str(self.corpus), "questions": str(self.questions)}

    @classmethod
    def of(cls, settings: "Settings") -> "Benchmark":
        """The benchmark of ``settings`` (its name, corpus and questions folders)."""
        return cls(settings.benchmark, Path(settings.corpus), Path(settings.questions))


def read_benchmark(path: Path) -> Benchmark:
    """The benchmark recorded in ``path`` (a ``benchmark.json``); ConfigError naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        benchmark = Benchmark(str(data["name"]), Path(data["corpus"]), Path(data["questions"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a benchmark record ({exc}); delete it or run the benchmark again") from exc
    if benchmark.name != path.parent.name:
        raise ConfigError(
            f"{path}: names benchmark {benchmark.name!r} but sits in the folder of "
            f"{path.parent.name!r}; delete it or run the benchmark again"
        )
    return benchmark


#: the Makefile's knobs that the commands it starts take as their defaults (``make ui UI_PORT=3100``, ``make
#: cluster WORKERS=3``): ports and a worker count, not settings of a run, so ``chunkbench settings`` leaves them out
MAKE_VARIABLES = ("UI_PORT", "REPORTS_PORT", "WORKERS")


def make_defaults(environ: Mapping[str, str] | None = None) -> dict[str, int]:
    """The Makefile knobs set in ``environ`` (default: this process's environment), as whole numbers; a value that
    is not one is a ConfigError naming its variable."""
    environ = os.environ if environ is None else environ
    out: dict[str, int] = {}
    for name in MAKE_VARIABLES:
        raw = (environ.get(name) or "").strip()
        if raw:
            try:
                out[name] = int(raw)
            except ValueError:
                raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    return out


def process_environment(**changes: str) -> dict[str, str]:
    """This process's environment with ``changes``, for a child process (dg dev, the cluster's servers): what it
    inherits is decided here, beside the settings read from it."""
    return {**os.environ, **changes}


def _recorded_folders(values: dict[str, Any], sources: dict[str, str]) -> None:
    """The documents and question folders of a named benchmark that were not given: those its last run recorded
    (its ``benchmark.json``), so running it again without CHUNKBENCH_CORPUS reads its own documents, never the
    sample's (which would also have rewritten its record). A record that cannot be read is ignored: the defaults
    stand, and the next run writes the record again."""
    base = values.get("results_root") or values.get("home") or _default_home()
    path = benchmark_dir(Path(base), str(values["benchmark"])) / BENCHMARK_FILE
    if not path.is_file():
        return
    try:
        recorded = read_benchmark(path)
    except ConfigError:
        return
    for name in ("corpus", "questions"):
        if name not in values:
            values[name] = getattr(recorded, name)
            sources[name] = f"benchmark {recorded.name}'s last run (its {BENCHMARK_FILE})"


@dataclass(frozen=True)
class Settings:
    """Every setting in force and where it came from (``sources``: field -> a phrase such as
    ``environment CHUNKBENCH_HOME``, ``flag --benchmark`` or ``default``).

    Built by :meth:`load`; ``Settings()`` is the defaults alone (no provider, the sample benchmark).
    Secrets are kept out of ``repr``.
    """

    home: Path = field(default_factory=_default_home)
    corpus: Path = SAMPLE_CORPUS
    questions: Path = SAMPLE_QUESTIONS
    results_root: Path | None = None  # None: home
    vectors_root: Path | None = None  # None: home
    cache_url: str | None = field(default=None, repr=False)  # None: SQLite files in home (a URL may hold a password)
    celery_broker: str | None = field(default=None, repr=False)
    celery_visibility_timeout: float = DEFAULT_VISIBILITY_TIMEOUT
    benchmark: str = SAMPLE_BENCHMARK
    dagster_home: Path | None = None  # None: home/dagster_home (chunkbench's own instance)
    models_file: Path | None = None
    corpus_model: str | None = None
    boundary_model: str | None = None
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    compatible_url: str | None = None
    compatible_api_key: str | None = field(default=None, repr=False)
    pool_limit: int = DEFAULT_POOL_LIMIT
    provider_timeout: float = DEFAULT_PROVIDER_TIMEOUT
    provider_retry_budget: float = DEFAULT_PROVIDER_RETRY_BUDGET
    qdrant_url: str | None = None
    qdrant_api_key: str | None = field(default=None, repr=False)
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    vision_model: str | None = None
    llm_price_input: str | None = None
    llm_price_output: str | None = None
    rank_metric: str | None = None
    recommendation_rule: str | None = None
    budgets: str | None = None
    margin: str | None = None
    cost_tolerance: str | None = None
    interchangeable_share: str | None = None
    parse_memory_mb: str | None = None
    parse_timeout_s: str | None = None
    automation: bool = False
    reports_url: str | None = None
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, flags: Mapping[str, Any] | None = None) -> "Settings":
        """The settings from ``environ`` (the caller's environment, passed in) and ``flags`` (command-line values,
        which win), with where each came from. Secrets are registered for redaction (:mod:`chunkbench_core.redaction`).

        Raises ConfigError for a value that cannot be one (a benchmark name, a pool limit), naming its variable.
        """
        env = {k: v for k, v in (environ or {}).items() if v not in (None, "")}
        flags = {k: v for k, v in (flags or {}).items() if v not in (None, "")}
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for variable in VARIABLES:
            if variable.field in flags:
                values[variable.field] = flags[variable.field]
                sources[variable.field] = f"flag {FLAGS.get(variable.field, variable.field)}"
            elif variable.name in env:
                values[variable.field] = env[variable.name]
                sources[variable.field] = f"environment {variable.name}"
        for name in ("home", "corpus", "questions", "results_root", "vectors_root", "dagster_home", "models_file"):
            if name in values:
                values[name] = _path(values[name])
        if "pool_limit" in values:
            try:
                values["pool_limit"] = int(values["pool_limit"])
            except (TypeError, ValueError):
                raise ConfigError(
                    f"CHUNKBENCH_PROVIDER_POOL_LIMIT must be a whole number of partitions, got {values['pool_limit']!r}"
                ) from None
            if values["pool_limit"] < 1:
                raise ConfigError(f"CHUNKBENCH_PROVIDER_POOL_LIMIT must be at least 1, got {values['pool_limit']}")
        if "cache_url" in values:
            values["cache_url"] = _cache_location(str(values["cache_url"]))
        if "celery_broker" in values:
            values["celery_broker"] = _broker(str(values["celery_broker"]))
        if "celery_visibility_timeout" in values:
            raw = values["celery_visibility_timeout"]
            try:
                values["celery_visibility_timeout"] = float(raw)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"CHUNKBENCH_CELERY_VISIBILITY_TIMEOUT must be a number of seconds, got {raw!r}"
                ) from None
            if not values["celery_visibility_timeout"] >= 5:
                raise ConfigError(f"CHUNKBENCH_CELERY_VISIBILITY_TIMEOUT must be at least 5 seconds, got {raw!r}")
        for name in ("provider_timeout", "provider_retry_budget"):
            if name in values:
                values[name] = _seconds(values[name], VARIABLE_OF[name].name)
        if "automation" in values:
            values["automation"] = str(values["automation"]).strip().lower() in ("1", "on", "true", "yes")
        if "llm_api_key" not in values and "openai_api_key" in values:
            values["llm_api_key"] = values["openai_api_key"]
            sources["llm_api_key"] = "environment OPENAI_API_KEY"
        if "benchmark" in values:
            validate_benchmark_name(str(values["benchmark"]))
        else:
            corpus = values.get("corpus", SAMPLE_CORPUS)
            values["benchmark"] = default_benchmark_name(corpus)
            sources["benchmark"] = (
                "default (the bundled sample corpus)"
                if values["benchmark"] == SAMPLE_BENCHMARK and "corpus" not in values
                else "default (the corpus folder's name)"
            )
        if values["benchmark"] != SAMPLE_BENCHMARK and not {"corpus", "questions"} <= set(values):
            _recorded_folders(values, sources)
        settings = cls(**values, sources=sources)
        settings.register_secrets()
        return settings

    @classmethod
    def from_environment(cls, flags: Mapping[str, Any] | None = None) -> "Settings":
        """:meth:`load` from this process's environment: the one place the process's environment is read."""
        return cls.load(os.environ, flags)

    def replace(self, source: str, **changes: Any) -> "Settings":
        """These settings with ``changes`` (each recorded as coming from ``source``), e.g. a command that points
        the run at a shipped data set."""
        sources = {**self.sources, **{name: source for name in changes}}
        if "benchmark" in changes:
            validate_benchmark_name(str(changes["benchmark"]))
        return dataclasses.replace(self, **changes, sources=sources)

    def register_secrets(self) -> None:
        """Every configured secret is removed from error texts from now on (chunkbench_core.redaction)."""
        for variable in VARIABLES:
            if variable.secret:
                register_secret(getattr(self, variable.field))
        for url in (self.cache_url, self.celery_broker):  # a password inside a URL
            if url and "://" in url:
                try:
                    password = urlsplit(url).password
                except ValueError:
                    password = None
                if password:
                    register_secret(password)
                    register_secret(unquote(password))

    # -- what follows from them ----------------------------------------------------------------
    def source(self, name: str) -> str:
        return self.sources.get(name, "default")

    def given(self, name: str) -> bool:
        """Whether the setting was set (by the environment or a flag), not left at its default."""
        return name in self.sources and not self.sources[name].startswith("default")

    @property
    def results_base(self) -> Path:
        return self.results_root or self.home

    @property
    def results_dir(self) -> Path:
        """The benchmark's results folder: ``<results root or home>/benchmarks/<benchmark>``."""
        return benchmark_dir(self.results_base, self.benchmark)

    @property
    def vectors_base(self) -> Path:
        return self.vectors_root or self.home

    @property
    def qdrant_dir(self) -> Path:
        """The embedded Qdrant store of the benchmark: ``<vectors root or home>/benchmarks/<benchmark>/qdrant``."""
        return benchmark_dir(self.vectors_base, self.benchmark) / "qdrant"

    @property
    def reports_dir(self) -> Path:
        return self.results_dir / "reports"

    @property
    def dagster_home_dir(self) -> Path:
        """The Dagster instance: DAGSTER_HOME, else chunkbench's own inside home."""
        return self.dagster_home or dagster_home(self.home)

    @property
    def parser_settings_file(self) -> Path:
        """The benchmark's parser heuristics: ``parser.toml`` in its folder (``chunkbench parse --write-settings``
        writes a starting file)."""
        return self.results_dir / PARSER_SETTINGS_FILE

    def rows(self) -> list[tuple[str, str, str]]:
        """(variable, value, where it came from) for every setting, secrets shown as set or not."""
        out: list[tuple[str, str, str]] = []
        for variable in VARIABLES:
            raw = getattr(self, variable.field)
            if variable.secret:
                shown = "set (hidden)" if raw else "not set"
            elif variable.field in ("results_root", "vectors_root") and raw is None:
                shown = str(self.home)
            elif variable.field in ("cache_url", "celery_broker") and raw is not None:
                shown = _shown_url(raw)
            elif variable.field == "dagster_home" and raw is None:
                shown = str(self.dagster_home_dir)
            elif raw is None:
                shown = variable.default
            elif isinstance(raw, bool):
                shown = "on" if raw else "off"
            elif isinstance(raw, float):
                shown = f"{raw:g}"
            else:
                shown = str(raw)
            source = self.source(variable.field)
            if variable.field in ("results_root", "vectors_root") and raw is None:
                source = "default (the home folder)"
            elif variable.field == "dagster_home" and raw is None:
                source = "default (chunkbench's own, inside the home folder)"
            out.append((variable.name, shown, source))
        out.append(("results folder", str(self.results_dir), "results root / benchmarks / benchmark"))
        return out


def _seconds(raw: Any, variable: str) -> float:
    """A number of seconds more than 0 (ConfigError naming ``variable`` otherwise)."""
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{variable} must be a number of seconds, got {raw!r}") from None
    if not 0 < value < float("inf"):
        raise ConfigError(f"{variable} must be a number of seconds more than 0, got {raw!r}")
    return value


def _shown_url(value: str) -> str:
    """A URL as ``chunkbench settings`` shows it: any password masked."""
    return redact_url(value)


def _cache_location(value: str) -> str:
    """CHUNKBENCH_CACHE_URL checked where it is read: a postgresql:// URL (validated, the password never echoed)
    or a folder (made absolute)."""
    try:
        where = cache_location(value)
    except ChunkbenchError as exc:
        raise ConfigError(f"CHUNKBENCH_CACHE_URL: {exc}") from None
    if isinstance(where, CacheURL):
        return where.url
    return str(_path(value))


def _broker(value: str) -> str:
    text = value.strip()
    if not text.startswith(("redis://", "rediss://")):
        raise ConfigError(
            f"CHUNKBENCH_CELERY_BROKER must be a Redis URL (redis://HOST:6379/0), got {_shown_url(text)!r}"
        )
    return text


def dagster_home(home: Path) -> Path:
    """DAGSTER_HOME to use when the user has none: inside CHUNKBENCH_HOME, with our dagster.yaml."""
    return home / "dagster_home"
