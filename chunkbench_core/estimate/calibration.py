"""How fast an embedding engine runs on this machine: measured once, kept, reused until something changes.

A local engine is timed on a short, fixed set of texts of three lengths (``CALIBRATION_LENGTHS``
cl100k tokens, capped below the model's window), a few texts of each, for a few seconds at most
(``budget_seconds``). Every batch gives (texts, tokens fed, seconds); a least-squares fit with
non-negative terms, ``seconds ≈ seconds_per_text · texts + seconds_per_token · tokens``, says how
time grows with text length (a per-text cost: tokenizing, pooling, the call; and a per-token cost:
the transformer itself). Tokens are the engine's own (word pieces for MiniLM, e5's pieces); the
ratio of engine tokens to cl100k tokens on the same texts converts a corpus counted in cl100k.

The rate is kept in ``calibration.json`` in the folder given (chunkbench's home) under a key of
the model id, the engine, the engine's package versions and batch size, and the CPU (model name,
the vector instruction sets that change matrix speed, the usable CPUs): it is reused until one
of them changes (or a refresh is asked for).

A remote model is not timed with a probe (that would spend money): its rate comes from the
``embedding_usage`` rows of past runs (texts embedded, tokens, seconds) when there are some,
else from a conservative default per provider (:data:`REMOTE_DEFAULTS`), labelled as such.

The same file keeps the corrections learnt by comparing estimates with actual runs
(:mod:`chunkbench_core.estimate.feedback`) and the parsing rates recorded per format.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import platform
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence
from urllib.parse import urlsplit

from .errors import EstimateError

CALIBRATION_FILE = "calibration.json"
FORMAT_VERSION = 1
#: the key's machine part for a remote model: its speed is the endpoint's, not this CPU's
REMOTE = "remote"
#: where a rate comes from: timed here, fitted on recorded usage of past runs, or a documented default
RateSource = Literal["measured", "recorded", "default"]
RATE_SOURCES: tuple[str, ...] = ("measured", "recorded", "default")
#: CPU flags that change how fast the engines' matrix products run
SPEED_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_int8")
#: cl100k tokens of the calibration texts (each capped at 60 % of the model's window)
CALIBRATION_LENGTHS = (16, 64, 160)
#: texts per length in the first round; later rounds grow up to the model's batch size within the budget
FIRST_ROUND_TEXTS = 2
MAX_ROUNDS = 3
DEFAULT_BUDGET_SECONDS = 4.0

#: Conservative rates of remote providers before any run was recorded: (seconds per text, tokens per second,
#: provider tokens per cl100k token). OpenAI's endpoint usually embeds far faster than 25,000 tokens/s per
#: request stream; a self-hosted OpenAI-compatible server (Ollama and the like) is often a CPU, about as
#: fast as the local engines. The first run's recorded usage replaces these.
REMOTE_DEFAULTS: dict[str, tuple[float, float, float]] = {
    "openai": (0.0, 25_000.0, 1.0),
    "openai_compatible": (0.005, 1_000.0, 1.2),
}

# A fixed vocabulary for the calibration texts: everyday English and the figures of reports, so word
# pieces per cl100k token are about what prose gives. The words are chosen, not copied from any text.
CALIBRATION_WORDS = (
    "the of and to in a is that for on with as by it are be this from at or an was which have has not "
    "but all can their will more one about also other were been new when there its after into than "
    "report quarter revenue growth policy employee leave days request manager approval security access "
    "password device network data customer product release version support update feature service "
    "market cost price income operating margin cash flow total year period compared increase decrease "
    "percent million billion share rate risk team process document section table record account "
    "contract holiday travel expense training office remote safety incident review audit control "
    "system user change schedule budget forecast region segment sales tax net gross asset liability "
    "2023 2024 12 45 3.5 17% 250 1,200 $4.2 Q3 Q1 first second third each per within under over"
).split()


def now_text() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


# -- the key -------------------------------------------------------------------------------------
def usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the system says, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_signature(cpuinfo: str | Path = "/proc/cpuinfo", cpus: int | None = None) -> str:
    """The CPU as far as engine speed goes: model name, the vector flags of :data:`SPEED_FLAGS` it has,
    and the usable CPUs, e.g. ``Intel(R) Xeon(R) Processor | avx2 avx512f | 2 cpu(s)``."""
    model, flags = "", set[str]()
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        name = name.strip()
        if name == "model name" and not model:
            model = value.strip()
        elif name in ("flags", "Features") and not flags:
            flags = set(value.split())
    model = model or platform.processor() or platform.machine() or "unknown CPU"
    found = [f for f in SPEED_FLAGS if f in flags]
    return f"{model} | {' '.join(found) if found else 'no avx2/avx512'} | {cpus or usable_cpus()} cpu(s)"


@dataclass(frozen=True)
class EngineKey:
    """What an engine's speed depends on; a stored rate is reused only for the very same key."""

    model_id: str
    engine: str  # the local engine ("minilm_onnx", ...) or the provider of a remote model
    version: str  # package versions and batch size (local), model name and endpoint host (remote)
    machine: str  # :func:`cpu_signature`, or :data:`REMOTE`

    @property
    def id(self) -> str:
        return f"{self.model_id} | {self.engine} | {self.version} | {self.machine}"

    @property
    def remote(self) -> bool:
        return self.machine == REMOTE


def _endpoint_host(url: str) -> str:
    """scheme://host:port/path of an endpoint, without any user or password in it."""
    parts = urlsplit(url)
    if not parts.hostname:
        return url.split("@")[-1]
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path.rstrip('/')}"


def engine_key(spec: Any, machine: str | None = None, variant: str = "", endpoint: str | None = None) -> EngineKey:
    """The key of a registry model (``EmbeddingModelSpec``) on this machine.

    Local: the engine's package versions (``embedding.local.engine_fingerprint``), its batch size and
    ``variant`` (e.g. a graph or engine option the model runs with), and :func:`cpu_signature`.
    Remote: the provider, model name and endpoint (``spec.base_url``, else ``endpoint``: the configured
    OpenAI-compatible URL; never a key or password).
    """
    if spec.provider == "local":
        from chunkbench_core.embedding.local import engine_fingerprint

        version = f"{engine_fingerprint(spec.engine)};batch={spec.batch_size}" + (f";{variant}" if variant else "")
        return EngineKey(spec.id, spec.engine, version, machine or cpu_signature())
    where = spec.base_url or endpoint or ("https://api.openai.com/v1" if spec.provider == "openai" else "unset")
    return EngineKey(spec.id, spec.provider, f"{spec.model_name}@{_endpoint_host(where)}", REMOTE)


# -- the rate ------------------------------------------------------------------------------------
def _number(name: str, value: Any, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise EstimateError(f"{name} must be a finite number >= 0, got {value!r}")
    if positive and value == 0:
        raise EstimateError(f"{name} must be > 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class EngineRate:
    """How long an engine takes: ``seconds = seconds_per_text · texts + seconds_per_token · engine tokens``."""

    key: EngineKey
    seconds_per_text: float
    seconds_per_token: float  # per token of the engine's own tokenizer
    tokens_per_cl100k: float = 1.0  # engine tokens per cl100k token, on the calibration texts
    warmup_seconds: float = 0.0  # the first call: loading the model (once per process)
    source: RateSource = "measured"
    texts_measured: int = 0
    seconds_measured: float = 0.0
    measured_at: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        _number("seconds_per_text", self.seconds_per_text)
        _number("seconds_per_token", self.seconds_per_token)
        _number("tokens_per_cl100k", self.tokens_per_cl100k, positive=True)
        _number("warmup_seconds", self.warmup_seconds)
        if self.seconds_per_text == 0 and self.seconds_per_token == 0:
            raise EstimateError(f"{self.key.model_id}: a rate needs a time per text or per token; both are 0")
        if self.source not in RATE_SOURCES:
            raise EstimateError(f"source must be one of {', '.join(RATE_SOURCES)}, got {self.source!r}")

    def seconds(self, texts: float, cl100k_tokens: float, tokens_per_cl100k: float | None = None) -> float:
        """Seconds to embed ``texts`` texts holding ``cl100k_tokens`` tokens in all (cl100k), converted to the
        engine's tokens with ``tokens_per_cl100k`` (a ratio measured on the corpus) or the calibration's."""
        ratio = self.tokens_per_cl100k if tokens_per_cl100k is None else tokens_per_cl100k
        return self.seconds_per_text * texts + self.seconds_per_token * cl100k_tokens * ratio

    def texts_per_second(self, cl100k_per_text: float) -> float:
        """Texts per second at ``cl100k_per_text`` tokens each."""
        one = self.seconds(1, cl100k_per_text)
        return math.inf if one == 0 else 1.0 / one

    @property
    def tokens_per_second(self) -> float:
        """Engine tokens per second, the per-text cost left out (the transformer's own speed)."""
        return math.inf if self.seconds_per_token == 0 else 1.0 / self.seconds_per_token

    def summary(self, cl100k_per_text: float = 150.0) -> str:
        text = (
            f"{self.key.model_id}: {self.texts_per_second(cl100k_per_text):,.1f} texts/s at "
            f"{cl100k_per_text:.0f} tokens, {self.tokens_per_second:,.0f} tokens/s ({self.source}"
        )
        return text + (f"; {self.note})" if self.note else ")")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "key": asdict(self.key)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EngineRate":
        fields = dict(data)
        key = EngineKey(**fields.pop("key"))
        return cls(key=key, **{k: v for k, v in fields.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class TimedBatch:
    """One timed call: texts, engine tokens fed, cl100k tokens of the same texts, seconds."""

    texts: int
    tokens: float
    cl100k_tokens: float
    seconds: float


def fit_time(batches: Sequence[TimedBatch]) -> tuple[float, float]:
    """(seconds_per_text, seconds_per_token) of the least-squares fit ``seconds ≈ a·texts + b·tokens`` with
    a, b >= 0 (when the free fit makes one negative, the best fit of the other alone is taken)."""
    usable = [b for b in batches if b.texts > 0 and b.seconds >= 0]
    if not usable:
        raise EstimateError("no timed batch to fit a rate on")
    sxx = sum(b.texts * b.texts for b in usable)
    syy = sum(b.tokens * b.tokens for b in usable)
    sxy = sum(b.texts * b.tokens for b in usable)
    sxs = sum(b.texts * b.seconds for b in usable)
    sys_ = sum(b.tokens * b.seconds for b in usable)

    def residual(a: float, b: float) -> float:
        return sum((a * x.texts + b * x.tokens - x.seconds) ** 2 for x in usable)

    candidates = [(sxs / sxx, 0.0)]
    if syy > 0:
        candidates.append((0.0, sys_ / syy))
    det = sxx * syy - sxy * sxy
    if syy > 0 and det > 1e-9 * sxx * syy:
        a, b = (sxs * syy - sys_ * sxy) / det, (sys_ * sxx - sxs * sxy) / det
        if a >= 0 and b >= 0:
            candidates.append((a, b))
    return min(candidates, key=lambda ab: residual(*ab))


def calibration_lengths(max_input_tokens: int) -> tuple[int, ...]:
    """The text lengths (cl100k tokens) to time a model with: :data:`CALIBRATION_LENGTHS` capped at 60 % of
    its window (engine tokens run above cl100k ones, and a truncated text would time the wrong length)."""
    cap = max(8, int(max_input_tokens * 0.6))
    return tuple(sorted({min(length, cap) for length in CALIBRATION_LENGTHS}))


def calibration_texts(length: int, count: int, seed: int = 0) -> list[str]:
    """``count`` distinct texts of about ``length`` cl100k tokens each (at least that many), the same on every
    machine and every run for the same arguments."""
    from chunkbench_core.tokens import count_tokens

    rng = random.Random(f"chunkbench-calibration:{length}:{seed}")
    texts = []
    for i in range(count):
        words: list[str] = [f"Item {seed}-{i}:"]
        text = words[0]
        while count_tokens(text) < length:
            sentence = [rng.choice(CALIBRATION_WORDS) for _ in range(rng.randint(6, 14))]
            sentence[0] = sentence[0].capitalize()
            words.extend(sentence)
            words[-1] += "."
            text = " ".join(words)
            if count_tokens(text) > length:  # trim back to the first word count that reaches the length
                while len(words) > 1 and count_tokens(" ".join(words[:-1])) >= length:
                    words.pop()
                text = " ".join(words)
        texts.append(text)
    return texts


#: embeds texts without any cache and returns the tokens the engine fed (0 when it cannot say)
EmbedProbe = Callable[[list[str]], int]


def embedder_probe(embedder: Any) -> EmbedProbe:
    """A probe of an ``Embedder``: documents embedded with ``use_cache=False`` (neither the embedding cache
    nor the engine's memory of this process is read or written), the tokens from its ``last_usage``."""
    from chunkbench_core import progress

    def probe(texts: list[str]) -> int:
        # the timing says itself what it does: its batches' embedding prints nothing unless one runs long
        with progress.inner("timing"):
            embedder.embed(texts, "document", use_cache=False)
        return int(embedder.last_usage.prompt_tokens or 0)

    return probe


def calibrate_engine(
    key: EngineKey,
    embed: EmbedProbe,
    *,
    max_input_tokens: int,
    batch_size: int = 32,
    budget_seconds: float = DEFAULT_BUDGET_SECONDS,
    clock: Callable[[], float] = time.perf_counter,
) -> EngineRate:
    """Time ``embed`` on the calibration texts and fit its rate (module rule).

    One warm-up call first (it loads the model: reported as ``warmup_seconds``, not fitted). Then rounds over
    the lengths, shortest first: the first with :data:`FIRST_ROUND_TEXTS` texts each, each next one with as
    many texts (up to ``batch_size``) as the time left in ``budget_seconds`` allows, at most
    :data:`MAX_ROUNDS`. A batch whose time, foreseen from the seconds per token so far, would overrun the
    budget is not started once two lengths are timed, and shrinks to one text before that (a slow engine
    stops early instead of running long).
    """
    from chunkbench_core.tokens import count_tokens

    budget = _number("budget_seconds", budget_seconds, positive=True)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise EstimateError(f"batch_size must be a positive integer, got {batch_size!r}")
    lengths = calibration_lengths(max_input_tokens)
    started = clock()
    embed(calibration_texts(8, 1, seed=-1))
    warmup = clock() - started
    batches: list[TimedBatch] = []
    n, spent, over = min(FIRST_ROUND_TEXTS, batch_size), 0.0, False
    for round_number in range(MAX_ROUNDS):
        round_seconds = 0.0
        for length in lengths:
            size = n
            if batches:
                per_token = spent / max(1.0, sum(b.cl100k_tokens for b in batches))
                if spent + per_token * n * length > budget:
                    if len({b.cl100k_tokens / b.texts for b in batches}) >= 2:
                        over = True
                        break
                    size = 1  # a second length is still needed for the fit: the smallest batch gives it
            texts = calibration_texts(length, size, seed=round_number)
            cl100k = float(sum(count_tokens(t) for t in texts))
            begin = clock()
            tokens = embed(texts)
            seconds = clock() - begin
            round_seconds += seconds
            spent += seconds
            batches.append(TimedBatch(len(texts), float(tokens) if tokens else cl100k, cl100k, seconds))
        if over:
            break
        left = budget - spent
        n = batch_size if round_seconds <= 0 else min(batch_size, int(n * left / round_seconds))
        if n < FIRST_ROUND_TEXTS:
            break
    per_text, per_token = fit_time(batches)
    if per_text == 0 and per_token == 0:  # a clock too coarse to see the calls
        per_token = max(spent, 1e-9) / max(1.0, sum(b.tokens for b in batches))
    ratio = sum(b.tokens for b in batches) / max(1.0, sum(b.cl100k_tokens for b in batches))
    return EngineRate(
        key,
        per_text,
        per_token,
        tokens_per_cl100k=ratio,
        warmup_seconds=warmup,
        source="measured",
        texts_measured=sum(b.texts for b in batches),
        seconds_measured=spent,
        measured_at=now_text(),
    )


def calibrate_embedder(
    embedder: Any, *, budget_seconds: float = DEFAULT_BUDGET_SECONDS, machine: str | None = None, variant: str = ""
) -> EngineRate:
    """:func:`calibrate_engine` on a local ``Embedder`` (its registry entry gives the key, window and batch)."""
    spec = embedder.spec
    if spec.provider != "local":
        raise EstimateError(
            f"{spec.id} is a remote model: its rate comes from recorded usage "
            "(rate_from_usage) or the provider's default (default_rate), never a paid probe"
        )
    return calibrate_engine(
        engine_key(spec, machine, variant),
        embedder_probe(embedder),
        max_input_tokens=spec.max_input_tokens,
        batch_size=spec.batch_size,
        budget_seconds=budget_seconds,
    )


def rate_from_usage(
    key: EngineKey, rows: Sequence[Mapping[str, Any]], min_texts: int = 20, tokens_per_cl100k: float = 1.0
) -> EngineRate | None:
    """The rate of a model fitted on its recorded ``embedding_usage`` rows (``embedded`` texts,
    ``prompt_tokens``, ``seconds``; rows of other models and rows that embedded nothing are left out), or
    None when fewer than ``min_texts`` texts were embedded in all. Tokens are the provider's; a provider
    that reports none gives a rate per text only."""
    usable = [
        r
        for r in rows
        if str(r.get("model_id", key.model_id)) == key.model_id
        and _count(r.get("embedded")) > 0
        and _count(r.get("seconds")) > 0
    ]
    texts = sum(_count(r.get("embedded")) for r in usable)
    if texts < min_texts:
        return None
    batches = [
        TimedBatch(
            int(_count(r.get("embedded"))),
            _count(r.get("prompt_tokens")),
            _count(r.get("prompt_tokens")) / tokens_per_cl100k,
            _count(r.get("seconds")),
        )
        for r in usable
    ]
    per_text, per_token = fit_time(batches)
    seconds = sum(b.seconds for b in batches)
    note = f"fitted on {len(usable)} recorded call(s)"
    if not any(b.tokens for b in batches):
        per_text, per_token, note = seconds / texts, 0.0, note + "; the provider reported no tokens: per text only"
    if per_text == 0 and per_token == 0:
        return None
    return EngineRate(
        key,
        per_text,
        per_token,
        tokens_per_cl100k=tokens_per_cl100k,
        source="recorded",
        texts_measured=int(texts),
        seconds_measured=seconds,
        measured_at=now_text(),
        note=note,
    )


def _count(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) and number > 0 else 0.0


def default_rate(key: EngineKey) -> EngineRate:
    """The conservative default of a remote provider (:data:`REMOTE_DEFAULTS`) before any recorded run."""
    per_text, tokens_per_second, ratio = REMOTE_DEFAULTS.get(key.engine, REMOTE_DEFAULTS["openai_compatible"])
    return EngineRate(
        key,
        per_text,
        1.0 / tokens_per_second,
        tokens_per_cl100k=ratio,
        source="default",
        note=f"a conservative default for {key.engine}: no run of this model recorded yet",
    )


# -- the file ------------------------------------------------------------------------------------
def _empty() -> dict[str, Any]:
    return {"format": FORMAT_VERSION, "engines": {}, "corrections": {}, "parse_rates": {}, "comparisons": []}


class CalibrationStore:
    """``calibration.json`` in a folder (chunkbench's home): engine rates, corrections, parsing rates.

    Writes are read-modify-write under a lock file and land atomically (a temporary file, then a
    rename), so parallel runs never leave half a file. A file that cannot be read is set aside as
    ``calibration.json.unreadable`` and ``problem`` says so: the calibration is measured again, nothing
    else depends on it.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.path = self.folder / CALIBRATION_FILE
        self.problem: str | None = None

    def __repr__(self) -> str:
        return f"CalibrationStore({str(self.path)!r})"

    def _load(self) -> tuple[dict[str, Any], str | None]:
        """(the file's content, or an empty one; why it could not be read, or None)."""
        if not self.path.exists():
            return _empty(), None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
                raise ValueError(f"not a calibration file of format {FORMAT_VERSION}")
        except (OSError, ValueError) as exc:
            return _empty(), (
                f"{self.path} could not be read ({exc}); the engines are calibrated again and "
                f"the old file is kept as {self.path.name}.unreadable"
            )
        return {**_empty(), **data}, None

    def read(self) -> dict[str, Any]:
        """The file's content (empty when it is missing or unreadable: ``problem`` then says why)."""
        data, problem = self._load()
        if problem:
            self.problem = problem
        return data

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.folder.mkdir(parents=True, exist_ok=True)
        lock = self.folder / f".{CALIBRATION_FILE}.lock"
        with open(lock, "a+b") as handle:
            try:
                import fcntl
            except ImportError:  # pragma: no cover - Windows: last writer wins
                yield
                return
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def update(self, change: Callable[[dict[str, Any]], Any]) -> Any:
        """Apply ``change`` to the file's content and write it back, under the lock; returns what it returned."""
        with self._locked():
            data, problem = self._load()
            if problem:
                self.problem = problem
                os.replace(self.path, self.path.with_name(f"{CALIBRATION_FILE}.unreadable"))
            result = change(data)
            tmp = self.path.with_name(f".{CALIBRATION_FILE}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.path)
        return result

    def rate(self, key: EngineKey) -> EngineRate | None:
        """The stored rate of exactly this key, or None."""
        raw = self.read()["engines"].get(key.id)
        if not raw:
            return None
        try:
            return EngineRate.from_dict(raw)
        except (TypeError, KeyError, EstimateError):
            return None

    def save_rate(self, rate: EngineRate) -> None:
        self.update(lambda data: data["engines"].__setitem__(rate.key.id, rate.to_dict()))

    def correction(self, key_id: str, stage: str) -> float:
        """The learnt correction of a stage of an engine (``key_id``: an :class:`EngineKey` id, or
        ``parsing``), 1.0 before any run was compared."""
        entry = self.read()["corrections"].get(key_id, {}).get(stage)
        try:
            value = float(entry["ratio"]) if entry else 1.0
        except (TypeError, KeyError, ValueError):
            return 1.0
        return value if math.isfinite(value) and value > 0 else 1.0

    def corrections(self) -> dict[str, dict[str, float]]:
        """{key id: {stage: correction}} of every learnt correction."""
        out: dict[str, dict[str, float]] = {}
        for key_id, stages in self.read()["corrections"].items():
            for stage, entry in (stages or {}).items():
                with contextlib.suppress(TypeError, KeyError, ValueError):
                    out.setdefault(key_id, {})[stage] = float(entry["ratio"])
        return out


def calibrated(
    store: CalibrationStore, key: EngineKey, measure: Callable[[], EngineRate], refresh: bool = False
) -> tuple[EngineRate, bool]:
    """(the rate of ``key``, whether it was reused): the stored one when there is one for this very key and
    ``refresh`` is off, else ``measure()``, saved for next time."""
    if not refresh:
        stored = store.rate(key)
        if stored is not None and stored.source == "measured":
            return stored, True
    rate = measure()
    if rate.key != key:
        rate = replace(rate, key=key)
    store.save_rate(rate)
    return rate, False


def remote_rate(store: CalibrationStore, key: EngineKey, usage_rows: Sequence[Mapping[str, Any]]) -> EngineRate:
    """A remote model's rate: fitted on its recorded usage (and saved) when there is enough of it, else the
    last recorded rate of this key, else the provider's conservative default."""
    fitted = rate_from_usage(key, usage_rows)
    if fitted is not None:
        store.save_rate(fitted)
        return fitted
    return store.rate(key) or default_rate(key)
