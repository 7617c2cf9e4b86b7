"""A question file and a report written on a full disk: one line naming the folder (StorageFullError, never
retried), the previous file unchanged, no half-written temporary file left. On a real small tmpfs (mounting
needs root: skipped on a laptop without it, a failure in CI)."""

from __future__ import annotations


import pytest

from chunkbench_core.errors import StorageFullError, is_permanent
from chunkbench_core.evaluation.questions import write_question_file
from chunkbench_core.reporting.reports import _write_atomic
from tests.support.tmpfs import fill, tmpfs


@pytest.fixture
def full_disk(tmp_path):
    """A 2 MB tmpfs holding a question file and a report, then filled up; unmounted afterwards."""
    with tmpfs(tmp_path / "disk", 2) as disk:
        write_question_file({"name": "set", "questions": []}, disk / "questions" / "set.json")
        _write_atomic(disk / "report.html", "<p>the previous report</p>")
        fill(disk, 0)
        yield disk


def test_a_question_file_on_a_full_disk_is_one_line_and_the_previous_file_stays(full_disk):
    path = full_disk / "questions" / "set.json"
    before = path.read_bytes()
    big = {"name": "set", "questions": [{"id": str(i), "question": "x" * 200} for i in range(200)]}
    with pytest.raises(StorageFullError) as raised:
        write_question_file(big, path)
    message = str(raised.value)
    assert str(full_disk / "questions") in message and "set.json" in message and "\n" not in message
    assert is_permanent(raised.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["set.json"]  # no temporary file left


def test_a_report_on_a_full_disk_is_one_line_and_the_previous_report_stays(full_disk):
    path = full_disk / "report.html"
    with pytest.raises(StorageFullError) as raised:
        _write_atomic(path, "<p>" + "a long report " * 20_000 + "</p>")
    assert str(full_disk) in str(raised.value) and "report.html" in str(raised.value)
    assert path.read_text(encoding="utf-8") == "<p>the previous report</p>"
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler", "questions", "report.html"]
