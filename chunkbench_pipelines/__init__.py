"""chunkbench_pipelines: the Dagster definitions (thin: every asset calls chunkbench_core)."""
