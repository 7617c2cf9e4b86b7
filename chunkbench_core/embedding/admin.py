"""What ``chunkbench models`` and the provider part of ``chunkbench health`` print.

Plain functions over the registry and ProviderSettings; the CLI formats nothing
beyond ``json.dumps`` of what these return.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.redaction import describe_error, redact

from .providers import ProviderSettings, availability
from .registry import ModelRegistry, model_registry
from .thresholds import SharedDefaults


@dataclass(frozen=True)
class HealthCheck:
    component: str  # e.g. "qdrant", "duckdb", "provider:local:minilm_onnx", "provider:openai"
    ok: bool
    detail: str
    milliseconds: float = 0.0
    configured: bool = True  # False: a remote provider nobody set up (not a failure of the installation)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def models_report(
    settings: ProviderSettings,
    registry: ModelRegistry | None = None,
    shared: SharedDefaults | None = None,
    in_force: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One row per registered model: id, provider, dimension, languages, available, reason, and the rest of its
    entry (``semantic_threshold``: the one in force, with the overrides of ``shared``); ``in_force``: the role
    defaults in force (embedding.roles.role_defaults), shown as each model's ``in_force_as`` {role: source}."""
    registry = registry if registry is not None else model_registry()
    overrides = shared.thresholds() if shared is not None else {}
    rows = []
    for spec in registry.values():
        roles = {role: d.source for role, d in (in_force or {}).items() if d.model == spec.id}
        ok, reason = availability(spec, settings)
        rows.append(
            {
                "id": spec.id,
                "provider": spec.provider,
                "dimension": spec.dimension,
                "available": ok,
                "reason": reason,
                "model_name": spec.model_name,
                "engine": spec.engine or None,
                "max_input_tokens": spec.max_input_tokens,
                "document_prefix": spec.document_prefix,
                "query_prefix": spec.query_prefix,
                "batch_size": spec.batch_size,
                "semantic_threshold": overrides.get(spec.id, spec.default_semantic_threshold),
                "default_semantic_threshold": spec.default_semantic_threshold,
                "default_corpus_model": spec.id == registry.default_corpus_model,
                "default_boundary_model": spec.id == registry.default_boundary_model,
                "languages": list(spec.languages),
                "in_force_as": roles,
                "source": spec.source,
            }
        )
    return rows


def models_table(rows: list[dict[str, Any]], in_force: Mapping[str, Any]) -> str:
    """What ``chunkbench models`` prints: the models in force for each role and where each comes from, then one
    line per model (id, provider, languages, available or why not)."""
    lines = ["defaults in force:"]
    for role, default in in_force.items():
        lines.append(f"  {role:<15} {default.model}  ({default.source}: {default.detail})")
        if default.warning:
            lines.append(f"  {'':<15} warning: {default.warning}")
    lines += ["", "models:"]
    width = max(len(r["id"]) for r in rows) if rows else 0
    for r in rows:
        roles = ", ".join(r["in_force_as"])
        state = "available" if r["available"] else f"not available: {r['reason']}"
        languages = ", ".join(r["languages"]) or "languages not declared"
        lines.append(
            f"  {r['id']:<{width}}  {r['provider']:<17} {languages:<13} {state}" + (f"  [{roles}]" if roles else "")
        )
    return "\n".join(lines)


def models_jsonl(
    settings: ProviderSettings,
    registry: ModelRegistry | None = None,
    shared: SharedDefaults | None = None,
    in_force: Mapping[str, Any] | None = None,
) -> str:
    """``models_report`` as JSON lines (what ``chunkbench models --json`` prints)."""
    return "\n".join(json.dumps(row, ensure_ascii=False) for row in models_report(settings, registry, shared, in_force))


def _timed(component: str, probe) -> HealthCheck:
    started = time.perf_counter()
    try:
        detail = probe()
        ok = True
    except ChunkbenchError as exc:
        ok, detail = False, redact(str(exc))
    except Exception as exc:  # a health check reports every failure, it never raises
        ok, detail = False, describe_error(exc)
    return HealthCheck(component, ok, detail, round((time.perf_counter() - started) * 1000, 1))


def provider_checks(
    settings: ProviderSettings, registry: ModelRegistry | None = None, probe: bool = True, timeout_seconds: float = 10.0
) -> list[HealthCheck]:
    """One check per configured provider: each local engine in use, OpenAI, each OpenAI-compatible server.

    With ``probe`` a local engine embeds one word and a remote endpoint is asked for its
    model list (no tokens spent); without it only the configuration is checked.
    Remote providers nobody configured are reported with ``configured=False`` (and ok=False, with
    the reason): not an error of the installation.
    """
    registry = registry if registry is not None else model_registry()
    checks: list[HealthCheck] = []
    engines: dict[str, Any] = {}
    remote: dict[tuple[str, str | None], Any] = {}
    for spec in registry.values():
        if spec.provider == "local":
            engines.setdefault(spec.engine, spec)
        elif spec.provider == "openai":
            remote.setdefault(("openai", settings.openai_base_url), spec)
        else:
            remote.setdefault(("openai_compatible", settings.compatible_url_for(spec)), spec)
    for engine, spec in engines.items():

        def check_local(spec=spec, engine=engine) -> str:
            ok, reason = availability(spec, settings)
            if not ok:
                raise ChunkbenchError(reason)
            if probe:
                from .local import LocalEngine

                result = LocalEngine(spec).embed(spec.apply_prefix(["health check"], "query"), "query")
                return f"{engine} embeds ({result.vectors.shape[1]} dimensions), used by {spec.id}"
            return reason

        checks.append(_timed(f"provider:local:{engine}", check_local))
    for (provider, url), spec in remote.items():
        component = f"provider:{provider}" + (f":{url}" if provider == "openai_compatible" and url else "")
        ok, reason = availability(spec, settings)
        if not ok:
            checks.append(HealthCheck(component, False, reason, configured=False))
            continue

        def check_remote(spec=spec, provider=provider, url=url, reason=reason) -> str:
            if not probe:
                return reason
            import openai

            from chunkbench_core.provider_faults import RetryPolicy, Server, Tried, classify, give_up

            key = settings.openai_api_key if provider == "openai" else (settings.compatible_api_key or "not-needed")
            server = (
                Server("embedding", url, spec.model_name)
                if provider == "openai"
                else Server(
                    "embedding",
                    url,
                    spec.model_name,
                    "CHUNKBENCH_OPENAI_COMPATIBLE_API_KEY",
                    "CHUNKBENCH_OPENAI_COMPATIBLE_URL",
                )
            )
            client = openai.OpenAI(api_key=key, base_url=url, max_retries=0, timeout=timeout_seconds)
            asked = time.perf_counter()
            try:
                names = [m.id for m in client.models.list()]
            except openai.OpenAIError as exc:  # one probe, not retried: the provider's own one line
                raise give_up(
                    server,
                    classify(exc),
                    RetryPolicy(max_retries=0, timeout_seconds=timeout_seconds),
                    Tried(1, [], time.perf_counter() - asked),
                ) from None
            finally:
                client.close()
            served = "serves" if spec.model_name in names else "does not list"
            return f"{url or 'the OpenAI API'} answers; it {served} {spec.model_name} ({len(names)} model(s))"

        checks.append(_timed(component, check_remote))
    return checks
