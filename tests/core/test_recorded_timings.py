"""The timings the README and docs quote come from docs/timings.json, written by scripts/record_timings.py when
they are measured: every page's block is what the record gives, and no page types a suite or demo time by hand."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("record_timings", ROOT / "scripts" / "record_timings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_timing_block_of_the_pages_is_what_the_record_gives(script):
    stale = script.stale_pages()
    assert not stale, (
        f"timing blocks differ from docs/timings.json in {[str(p.relative_to(ROOT)) for p in stale]}: "
        "python scripts/record_timings.py --write"
    )
    names = {m.group("name") for page in script.pages() for m in script.BLOCK.finditer(page.read_text("utf-8"))}
    assert {"demo", "make-test", "make-test-fast", "big-inputs"} <= names
    assert set(script.read_record()) >= {"demo", "make_test", "make_test_fast", "big_inputs"}


def test_a_page_whose_figure_was_edited_by_hand_is_found_stale(script):
    page = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    block = next(script.BLOCK.finditer(page))
    doctored = page.replace(block.group(0), re.sub(r"\d+ tests", "999 tests", block.group(0), count=1))
    assert doctored != page
    assert script.render_page(doctored, script.read_record()) == page


def test_every_recorded_figure_says_when_and_on_what_it_was_measured(script):
    for name, entry in script.read_record().items():
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", entry["measured_on"]), name
        assert re.search(r"with \d+ cores$", entry["machine"]), name


#: sentences that quote a suite's or the demo's time: they belong inside a generated block
HAND_TYPED = re.compile(
    r"`make (test|test-fast|demo)`[^.\n]{0,80}?\b(took|ran|in) [\d,.]+ ?(s|min|minutes)\b"
    r"|How long the demo takes:\*\* about"
)


def test_no_page_types_a_suite_or_demo_time_outside_a_generated_block(script):
    found = []
    for page in script.pages():
        outside = script.BLOCK.sub("", page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(ROOT)}: {m.group(0)}" for m in HAND_TYPED.finditer(outside)]
    assert not found, "timings typed by hand (record them with scripts/record_timings.py):\n" + "\n".join(found)


def test_a_passing_command_is_recorded_with_its_test_count_and_the_pages_follow(script, tmp_path, monkeypatch):
    record, page = tmp_path / "timings.json", tmp_path / "page.md"
    page.write_text(
        "before\n<!-- generated: timings make-test-fast -->\nold\n<!-- end of generated timings -->\n", encoding="utf-8"
    )
    monkeypatch.setattr(script, "RECORD", record)
    monkeypatch.setattr(script, "pages", lambda: [page])
    # the summary line is the last, and may come in colour
    command = [sys.executable, "-c", "print('.. 3 passed in 0.1s'); print('\\x1b[32m12 passed\\x1b[0m, 1 skipped')"]
    assert script.run_command("make_test_fast", command) == 0
    entry = json.loads(record.read_text(encoding="utf-8"))["make_test_fast"]
    assert entry["tests"] == 12 and 0 <= entry["seconds"] < 60 and entry["machine"] == script.machine()
    assert "ran 12 tests in" in page.read_text(encoding="utf-8")
    # a failing command records nothing
    assert script.run_command("make_test", [sys.executable, "-c", "print('1 passed'); raise SystemExit(1)"]) == 1
    assert "make_test" not in json.loads(record.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("seconds", "short", "rounded"),
    [
        (47, "47 s", "about 45 seconds"),
        (78.2, "78 s", "about 1.5 minutes"),
        (93, "1 min 33 s", "about 1.5 minutes"),
        (470, "7 min 50 s", "about 8 minutes"),
        (3360, "56 min", "about 56 minutes"),
        (3900, "1 h 5 min", "about 65 minutes"),
    ],
)
def test_durations_read_as_the_pages_write_them(script, seconds, short, rounded):
    assert script.duration(seconds) == short
    assert script.about(seconds) == rounded


def test_an_unknown_block_name_is_an_error_naming_the_known_ones(script):
    with pytest.raises(ValueError, match="unknown timing block 'make-bench'.*make-test"):
        script.render_page("<!-- generated: timings make-bench -->\n<!-- end of generated timings -->", {})


def test_a_demo_timed_while_other_work_shared_the_machine_is_not_recorded(script, monkeypatch):
    monkeypatch.setattr(script.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(script.os, "getloadavg", lambda: (9.0, 8.3, 5.0))
    assert script.busy_machine() == "the machine was busy with other work (load 8.3 on 2 cores)"
    monkeypatch.setattr(script.os, "getloadavg", lambda: (1.0, 1.2, 0.8))
    assert script.busy_machine() is None
