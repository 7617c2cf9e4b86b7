"""The retriever registry: a retriever is one module whose class is registered with a decorator.

::

    @register_retriever("my_retriever", description="keyword matches only")
    class MyRetriever(Retriever):
        def search_all(self, request): ...
        def search_one(self, text, vector, top_k, documents=None): ...

Everything the rest of chunkbench knows about a retriever comes from its registration: the names the run
setting (``chunkbench run --retriever``) and ``chunkbench ask --retriever`` accept, and the description the
documentation and the reports show. A retriever is built per collection (:meth:`Retriever.open`) and answers
every question of a run at once (:meth:`Retriever.search_all`) or one question (:meth:`Retriever.search_one`);
hits come back best first with ties broken by chunk_id, so two runs on the same inputs agree.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import numpy as np

from chunkbench_core.errors import ChunkbenchError, ConfigError
from chunkbench_core.evaluation.retrieval import RetrievedChunk
from chunkbench_core.evaluation.search import SearchSettings
from chunkbench_core.labels import (
    DEFAULT_RETRIEVER,  # the retriever of a configuration that names none
)
from chunkbench_core.storage.vector_store import VectorStore

#: what a question may search: None (every document) or the names of the documents it is restricted to
Documents = tuple[str, ...] | None


@dataclass(frozen=True)
class SearchRequest:
    """Every question of a run: its text, its query vector, the documents it may search (None: all)."""

    texts: Sequence[str]
    vectors: np.ndarray
    top_k: int
    documents: Sequence[Documents]
    settings: SearchSettings = SearchSettings()


@dataclass(frozen=True)
class IndexFigures:
    """What a retriever's own index cost to build for one collection (none for the dense retriever: the
    collection is its index): seconds and bytes in memory."""

    seconds: float = 0.0
    bytes: int = 0


class Retriever(ABC):
    """Finds a question's chunks in one collection of the vector store."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def __init__(self, store: VectorStore, collection: str) -> None:
        self.store = store
        self.collection = collection
        self.index = IndexFigures()

    @abstractmethod
    def search_all(self, request: SearchRequest) -> list[list[RetrievedChunk] | ChunkbenchError]:
        """Every question's ``top_k`` hits (ranks from 1, best first), or the error that stopped its search."""

    @abstractmethod
    def search_one(
        self, text: str, vector: np.ndarray, top_k: int, documents: Documents = None
    ) -> list[RetrievedChunk]:
        """One question's ``top_k`` hits, as a user's question is searched alone (what ``search_all`` finds for it)."""


R = TypeVar("R", bound=type[Retriever])


class RetrieverRegistry:
    def __init__(self) -> None:
        self._classes: dict[str, type[Retriever]] = {}

    def register(self, name: str, description: str) -> Callable[[R], R]:
        if not name or not name.replace("_", "").isalnum() or name != name.lower():
            raise ValueError(f"a retriever's name is lower-case letters, digits and underscores, got {name!r}")

        def decorate(cls: R) -> R:
            if name in self._classes and self._classes[name] is not cls:
                raise ValueError(
                    f"retriever {name!r} is registered twice ({self._classes[name].__module__} and {cls.__module__})"
                )
            cls.name, cls.description = name, description
            self._classes[name] = cls
            return cls

        return decorate

    def unregister(self, name: str) -> None:
        """Forget ``name`` (a retriever a test registered for itself)."""
        self._classes.pop(name, None)

    def names(self) -> tuple[str, ...]:
        _load_builtin()
        return tuple(sorted(self._classes, key=lambda n: (n != DEFAULT_RETRIEVER, n)))

    def get(self, name: str) -> type[Retriever]:
        _load_builtin()
        if name not in self._classes:
            raise ConfigError(f"unknown retriever {name!r}; registered: {', '.join(self.names())}")
        return self._classes[name]

    def open(self, name: str, store: VectorStore, collection: str) -> Retriever:
        """The retriever ``name`` over ``collection`` (its own index built now)."""
        return self.get(name)(store, collection)

    def check(self, names: Sequence[str]) -> list[str]:
        """``names`` without repeats, in the order given; an unknown name is refused with the registered ones."""
        chosen = list(dict.fromkeys(str(n) for n in names))
        if not chosen:
            raise ConfigError(f"at least one retriever is needed; registered: {', '.join(self.names())}")
        for n in chosen:
            self.get(n)
        return chosen


RETRIEVERS = RetrieverRegistry()
register_retriever = RETRIEVERS.register


def _load_builtin() -> None:
    """The shipped retrievers register themselves when their modules are imported: every module of this package
    but the registry, found on disk (adding a retriever is adding its file), imported late because they import
    the evaluation code that imports this registry's users."""
    package = __name__.rsplit(".", 1)[0]
    for module in sorted(m.name for m in pkgutil.iter_modules(sys.modules[package].__path__)):
        if module != "registry":
            importlib.import_module(f"{package}.{module}")
