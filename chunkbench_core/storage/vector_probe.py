"""Read a whole embedded collection in a separate process, to learn whether it is sound.

Qdrant's embedded engine reads its files through memory maps and trusts what it reads: a damaged
collection can make it raise an error (a truncated file), return wrong data (a garbled vector, a lost id
mapping), or end the process with a signal (an allocation of garbage size aborts it; a read past the end of
a truncated map is SIGBUS). The last cannot be caught, so a collection that may be damaged is first read
here, in a child process with a memory limit: every point, its payload and its vector. The parent learns
"sound, N points" or what is wrong, and never dies of it.

Run as ``python -m chunkbench_core.storage.vector_probe FOLDER [MEMORY_LIMIT_BYTES]``: prints one JSON line
``{"points": N, "problem": null | "..."}``.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from chunkbench_core.errors import VectorStoreError

PAGE = 1024
#: how far a stored vector's norm may be from 1 (cosine collections store unit vectors)
NORM_TOLERANCE = 1e-3
#: memory a probe may take besides the collection's own files (mapped into its address space)
PROBE_MEMORY_BYTES = 2 << 30
PROBE_TIMEOUT_SECONDS = 600.0
_CRASHES = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE}


class ProbeError(VectorStoreError):
    """The child process could not tell (it did not start, or was killed from outside): nothing is known
    about the collection, so nothing is moved."""


def apparent_size(folder: Path) -> int:
    total = 0
    for directory, _, filenames in os.walk(folder):
        for name in filenames:
            try:
                total += os.stat(os.path.join(directory, name)).st_size
            except OSError:
                pass
    return total


def read_everything(folder: str) -> dict[str, object]:
    """Load the collection and read every point (in this process): {"points", "problem"}."""
    import numpy as np
    import qdrant_edge as qe

    try:
        shard = qe.EdgeShard.load(folder)
    except BaseException as exc:  # the engine's panics are BaseExceptions
        return {"points": None, "problem": f"the engine cannot load it: {' '.join(str(exc).split())[:300]}"}
    try:
        count = int(shard.count(qe.CountRequest(exact=True)))
        seen = 0
        offset = None
        while True:
            points, offset = shard.scroll(
                qe.ScrollRequest(offset=offset, limit=PAGE, with_payload=True, with_vector=True)
            )
            for point in points:
                seen += 1
                payload = point.payload or {}
                if not isinstance(payload.get("chunk_id"), str):
                    return {"points": count, "problem": f"point {point.id} has lost its payload"}
                stored = point.vector
                vector = stored.get("") if isinstance(stored, dict) else stored
                norm = float(np.linalg.norm(np.asarray(vector, dtype=np.float64))) if vector is not None else 0.0
                if not np.isfinite(norm) or abs(norm - 1.0) > NORM_TOLERANCE:
                    return {"points": count, "problem": f"point {point.id} holds a damaged vector (norm {norm:.3g})"}
            if offset is None or not points:
                break
        if seen != count:
            return {"points": count, "problem": f"it counts {count} points but {seen} can be read"}
        return {"points": count, "problem": None}
    except BaseException as exc:
        return {"points": None, "problem": f"the engine cannot read it: {' '.join(str(exc).split())[:300]}"}
    finally:
        try:
            shard.close()
        except BaseException:
            pass


def probe_collection(
    folder: str | os.PathLike[str], timeout: float = PROBE_TIMEOUT_SECONDS
) -> tuple[int | None, str | None]:
    """(points, problem) of the collection in ``folder``, read in a child process; problem None = sound.
    :class:`ProbeError` when the child could not tell (it did not start, or was killed from outside)."""
    folder = Path(folder)
    limit = PROBE_MEMORY_BYTES + 2 * apparent_size(folder)

    package_root = str(Path(__file__).resolve().parents[2])  # the child imports this very chunkbench
    start = (
        f"import sys; sys.path.insert(0, {package_root!r}); "
        "from chunkbench_core.storage.vector_probe import main; sys.exit(main())"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", start, str(folder), str(limit)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None, f"reading it took more than {timeout:.0f} s"
    if -done.returncode in _CRASHES:  # what reading damaged memory-mapped files ends in
        return None, f"the engine crashed reading it ({signal.Signals(-done.returncode).name})"
    for line in reversed(done.stdout.splitlines()):
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and "problem" in answer:
            return answer.get("points"), answer.get("problem")
    # killed from outside, or the child could not start: that says nothing about the collection
    last = " ".join(done.stderr.split())[-300:]
    raise ProbeError(
        f"could not check the collection {folder} in a separate process (exit {done.returncode}: "
        f"{last or 'no message'})"
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print(
            "usage: python -m chunkbench_core.storage.vector_probe COLLECTION_FOLDER [MEMORY_LIMIT_BYTES]",
            file=sys.stderr,
        )
        return 2
    if len(args) == 2:  # before the engine is loaded: garbage sizes fail an allocation instead of eating memory
        try:
            resource.setrlimit(resource.RLIMIT_AS, (int(args[1]), int(args[1])))
        except (ValueError, OSError):
            pass
    print(json.dumps(read_everything(args[0])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
