"""Embedding providers: the local engines and OpenAI / OpenAI-compatible endpoints.

``Embedder`` is what the rest of chunkbench calls. For every call it

1. applies the model's task prefix exactly once (twice, or not at all, and e5-style models embed
   another text than the one they were trained to read);
2. looks each prefix-applied text up in the embedding cache (when one is given) and
   embeds each distinct missing text once (with a cache that workers share, once across
   all the workers: a worker embeds the texts it claims and waits for the others');
3. batches remote requests (the registry's batch size: OpenAI 2048, OpenAI-compatible
   64 by default; and OpenAI's per-request token cap) through ``provider_faults.call``: 429 / 408 /
   409 / 5xx / timeouts / connection errors / malformed replies retried with backoff within a time
   budget, the rest refused at once, each failure an EmbeddingProviderError in one line (the server,
   what it said, what was tried, what to do); the vectors that arrive are checked (dimension, NaN,
   infinity, all zeros) before anything is cached;
4. records usage (texts, cache hits, requests, retries, tokens, seconds) in
   ``Embedder.usage`` (cumulative) and ``Embedder.last_usage`` (the last call), which
   the pipeline writes to DuckDB with ``EmbeddingUsage.as_row()``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, TypeGuard

import numpy as np

from chunkbench_core import progress
from chunkbench_core.errors import (
    EmbeddingError,
    EmbeddingProviderError,
    EmbeddingUnavailableError,
)
from chunkbench_core.provider_faults import DEFAULT_BUDGET_SECONDS, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS
from chunkbench_core.redaction import register_secret

from .registry import PURPOSES, EmbeddingModelSpec, Purpose

if TYPE_CHECKING:  # pragma: no cover
    from .local import LocalEngine

#: an embedding call of at least this many texts to embed reports its progress (texts done / total)
PROGRESS_MIN_TEXTS = 32


class VectorCache(Protocol):
    """What the Embedder needs from a cache (``chunkbench_core.storage.embedding_cache.EmbeddingCache``)."""

    def register(self, namespace: str, model_id: str, fingerprint: str) -> None: ...

    def get_many(self, namespace: str, keys: Sequence[str], dimension: int) -> dict[str, np.ndarray]: ...

    def put_many(self, namespace: str, items: Any, dimension: int) -> int: ...


class SharedVectorCache(VectorCache, Protocol):
    """A cache many workers share (``chunkbench_core.storage.cache_postgres.PostgresEmbeddingCache``): a worker
    embeds only the texts it claims, and waits for the vectors of texts another worker claimed."""

    def claim_many(
        self, namespace: str, keys: Sequence[str], dimension: int
    ) -> tuple[dict[str, np.ndarray], list[str]]: ...

    def await_many(
        self, namespace: str, keys: Sequence[str], dimension: int
    ) -> tuple[dict[str, np.ndarray], list[str]]: ...

    def release(self, namespace: str, keys: Sequence[str]) -> int: ...


def _shared(cache: VectorCache | None) -> TypeGuard[SharedVectorCache]:
    """Whether workers share ``cache`` (it claims texts), so each text is embedded by one of them."""
    return hasattr(cache, "claim_many")


#: the folder of chunkbench's home where local engines keep what they derive from a model file (ProviderSettings)
MODEL_FOLDER = "models"


@dataclass(frozen=True)
class ProviderSettings:
    """Where remote providers are and how to call them; secrets arrive here from the pipeline's resources."""

    openai_api_key: str | None = None
    openai_base_url: str | None = None
    compatible_base_url: str | None = None
    compatible_api_key: str | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    #: one request's timeout, and the total of all attempts of a request, waits included
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    retry_budget_seconds: float = DEFAULT_BUDGET_SECONDS
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 30.0
    #: where local engines keep what they derive from a model file once for every process (chunkbench's home
    #: ``models/``: the fused MiniLM graph); None: derived again in each process
    model_folder: Path | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_retries, int) or isinstance(self.max_retries, bool) or self.max_retries < 0:
            raise EmbeddingError(f"max_retries must be an integer >= 0, got {self.max_retries!r}")
        for name in ("timeout_seconds", "retry_budget_seconds", "backoff_initial_seconds", "backoff_max_seconds"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                raise EmbeddingError(f"{name} must be a number >= 0, got {value!r}")
        if self.timeout_seconds == 0 or self.retry_budget_seconds == 0:
            raise EmbeddingError("timeout_seconds and retry_budget_seconds must be > 0")
        register_secret(self.openai_api_key)  # whoever built these settings, their keys never reach an error text
        register_secret(self.compatible_api_key)

    def __repr__(self) -> str:  # never print secrets
        return (
            f"ProviderSettings(openai_api_key={'set' if self.openai_api_key else None}, "
            f"openai_base_url={self.openai_base_url!r}, compatible_base_url={self.compatible_base_url!r}, "
            f"compatible_api_key={'set' if self.compatible_api_key else None}, max_retries={self.max_retries}, "
            f"timeout_seconds={self.timeout_seconds}, retry_budget_seconds={self.retry_budget_seconds})"
        )

    __str__ = __repr__

    def compatible_url_for(self, spec: EmbeddingModelSpec) -> str | None:
        return spec.base_url or self.compatible_base_url


def availability(spec: EmbeddingModelSpec, settings: ProviderSettings) -> tuple[bool, str]:
    """Whether ``spec`` can be used with ``settings``, and if not, why (an actionable reason).

    Nothing is loaded or contacted: this is configuration only (``chunkbench health`` probes).
    """
    if spec.provider == "local":
        from .local import engine_availability

        return engine_availability(spec.engine)
    if spec.provider == "openai":
        if not settings.openai_api_key:
            return False, f"{spec.id} needs OPENAI_API_KEY (OpenAI provider) and it is not set"
        return True, "OpenAI API key configured"
    url = settings.compatible_url_for(spec)
    if not url:
        return False, (
            f"{spec.id} needs an OpenAI-compatible server: set CHUNKBENCH_OPENAI_COMPATIBLE_URL "
            "(e.g. http://127.0.0.1:11434/v1 for Ollama) or base_url in its registry entry"
        )
    return True, f"OpenAI-compatible server at {url}"


@dataclass
class EmbeddingUsage:
    """What embedding cost: one call (``last_usage``) or everything so far (``usage``)."""

    model_id: str
    provider: str
    texts: int = 0
    unique_texts: int = 0
    cache_hits: int = 0
    embedded: int = 0
    requests: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    truncated: int = 0
    seconds: float = 0.0

    @property
    def hit_rate(self) -> float:
        """Cache hits over distinct texts (1.0 when nothing had to be embedded)."""
        return self.cache_hits / self.unique_texts if self.unique_texts else 1.0

    def add(self, other: "EmbeddingUsage") -> None:
        for name in USAGE_COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def since(self, earlier: "EmbeddingUsage") -> "EmbeddingUsage":
        """What was used after ``earlier`` (a copy of this cumulative usage taken before)."""
        out = EmbeddingUsage(self.model_id, self.provider)
        for name in USAGE_COUNTERS:
            setattr(out, name, getattr(self, name) - getattr(earlier, name))
        return out

    def as_row(self) -> dict[str, Any]:
        """Columns for a DuckDB ``embedding_usage`` table."""
        return {**asdict(self), "hit_rate": self.hit_rate}


#: the fields of a usage that add up over calls (every field but the model and the provider)
USAGE_COUNTERS = tuple(f.name for f in fields(EmbeddingUsage) if f.name not in ("model_id", "provider"))


def cache_fingerprint(spec: EmbeddingModelSpec) -> str:
    """What produces this model's vectors; a change means a new cache namespace."""
    parts: dict[str, Any] = {"provider": spec.provider, "model_name": spec.model_name, "dimension": spec.dimension}
    if spec.provider == "local":
        from .local import engine_fingerprint

        parts["engine"] = engine_fingerprint(spec.engine)
    return json.dumps(parts, sort_keys=True)


def cache_namespace(spec: EmbeddingModelSpec) -> str:
    """``{model id}@{16 hex of the fingerprint}``: the model part of every cache key."""
    digest = hashlib.sha256(cache_fingerprint(spec).encode("utf-8")).hexdigest()[:16]
    return f"{spec.id}@{digest}"


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


def _token_count(text: str) -> int:
    """cl100k tokens (OpenAI's tokenizer for its embedding models); bytes bound it from above."""
    try:
        from chunkbench_core.tokens import count_tokens

        return count_tokens(text)
    except Exception:  # no tokenizer: UTF-8 bytes are an upper bound of BPE tokens
        return _utf8_len(text)


def remote_batches(texts: Sequence[str], batch_size: int, max_batch_tokens: int | None) -> list[tuple[int, int]]:
    """[begin, end) ranges of ``texts``: at most ``batch_size`` texts and ``max_batch_tokens`` tokens each."""
    ranges: list[tuple[int, int]] = []
    begin = 0
    while begin < len(texts):
        end = min(begin + batch_size, len(texts))
        if max_batch_tokens is not None and sum(_utf8_len(t) for t in texts[begin:end]) > max_batch_tokens:
            total, end = 0, begin
            while end < min(begin + batch_size, len(texts)):
                cost = _token_count(texts[end])
                if end > begin and total + cost > max_batch_tokens:
                    break
                total += cost
                end += 1
        ranges.append((begin, end))
        begin = end
    return ranges


class _RemoteClient:
    """One OpenAI(-compatible) endpoint for one model; every request goes through
    :func:`chunkbench_core.provider_faults.call` (the retries, the budget and the one-line error)."""

    def __init__(
        self, spec: EmbeddingModelSpec, settings: ProviderSettings, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        import openai

        from chunkbench_core.provider_faults import RetryPolicy, Server

        self.spec = spec
        self.settings = settings
        if spec.provider == "openai":
            key, base = settings.openai_api_key, settings.openai_base_url
            self.server = Server("embedding", base, spec.model_name, "OPENAI_API_KEY", "OPENAI_BASE_URL")
        else:
            key, base = settings.compatible_api_key or "not-needed", settings.compatible_url_for(spec)
            self.server = Server(
                "embedding",
                base,
                spec.model_name,
                "CHUNKBENCH_OPENAI_COMPATIBLE_API_KEY",
                "CHUNKBENCH_OPENAI_COMPATIBLE_URL"
                if not spec.base_url
                else f"base_url of {spec.id} in the model registry",
            )
        self.endpoint = base or "the OpenAI API"
        self.policy = RetryPolicy(
            max_retries=settings.max_retries,
            timeout_seconds=settings.timeout_seconds,
            budget_seconds=settings.retry_budget_seconds,
            backoff_initial_seconds=settings.backoff_initial_seconds,
            backoff_max_seconds=settings.backoff_max_seconds,
        )
        # the client's own retries are off: provider_faults.call retries, counts and reports them
        self.client = openai.OpenAI(api_key=key, base_url=base, max_retries=0, timeout=settings.timeout_seconds)
        self._sleep = sleep

    def embed(self, batch: list[str], usage: EmbeddingUsage) -> np.ndarray:
        from chunkbench_core.provider_faults import MalformedResponse, call

        kwargs: dict[str, Any] = {"model": self.spec.model_name, "input": batch}
        if self.spec.provider == "openai_compatible":
            kwargs["encoding_format"] = "float"  # what every compatible server speaks

        def request(timeout: float) -> tuple[np.ndarray, Any]:
            usage.requests += 1
            response = self.client.embeddings.create(**kwargs, timeout=timeout)
            try:
                data = sorted(response.data, key=lambda d: d.index)
                rows = np.asarray([d.embedding for d in data], dtype=np.float32)
            except Exception as exc:  # noqa: BLE001 - any shape the API does not have
                raise MalformedResponse(f"no list of embeddings: {type(exc).__name__}") from None
            if rows.ndim != 2 or rows.shape[0] != len(batch):
                raise MalformedResponse(f"{rows.shape[0] if rows.ndim else 0} vectors for {len(batch)} texts")
            return rows, getattr(response, "usage", None)

        def retried(_fault: Any) -> None:
            usage.retries += 1

        rows, used = call(
            self.server, self.policy, request, sleep=self._sleep, on_retry=retried, error=EmbeddingProviderError
        )
        check_vectors(rows, self.spec, batch, self.server.describe())
        if used is not None:
            usage.prompt_tokens += int(getattr(used, "prompt_tokens", 0) or 0)
        return rows


def check_vectors(rows: np.ndarray, spec: EmbeddingModelSpec, batch: Sequence[str], source: str) -> None:
    """Refuse vectors no search can use (EmbeddingProviderError naming the first bad one's position and text):
    another dimension than the registry's, NaN or infinite values, all zeros. They are checked before anything
    is cached or scored, so a bad answer never outlives the request."""
    if rows.ndim != 2 or rows.shape[1] != spec.dimension:
        width = rows.shape[1] if rows.ndim == 2 else "no"
        raise EmbeddingProviderError(
            f"{source} returned vectors of dimension {width} where the model registry says {spec.dimension} for "
            f"{spec.id}; set its dimension in the model registry (CHUNKBENCH_MODELS) to what the model gives, or "
            "switch model",
            kind="bad_vector",
        )
    finite = np.isfinite(rows).all(axis=1)
    zero = ~np.any(rows != 0, axis=1)
    bad = np.flatnonzero(~finite | zero)
    if bad.size:
        i = int(bad[0])
        what = "NaN or infinite values" if not finite[i] else "only zeros"
        text = " ".join(str(batch[i]).split())
        text = text[:60] + "..." if len(text) > 60 else text
        raise EmbeddingProviderError(
            f"{source} returned a vector with {what} at position {i + 1} of {len(batch)} in the batch "
            f"(text {text!r}; {bad.size} bad in all); nothing of this batch was kept; the server's model gives "
            "unusable vectors: check the server (its model file, its precision settings) or switch model",
            kind="bad_vector",
        )


class Embedder:
    """Embeds texts with one registry model; vectors are L2-normalised float32 rows.

    ``cache``: an EmbeddingCache (or anything with its methods), or a cache workers share (a
    PostgresEmbeddingCache: each text is embedded by one worker only); None embeds every text.
    Raises EmbeddingError at construction when the model is unavailable (fails fast,
    never falls back to another model).
    """

    def __init__(
        self,
        spec: EmbeddingModelSpec,
        settings: ProviderSettings | None = None,
        *,
        cache: VectorCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.spec = spec
        self.settings = settings or ProviderSettings()
        ok, reason = availability(spec, self.settings)
        if not ok:
            raise EmbeddingUnavailableError(reason)
        self.cache = cache
        self.namespace = cache_namespace(spec)
        self.usage = EmbeddingUsage(spec.id, spec.provider)
        self.last_usage = EmbeddingUsage(spec.id, spec.provider)
        self._local: LocalEngine | None = None
        self._remote: _RemoteClient | None = None
        if spec.provider == "local":
            from .local import LocalEngine

            self._local = LocalEngine(spec, self.settings.model_folder)
        else:
            self._remote = _RemoteClient(spec, self.settings, sleep=sleep)
        if cache is not None:
            cache.register(self.namespace, spec.id, cache_fingerprint(spec))

    def __repr__(self) -> str:
        return f"Embedder({self.spec.id!r}, provider={self.spec.provider!r}, cache={self.cache!r})"

    def embed(self, texts: Sequence[str], purpose: Purpose, use_cache: bool = True) -> np.ndarray:
        """Vectors of ``texts`` (not yet prefixed) for ``purpose`` ("document" or "query").

        ``use_cache=False`` embeds every text with the model and leaves the caches alone (the
        embedding cache and a local engine's memory of this process): latency measurements time
        the model, neither a lookup nor a write.
        """
        if purpose not in PURPOSES:
            raise EmbeddingError(f"purpose must be one of {PURPOSES}, got {purpose!r}")
        started = time.perf_counter()
        usage = EmbeddingUsage(self.spec.id, self.spec.provider)
        prepared = self.spec.apply_prefix(list(texts), purpose)
        usage.texts = len(prepared)
        out = np.zeros((len(prepared), self.spec.dimension), dtype=np.float32)
        if prepared:
            keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in prepared]
            first: dict[str, int] = {}
            for i, key in enumerate(keys):
                first.setdefault(key, i)
            usage.unique_texts = len(first)
            vectors: dict[str, np.ndarray] = {}
            if self.cache is not None and use_cache:
                vectors = self.cache.get_many(self.namespace, list(first), self.spec.dimension)
                usage.cache_hits = len(vectors)
            missing = [key for key in first if key not in vectors]
            if missing:
                tracker = None
                if len(missing) >= PROGRESS_MIN_TEXTS and progress.listening():  # a query or two says nothing
                    tracker = progress.Tracker("embedding", len(first), unit="texts")
                    tracker.step(len(first) - len(missing))
                self._embed_missing(
                    missing,
                    [prepared[first[k]] for k in missing],
                    purpose,
                    vectors,
                    usage,
                    store=use_cache,
                    tracker=tracker,
                )
                if tracker is not None:
                    tracker.step(len(first))
            for i, key in enumerate(keys):
                out[i] = vectors[key]
        usage.seconds = time.perf_counter() - started
        self.last_usage = usage
        self.usage.add(usage)
        return out

    @property
    def load_seconds(self) -> float:
        """What loading the model took in this process (a local engine's first use; 0 for a remote model, whose
        first request is timed as it is)."""
        return float(getattr(self._local, "load_seconds", 0.0) or 0.0) if self._local is not None else 0.0

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], "query")[0]

    def _groups(self, texts: list[str]) -> list[list[int]]:
        """Indexes of ``texts`` in the groups they are embedded in (and stored after, so a crash keeps them)."""
        if self._local is not None:
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths batch best
            # one batch a group: a few seconds even on a busy machine (progress lines, a stop request and the
            # cache's writes are served between groups); the engine still runs its workers on the batch
            group = max(self.spec.batch_size, 32)
            return [order[b : b + group] for b in range(0, len(order), group)]
        return [list(range(b, e)) for b, e in remote_batches(texts, self.spec.batch_size, self.spec.max_batch_tokens)]

    def _embed_missing(
        self,
        keys: list[str],
        texts: list[str],
        purpose: Purpose,
        vectors: dict[str, np.ndarray],
        usage: EmbeddingUsage,
        store: bool = True,
        tracker: "progress.Tracker | None" = None,
    ) -> None:
        """Embed distinct texts, storing each finished group in the cache at once (a crash keeps them).

        With a cache that workers share, each group is claimed first: this worker embeds the texts it
        claimed, then waits for the vectors of those another worker claimed (embedding them itself if
        that worker's claim expires), so no text is embedded by two workers."""
        shared = self.cache if store and _shared(self.cache) else None
        if shared is None:
            for rows in self._groups(texts):
                self._embed_rows(rows, keys, texts, purpose, vectors, usage, store)
                if tracker is not None:
                    tracker.advance(len(rows))
            return
        try:
            for rows in self._groups(texts):
                found, mine = shared.claim_many(self.namespace, [keys[i] for i in rows], self.spec.dimension)
                vectors.update(found)
                usage.cache_hits += len(found)
                claimed = set(mine)
                self._embed_rows([i for i in rows if keys[i] in claimed], keys, texts, purpose, vectors, usage, store)
                if tracker is not None:
                    tracker.advance(len(claimed) + len(found))
            position = {key: i for i, key in enumerate(keys)}
            waiting = [key for key in keys if key not in vectors]
            while waiting:
                found, mine = shared.await_many(self.namespace, waiting, self.spec.dimension)
                vectors.update(found)
                usage.cache_hits += len(found)
                taken = [position[key] for key in mine]  # claims that expired: their worker died
                for rows in self._groups([texts[i] for i in taken]):
                    self._embed_rows([taken[r] for r in rows], keys, texts, purpose, vectors, usage, store)
                waiting = [key for key in waiting if key not in vectors]
        except BaseException:
            try:  # nobody waits a lease for texts this worker will not embed now
                shared.release(self.namespace, [key for key in keys if key not in vectors])
            except Exception:  # noqa: BLE001 - the claims expire with their lease; the first error matters
                pass
            raise

    def _embed_rows(
        self,
        rows: list[int],
        keys: list[str],
        texts: list[str],
        purpose: Purpose,
        vectors: dict[str, np.ndarray],
        usage: EmbeddingUsage,
        store: bool,
    ) -> None:
        """Embed one group (``rows`` index ``keys``/``texts``) and store its vectors."""
        if not rows:
            return
        batch = [texts[i] for i in rows]
        if self._local is not None:
            result = self._local.embed(batch, purpose, remember=store)
            block, usage.prompt_tokens, usage.truncated = (
                result.vectors,
                usage.prompt_tokens + result.tokens,
                usage.truncated + result.truncated,
            )
            usage.requests += 1
        else:
            assert self._remote is not None
            block = _normalise(self._remote.embed(batch, usage))
        usage.embedded += len(batch)
        for i, vector in zip(rows, block, strict=True):
            vectors[keys[i]] = vector
        if self.cache is not None and store:
            self.cache.put_many(self.namespace, ((keys[i], vectors[keys[i]]) for i in rows), self.spec.dimension)


def _normalise(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32)
