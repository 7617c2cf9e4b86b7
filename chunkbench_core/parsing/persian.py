"""Persian text normalisation applied at parse time, so that text typed with Arabic or Persian letter forms
matches either way.

Rules, in the order they are applied to each character:

1. Arabic presentation forms (U+FB50-U+FDFF, U+FE70-U+FEFC), which PDF text
   extraction returns for printed Persian (environment-facts "Persian text"), are
   folded to their base letters with NFKC - only these characters, so Latin
   ligatures and everything else keep their exact code points.
2. Arabic yeh (U+064A) and alef maksura (U+0649) become Persian yeh (U+06CC);
   Arabic kaf (U+0643) becomes Persian keheh (U+06A9).
3. Arabic-Indic digits (U+0660-0669) and Persian digits (U+06F0-06F9) are both
   rewritten to one style: ASCII 0-9 by default, or Persian digits.
4. Diacritics (harakat U+064B-U+065F, superscript alef U+0670, Quranic marks
   U+0610-U+061A, U+06D6-U+06ED) and tatweel (U+0640) are removed.
5. The zero-width non-joiner (U+200C) is kept: it is part of Persian spelling.

The function is applied before any character offset is computed, so spans stay
exact. On text without any of these characters (all ASCII or plain Latin text)
it returns the input unchanged, which keeps offsets into .md files exact.

Also here: the right-to-left helpers used by the PDF parser to undo the
reversed word order of printed Persian PDFs.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

ZWNJ = "\u200c"

_ARABIC_YEH = ("\u064a", "\u0649")
_PERSIAN_YEH = "\u06cc"
_ARABIC_KAF = "\u0643"
_PERSIAN_KAF = "\u06a9"

_REMOVED_RANGES: tuple[tuple[int, int], ...] = (
    (0x0610, 0x061A),
    (0x064B, 0x065F),
    (0x0670, 0x0670),
    (0x06D6, 0x06ED),
    (0x0640, 0x0640),
)
_PRESENTATION_RANGES: tuple[tuple[int, int], ...] = ((0xFB50, 0xFDFF), (0xFE70, 0xFEFC))

# Quick test for "does this text need any work at all".
_NEEDS_WORK = re.compile("[\u0600-\u06ff\ufb50-\ufdff\ufe70-\ufefc]")


def _base_map(digits: str) -> dict[int, str]:
    table: dict[int, str] = {}
    for ch in _ARABIC_YEH:
        table[ord(ch)] = _PERSIAN_YEH
    table[ord(_ARABIC_KAF)] = _PERSIAN_KAF
    for lo, hi in _REMOVED_RANGES:
        for cp in range(lo, hi + 1):
            table[cp] = ""
    for i in range(10):
        target = str(i) if digits == "ascii" else chr(0x06F0 + i)
        table[0x0660 + i] = target
        table[0x06F0 + i] = target
    return table


@lru_cache(maxsize=4)
def _translation_table(digits: str) -> dict[int, str]:
    base = _base_map(digits)
    table = dict(base)
    for lo, hi in _PRESENTATION_RANGES:
        for cp in range(lo, hi + 1):
            ch = chr(cp)
            if unicodedata.category(ch) == "Cn":
                continue
            folded = unicodedata.normalize("NFKC", ch)
            if folded == ch:
                continue
            folded = folded.translate(base)
            # Isolated harakat forms fold to "space + mark": drop what is left.
            table[cp] = folded.strip() if not folded.strip() or folded.startswith(" ") else folded
    return table


def normalize_persian(text: str, digits: str = "ascii") -> str:
    """Apply the Persian normalisation; a no-op on text without Arabic script.

    ``digits`` is "ascii" or "persian" (see module docstring, rule 3).
    """
    if text.isascii() or _NEEDS_WORK.search(text) is None:
        return text
    return text.translate(_translation_table(digits))


def is_rtl_char(ch: str) -> bool:
    """True for letters of right-to-left scripts (Hebrew, Arabic, and their presentation forms)."""
    cp = ord(ch)
    return (0x0590 <= cp <= 0x08FF or 0xFB1D <= cp <= 0xFDFF or 0xFE70 <= cp <= 0xFEFC) and unicodedata.bidirectional(
        ch
    ) in ("R", "AL")


def _is_ltr_char(ch: str) -> bool:
    return unicodedata.bidirectional(ch) == "L"


def rtl_score(text: str) -> tuple[int, int]:
    """(number of strong right-to-left letters, number of strong left-to-right letters)."""
    rtl = ltr = 0
    for ch in text:
        if ch.isascii():
            if ch.isalpha():
                ltr += 1
            continue
        if is_rtl_char(ch):
            rtl += 1
        elif _is_ltr_char(ch):
            ltr += 1
    return rtl, ltr


def is_rtl_text(text: str) -> bool:
    """A line is right-to-left when it has more strong RTL letters than strong LTR ones."""
    if text.isascii():
        return False
    rtl, ltr = rtl_score(text)
    return rtl > ltr


def has_rtl(text: str) -> bool:
    return not text.isascii() and any(is_rtl_char(c) for c in text)


def contains_presentation_forms(text: str) -> bool:
    return any(0xFB50 <= ord(c) <= 0xFDFF or 0xFE70 <= ord(c) <= 0xFEFC for c in text)


def order_rtl_tokens(tokens: list[str]) -> list[str]:
    """Turn tokens listed left-to-right as printed on a right-to-left line into reading order.

    The line is read right to left, so the token list is reversed; runs of
    left-to-right tokens (English words, numbers) keep their own left-to-right
    order inside the reversed line.
    """
    reversed_tokens = list(reversed(tokens))
    out: list[str] = []
    run: list[str] = []
    for tok in reversed_tokens:
        if has_rtl(tok):
            if run:
                out.extend(reversed(run))
                run = []
            out.append(tok)
        else:
            run.append(tok)
    if run:
        out.extend(reversed(run))
    return out
