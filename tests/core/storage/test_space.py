"""A full disk is one clear line and a failed partition, never a signal, and never damages what was stored.

The embedded Qdrant engine writes through memory maps: on a full disk the kernel kills the process with
SIGBUS. These tests run on a real small tmpfs (mounting needs root: skipped on a laptop without it, a
failure in CI) and write through the real engine, Parquet, DuckDB and SQLite. The tmpfs for vectors is
120 MB: on a memory filesystem the engine fills its sparse files when it opens a collection (about 45 MB
for any collection), so 40 MB cannot even hold one collection that is opened again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.errors import StorageFullError
from chunkbench_core.storage import space
from chunkbench_core.storage.corpus import ParsedStore, SourceDocument
from chunkbench_core.storage.embedding_cache import EmbeddingCache
from chunkbench_core.storage.results_db import ResultsDB
from chunkbench_core.parsing.models import ParsedDocument, TreeNode
from tests.support.tmpfs import fill, resize, tmpfs

PROJECT = Path(__file__).resolve().parents[3]
MiB = 1 << 20

# One partition's vector write in a process of its own (a SIGBUS there would show as a signal).
BUILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from chunkbench_core.chunking.base import Chunk, make_chunk_id
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.storage.vector_store import VectorStore, collection_name

    root, points = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(5)
    words = ["harbour", "lava", "sourdough", "ledger", "orchard", "turbine", "lantern", "glacier"]
    chunks = [Chunk(make_chunk_id("fixed_size", f"doc{i % 40}.md", i), f"doc{i % 40}.md", "fixed_size", i, i * 900,
                    i * 900 + 800, " ".join(words[(i + k) % 8] + str(k) for k in range(120)), 160)
              for i in range(points)]
    vectors = rng.normal(size=(points, 384)).astype(np.float32)
    queries = np.random.default_rng(9).normal(size=(3, 384)).astype(np.float32)
    name = collection_name("fixed_size", "all-minilm-l6-v2")
    try:
        with VectorStore(local_root=root) as store:
            store.check_space(name, chunks, 384)  # what a partition calls before it embeds
            store.ensure_collection(name, 384)
            store.replace_points(name, chunks, vectors)
        with VectorStore(local_root=root) as store:
            top = [[h.chunk_id for h in store.search(name, q, 5)] for q in queries]
            print(json.dumps({"count": store.count(name), "top": top}))
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
""")


@pytest.fixture
def small_disk(tmp_path):
    """A small tmpfs (40 MB; ``resize`` grows it), unmounted afterwards."""
    with tmpfs(tmp_path / "disk", 40) as disk:
        yield disk


def build(root: Path, points: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BUILD, str(root), str(points)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )


@pytest.mark.slow
def test_vectors_that_do_not_fit_stop_with_one_line_and_a_rerun_after_freeing_space_equals_a_clean_run(
    small_disk, tmp_path
):
    clean = build(tmp_path / "clean", 25000)  # on the ordinary disk
    assert clean.returncode == 0, clean.stderr

    resize(small_disk, 120)
    small = build(small_disk / "qdrant", 300)  # fits
    assert small.returncode == 0, small.stderr
    before = json.loads(small.stdout)

    # 25,000 points: 38 MB of vectors plus payloads, written twice. Without the check the engine dies of SIGBUS
    # here (measured: exit 135); with it, the partition stops before writing
    full = build(small_disk / "qdrant", 25000)
    assert full.returncode == 1, (full.returncode, full.stderr)  # an exit, not a signal (SIGBUS would be -7)
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in full.stderr
    assert lines[0].startswith(f"error: not enough free space in {small_disk}")
    assert " needed, " in lines[0] and " free" in lines[0]

    again = build(small_disk / "qdrant", 300)  # what was stored is unchanged
    assert again.returncode == 0 and json.loads(again.stdout) == before

    resize(small_disk, 400)  # space freed
    rerun = build(small_disk / "qdrant", 25000)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout) == json.loads(clean.stdout)


@pytest.mark.slow
def test_every_writer_turns_a_full_disk_into_one_line_and_keeps_what_was_stored(small_disk):
    results = ResultsDB(small_disk / "benchmark")
    results.write("documents", "corpus", [{"document": "a.md", "status": "parsed"}])
    results.ensure_database()
    parsed = ParsedStore(small_disk / "benchmark" / "parsed", "v1")
    source = SourceDocument("a.md", str(small_disk / "a.md"), "ab" * 32, 10)
    document = ParsedDocument(
        document="a.md", markdown="# A\n\nshort", tree=TreeNode(node_type="document"), units=[], parser="test"
    )
    parsed.put(source, document, None)
    cache = EmbeddingCache(small_disk / "embedding_cache.sqlite")
    cache.put_many("ns", [("k0", np.ones(8, dtype=np.float32))], 8)
    ballast = fill(small_disk, 64 * 1024, "ballast")

    big = pd.DataFrame(
        {
            "document": [f"d{i}.md" for i in range(4000)],
            "status": "parsed",
            "error": [uuid.uuid4().hex * 8 for _ in range(4000)],
        }
    )
    with pytest.raises(StorageFullError) as raised:
        results.write("documents", "corpus", big)
    assert str(small_disk / "benchmark" / "tables" / "documents") in str(raised.value)
    assert "\n" not in str(raised.value) and " free" in str(raised.value)
    assert results.read("documents", "corpus")[0]["document"] == "a.md"  # the previous file, whole
    assert not list((small_disk / "benchmark" / "tables" / "documents").glob(".*.tmp"))  # no half-written file

    huge = ParsedDocument(
        document="a.md", markdown="x" * (2 * MiB), tree=TreeNode(node_type="document"), units=[], parser="test"
    )
    with pytest.raises(StorageFullError, match="not enough free space"):
        parsed.put(source, huge, None)
    assert parsed.load_parsed(source).markdown == "# A\n\nshort"
    assert not list(parsed.root.glob(".*.tmp"))

    with pytest.raises(StorageFullError, match="not enough free space"):
        cache.put_many("ns", [(f"k{i}", np.ones(2048, dtype=np.float32)) for i in range(1, 200)], 2048)
    assert list(cache.get_many("ns", ["k0"], 8)) == ["k0"]
    cache.close()

    ballast.unlink()  # space freed: everything works again, from where it was
    results.write("documents", "corpus", big)
    results.ensure_database()
    assert len(results.read("documents", "corpus")) == 4000
    parsed.put(source, huge, None)
    assert len(parsed.load_parsed(source).markdown) == 2 * MiB
    with EmbeddingCache(small_disk / "embedding_cache.sqlite") as reopened:
        reopened.put_many("ns", [(f"k{i}", np.ones(2048, dtype=np.float32)) for i in range(1, 200)], 2048)
        assert len(reopened.get_many("ns", [f"k{i}" for i in range(1, 200)], 2048)) == 199


def test_the_estimate_names_the_folder_the_space_needed_and_free(tmp_path):
    free = space.free_bytes(tmp_path)
    with pytest.raises(StorageFullError) as raised:
        space.ensure_space(tmp_path / "qdrant" / "c", free * 2, "the collection c")
    error = raised.value
    assert error.folder == str(tmp_path / "qdrant" / "c") and error.needed > free * 2 and error.free is not None
    assert str(error).startswith(f"not enough free space in {tmp_path / 'qdrant' / 'c'} for the collection c: about ")
    assert space.ensure_space(tmp_path, 1024, "a little") > 1024
    # the estimate grows with the points, the dimension and the payloads
    small = space.edge_collection_bytes(100, 384, 100 * 1400)
    assert space.edge_collection_bytes(1000, 384, 1000 * 1400) > small
    assert space.edge_collection_bytes(100, 1536, 100 * 1400) > small
    chunks = [
        Chunk(make_chunk_id("fixed_size", "a.md", i), "a.md", "fixed_size", i, 0, 5, "hello", 1) for i in range(10)
    ]
    assert space.chunk_rows_bytes((c.text, None) for c in chunks) >= 10 * 5


def test_a_full_disk_met_while_writing_is_translated_with_the_folder(tmp_path):
    error = space.storage_error(OSError(28, "No space left on device"), tmp_path / "x.parquet", "the results")
    assert isinstance(error, StorageFullError) and str(tmp_path) in str(error)
    sqlite_full = space.storage_error(
        __import__("sqlite3").OperationalError("database or disk is full"), tmp_path / "c.sqlite", "the cache"
    )
    assert isinstance(sqlite_full, StorageFullError)
    io = space.storage_error(OSError(5, "Input/output error"), tmp_path / "x.parquet", "the results")
    assert io is not None and not isinstance(io, StorageFullError) and "input/output error" in str(io)
    assert space.storage_error(ValueError("bad value"), tmp_path, "x") is None
