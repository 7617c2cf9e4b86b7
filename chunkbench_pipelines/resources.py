"""Dagster resources: every external thing (folders, DuckDB, Qdrant, embedding providers).

Nothing connects at import time: a resource opens its client when an asset asks for it. Every
value arrives from the settings object (``definitions.build_resources``); a field left empty
means the default, never an environment variable read here. Secrets arrive as ``EnvVar`` values
(shown by name only) and are never logged.
"""

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, TypedDict, cast

from dagster import AssetExecutionContext, ConfigurableResource, EnvVar, OpExecutionContext

from chunkbench_core.benchmarks import Benchmark
from chunkbench_core.embedding import Embedder, EmbeddingModelSpec, ProviderSettings, availability, get_model
from chunkbench_core.embedding.providers import MODEL_FOLDER
from chunkbench_core.embedding.thresholds import THRESHOLDS_FILE, SharedDefaults
from chunkbench_core.parsing import ParseOptions
from chunkbench_core.settings import SAMPLE_BENCHMARK, Settings, benchmark_dir, home_dir
from chunkbench_core.storage.corpus import ParsedStore, parsed_store
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.storage.vector_store import LocalEngine, VectorStore
from chunkbench_core.stages.spec import SpecContext


def _given(resource: ConfigurableResource, names: tuple[str, ...]) -> dict[str, Any]:
    """The named fields the user set (not None): the core settings class keeps every default (each field of its
    own type, hence Any)."""
    return {name: getattr(resource, name) for name in names if getattr(resource, name) is not None}


class WorkspaceResource(ConfigurableResource):
    """Folders: state (CHUNKBENCH_HOME), documents (CHUNKBENCH_CORPUS), question sets (CHUNKBENCH_QUESTIONS).

    ``benchmark`` (CHUNKBENCH_BENCHMARK) picks the benchmark whose results, parsed documents and reports
    are used: ``<home or results>/benchmarks/<name>/`` (empty: ``sample``).
    """

    home: Optional[str] = None
    corpus: Optional[str] = None
    questions: Optional[str] = None
    results: Optional[str] = None  # shared results folder (CHUNKBENCH_RESULTS_DIR); default: home
    benchmark: Optional[str] = None
    # where the reports are served (CHUNKBENCH_REPORTS_URL, set by `make ui`); default http://127.0.0.1:3001/
    reports_url: Optional[str] = None
    # what one document may cost to parse (CHUNKBENCH_PARSE_MEMORY_MB, CHUNKBENCH_PARSE_TIMEOUT_S); empty: 2048, 120
    parse_memory_mb: Optional[str] = None
    parse_timeout_s: Optional[str] = None
    # CHUNKBENCH_CORPUS_MODEL: the corpus model where none is named (a sweep), unless `defaults set` names one
    corpus_model: Optional[str] = None

    def settings(self) -> Settings:
        """The folders as a settings object (empty fields: the defaults)."""
        given = {
            "home": self.home,
            "corpus": self.corpus,
            "questions": self.questions,
            "results_root": self.results,
            "benchmark": self.benchmark or SAMPLE_BENCHMARK,
            "reports_url": self.reports_url,
            "parse_memory_mb": self.parse_memory_mb,
            "parse_timeout_s": self.parse_timeout_s,
            "corpus_model": self.corpus_model,
        }
        # a Path for the folders, the text as given for the rest: the fields' types differ, hence Any
        fields: dict[str, Any] = {
            k: (Path(v).expanduser().resolve() if k in ("home", "corpus", "questions", "results_root") else v)
            for k, v in given.items()
            if v not in (None, "")
        }
        return Settings(**fields)

    def of(self, benchmark: "Benchmark") -> "WorkspaceResource":
        """This workspace for ``benchmark``: its name and its own documents and question sets folders (the home,
        results root and limits stay)."""
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(
            **{
                **fields,
                "benchmark": benchmark.name,
                "corpus": str(benchmark.corpus),
                "questions": str(benchmark.questions),
            }
        )

    def home_dir(self) -> Path:
        return self.settings().home

    def benchmark_name(self) -> str:
        return self.settings().benchmark

    def results_dir(self) -> Path:
        return self.settings().results_dir

    def corpus_dir(self) -> Path:
        return self.settings().corpus

    def questions_dir(self) -> Path:
        return self.settings().questions

    def parsed_store(self, options: Optional[ParseOptions] = None) -> ParsedStore:
        """The parsed-document store; ``options`` (ParseOptions) when parsing: parses are keyed by them.

        Readers need no options: they read the manifest of the last parse.
        """
        return parsed_store(self.results_dir(), options)

    def reports_dir(self) -> Path:
        return self.results_dir() / "reports"

    def report_url(self, path: Path, fragment: str = "") -> str:
        """The http:// URL of a file of reports_dir() (browsers refuse file:// links from the UI)."""
        from .report_server import report_link

        reports = self.reports_dir().resolve()
        inside = path.resolve().is_relative_to(reports)  # a past run's reports sit in reports/runs/<run>/
        return report_link(
            self.reports_url,
            self.benchmark_name(),
            path.resolve().relative_to(reports).as_posix() if inside else path.name,
            fragment,
        )


class DuckDBResource(ConfigurableResource):
    """The results database: ``chunkbench.duckdb`` over per-partition Parquet files."""

    folder: Optional[str] = None  # CHUNKBENCH_RESULTS_DIR, else CHUNKBENCH_HOME (empty: the default home)
    benchmark: Optional[str] = None  # the results of this benchmark: <folder>/benchmarks/<name> (empty: sample)

    def results(self, benchmark: Optional[str] = None) -> ResultsDB:
        """The results of ``benchmark`` (default: the one configured here)."""
        return ResultsDB(benchmark_dir(home_dir(self.folder), benchmark or self.benchmark or SAMPLE_BENCHMARK))


class QdrantResource(ConfigurableResource):
    """A Qdrant server (``url`` from QDRANT_URL, ``api_key`` from QDRANT_API_KEY) or local mode."""

    url: Optional[str] = None
    api_key: Optional[str] = None
    local_path: Optional[str] = None  # default: <vectors or home>/benchmarks/<benchmark>/qdrant
    home: Optional[str] = None  # CHUNKBENCH_HOME (empty: the default home)
    # CHUNKBENCH_VECTORS_DIR: the embedded store's root, e.g. a folder workers share (empty: home)
    vectors: Optional[str] = None
    benchmark: Optional[str] = None  # on a server, collections are named <benchmark>__<collection>
    local_engine: str = "edge"  # embedded engine: "edge" (qdrant-edge-py) or "client" (qdrant-client local mode)
    lock_timeout_seconds: float = 120.0  # wait this long for a collection another process holds

    @contextmanager
    def open(self, benchmark: Optional[str] = None) -> Iterator[VectorStore]:
        """The vector store of ``benchmark`` (default: the one configured here)."""
        if benchmark and self.local_path and benchmark != (self.benchmark or SAMPLE_BENCHMARK):
            from chunkbench_core.errors import ConfigError

            raise ConfigError(
                f"the vector store at {self.local_path} is benchmark {self.benchmark}'s, not {benchmark}'s"
            )
        benchmark = benchmark or self.benchmark or SAMPLE_BENCHMARK
        root = Path(self.vectors).expanduser() if self.vectors else home_dir(self.home)
        local = Path(self.local_path) if self.local_path else benchmark_dir(root, benchmark) / "qdrant"
        # the engine's name is plain text in the Dagster config: the store checks it and names the choices
        engine = cast(LocalEngine, self.local_engine)
        store = VectorStore(
            url=self.url,
            api_key=self.api_key,
            local_root=None if self.url else local,
            local_engine=engine,
            lock_timeout_seconds=self.lock_timeout_seconds,
            namespace=benchmark,
        )
        try:
            yield store
        finally:
            store.close()


class EmbeddingResource(ConfigurableResource):
    """Embedding providers: OpenAI (OPENAI_API_KEY) and any OpenAI-compatible server, the model registry
    (the shipped models plus CHUNKBENCH_MODELS) and the embedding cache (under CHUNKBENCH_HOME)."""

    openai_api_key: Optional[str] = None
    openai_base_url: Optional[str] = None
    compatible_base_url: Optional[str] = None
    compatible_api_key: Optional[str] = None
    models_file: Optional[str] = None  # CHUNKBENCH_MODELS: extra models (empty: the shipped ones)
    # CHUNKBENCH_BOUNDARY_MODEL: this machine's boundary model when the results database holds no shared default
    boundary_model: Optional[str] = None
    home: Optional[str] = None  # CHUNKBENCH_HOME: where the embedding cache is (empty: the default home)
    # CHUNKBENCH_CACHE_URL: a postgresql:// URL (the cache workers share) or a folder; empty: the SQLite file in home
    cache_url: Optional[str] = None
    # CHUNKBENCH_PROVIDER_POOL_LIMIT: partitions talking to one remote provider at once, set on the
    # provider's Dagster pool when it is first used (then changed in the UI; see concurrency.py)
    pool_limit: int = 2
    # how one request to a remote provider is retried before the step fails (and the step's
    # RetryPolicy takes over): attempts after the first, per-request timeout, backoff;
    # empty = ProviderSettings' defaults
    max_retries: Optional[int] = None
    timeout_seconds: Optional[float] = None  # CHUNKBENCH_PROVIDER_TIMEOUT_S
    retry_budget_seconds: Optional[float] = None  # CHUNKBENCH_PROVIDER_RETRY_BUDGET_S: all attempts, waits included
    backoff_initial_seconds: Optional[float] = None
    backoff_max_seconds: Optional[float] = None

    def pool(self, model_id: str) -> Optional[str]:
        """The Dagster pool of the model's provider (None for local models)."""
        from .concurrency import provider_pool

        return provider_pool(self.spec(model_id).provider)

    def provider_settings(self) -> ProviderSettings:
        return ProviderSettings(
            openai_api_key=self.openai_api_key,
            openai_base_url=self.openai_base_url,
            compatible_base_url=self.compatible_base_url,
            compatible_api_key=self.compatible_api_key,
            model_folder=home_dir(self.home) / MODEL_FOLDER,
            **_given(
                self,
                (
                    "max_retries",
                    "timeout_seconds",
                    "retry_budget_seconds",
                    "backoff_initial_seconds",
                    "backoff_max_seconds",
                ),
            ),
        )

    def registry(self):
        from chunkbench_core.embedding import model_registry

        return model_registry(self.models_file)

    def spec(self, model_id: str) -> EmbeddingModelSpec:
        return get_model(model_id, self.registry())

    def availability(self, model_id: str) -> tuple[bool, str]:
        return availability(self.spec(model_id), self.provider_settings())

    def embedder(self, model_id: str) -> Embedder:
        """The model's embedder, with the content-addressed cache (CHUNKBENCH_CACHE_URL, else under CHUNKBENCH_HOME).

        Raises EmbeddingError with the reason when the model is unavailable (never falls back).
        """
        from .caches import embedding_cache

        return Embedder(self.spec(model_id), self.provider_settings(), cache=embedding_cache(self.cache_url, self.home))

    def available_models(self) -> list[str]:
        """Registry ids whose provider is configured here."""
        return [m for m in self.registry() if self.availability(m)[0]]


def spec_context(workspace: WorkspaceResource, results: ResultsDB, embeddings: EmbeddingResource) -> SpecContext:
    """What resolving a collection reads (chunkbench_core.stages.spec): the registry, the shared defaults of the
    results database in force, this machine's boundary model, and the letters of the last parse by script (the
    boundary model must read the corpus's language: chunkbench_core.embedding.language)."""
    from chunkbench_core.embedding.language import ScriptShare

    registry = embeddings.registry()
    shared = SharedDefaults(results, workspace.home_dir() / THRESHOLDS_FILE, registry)
    script = ScriptShare.from_dict(workspace.parsed_store().manifest_script())
    return SpecContext(registry, shared, embeddings.boundary_model, script)


class LLMResource(ConfigurableResource):
    """An OpenAI-compatible chat model for answers, the judge and contextual prefixes (optional).

    Configured when ``model`` is set (CHUNKBENCH_LLM_MODEL): ``base_url`` from CHUNKBENCH_LLM_BASE_URL
    (Ollama, vLLM, llama.cpp; empty = OpenAI), ``api_key`` from CHUNKBENCH_LLM_API_KEY or OPENAI_API_KEY.
    """

    model: Optional[str] = None
    base_url: Optional[str] = None
    api_key: Optional[str] = None
    system_prompt_as_user: bool = False  # chat templates without a system role (llama.cpp "gemma")
    # budgets per question (tokens; a judge reply cut short is retried with more, up to
    # judge_max_tokens_cap) and the request timeout; empty = LLMSettings' defaults
    answer_max_tokens: Optional[int] = None
    judge_max_tokens: Optional[int] = None
    judge_max_tokens_cap: Optional[int] = None
    judge_attempts: Optional[int] = None
    max_context_tokens: Optional[int] = None
    timeout_seconds: Optional[float] = None  # CHUNKBENCH_PROVIDER_TIMEOUT_S
    retry_budget_seconds: Optional[float] = None  # CHUNKBENCH_PROVIDER_RETRY_BUDGET_S
    # a partition's LLM work: total seconds, and questions failing in a row before the rest are skipped
    deadline_seconds: Optional[float] = None
    breaker_failures: Optional[int] = None
    vision_model: Optional[str] = None  # CHUNKBENCH_VISION_MODEL: captions images of DOCX files (same endpoint)
    home: Optional[str] = None  # CHUNKBENCH_HOME: where the contextual prefixes are cached (empty: the default home)
    cache_url: Optional[str] = None  # CHUNKBENCH_CACHE_URL, as EmbeddingResource.cache_url
    pool_limit: int = 2  # CHUNKBENCH_PROVIDER_POOL_LIMIT, as EmbeddingResource.pool_limit
    # USD per 1M tokens (CHUNKBENCH_LLM_PRICE_INPUT / _OUTPUT): the query cost of the cost-quality frontier;
    # may be set without a model, to price the context a future LLM would read; empty = known model prices
    input_price_per_mtok: Optional[str] = None
    output_price_per_mtok: Optional[str] = None

    def _price(self, name: str) -> Optional[float]:
        raw = getattr(self, name)
        if raw in (None, ""):
            return None
        from chunkbench_core.errors import ConfigError

        env = {
            "input_price_per_mtok": "CHUNKBENCH_LLM_PRICE_INPUT",
            "output_price_per_mtok": "CHUNKBENCH_LLM_PRICE_OUTPUT",
        }
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(
                f"{env[name]} must be a price in USD per million tokens, e.g. 0.15; got {raw!r}"
            ) from None
        if value < 0:
            raise ConfigError(f"{env[name]} must be >= 0, got {value}")
        return value

    def prices(self):
        """The LLM's prices (evaluation.cost.LLMPrices): the settings, else the model's known prices."""
        from chunkbench_core.evaluation.cost import LLMPrices
        from chunkbench_core.evaluation.llm import KNOWN_PRICES_PER_MTOK

        given = self._price("input_price_per_mtok"), self._price("output_price_per_mtok")
        if given[0] is not None and given[1] is not None:
            return LLMPrices(*given)
        known = KNOWN_PRICES_PER_MTOK.get(self.model or "")
        return LLMPrices(*known) if known else LLMPrices()

    @property
    def pool(self) -> Optional[str]:
        """The Dagster pool of the chat endpoint, when one is configured."""
        from .concurrency import llm_pool

        return llm_pool(self.base_url) if (self.model or self.vision_model) else None

    @property
    def configured(self) -> bool:
        return bool(self.model)

    def settings(self):
        from chunkbench_core.evaluation.llm import LLMSettings

        return LLMSettings(
            model=self.model or "",
            system_prompt_as_user=self.system_prompt_as_user,
            **_given(
                self,
                (
                    "answer_max_tokens",
                    "judge_max_tokens",
                    "judge_max_tokens_cap",
                    "judge_attempts",
                    "max_context_tokens",
                    "timeout_seconds",
                    "retry_budget_seconds",
                    "deadline_seconds",
                    "breaker_failures",
                ),
            ),
            input_price_per_mtok=self.prices().input_per_mtok,
            output_price_per_mtok=self.prices().output_per_mtok,
        )

    def client(self):
        from chunkbench_core.evaluation.llm import make_client

        return make_client(self.base_url, self.api_key)

    def parse_options(self):
        """Parser options: images become image_caption units when a vision model is configured."""
        if not self.vision_model:
            return ParseOptions()
        from chunkbench_core.parsing.captions import openai_vision_captioner
        from chunkbench_core.provider_faults import RetryPolicy

        return ParseOptions(
            caption_source=openai_vision_captioner(
                model=self.vision_model,
                base_url=self.base_url,
                api_key=self.api_key,
                policy=RetryPolicy(timeout_seconds=self.timeout_seconds, budget_seconds=self.retry_budget_seconds),
            )
        )

    def contextual_context(self):
        """contextual_retrieval's context source: the LLM when configured (answers cached on disk), else None
        (the chunker then uses the document title and heading path, and records which it used)."""
        if not self.configured:
            return None
        from chunkbench_core.chunking import LLMContext
        from .caches import context_cache

        # persistent and content-addressed: a rebuild never pays the LLM again for the same chunk
        return LLMContext(
            client=self.client(),
            endpoint=self.base_url or "openai",
            cache=context_cache(self.cache_url, self.home),
            settings=self.settings(),
        )


class RankingResource(ConfigurableResource):
    """How results are ranked and which configuration is recommended (one setting each).

    ``rank_metric`` (CHUNKBENCH_RANK_METRIC): the metric that ranks configurations; default
    ``recall_at_512`` (evidence in the first 512 context tokens); any question_results metric
    works, e.g. ``recall@k``, ``mrr``, ``budget_auc``, ``answer_similarity`` when judged.
    ``recommendation_rule`` (CHUNKBENCH_RECOMMENDATION_RULE): ``cheapest_within_margin`` (default)
    or ``highest_mean``. ``budgets`` (CHUNKBENCH_BUDGETS): context budgets in tokens, e.g.
    ``256,512,1024,2048``. ``margin`` (CHUNKBENCH_MARGIN): how far below the best, in the ranking
    metric's units, still counts as good as the best (default 0.02; 0.2 for the judge's 1-10 scores).
    ``cost_tolerance`` (CHUNKBENCH_COST_TOLERANCE): costs within this share of each other are equal
    (default 0.05). ``interchangeable_share`` (CHUNKBENCH_INTERCHANGEABLE_SHARE): below this share of the scores'
    differences (the upper end of its 95% interval) the configurations are interchangeable and the pick is on
    cost alone (default 0.02).
    """

    rank_metric: Optional[str] = None
    recommendation_rule: Optional[str] = None
    budgets: Optional[str] = None
    margin: Optional[str] = None
    cost_tolerance: Optional[str] = None
    interchangeable_share: Optional[str] = None

    def settings(self):
        from chunkbench_core.evaluation.recommendation import RankingSettings

        return RankingSettings.from_text(
            self.rank_metric,
            self.recommendation_rule,
            self.budgets,
            self.margin,
            self.cost_tolerance,
            self.interchangeable_share,
        )


class Resources(TypedDict):
    """The resources of the Dagster definitions, by the name the assets ask for them."""

    workspace: WorkspaceResource
    duckdb: DuckDBResource
    qdrant: QdrantResource
    embeddings: EmbeddingResource
    llm: LLMResource
    ranking: RankingResource


def build_resources(settings: Settings, resolve: bool = False) -> Resources:
    """The resources, configured from ``settings``.

    For Dagster (``resolve=False``) a secret that came from the environment becomes an ``EnvVar``, resolved by
    Dagster at run time and shown by name only; the command line outside Dagster (``resolve=True``) passes the
    values themselves. Every other value is passed as it is in ``settings``.
    """

    def secret(field: str):
        value = getattr(settings, field)
        if not value:
            return None
        source = settings.source(field)
        if resolve or not source.startswith("environment "):
            return value
        return EnvVar(source.removeprefix("environment "))

    def text(value) -> str | None:
        return None if value is None else str(value)

    home, benchmark = str(settings.home), settings.benchmark
    # a cache URL may hold a password: from the environment it stays an EnvVar, shown by name only
    cache_url = (
        EnvVar("CHUNKBENCH_CACHE_URL")
        if settings.cache_url and not resolve and settings.source("cache_url") == "environment CHUNKBENCH_CACHE_URL"
        else settings.cache_url
    )
    return {
        "workspace": WorkspaceResource(
            home=home,
            corpus=str(settings.corpus),
            questions=str(settings.questions),
            results=text(settings.results_root),
            benchmark=benchmark,
            reports_url=settings.reports_url,
            parse_memory_mb=settings.parse_memory_mb,
            parse_timeout_s=settings.parse_timeout_s,
            corpus_model=settings.corpus_model,
        ),
        "duckdb": DuckDBResource(folder=str(settings.results_base), benchmark=benchmark),
        "qdrant": QdrantResource(
            url=settings.qdrant_url,
            api_key=secret("qdrant_api_key"),
            home=home,
            vectors=text(settings.vectors_root),
            benchmark=benchmark,
        ),
        "embeddings": EmbeddingResource(
            openai_api_key=secret("openai_api_key"),
            openai_base_url=settings.openai_base_url,
            compatible_base_url=settings.compatible_url,
            compatible_api_key=secret("compatible_api_key"),
            models_file=text(settings.models_file),
            boundary_model=settings.boundary_model,
            home=home,
            cache_url=cache_url,
            pool_limit=settings.pool_limit,
            timeout_seconds=settings.provider_timeout,
            retry_budget_seconds=settings.provider_retry_budget,
        ),
        "llm": LLMResource(
            model=settings.llm_model,
            base_url=settings.llm_base_url,
            api_key=secret("llm_api_key"),
            vision_model=settings.vision_model,
            pool_limit=settings.pool_limit,
            home=home,
            cache_url=cache_url,
            timeout_seconds=settings.provider_timeout,
            retry_budget_seconds=settings.provider_retry_budget,
            input_price_per_mtok=settings.llm_price_input,
            output_price_per_mtok=settings.llm_price_output,
        ),
        "ranking": RankingResource(
            rank_metric=settings.rank_metric,
            recommendation_rule=settings.recommendation_rule,
            budgets=settings.budgets,
            margin=settings.margin,
            cost_tolerance=settings.cost_tolerance,
            interchangeable_share=settings.interchangeable_share,
        ),
    }


@dataclass(frozen=True)
class StepResources:
    """The resources one step of a benchmark works with (an asset's body, a sweep step), handed on as one."""

    workspace: WorkspaceResource
    duckdb: DuckDBResource
    qdrant: QdrantResource
    embeddings: EmbeddingResource
    llm: LLMResource
    ranking: Optional[RankingResource] = None

    @classmethod
    def of(cls, context: AssetExecutionContext | OpExecutionContext) -> "StepResources":
        """The resources of an asset's or an op's context that asked for them by key (:data:`STEP_RESOURCE_KEYS`):
        one parameter for the six, where each as a parameter of its own would make the body's signature a list."""
        resources = context.resources
        return cls(
            resources.workspace,
            resources.duckdb,
            resources.qdrant,
            resources.embeddings,
            resources.llm,
            resources.ranking,
        )


#: the keys of every resource a step works with (the fields of :class:`StepResources`)
STEP_RESOURCE_KEYS = frozenset({"workspace", "duckdb", "qdrant", "embeddings", "llm", "ranking"})
