"""The OpenAI-compatible caption source and the cache key for incremental parsing."""

from __future__ import annotations

import base64
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from chunkbench_core.errors import ConfigError
from chunkbench_core.parsing import ParseOptions, parse, parse_cache_key
from chunkbench_core.parsing.captions import image_mime, openai_vision_captioner
from tests.core.parsing import builders


class FakeCompletions:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        message = SimpleNamespace(content="  A small red square.  ")
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])


def test_openai_vision_captioner_sends_image_as_data_url(rich_docx: Path) -> None:
    completions = FakeCompletions()
    client = SimpleNamespace(chat=SimpleNamespace(completions=completions))
    source = openai_vision_captioner(model="vision-model", client=client)
    parsed = parse(rich_docx, ParseOptions(caption_source=source))
    assert parsed.units[-1].content_type == "image_caption"
    assert parsed.units[-1].text == "A small red square."
    (call,) = completions.calls
    assert call["model"] == "vision-model" and call["temperature"] == 0
    parts = call["messages"][0]["content"]
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]).startswith(b"\x89PNG")


def test_captioner_validates_its_settings() -> None:
    with pytest.raises(ConfigError, match="model must be a non-empty model name"):
        openai_vision_captioner(model="", client=object())


def test_image_mime() -> None:
    assert image_mime(builders.png_bytes()) == "image/png"
    assert image_mime(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert image_mime(b"????") == "application/octet-stream"


def test_cache_key_changes_with_content_and_the_options_its_format_reads(tmp_path: Path) -> None:
    path = tmp_path / "a.docx"  # the key hashes the bytes; it does not parse them
    path.write_bytes(b"PK\x03\x04 a word document")
    key = parse_cache_key(path)
    assert key == parse_cache_key(path)
    assert key != parse_cache_key(path, ParseOptions(chunk_token_limit=256))
    assert key != parse_cache_key(path, ParseOptions(caption_source=lambda b: "x"))
    # options a Word file never reads leave its key alone
    assert key == parse_cache_key(path, ParseOptions(pdf_min_total_chars=10, csv_encodings=("utf-8",)))
    assert key == parse_cache_key(path, ParseOptions(memory_limit_bytes=512 * 1024 * 1024))
    path.write_bytes(b"PK\x03\x04 a changed word document")
    assert key != parse_cache_key(path)
    markdown = tmp_path / "a.md"
    markdown.write_text("# A\n\ntext\n", encoding="utf-8")
    assert parse_cache_key(markdown) == parse_cache_key(markdown, ParseOptions(chunk_token_limit=256))
    assert parse_cache_key(markdown) != parse_cache_key(markdown, ParseOptions(csv_encodings=("utf-8",)))
