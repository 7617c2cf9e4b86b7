"""Run config of the assets, typed and described in the launchpad: made from the run's settings as the core
declares them (chunkbench_core.run_config), so the launchpad, ``chunkbench run``'s flags and its ``--config``
file always offer the same settings with the same types, defaults, bounds and descriptions.

``chunk_collections`` and ``experiment_results`` share the chunking settings: an experiment
names the collection it scores by them (a non-default value builds a collection of its own),
and fails at once when the collection on disk was built otherwise. The strategies' own options come
from the strategy registry (each strategy's typed options model), so a new strategy's options appear
here without a line here.
"""

from enum import Enum
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Optional, get_args, get_origin

from dagster import Config
from pydantic import BaseModel, Field, create_model

from chunkbench_core.run_config import (
    ChunkingMethods,
    ParsingMethods,
    ParsingSettings,
    chunking_settings,
    experiment_settings,
)


def _dagster_type(annotation: Any, name: str) -> Any:
    """A Literal of choices becomes an Enum (Dagster's config types); Optional stays Optional."""
    args = get_args(annotation)
    if get_origin(annotation) is Literal:
        return Enum(f"{name.title().replace('_', '')}Choice", {str(c): str(c) for c in args})
    if type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return Optional[_dagster_type(inner[0], name)] if len(inner) == 1 else annotation
    return annotation


def _enum_default(annotation: Any, default: Any) -> Any:
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, Enum) and default is not None:
            return candidate(default)
    return default


def dagster_config(model: type[BaseModel], methods: type, name: str) -> type[Config]:
    """A Dagster config class with the fields of ``model`` (types, defaults, bounds, descriptions) and ``methods``."""
    fields: dict[str, Any] = {}
    for field_name, info in model.model_fields.items():
        kind = _dagster_type(info.annotation, field_name)
        default = info.get_default(call_default_factory=True)
        bounds = {
            b: getattr(m, b) for m in info.metadata for b in ("ge", "gt", "le", "lt") if getattr(m, b, None) is not None
        }
        fields[field_name] = (kind, Field(default=_enum_default(kind, default), description=info.description, **bounds))
    return create_model(name, __base__=(Config, methods), __doc__=model.__doc__, **fields)


@lru_cache(maxsize=8)
def _configs(chunking: type[BaseModel], experiment: type[BaseModel]) -> tuple[type[Config], type[Config]]:
    return (
        dagster_config(chunking, ChunkingMethods, "ChunkerConfig"),
        dagster_config(experiment, ChunkingMethods, "ExperimentConfig"),
    )


def chunker_config() -> type[Config]:
    """The run config of ``chunk_collections``: sizes, window rule, boundary model and every strategy option,
    made from the strategy registry as it is now (a strategy registered later is in the next call's)."""
    return _configs(chunking_settings(), experiment_settings())[0]


def experiment_config() -> type[Config]:
    """The run config of ``experiment_results``: the chunking settings naming the collection, plus retrieval."""
    return _configs(chunking_settings(), experiment_settings())[1]


if TYPE_CHECKING:
    # what the type checker knows of the class made below (a class made at run time is no type to it): a Dagster
    # config with the parsing methods; the fields are ParsingSettings'
    class ParsingConfig(Config, ParsingMethods):
        pass
else:
    ParsingConfig = dagster_config(ParsingSettings, ParsingMethods, "ParsingConfig")


class ReportConfig(Config):
    """Which runs the reports show; both empty = the latest run of every configuration."""

    experiment_run_id: str = Field(
        default="",
        description="The reports of exactly this experiment run: its id or its first 8 characters or more "
        "(the run ids are listed by `chunkbench runs list` and on the decision board), "
        "written to reports/runs/run-<id>/ "
        "with a link back to the latest reports. Empty: the latest reports.",
    )
    batch: str = Field(
        default="",
        description="The reports of one batch: the runs of one `chunkbench run` or Dagster backfill "
        "(the batch column of `chunkbench runs list`), compared with each other only, "
        "written to reports/runs/batch-<id>/. Empty: the latest reports.",
    )
