"""The error of the time estimate, the calibration and the sampled corpus."""

from __future__ import annotations

from chunkbench_core.errors import ChunkbenchError


class EstimateError(ChunkbenchError):
    """A time estimate, a calibration or a corpus sample was asked for with parameters that cannot work;
    the message says which and what to do instead."""
