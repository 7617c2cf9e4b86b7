"""How the local engines cut a batch of texts into runs for the ONNX session: by length, so the padding of a run
stays small. Its own module: both engines and the engine front end (local.py) use it, and local.py loads the
engines, so it cannot live in either.
"""

from __future__ import annotations


def runs_of(lengths: list[int], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Indices sorted by length, cut into runs of at most ``max_rows`` rows and ``max_tokens`` padded tokens.

    A run always holds at least one row (a single row longer than ``max_tokens`` is a run of its own).
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    runs: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending: the row being added is the run's longest
        if current and (len(current) >= max_rows or (len(current) + 1) * lengths[i] > max_tokens):
            runs.append(current)
            current = []
        current.append(i)
    if current:
        runs.append(current)
    return runs
