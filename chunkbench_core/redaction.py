"""The one redaction function every error text from a provider or an LLM passes through.

Providers echo credentials in their errors: OpenAI's 401 says "Incorrect API key provided: sk-abc1****wxyz",
proxies repeat the Authorization header. An error text is logged, stored (Parquet, DuckDB, the Dagster
event log) and rendered (reports, the terminal), so it is cleaned once, where it is made:
:func:`redact` removes

* every configured secret (the settings object registers the values of the variables in
  :data:`SECRET_ENV_VARS` when it is built; any value given to :func:`register_secret` or passed in
  ``secrets``), wherever it appears;
* anything shaped like a key: ``sk-...`` (OpenAI style, masked or not), ``Bearer <token>``, and
  ``api_key=...`` / ``"api-key": "..."`` / ``token=...`` / ``password=...`` values.

:func:`describe_error` is the usual entry: the exception's type and message (with the HTTP status when
there is one), redacted.
"""

from __future__ import annotations

import re
from typing import Iterable

REDACTED = "[redacted]"

#: Environment variables holding credentials; their values are removed from every error text (registered by
#: ``chunkbench_core.settings.Settings.load``).
SECRET_ENV_VARS: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "CHUNKBENCH_LLM_API_KEY",
    "CHUNKBENCH_OPENAI_COMPATIBLE_API_KEY",
    "QDRANT_API_KEY",
)

_registered: set[str] = set()

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # OpenAI-style keys, also as OpenAI masks them in a 401 (sk-proj-abcd********wxyz)
    (re.compile(r"\bsk-[A-Za-z0-9_\-*.]{8,}"), REDACTED),
    # Authorization headers
    (re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9_\-.+/=~*]{8,}"), rf"\1 {REDACTED}"),
    # key=value, "key": "value", key: value
    (
        re.compile(
            r"(?i)((?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
            r"[^\s\"',;&}]{4,}"
        ),
        rf"\1{REDACTED}",
    ),
)


def register_secret(value: str | None) -> None:
    """Remember a secret (values under 4 characters are ignored, and so is a reference to a secret that is not its
    value: a subclass of str such as Dagster's EnvVar, which holds the variable's name)."""
    if type(value) is str and len(value) >= 4:
        _registered.add(value)


def _configured(extra: Iterable[str | None]) -> list[str]:
    values = set(_registered) | {v or "" for v in extra}
    # longest first, so a key that contains another is removed whole
    return sorted((v for v in values if len(v) >= 4 and v.strip() not in ("not-needed", "none")), key=len, reverse=True)


def redact(text: str | None, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without configured secrets or anything shaped like a key (see the module docstring)."""
    if not text:
        return text or ""
    for secret in _configured(secrets):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def describe_error(exc: BaseException, limit: int | None = None) -> str:
    """``"HTTP 401 AuthenticationError: <message>"`` (status when the exception has one), redacted, cut at ``limit``.
    A provider's failure is its own one line (the server, what it said, what was tried, what to do), as it is."""
    from chunkbench_core.errors import ProviderError

    if isinstance(exc, ProviderError):
        return redact(" ".join(str(exc).split()))
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    message = redact(str(exc).strip()) or kind
    if limit is not None and len(message) > limit:
        message = message[:limit] + "..."
    return f"HTTP {status} {kind}: {message}" if status else f"{kind}: {message}"
