"""Hostile document / question / chunk / answer text stays text in every report (static checks).

The browser test (test_browser.py) checks the same pages in Chromium: no dialog, no
injected element.
"""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

from chunkbench_core.reporting import ReportPaths
from chunkbench_core.reporting.html import script_hash
from chunkbench_core.reporting.webfiles import read as read_static

from .conftest import read
from .fixtures import XSS_CLOSE, XSS_IMG, XSS_SCRIPT

OUR_SCRIPTS = {read_static(name) for name in ("dom.js", "inspector.js", "board.js", "by_group.js")}


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each <script> element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._in_script is not None:
            self.scripts.append((self._in_script, "".join(self._text)))
            self._in_script = None


def test_payloads_never_appear_as_markup(any_reports: ReportPaths) -> None:
    for path in any_reports.as_dict().values():
        text = read(path)
        for payload in (XSS_SCRIPT, XSS_IMG, XSS_CLOSE, "<b>bold markup</b>", "<img src=x"):
            assert payload not in text, f"{payload!r} unescaped in {path.name}"


def test_only_our_scripts_and_no_event_handlers(any_reports: ReportPaths) -> None:
    for path in any_reports.as_dict().values():
        text = read(path)
        parsed = Elements()
        parsed.feed(text)
        executable = [body for attrs, body in parsed.scripts if attrs.get("type") != "application/json"]
        assert all(body in OUR_SCRIPTS for body in executable), path.name
        # the shared helpers, then the page's own script
        assert len(executable) <= 2 and (not executable or executable[0] == read_static("dom.js")), path.name
        for tag, attrs in parsed.tags:
            assert not any(name.startswith("on") for name in attrs), (path.name, tag, attrs)
            if tag == "img":
                assert (attrs.get("src") or "").startswith("data:image/png;base64,"), (path.name, attrs)
            if tag == "a":
                assert not re.match(r"\s*(javascript|data|https?):", attrs.get("href") or "", re.IGNORECASE)
        # the page's policy allows exactly its own scripts
        policy = next(
            a["content"] for t, a in parsed.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
        )
        assert "default-src 'none'" in policy and "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
        for body in executable:
            assert script_hash(body) in policy
        for attrs, body in parsed.scripts:
            if attrs.get("type") == "application/json":
                assert "<" not in body and ">" not in body
                json.loads(body)


def test_hostile_text_is_shown_as_text(base_reports: ReportPaths, extended_reports: ReportPaths) -> None:
    escaped = html.escape(XSS_SCRIPT, quote=True)
    managerial = read(base_reports.managerial)
    assert escaped in managerial  # the document name in the corpus table
    assert html.escape(XSS_IMG, quote=True) in managerial  # the parse error of broken.pdf
    technical = read(base_reports.technical)
    assert escaped in technical  # the question in the per-question table
    # the data for the inspector round-trips the raw text (the script shows it with textContent)
    for paths in (base_reports, extended_reports):
        data = re.search(r'id="inspector-data">(.*?)</script>', read(paths.technical), re.DOTALL).group(1)
        assert XSS_SCRIPT in json.dumps(json.loads(data), ensure_ascii=False)
    board = re.search(r'id="board-data">(.*?)</script>', read(extended_reports.decision_board), re.DOTALL).group(1)
    assert f"r4-{XSS_SCRIPT}" in {row["run"] for row in json.loads(board)["rows"]}
