"""Words shown to people: one helper for counted nouns, used by evaluation texts and reports alike."""

from __future__ import annotations

from typing import Any


def plural(n: Any, word: str, words: str | None = None) -> str:
    """``"1 question"``, ``"3 questions"`` (``words`` for irregular plurals)."""
    count = int(n)
    return f"{count} {word if count == 1 else (words or word + 's')}"
