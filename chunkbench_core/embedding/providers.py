"""Embedding providers: the local ONNX model and OpenAI / OpenAI-compatible endpoints.

``Embedder`` is what the rest of chunkbench calls: it applies the model's task
prefix exactly once (ADR-0004's invariant) and batches. Remote calls go through
the official ``openai`` client (its own retry and backoff on 429/5xx/timeouts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from chunkbench_core.errors import EmbeddingError

from .registry import EmbeddingModelSpec, Purpose


@dataclass(frozen=True)
class ProviderSettings:
    """Where remote providers are; secrets arrive here from the pipeline's resources."""

    openai_api_key: str | None = None
    openai_base_url: str | None = None
    compatible_base_url: str | None = None
    compatible_api_key: str | None = None
    max_retries: int = 5
    timeout_seconds: float = 60.0

    def __repr__(self) -> str:  # never print secrets
        return (
            f"ProviderSettings(openai_api_key={'set' if self.openai_api_key else None}, "
            f"openai_base_url={self.openai_base_url!r}, compatible_base_url={self.compatible_base_url!r})"
        )


def availability(spec: EmbeddingModelSpec, settings: ProviderSettings) -> tuple[bool, str]:
    """Whether ``spec`` can be used with ``settings``, and if not, why (an actionable reason)."""
    if spec.provider == "local":
        return True, "local model, runs offline"
    if spec.provider == "openai":
        if not settings.openai_api_key:
            return False, f"{spec.id} needs OPENAI_API_KEY (OpenAI provider) and it is not set"
        return True, "OpenAI API key configured"
    if not settings.compatible_base_url:
        return False, (
            f"{spec.id} needs an OpenAI-compatible server: set CHUNKBENCH_OPENAI_COMPATIBLE_URL "
            "(e.g. http://127.0.0.1:11434/v1 for Ollama)"
        )
    return True, f"OpenAI-compatible server at {settings.compatible_base_url}"


class Embedder:
    """Embeds texts with one registry model; vectors are L2-normalised float32 rows."""

    def __init__(self, spec: EmbeddingModelSpec, settings: ProviderSettings | None = None) -> None:
        self.spec = spec
        self.settings = settings or ProviderSettings()
        ok, reason = availability(spec, self.settings)
        if not ok:
            raise EmbeddingError(reason)
        self._local = None
        self._client = None
        if spec.provider == "local":
            from .local_onnx import shared_minilm

            self._local = shared_minilm()
        else:
            import openai

            if spec.provider == "openai":
                key, base = self.settings.openai_api_key, self.settings.openai_base_url
            else:
                key, base = self.settings.compatible_api_key or "not-needed", self.settings.compatible_base_url
            self._client = openai.OpenAI(
                api_key=key, base_url=base, max_retries=self.settings.max_retries, timeout=self.settings.timeout_seconds
            )

    def embed(self, texts: list[str], purpose: Purpose) -> np.ndarray:
        prepared = self.spec.apply_prefix(list(texts), purpose)
        if self._local is not None:
            return self._local.embed(prepared, batch_size=self.spec.batch_size)
        return self._embed_remote(prepared)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text], "query")[0]

    def _embed_remote(self, texts: list[str]) -> np.ndarray:
        import openai

        out = np.zeros((len(texts), self.spec.dimension), dtype=np.float32)
        for begin in range(0, len(texts), self.spec.batch_size):
            batch = texts[begin : begin + self.spec.batch_size]
            try:
                response = self._client.embeddings.create(model=self.spec.model_name, input=batch)  # type: ignore[union-attr]
            except openai.OpenAIError as exc:
                raise EmbeddingError(f"{self.spec.id}: embedding request failed after retries: {exc}") from exc
            rows = np.asarray([d.embedding for d in sorted(response.data, key=lambda d: d.index)], dtype=np.float32)
            if rows.shape != (len(batch), self.spec.dimension):
                raise EmbeddingError(
                    f"{self.spec.id}: provider returned vectors of shape {rows.shape}, "
                    f"registry says dimension {self.spec.dimension}"
                )
            out[begin : begin + len(batch)] = rows
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
