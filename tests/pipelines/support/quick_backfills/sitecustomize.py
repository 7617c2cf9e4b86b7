"""Imported at start-up by every Python process that has this folder on its ``PYTHONPATH``: the processes of the
tests' ``dagster dev`` and of the tests' cluster. Dagster's backfill daemon then looks at its backfills every
3 s instead of every 30 s.

Dagster fixes that pause in code (``DEFAULT_DAEMON_INTERVAL_SECONDS`` in ``dagster._daemon.controller``, which the
backfill daemon's loop reads at each turn; no instance setting changes it). A backfill launched just after a turn
waited up to 30 s before its first run was submitted, and up to 30 s after its last run ended before it was marked
completed: about half a minute of every backfill test spent waiting, with nothing running. The daemon, its turns
and what each turn does are Dagster's own; only the pause between turns is shorter. The queue's own daemon is
told its pause in the instance's dagster.yaml (``dequeue_interval_seconds``) and is not touched here.

The same constant is the asset daemon's pause when no automation sensor exists; chunkbench's automation is
sensors, whose own intervals apply. ``tests/pipelines/test_dagster_patch.py`` fails when a Dagster release
renames the constant or stops reading it at each turn.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys

#: seconds between two turns of the backfill daemon in the tests (Dagster's: 30). Not 1: a turn costs the daemon
#: about 0.1 s of CPU, and at one a second a backfill test's daemon used about 9 s of CPU in 46 s (32 turns)
BACKFILL_INTERVAL_SECONDS = 3
PATCHED_MODULE = "dagster._daemon.controller"


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``dagster._daemon.controller`` is imported, lets the other finders find it and
    sets the pause once the module has run."""

    def find_spec(self, name, path=None, target=None):
        if name != PATCHED_MODULE:
            return None
        sys.meta_path.remove(self)  # once: the module is imported once per process
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            module.DEFAULT_DAEMON_INTERVAL_SECONDS = BACKFILL_INTERVAL_SECONDS

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]  # the loader's method wrapped on purpose
        return spec


if __name__ == "sitecustomize":  # at start-up only: a test importing this file for its constant changes nothing
    sys.meta_path.insert(0, _PatchAfterImport())
