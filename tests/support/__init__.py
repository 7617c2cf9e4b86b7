"""Test support shared by tests/core and tests/pipelines (real local servers on 127.0.0.1)."""
