"""Progress lines in the Dagster run log: the same "parsing: 1,200/2,000 documents, 14/s, ..., ETA 1 min" lines
``chunkbench run`` prints, as info events of the step that does the work (the UI's run page shows them)."""

from __future__ import annotations

import contextlib
from typing import Iterator

from dagster import AssetExecutionContext, OpExecutionContext

from chunkbench_core import progress


@contextlib.contextmanager
def progress_to_run_log(context: AssetExecutionContext | OpExecutionContext) -> Iterator[None]:
    """Inside the block, every progress line of the core's loops is an info line of the run's log."""

    def sink(p: progress.Progress) -> None:
        context.log.info(p.line())

    with progress.sink(sink):
        yield
