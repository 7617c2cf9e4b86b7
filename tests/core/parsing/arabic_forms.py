"""A tiny Arabic-script shaper for building "printed" Persian PDF fixtures.

It replaces each letter of a word by its contextual presentation form (isolated,
initial, medial or final), which is what a printing application stores in a PDF.
The form table is derived from the Unicode character database (the compatibility
decompositions of U+FB50-U+FDFF and U+FE70-U+FEFC), so no table is typed in.
No ligatures (lam-alef stays two glyphs): enough for text-extraction tests.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

_FORMS = ("isolated", "final", "initial", "medial")


@lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, str]]:
    table: dict[str, dict[str, str]] = {}
    for cp in list(range(0xFB50, 0xFE00)) + list(range(0xFE70, 0xFEFD)):
        decomposition = unicodedata.decomposition(chr(cp))
        if not decomposition.startswith("<"):
            continue
        tag, _, rest = decomposition.partition(" ")
        form = tag.strip("<>")
        parts = rest.split()
        if form not in _FORMS or len(parts) != 1:
            continue
        base = chr(int(parts[0], 16))
        table.setdefault(base, {}).setdefault(form, chr(cp))
    return table


def _dual_joining(ch: str) -> bool:
    forms = _table().get(ch, {})
    return "initial" in forms and "medial" in forms


def shape_word(word: str) -> str:
    table = _table()
    out: list[str] = []
    for i, ch in enumerate(word):
        forms = table.get(ch)
        if not forms:
            out.append(ch)
            continue
        prev = word[i - 1] if i > 0 else ""
        nxt = word[i + 1] if i + 1 < len(word) else ""
        joins_prev = bool(prev) and _dual_joining(prev)
        joins_next = bool(nxt) and nxt in table and _dual_joining(ch)
        if joins_prev and joins_next:
            form = "medial"
        elif joins_prev:
            form = "final"
        elif joins_next:
            form = "initial"
        else:
            form = "isolated"
        out.append(forms.get(form) or forms.get("isolated") or ch)
    return "".join(out)
