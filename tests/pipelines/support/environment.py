"""The settings a test's environment gives (the test is the edge: it built the environment, it builds the settings)."""

import os

from chunkbench_core.settings import Settings
from tests.support import calibration


def environment_settings(measured_rates: bool = True) -> Settings:
    """``Settings.load(os.environ)``. ``measured_rates``: a home without a calibration gets the local engines' rates
    this test process measured (tests/support/calibration.py), so a run through the graph does not time the engines
    again on each fresh home; False for a test whose point is the calibration of a fresh home."""
    settings = Settings.load(os.environ)
    if measured_rates:
        calibration.give_measured(settings.home)
    return settings
