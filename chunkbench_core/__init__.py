"""chunkbench_core: the plain library behind chunkbench (never imports dagster).

Sub-packages, one per stage of the pipeline:
parsing -> chunking -> embedding -> storage -> evaluation -> reporting.
"""

__version__ = "0.1.0"
