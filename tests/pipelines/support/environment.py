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


def run_strategy(instance, model: str, run_settings: dict | None = None, strategy: str = "fixed_size") -> str:
    """``chunkbench run`` of one strategy x ``model`` in the test's environment, which must succeed; what it
    printed."""
    import io

    from chunkbench_pipelines.runner import RunConsole, run_everything

    out = io.StringIO()
    code = run_everything(
        environment_settings(),
        strategies=[strategy],
        corpus_models=[model],
        console=RunConsole(out),
        instance=instance,
        run_settings=run_settings,
    )
    assert code == 0, out.getvalue()
    return out.getvalue()
