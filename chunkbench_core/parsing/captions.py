"""Caption sources for embedded images: a vision LLM describes them now, a self-hosted OCR may later.

A caption source is any callable ``bytes -> str`` (``ParseOptions.caption_source``),
so the vision call is swappable (another engine is another callable). This module builds one for an
OpenAI-compatible chat endpoint that accepts images (OpenAI itself, or a local
server speaking the same API): the image is sent inline as a base64 data URL with
a short instruction to describe or transcribe it.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import replace
from typing import Any

from chunkbench_core.errors import ConfigError
from chunkbench_core.parsing.options import CaptionSource
from chunkbench_core.provider_faults import RetryPolicy

DEFAULT_PROMPT = (
    "Describe this image for a search index. Transcribe any text in it exactly, in its own language. "
    "Answer with the description only."
)


def image_mime(data: bytes) -> str:
    """MIME type of common image formats from their first bytes (PNG, JPEG, GIF, WebP, BMP, TIFF)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"BM"):
        return "image/bmp"
    if data.startswith((b"II*\x00", b"MM\x00*")):
        return "image/tiff"
    return "application/octet-stream"


def openai_vision_captioner(
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    prompt: str = DEFAULT_PROMPT,
    max_tokens: int = 300,
    policy: RetryPolicy | None = None,
    client: Any | None = None,
) -> CaptionSource:
    """A caption source calling ``chat.completions`` of an OpenAI-compatible endpoint.

    ``client`` may be given (an ``openai.OpenAI`` or anything with the same
    ``chat.completions.create``); otherwise one is made from ``base_url`` and
    ``api_key`` (the settings give the LLM's key: ``CHUNKBENCH_LLM_API_KEY``, else ``OPENAI_API_KEY``).
    Every request goes through :func:`chunkbench_core.provider_faults.call` like the answers and the judge:
    ``policy``'s request timeout and retry budget are CHUNKBENCH_PROVIDER_TIMEOUT_S and
    CHUNKBENCH_PROVIDER_RETRY_BUDGET_S (None: their defaults); a refusal stops at once, a transient failure is
    retried within the budget, and what fails for good raises a ProviderError in one line (the parser keeps the
    document and says it in a warning). Once the endpoint failed for good, the next images fail with the same line
    without a request: each would fail alike, after the whole budget.
    """
    from chunkbench_core.errors import ProviderError
    from chunkbench_core.evaluation.llm import LLMSettings, _complete, make_client

    if not model or not isinstance(model, str):
        raise ConfigError("openai_vision_captioner: model must be a non-empty model name, e.g. 'gpt-4o-mini'")
    if max_tokens <= 0:
        raise ConfigError("openai_vision_captioner: max_tokens must be positive")
    settings = LLMSettings(model=model, temperature=0.0)
    if policy is not None:  # its timeout and budget were checked where it was built
        settings = replace(settings, timeout_seconds=policy.timeout_seconds, retry_budget_seconds=policy.budget_seconds)
    if client is None:
        try:
            import openai  # noqa: F401 - only to say what is missing
        except ImportError:
            raise ConfigError("openai_vision_captioner needs the 'openai' package: pip install openai") from None
        client = make_client(base_url, api_key, settings.timeout_seconds, max_retries=0)
    failure: list[ProviderError] = []

    def caption(image: bytes) -> str:
        if failure:
            raise failure[0]
        data_url = f"data:{image_mime(image)};base64,{base64.b64encode(image).decode('ascii')}"
        messages: list[Any] = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": prompt},
                    {"type": "image_url", "image_url": {"url": data_url}},
                ],
            }
        ]
        try:
            text, _finish, _usage, _ms = _complete(client, settings, messages, max_tokens, json_mode=False)
        except ProviderError as exc:
            failure.append(exc)
            raise
        return text.strip()

    # what makes its captions what they are (no secret): stored parses are keyed by it
    prompt_digest = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    caption.caption_id = f"openai-vision:{model}@{base_url or 'openai'}:{prompt_digest}:{max_tokens}"  # type: ignore[attr-defined]  # the captioner's identity, read by the parse cache key
    return caption
