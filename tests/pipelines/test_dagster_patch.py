"""The patch of Dagster internals in tests/pipelines/conftest.py fails loudly on another Dagster release."""

import dagster
import pytest
from dagster._core.storage.defs_state.base import DefsStateStorage

from .conftest import PATCHED_DAGSTER_VERSION, check_patched_dagster_version


def test_the_patch_guard_fails_on_another_dagster_release():
    with pytest.raises(pytest.fail.Exception) as failed:
        check_patched_dagster_version("1.14.0")
    message = str(failed.value)
    assert PATCHED_DAGSTER_VERSION in message and "1.14.0" in message and "PATCHED_DAGSTER_VERSION" in message


def test_the_installed_dagster_is_the_patched_release():
    assert dagster.__version__ == PATCHED_DAGSTER_VERSION
    check_patched_dagster_version()


def test_the_patch_is_in_force_in_pipeline_tests():
    assert DefsStateStorage.get.__func__.__name__ == "current"  # the conftest's replacement, not Dagster's own
    assert DefsStateStorage.get() is None
