"""The settings of this ``chunkbench`` invocation: built once by ``main`` (environment and flags), kept here.

Commands receive them as ``args.settings``; the few functions that take no arguments (the question
commands' corpus readers, ``chunkbench ui``) read them here. Nothing reads the environment after ``main``.
"""

from __future__ import annotations

from pathlib import Path

from chunkbench_core.settings import Settings

_current: Settings | None = None


def use(settings: Settings) -> Settings:
    """Make ``settings`` the invocation's (``main`` calls this once)."""
    global _current
    _current = settings
    return settings


def current() -> Settings:
    """The invocation's settings (when a command is called without ``main``, e.g. in a test: the environment's)."""
    return _current if _current is not None else use(Settings.from_environment())


def results_dir() -> Path:
    return current().results_dir


def questions_dir() -> Path:
    return current().questions


def home_dir() -> Path:
    return current().home


def earlier_layout(settings: Settings):
    """Results an earlier chunkbench kept at the top level of the home (chunkbench_core.storage.earlier_layout), or
    None."""
    from chunkbench_core.storage.earlier_layout import find_earlier_layout

    return find_earlier_layout(
        settings.results_base, settings.vectors_base, settings.results_dir, settings.qdrant_dir, settings.benchmark
    )
