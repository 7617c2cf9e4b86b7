"""``python -m chunkbench_pipelines.cli``: the ``chunkbench`` command."""

from chunkbench_pipelines.cli import main

raise SystemExit(main())
