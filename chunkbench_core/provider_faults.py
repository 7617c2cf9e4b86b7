"""How a call to a remote provider (an embedding server, the chat LLM) is retried, and what its failure says.

Every request to an OpenAI or OpenAI-compatible server goes through :func:`call`, which

1. sends the request with a timeout (``RetryPolicy.timeout_seconds``, cut to what is left of the budget);
2. sorts a failure with :func:`classify`: permanent (401, 403, 404, other 4xx, a quota used up: 429 with
   ``insufficient_quota``) or transient (a timeout, a refused connection, 408, 409, 429, 5xx, a malformed
   reply);
3. stops at once on a permanent one; retries a transient one with exponential backoff and jitter,
   waiting at least what the server's Retry-After asks, while the total retry budget
   (``RetryPolicy.budget_seconds``, counted from the first request) and the count of retries allow;
4. then raises :class:`~chunkbench_core.errors.ProviderError` whose message is one line: which server
   (role, host, model), what it said (status, the provider's own message, redacted), what was tried
   (attempts, waits, time) and what to do.

A transient failure that outlived the retries is final too: the budget is the total a run spends on one
request, so nothing retries it again (a step's retry policy would multiply the wait).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar
from urllib.parse import urlsplit

from chunkbench_core.errors import ConfigError, ProviderError
from chunkbench_core.redaction import redact

T = TypeVar("T")

#: the environment variables that set the policy (read by chunkbench_core.settings)
TIMEOUT_VARIABLE = "CHUNKBENCH_PROVIDER_TIMEOUT_S"
BUDGET_VARIABLE = "CHUNKBENCH_PROVIDER_RETRY_BUDGET_S"
#: a request that gets no answer in this many seconds is given up (and retried while the budget allows);
#: all the attempts of one request, waits included, end within about the budget. The same numbers as the
#: settings' defaults (chunkbench_core.settings, which imports nothing of this module; a test holds them equal)
DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_BUDGET_SECONDS = 60.0
DEFAULT_MAX_RETRIES = 5
#: the shortest timeout a last attempt is given (below it, the budget is spent)
MIN_ATTEMPT_SECONDS = 1.0
RETRYABLE_STATUS = frozenset({408, 409, 429})


@dataclass(frozen=True)
class RetryPolicy:
    """How one request is retried: attempts after the first, each request's timeout, the total budget (seconds
    from the first request to the last answer, waits included) and the backoff."""

    max_retries: int = DEFAULT_MAX_RETRIES
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    budget_seconds: float = DEFAULT_BUDGET_SECONDS
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 30.0

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ConfigError(f"max_retries must be a whole number >= 0, got {self.max_retries!r}")
        for name in ("timeout_seconds", "budget_seconds", "backoff_initial_seconds", "backoff_max_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ConfigError(f"{name} must be a number of seconds >= 0, got {value!r}")
        if not self.timeout_seconds > 0:
            raise ConfigError(f"{TIMEOUT_VARIABLE} (the request timeout) must be more than 0 seconds")
        if not self.budget_seconds > 0:
            raise ConfigError(f"{BUDGET_VARIABLE} (the retry budget) must be more than 0 seconds")

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (0 first): exponential, with jitter (half to all of it)."""
        base = min(self.backoff_max_seconds, self.backoff_initial_seconds * (2**retry))
        return base * (0.5 + random.random() / 2)


@dataclass(frozen=True)
class Server:
    """The server a request goes to, as the user knows it: role ("embedding", "LLM"), URL (None: OpenAI's API),
    model, and the variables that set its key and its URL (named in the fix)."""

    role: str
    url: str | None
    model: str
    key_variable: str = "OPENAI_API_KEY"
    url_variable: str = "OPENAI_BASE_URL"

    @property
    def host(self) -> str:
        if not self.url:
            return "api.openai.com"
        parts = urlsplit(self.url)
        return parts.netloc.rsplit("@", 1)[-1] or self.url  # never a user:password before the host

    def describe(self) -> str:
        return f"{self.role} server {self.host} (model {self.model})"


class MalformedResponse(Exception):
    """The server answered, but not with what the OpenAI API says (no JSON, missing fields, wrong shapes)."""


@dataclass(frozen=True)
class Fault:
    """One failed attempt, sorted: ``kind`` (auth, forbidden, not_found, quota, rate_limit, timeout, connection,
    server, malformed, refused), the HTTP status, the provider's own message (redacted), whether a retry can help,
    and the Retry-After the server asked for."""

    kind: str
    said: str
    status: int | None = None
    permanent: bool = False
    retry_after: float | None = None


def _provider_message(exc: BaseException) -> tuple[str, str | None]:
    """The provider's own message and error code from an openai APIStatusError."""
    body = getattr(exc, "body", None)
    code = getattr(exc, "code", None)
    message = None
    if isinstance(body, dict):
        error = body.get("error")
        inner = error if isinstance(error, dict) else body
        message = inner.get("message") or inner.get("detail")
        code = code or inner.get("code") or inner.get("type")
    elif isinstance(body, str) and body.strip():
        message = body
    if not message:
        message = getattr(exc, "message", None) or str(exc)
    text = " ".join(redact(str(message)).split())
    # a code worth saying is a word (insufficient_quota); a number repeats the status
    code = str(code) if code and not str(code).isdigit() else None
    return (text[:300] + "..." if len(text) > 300 else text), code


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw = headers.get("retry-after-ms")
    try:
        if raw is not None:
            return max(0.0, float(raw) / 1000)
        raw = headers.get("retry-after")
        return max(0.0, float(raw)) if raw is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: backoff alone


def classify(exc: BaseException) -> Fault:
    """What one failed attempt was, and whether a retry can help."""
    import openai

    if isinstance(exc, MalformedResponse):
        return Fault("malformed", f"answered with a malformed response ({redact(str(exc))[:200]})")
    if isinstance(exc, (json.JSONDecodeError, openai.APIResponseValidationError)):
        return Fault("malformed", f"answered with a malformed response ({redact(str(exc))[:200]})")
    if isinstance(exc, openai.APITimeoutError):
        return Fault("timeout", "did not answer in time")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f" ({redact(str(cause))[:160]})" if cause is not None and str(cause) else ""
        return Fault("connection", f"could not be reached{detail}")
    if isinstance(exc, openai.APIStatusError):
        status = int(exc.status_code)
        message, code = _provider_message(exc)
        said = f"answered HTTP {status}: {message}" + (f" ({code})" if code and code not in message else "")
        if status == 429 and code in ("insufficient_quota", "billing_hard_limit_reached"):
            return Fault("quota", said, status, permanent=True)
        if status in RETRYABLE_STATUS or status >= 500:
            return Fault("rate_limit" if status == 429 else "server", said, status, retry_after=_retry_after(exc))
        kind = {401: "auth", 403: "forbidden", 404: "not_found"}.get(status, "refused")
        return Fault(kind, said, status, permanent=True)
    return Fault("refused", f"failed: {type(exc).__name__}: {redact(str(exc))[:200]}", permanent=True)


def fix_for(fault: Fault, server: Server, policy: RetryPolicy) -> str:
    """What the user can do about ``fault``."""
    where = f"{server.url} ({server.url_variable})" if server.url else "the OpenAI API"
    return {
        "auth": f"check the key in {server.key_variable}",
        "forbidden": f"the key in {server.key_variable} may not use this model: check its permissions, or switch model",
        "not_found": f"check the model name and the server URL {where}, or switch model",
        "quota": "the quota is used up: raise it (the provider's billing page) or switch model",
        "rate_limit": (
            f"the server limits the request rate: wait and run again, lower CHUNKBENCH_PROVIDER_POOL_LIMIT, "
            f"or raise {BUDGET_VARIABLE} (now {_seconds(policy.budget_seconds)})"
        ),
        "timeout": (
            f"check that the server at {where} is up; if it is only slow, raise {TIMEOUT_VARIABLE} "
            f"(now {_seconds(policy.timeout_seconds)})"
        ),
        "connection": f"check that the server runs and that {where} is right",
        "server": f"the server is failing: run again later, or raise {BUDGET_VARIABLE} (now {_seconds(policy.budget_seconds)})",
        "malformed": f"check that {where} is an OpenAI-compatible /v1 endpoint serving this model",
        "refused": "check the request's settings for this model (batch size, input tokens) or switch model",
    }.get(fault.kind, "run again later")


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


@dataclass(frozen=True)
class Tried:
    """What was tried before giving up: how many attempts, the waits between them and the seconds it all took."""

    attempts: int
    waits: Sequence[float]
    elapsed: float


def give_up(
    server: Server,
    fault: Fault,
    policy: RetryPolicy,
    tried_so_far: Tried,
    why: str = "",
    error: type[ProviderError] = ProviderError,
) -> ProviderError:
    """The one-line error of a request that failed for good."""
    attempts, waits, elapsed = tried_so_far.attempts, tried_so_far.waits, tried_so_far.elapsed
    if fault.permanent:
        tried = (
            "not retried: the same request fails the same way"
            if attempts == 1
            else f"stopped after {attempts} attempts: the same request fails the same way"
        )
    else:
        waited = f", waiting {', '.join(_seconds(w) for w in waits)}" if waits else ""
        tried = f"tried {attempts} time{'s' if attempts != 1 else ''} in {_seconds(elapsed)}{waited}{why}"
    message = f"{server.describe()} {fault.said}; {tried}; {fix_for(fault, server, policy)}"
    return error(" ".join(message.split()), kind=fault.kind, status=fault.status)


def call(
    server: Server,
    policy: RetryPolicy,
    request: Callable[[float], T],
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    on_retry: Callable[[Fault], None] | None = None,
    error: type[ProviderError] = ProviderError,
) -> T:
    """``request(timeout)``'s result, retried as the module docstring says; ProviderError when it fails for good.

    ``request`` raises what the openai client raises, or MalformedResponse for a reply it cannot use.
    ``on_retry`` is told of every retry (usage counters); ``error``: the ProviderError class raised."""
    started = clock()
    waits: list[float] = []
    attempt = 0
    while True:
        attempt += 1
        left = policy.budget_seconds - (clock() - started)
        # never longer than the setting; cut to what is left of the budget, but not below a usable minimum
        timeout = min(policy.timeout_seconds, max(left, MIN_ATTEMPT_SECONDS))
        try:
            return request(timeout)
        except BaseException as exc:
            if not isinstance(exc, Exception):
                raise  # a stop request, Ctrl-C: never a provider's fault
            try:
                fault = classify(exc)
            except Exception:  # noqa: BLE001 - classifying must not hide the error
                raise exc from None
            if fault.kind == "timeout":
                fault = Fault("timeout", f"did not answer within {_seconds(timeout)}")
        elapsed = clock() - started
        if fault.permanent:
            raise give_up(server, fault, policy, Tried(attempt, waits, elapsed), error=error) from None
        if attempt > policy.max_retries:
            raise give_up(
                server,
                fault,
                policy,
                Tried(attempt, waits, elapsed),
                f" ({policy.max_retries} {'retry' if policy.max_retries == 1 else 'retries'} allowed)",
                error,
            ) from None
        wait = policy.backoff(attempt - 1)
        if fault.retry_after is not None:
            wait = max(wait, fault.retry_after)  # never sooner than the server asked
        left = policy.budget_seconds - elapsed
        if wait + MIN_ATTEMPT_SECONDS > left:
            asked = (
                f"; the server asked to wait {_seconds(fault.retry_after)}"
                if fault.retry_after is not None and fault.retry_after >= wait
                else ""
            )
            raise give_up(
                server,
                fault,
                policy,
                Tried(attempt, waits, elapsed),
                f" (the retry budget {BUDGET_VARIABLE} of {policy.budget_seconds:g} s was spent{asked})",
                error,
            ) from None
        if on_retry is not None:
            on_retry(fault)
        waits.append(wait)
        sleep(wait)


@dataclass
class Attempts:
    """A tally of retries, for the callers that count them (usage rows)."""

    retries: int = 0
    faults: list[str] = field(default_factory=list)

    def __call__(self, fault: Fault) -> None:
        self.retries += 1
        self.faults.append(fault.kind)
