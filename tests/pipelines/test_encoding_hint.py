"""A text file none of the tried encodings reads: the error names a `chunkbench run` flag that exists, and that flag
reaches the parser (the file then parses)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing import parse
from chunkbench_core.parsing.options import ParseOptions
from chunkbench_core.run_config import ParsingRunSettings
from chunkbench_pipelines.cli import build_parser
from chunkbench_pipelines.cli.run_settings import run_settings


def options_from(*flags: str) -> ParseOptions:
    args = build_parser().parse_args(["run", *flags])
    given = ParsingRunSettings(**run_settings(args)["parsing"]).given()
    return dataclasses.replace(ParseOptions(), **given)


def test_the_encoding_hint_names_a_flag_that_reaches_the_parser(tmp_path):
    path = tmp_path / "prices.csv"
    path.write_bytes("item,price\ncafé crème,3\n".encode("latin-1"))
    with pytest.raises(DocumentProcessingError) as info:
        parse(path, options_from("--csv-encodings", "utf-8"))
    message = str(info.value)
    assert "ParseOptions" not in message
    hinted = re.search(r"chunkbench run (--csv-encodings) (\S+)", message)
    assert hinted and hinted.group(2) == "utf-8,ENCODING"
    parsed = parse(path, options_from(hinted.group(1), hinted.group(2).replace("ENCODING", "latin-1")))
    assert "café crème" in parsed.markdown
