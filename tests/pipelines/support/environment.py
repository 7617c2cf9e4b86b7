"""The settings a test's environment gives (the test is the edge: it built the environment, it builds the settings)."""

import os

from chunkbench_core.settings import Settings


def environment_settings() -> Settings:
    return Settings.load(os.environ)
