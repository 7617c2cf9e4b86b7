""".md / .txt: markdown is the file text, offsets are exact."""

from __future__ import annotations

import time
from pathlib import Path

from chunkbench_core.parsing import parse
from tests.core.parsing.conftest import assert_spans, unit_triples

MD = """# Guide

Intro paragraph
over two lines.

## Setup   ##

Install it.

```python
# not a heading

x = 1
```

Setext title
============

Body under setext.

---

### Deep
Text right under the heading.
"""


def test_markdown_text_kept_exactly_and_structured(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(MD, encoding="utf-8")
    parsed = parse(path)
    assert parsed.markdown == MD
    assert parsed.parser == "markdown"
    assert unit_triples(parsed) == [
        ("paragraph", "Intro paragraph\nover two lines.", ["Guide"]),
        ("paragraph", "Install it.", ["Guide", "Setup"]),
        ("paragraph", "```python\n# not a heading\n\nx = 1\n```", ["Guide", "Setup"]),
        ("paragraph", "Body under setext.", ["Setext title"]),
        ("paragraph", "Text right under the heading.", ["Setext title", "Deep"]),
    ]
    assert_spans(parsed)
    top = parsed.tree.children
    assert [(n.heading, n.heading_level) for n in top] == [("Guide", 1), ("Setext title", 1)]
    assert top[0].children[1].heading == "Setup"
    assert MD[top[0].start : top[0].end] == "# Guide"


def test_txt_has_no_setext_headings(tmp_path: Path) -> None:
    text = "Title\n=====\n\n# Real\n\nbody\n"
    path = tmp_path / "notes.txt"
    path.write_text(text, encoding="utf-8")
    parsed = parse(path)
    assert parsed.parser == "text"
    assert unit_triples(parsed) == [("paragraph", "Title\n=====", []), ("paragraph", "body", ["Real"])]
    assert_spans(parsed)


def test_utf8_bom_stripped_crlf_kept(tmp_path: Path) -> None:
    text = "# Head\r\n\r\nline one\r\nline two\r\n"
    path = tmp_path / "bom.md"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    parsed = parse(path)
    assert parsed.markdown == text
    assert unit_triples(parsed) == [("paragraph", "line one\r\nline two", ["Head"])]
    assert_spans(parsed)


def test_persian_text_normalised_before_offsets(tmp_path: Path) -> None:
    path = tmp_path / "fa.md"
    path.write_text("# كتاب\n\nسلامٌ علي ۱۲۳ و ٤٥\n\nمی\u200cخواهم\n", encoding="utf-8")
    parsed = parse(path)
    assert parsed.markdown == "# کتاب\n\nسلام علی 123 و 45\n\nمی\u200cخواهم\n"
    assert unit_triples(parsed) == [
        ("paragraph", "سلام علی 123 و 45", ["کتاب"]),
        ("paragraph", "می\u200cخواهم", ["کتاب"]),
    ]
    assert_spans(parsed)


def test_cp1256_text_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "windows.txt"
    # Windows-1256 has no Persian yeh: such files carry the Arabic yeh, normalised on parse
    path.write_bytes("سلام دنيا\n\nپاراگراف دوم\n".encode("cp1256"))
    parsed = parse(path)
    assert unit_triples(parsed) == [("paragraph", "سلام دنیا", []), ("paragraph", "پاراگراف دوم", [])]
    assert any("cp1256" in w for w in parsed.warnings)


def test_one_megabyte_markdown_is_fast_and_exact(tmp_path: Path) -> None:
    block = "## Section {i}\n\nSome paragraph text with words, numbers 12345 and symbols #tag.\nSecond line.\n\n"
    text = "# Big\n\n" + "".join(block.format(i=i) for i in range(12000))
    assert len(text) > 1_000_000
    path = tmp_path / "big.md"
    path.write_text(text, encoding="utf-8")
    # CPU time of this process: other jobs on a busy 2-core machine do not count against us
    t0 = time.process_time()
    parsed = parse(path)
    elapsed = time.process_time() - t0
    assert parsed.markdown == text
    assert len(parsed.units) == 12000
    assert_spans(parsed)
    assert elapsed < 1.0, f"parsing 1 MB of markdown took {elapsed:.2f} s"
