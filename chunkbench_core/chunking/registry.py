"""The strategy registry: a strategy is one module whose chunker class is registered with a decorator.

::

    class MyOptions(StrategyOptions):
        stride: int = Field(2, ge=1, description="sentences between two cuts")

    @register_strategy("my_strategy", options=MyOptions, description="cuts every few sentences",
                       capabilities=Capabilities(sweepable=True))
    class MyChunker(Chunker):
        def spans(self, text, tokens): ...

Everything the rest of chunkbench knows about a strategy comes from its registration: the partition
keys (``STRATEGIES.names()``), the run config and the command-line flags (the options models), the
options recorded in a collection's provenance (those the strategy takes), the reports' one-line
description, the sweeps (``sweepable``), what a collection build must provide (a boundary model, an
LLM context source) and how retrieval treats the chunks (neighbor expansion, parent context).

Options are typed (a pydantic model per strategy): each has its default, its bounds and its
description in one place; ``chunk_size``, ``chunk_overlap`` and the model window are not options,
every strategy takes them. A value outside the declared bounds is refused where the chunker is built,
with a message naming the option and what is allowed.
"""

from __future__ import annotations

import importlib
import pkgutil
import typing
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal, Mapping, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.fields import FieldInfo

from chunkbench_core.errors import ChunkingError


class StrategyOptions(BaseModel):
    """The options a strategy takes besides sizes and window (subclass it).

    The fields declared here are the common options: every strategy takes them, with the base
    :class:`~chunkbench_core.chunking.base.Chunker` doing the work, so a strategy module declares only its own.
    A strategy may give a common option another default by declaring the field again.

    Strict: ``"3"`` is not an integer, ``True`` is not a number, unknown names are refused.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    document_context: bool = Field(
        False,
        description="put the document's header (its company or title, form and period) in front of each "
        "chunk's embedded text, counted in the chunk size and the model window",
    )


#: the options every strategy takes (declared on :class:`StrategyOptions`)
COMMON_OPTIONS: tuple[str, ...] = tuple(StrategyOptions.model_fields)


@dataclass(frozen=True)
class Capabilities:
    """What a strategy needs and gives, as the pipeline sees it.

    - ``boundary_model``: cuts with a boundary embedding model (the chunker gets ``embed=``);
    - ``llm``: writes context with the configured LLM when there is one (the chunker gets ``context=``),
      else falls back to the document's headings, which its label then says;
    - ``parent_context``: retrieval hands each hit's parent chunk to the LLM with it;
    - ``sweepable``: the chunk-size sweep includes it (its chunks are cut by size);
    - ``neighbor_expansion``: neighbor expansion applies to it by default (its chunks are windows of
      running text, so the chunks around a hit continue it);
    - ``covers_text``: its chunks cover every non-whitespace character (checked after chunking);
    - ``sized_by_chunk_size``: ``chunk_size`` bounds its chunks, so lowering it shortens a chunk too long for the
      corpus model (the checks' advice names it).
    """

    boundary_model: bool = False
    llm: bool = False
    parent_context: bool = False
    sweepable: bool = False
    neighbor_expansion: bool = False
    covers_text: bool = False
    sized_by_chunk_size: bool = False


@dataclass(frozen=True)
class OptionSpec:
    """One option as the run config and the command line offer it: the union over the strategies taking it."""

    name: str
    kind: type  # int, float, str or bool
    choices: tuple[str, ...] | None
    description: str
    defaults: dict[str, Any]  # strategy -> its default (None: decided at build time, see the description)
    bounds: dict[str, Any] = field(default_factory=dict)  # ge / gt / le / lt, as declared

    @property
    def strategies(self) -> tuple[str, ...]:
        return tuple(self.defaults)

    def help(self) -> str:
        """The description, then which strategies take the option and their defaults."""
        shown = {s: d for s, d in self.defaults.items() if d is not None}
        if not shown:
            return f"{self.description} ({', '.join(self.strategies)})"
        values = set(map(repr, shown.values()))
        if len(values) == 1 and len(shown) == len(self.defaults):
            return f"{self.description} ({', '.join(self.strategies)}; default {_plain(next(iter(shown.values())))})"
        counts = Counter(map(repr, shown.values()))
        common, n = counts.most_common(1)[0]
        if len(self.defaults) > 3 and n > len(self.defaults) / 2 and len(shown) == len(self.defaults):
            # an option most strategies take alike (a common option): the usual default, then the exceptions
            usual = next(d for d in shown.values() if repr(d) == common)
            others = [f"{s}: {_plain(d)}" for s, d in shown.items() if repr(d) != common]
            return f"{self.description} (default {_plain(usual)}; {'; '.join(others)})"
        parts = [f"{s}: default {_plain(d)}" if d is not None else s for s, d in self.defaults.items()]
        return f"{self.description} ({'; '.join(parts)})"


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Strategy:
    """A registered strategy: its chunker, options, capabilities and one-line description."""

    name: str
    chunker: type[Any]
    options: type[StrategyOptions]
    description: str
    capabilities: Capabilities
    #: how the reports describe the strategy when it ran without an LLM (``capabilities.llm`` only)
    description_without_llm: str | None = None
    #: what the run estimate assumes of its chunks before a build is recorded: fields of
    #: :class:`chunkbench_core.estimate.predict.StrategyShape` (``fill``, ``overlap_share``, ...)
    shape: Mapping[str, Any] | None = None

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(self.options.model_fields)

    def takes(self, option: str) -> bool:
        return option in self.options.model_fields

    def accepted_arguments(self) -> list[str]:
        """Every keyword its chunker takes, in the order error messages list them."""
        return [
            "chunk_size",
            "chunk_overlap",
            *(["embed"] if self.capabilities.boundary_model else []),
            *(["context"] if self.capabilities.llm else []),
            *self.option_names,
            "window",
        ]

    def describe(self) -> dict[str, Any]:
        """The strategy as plain data (``chunkbench strategies``): description, capabilities, and each option with
        its type, default, bounds or choices, and what it does."""
        options = []
        for name, spec in self.options.model_fields.items():
            kind, choices = _option_kind(self.name, name, spec)
            extra = spec.json_schema_extra if isinstance(spec.json_schema_extra, dict) else {}
            options.append(
                {
                    "name": name,
                    "type": kind.__name__,
                    "default": spec.get_default(call_default_factory=True),
                    "bounds": _bounds(spec),
                    "choices": list(choices) if choices else None,
                    "rule": _rule(spec),
                    "description": spec.description or "",
                    **({"label": extra["label"]} if extra.get("label") else {}),
                }
            )
        capabilities = {f: getattr(self.capabilities, f) for f in Capabilities.__dataclass_fields__}
        return {
            "name": self.name,
            "description": self.description,
            "description_without_llm": self.description_without_llm,
            "capabilities": capabilities,
            "options": options,
        }

    def options_taken(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The options of ``given`` this strategy takes (the others do not change its chunks), not None."""
        return {k: v for k, v in given.items() if v is not None and self.takes(k)}

    def build(
        self,
        chunk_size: int,
        chunk_overlap: int,
        options: Mapping[str, Any] | None = None,
        *,
        window: Any = None,
        embed: Callable[[list[str]], Any] | None = None,
        context: Callable[[str, str], str] | None = None,
    ) -> Any:
        """The chunker with these sizes and options; ``embed`` and ``context`` go where the capabilities say."""
        kwargs: dict[str, Any] = dict(options or {})
        if self.capabilities.boundary_model:
            kwargs["embed"] = embed
        if self.capabilities.llm and context is not None:
            kwargs["context"] = context
        return self.chunker(chunk_size, chunk_overlap, window=window, **kwargs)


class StrategyRegistry:
    """Strategies by name, in registration order (the order of the partition keys and of every list)."""

    def __init__(self) -> None:
        self._strategies: dict[str, Strategy] = {}

    def add(self, strategy: Strategy, replace: bool = False) -> Strategy:
        """Register ``strategy``; another chunker under a registered name is refused unless ``replace``."""
        existing = self._strategies.get(strategy.name)
        if existing is not None and existing.chunker is not strategy.chunker and not replace:
            raise ChunkingError(
                f"two strategies are registered as {strategy.name!r}: "
                f"{existing.chunker.__qualname__} and {strategy.chunker.__qualname__}"
            )
        for name, spec in strategy.options.model_fields.items():
            _option_kind(strategy.name, name, spec)  # an option type the config and the CLI can offer
        self._strategies[strategy.name] = strategy
        return strategy

    def remove(self, name: str) -> None:
        self._strategies.pop(name, None)

    def __getitem__(self, name: str) -> Strategy:
        try:
            return self._strategies[name]
        except KeyError:
            raise ChunkingError(f"unknown strategy {name!r}; choose one of: {', '.join(self.names())}") from None

    def get(self, name: str) -> Strategy | None:
        return self._strategies.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._strategies

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._strategies))

    def __len__(self) -> int:
        return len(self._strategies)

    def values(self) -> list[Strategy]:
        return list(self._strategies.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self._strategies)

    def with_capability(self, capability: str) -> tuple[str, ...]:
        """The names of the strategies that have ``capability`` (a field of :class:`Capabilities`)."""
        return tuple(s.name for s in self._strategies.values() if getattr(s.capabilities, capability))

    def options(self) -> dict[str, OptionSpec]:
        """Every option of every strategy, merged by name (registration order, then declaration order)."""
        merged: dict[str, OptionSpec] = {}
        for strategy in self._strategies.values():
            for name, spec in strategy.options.model_fields.items():
                kind, choices = _option_kind(strategy.name, name, spec)
                default = spec.get_default(call_default_factory=True)
                known = merged.get(name)
                if known is None:
                    merged[name] = OptionSpec(
                        name, kind, choices, spec.description or "", {strategy.name: default}, _bounds(spec)
                    )
                    continue
                if known.kind is not kind:
                    raise ChunkingError(
                        f"option {name!r} is {known.kind.__name__} for {', '.join(known.strategies)} "
                        f"but {kind.__name__} for {strategy.name}: one option, one type"
                    )
                both = tuple(dict.fromkeys([*(known.choices or ()), *(choices or ())])) if known.choices else None
                merged[name] = OptionSpec(
                    name, kind, both, known.description, {**known.defaults, strategy.name: default}, known.bounds
                )
        return merged


def _bounds(spec: FieldInfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in spec.metadata:
        for bound in ("ge", "gt", "le", "lt"):
            if getattr(item, bound, None) is not None:
                out[bound] = getattr(item, bound)
    return out


def _option_kind(strategy: str, name: str, spec: FieldInfo) -> tuple[type, tuple[str, ...] | None]:
    """(int | float | str | bool, the choices of a Literal), or a ChunkingError for a type nothing can offer."""
    annotation = spec.annotation
    args = (
        [a for a in typing.get_args(annotation) if a is not type(None)]
        if typing.get_origin(annotation) in (typing.Union, getattr(__import__("types"), "UnionType", typing.Union))
        else [annotation]
    )
    if len(args) == 1 and typing.get_origin(args[0]) is Literal:
        choices = tuple(str(c) for c in typing.get_args(args[0]))
        return str, choices
    for kind in (int, float, str, bool):
        if args == [kind]:
            return kind, None
    raise ChunkingError(
        f"option {name!r} of strategy {strategy!r} has type {annotation!r}: use int, float, str, "
        "bool or a Literal of strings (optionally with None)"
    )


def read_options(strategy: str, model: type[StrategyOptions], given: Mapping[str, Any]) -> StrategyOptions:
    """``given`` validated by the strategy's options model; a ChunkingError names the option and what is allowed."""
    unknown = sorted(set(given) - set(model.model_fields))
    if unknown:
        accepted = STRATEGIES.get(strategy)
        takes = ", ".join(accepted.accepted_arguments()) if accepted else ", ".join(model.model_fields)
        raise ChunkingError(f"{strategy} does not take {', '.join(unknown)}; it takes: {takes}")
    try:
        return model.model_validate(dict(given))
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error.get("loc") else "option"
        spec = model.model_fields.get(name)
        extra = spec.json_schema_extra if spec is not None and isinstance(spec.json_schema_extra, dict) else {}
        raise ChunkingError(f"{extra.get('label') or name} must be {_rule(spec)}, got {given.get(name)!r}") from None


def _rule(spec: FieldInfo | None) -> str:
    """What an option allows, in words: its choices, its bounds, its type."""
    if spec is None:
        return "valid"
    extra = spec.json_schema_extra if isinstance(spec.json_schema_extra, dict) else {}
    if extra.get("rule"):
        return str(extra["rule"])
    kind, choices = _option_kind("", "", spec)
    if choices:
        return f"one of {', '.join(choices)}"
    bounds = _bounds(spec)
    words = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    limits = " and ".join(f"{words[b]} {v}" for b, v in bounds.items())
    noun = {int: "an integer", float: "a number", str: "a text", bool: "true or false"}[kind]
    return f"{noun} {limits}".strip()


STRATEGIES = StrategyRegistry()

C = TypeVar("C", bound=type)


def register_strategy(
    name: str,
    *,
    description: str,
    options: type[StrategyOptions] = StrategyOptions,
    capabilities: Capabilities = Capabilities(),
    description_without_llm: str | None = None,
    shape: Mapping[str, Any] | None = None,
    registry: StrategyRegistry | None = None,
) -> Callable[[C], C]:
    """Register the decorated chunker class as strategy ``name`` (see the module docstring)."""

    def decorate(cls: C) -> C:
        cls.name = name  # type: ignore[attr-defined]  # set on the registered class: the registry's fields
        cls.Options = options  # type: ignore[attr-defined]  # set on the registered class: the registry's fields
        cls.needs_boundary_embeddings = capabilities.boundary_model  # type: ignore[attr-defined]  # set on the registered class: the registry's fields
        (registry or STRATEGIES).add(
            Strategy(
                name, cls, options, description, capabilities, description_without_llm, dict(shape) if shape else None
            )
        )
        return cls

    return decorate


def discover_strategies(package: str, first: Sequence[str] = ()) -> list[str]:
    """Import every module of ``package``, so each strategy module in it registers itself (its decorator runs when
    it is imported): the modules named in ``first`` in that order, then every other one by name. No list of
    strategies to keep up to date: a new module is found because it is there. Returns the modules' names, in the
    order they were imported."""
    found = [m.name for m in pkgutil.iter_modules(importlib.import_module(package).__path__)]
    ordered = [*(name for name in first if name in found), *sorted(name for name in found if name not in first)]
    for name in ordered:
        importlib.import_module(f"{package}.{name}")
    return ordered
