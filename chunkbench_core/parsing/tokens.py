"""Token counting for the "cell larger than one chunk" rule (such a table is page layout, read as prose).

Chunk sizes in chunkbench are cl100k tokens, whatever the corpus model, counted by the one counter every floor uses
(:func:`chunkbench_core.tokens.count_tokens`, from the offline copy of the encoding).
"""

from __future__ import annotations


def exceeds_tokens(text: str, limit: int) -> bool:
    """True when ``text`` holds more than ``limit`` tokens; cheap for short text."""
    if len(text) <= limit:  # a cl100k token is at least one character
        return False
    # imported when a long cell is met: the encoding (tiktoken, numpy) stays out of a parse that needs none
    from chunkbench_core.tokens import count_tokens

    return count_tokens(text) > limit
