"""What the settings in force give: the model registry, the corpus and boundary models in force, the providers'
settings, the benchmark's parser heuristics, the parse limits and the ranking.

The settings object (settings.py) sits at the bottom and imports nothing above it; each of these reads the
settings and builds an object of a floor above (embedding, parsing, storage, evaluation), so it lives here, where
both are below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chunkbench_core.settings import Settings

if TYPE_CHECKING:
    from chunkbench_core.embedding.registry import ModelRegistry
    from chunkbench_core.embedding.providers import ProviderSettings
    from chunkbench_core.embedding.roles import RoleDefault
    from chunkbench_core.embedding.thresholds import SharedDefaults
    from chunkbench_core.evaluation.recommendation import RankingSettings
    from chunkbench_core.parsing.heuristics import ParserHeuristics
    from chunkbench_core.parsing.isolation import ParseLimits

# each function imports what it builds when called: the command line imports this module on every start, and most
# commands need one of them at most (the ranking alone would load the statistics)

__all__ = [
    "corpus_model_default",
    "default_corpus_model",
    "parse_limits_of",
    "parser_heuristics_of",
    "provider_settings_of",
    "ranking_of",
    "registry_of",
    "role_defaults_of",
    "shared_defaults_of",
]


def registry_of(settings: Settings) -> "ModelRegistry":
    """The model registry in force: the shipped models plus the settings' ``models_file``."""
    from chunkbench_core.embedding.registry import registry_of as registry_in_force

    return registry_in_force(settings)


def shared_defaults_of(settings: Settings) -> "SharedDefaults":
    """The shared defaults (thresholds, boundary and corpus models) of the settings' results database (their
    benchmark's), with their registry."""
    from chunkbench_core.embedding.thresholds import THRESHOLDS_FILE, SharedDefaults
    from chunkbench_core.storage.results_db import ResultsDB

    return SharedDefaults(ResultsDB(settings.results_dir), settings.home / THRESHOLDS_FILE, registry_of(settings))


def role_defaults_of(settings: Settings) -> dict[str, "RoleDefault"]:
    """The corpus and boundary models in force when none is given, and where each comes from (by role):
    ``chunkbench defaults set``, the environment or the registry; the boundary model fitted to the language of the
    benchmark's parsed corpus."""
    from chunkbench_core.embedding.language import ScriptShare
    from chunkbench_core.embedding.roles import role_defaults
    from chunkbench_core.storage.corpus import parsed_store

    registry = registry_of(settings)
    shared = shared_defaults_of(settings)
    script = ScriptShare.from_dict(parsed_store(settings.results_dir).manifest_script())
    return role_defaults(registry, shared, settings.corpus_model, settings.boundary_model, script)


def corpus_model_default(settings: Settings) -> "RoleDefault":
    """The corpus model in force when none is given (model and source)."""
    return role_defaults_of(settings)["corpus_model"]


def default_corpus_model(settings: Settings) -> str:
    """The corpus model used where none is named (``chunkbench sweep``, the sweep jobs): the default in force
    (``chunkbench defaults set corpus_model``, the environment, else the registry's)."""
    return corpus_model_default(settings).model


def provider_settings_of(settings: Settings, **retries: Any) -> "ProviderSettings":
    """The embedding providers' settings (keys and endpoints; ``retries``: the request retry knobs)."""
    from chunkbench_core.embedding.providers import ProviderSettings

    knobs = {
        "timeout_seconds": settings.provider_timeout,
        "retry_budget_seconds": settings.provider_retry_budget,
        **{k: v for k, v in retries.items() if v is not None},
    }
    return ProviderSettings(
        openai_api_key=settings.openai_api_key,
        openai_base_url=settings.openai_base_url,
        compatible_base_url=settings.compatible_url,
        compatible_api_key=settings.compatible_api_key,
        **knobs,
    )


def parser_heuristics_of(settings: Settings) -> "ParserHeuristics":
    """The parser heuristics in force: the benchmark's ``parser.toml`` when it exists, else the defaults (raises
    ConfigError naming the file, section and key of a bad value)."""
    from chunkbench_core.parsing.heuristics import ParserHeuristics, load_parser_heuristics

    path = settings.parser_settings_file
    return load_parser_heuristics(path) if path.is_file() else ParserHeuristics()


def parse_limits_of(settings: Settings) -> "ParseLimits":
    """What one document may cost to parse (raises ConfigError naming the variable for a bad value)."""
    from chunkbench_core.parsing.isolation import parse_limits

    return parse_limits(settings.parse_memory_mb, settings.parse_timeout_s)


def ranking_of(settings: Settings) -> "RankingSettings":
    """How results are ranked and which configuration is recommended."""
    from chunkbench_core.evaluation.recommendation import RankingSettings

    return RankingSettings.from_text(
        settings.rank_metric,
        settings.recommendation_rule,
        settings.budgets,
        settings.margin,
        settings.cost_tolerance,
        settings.interchangeable_share,
    )
