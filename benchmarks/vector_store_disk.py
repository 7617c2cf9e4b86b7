"""What the embedded Qdrant engine writes per point, against the estimate the free-space check uses.

Builds collections of N points (dimension D, chunk-like payloads) with chunkbench's VectorStore and samples
the blocks its folder takes every 20 ms, so the peak (before the final flush truncates the engine's log)
is seen, then reopens the collection (on a memory filesystem the engine fills its sparse files then: the
free-space check of an opening counts those holes separately, so they are shown apart).
Prints, per case: payload JSON per point, measured peak per point, the estimate per point, and their ratio
(above 1: the check asks for more than is written; it must never be under 1).

    python benchmarks/vector_store_disk.py [FOLDER]

FOLDER: where to build (default: a temporary folder); put it on a tmpfs to see a memory filesystem.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from chunkbench_core.chunking.base import Chunk, make_chunk_id
from chunkbench_core.storage import space
from chunkbench_core.storage.vector_store import VectorStore, chunk_payload, collection_name

CASES = [(2_000, 384), (20_000, 384), (20_000, 1536)]


def blocks(folder: Path) -> int:
    total = 0
    for directory, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.stat(os.path.join(directory, name)).st_blocks * 512
            except OSError:
                pass
    return total


def chunks(points: int, seed: int) -> list[Chunk]:
    rnd = random.Random(seed)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(5000)]
    return [
        Chunk(
            make_chunk_id("fixed_size", f"doc{i % 50}.md", i),
            f"doc{i % 50}.md",
            "fixed_size",
            i,
            i * 1200,
            i * 1200 + 1100,
            " ".join(rnd.choice(words) for _ in range(180)),
            250,
        )
        for i in range(points)
    ]


def measure(root: Path, points: int, dimension: int) -> dict[str, float]:
    name = collection_name("fixed_size", "bench")
    folder = root / name
    batch = chunks(points, 1)
    vectors = np.random.default_rng(0).normal(size=(points, dimension)).astype(np.float32)
    payload = sum(space.json_bytes(chunk_payload(c)) for c in batch)
    estimate = space.edge_collection_bytes(points, dimension, payload)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], blocks(folder))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with VectorStore(local_root=root) as store:
        store.ensure_collection(name, dimension)
        store.replace_points(name, batch, vectors)
    done.set()
    sampler.join()
    built = blocks(folder)
    with VectorStore(local_root=root) as store:
        store.count(name)
    opened = blocks(folder)
    shutil.rmtree(folder)
    return {
        "payload": payload / points,
        "peak": max(peak[0], built) / points,
        "estimate": estimate / points,
        "after_open": opened / points,
    }


def main() -> None:
    given = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    root = Path(tempfile.mkdtemp(dir=given))
    print(f"filesystem: {space.filesystem_type(root)} ({root})")
    print(
        f"{'points':>7} {'dim':>5} {'payload/pt':>10} {'peak/pt':>9} {'estimate/pt':>11} {'estimate/peak':>13} "
        f"{'after reopen/pt':>15}"
    )
    try:
        for points, dimension in CASES:
            m = measure(root, points, dimension)
            print(
                f"{points:>7} {dimension:>5} {m['payload']:>10.0f} {m['peak']:>9.0f} {m['estimate']:>11.0f} "
                f"{m['estimate'] / m['peak']:>13.2f} {m['after_open']:>15.0f}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
