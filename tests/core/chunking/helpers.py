"""Shared helpers of the chunking tests: documents, fake embeddings and counters."""

from __future__ import annotations

import re
import zlib

import numpy as np

from chunkbench_core.datasets import CHROMA_CORPORA, SAMPLE_CORPUS
from chunkbench_core.parsing.models import ParsedDocument, TreeNode, Unit

CHROMA = CHROMA_CORPORA
SAMPLES = SAMPLE_CORPUS
CHROMA_NAMES = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")
SMALL_CHROMA = ("chatlogs", "state_of_the_union")


def doc(
    text: str, name: str = "doc.md", units: list[Unit] | None = None, tree: TreeNode | None = None
) -> ParsedDocument:
    return ParsedDocument(
        document=name, markdown=text, tree=tree or TreeNode("document"), units=units or [], parser="test"
    )


def bag_of_words_embed(texts: list[str], dim: int = 256) -> np.ndarray:
    """Deterministic fake boundary model: hashed bag of lower-case words (shared words = similar)."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            out[row, zlib.crc32(word.encode()) % dim] += 1.0
    return out


def topic_embed(topics: dict[str, int], dim: int = 8):
    """Fake boundary model: a text's vector is the axis of the first topic word it contains."""
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for row, text in enumerate(texts):
            lowered = text.lower()
            axis = next((a for word, a in topics.items() if word in lowered), dim - 1)
            out[row, axis] = 1.0
        return out

    embed.calls = calls  # type: ignore[attr-defined]  # the test's own attribute on the object
    return embed


def words_counter(texts: list[str]) -> list[int]:
    """Fake model tokenizer: one token per whitespace word plus 2 specials ([CLS]/[SEP])."""
    return [len(t.split()) + 2 for t in texts]


def chroma_doc(name: str) -> ParsedDocument:
    from chunkbench_core.parsing import parse

    parsed = parse(str(CHROMA / f"{name}.md"))
    parsed.document = f"{name}.md"
    return parsed
