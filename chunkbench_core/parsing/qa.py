"""Q&A pair detection over a run of paragraphs (ADR-0004 "Detect Q&A pattern").

Deterministic heuristics, no model call:

* question paragraph: starts with "سوال"/"سؤال"/"پرسش", "Q" or "Question"
  (optionally numbered, e.g. "سوال ۱:" or "Q1:") followed by ":" / "-" / "." / ")"
  or the end of the line; or starts with an enumerator "1-", "۲.", "3)";
* answer paragraph: starts with "پاسخ"/"جواب", "A" or "Answer" followed by a
  delimiter (":" / "-" / "." / ")").

A question paragraph immediately followed by an answer paragraph is one
``qa_pair`` unit. A single paragraph that starts like a question and holds an
answer marker on a later line (or after the question, e.g. "1- ...؟ پاسخ: ...")
is also one pair. An enumerator paragraph without an answer stays prose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DIGITS = r"[0-9\u0660-\u0669\u06f0-\u06f9]"
_DELIM = r"[:\uff1a\-\u2013.)]"
QUESTION_MARK = re.compile(
    rf"^\s*(?:{_DIGITS}{{1,3}}\s*{_DELIM}\s*)?(?:سوال|سؤال|پرسش|question|q)\s*{_DIGITS}{{0,3}}\s*(?:{_DELIM}|$)",
    re.IGNORECASE,
)
ENUMERATOR = re.compile(rf"^\s*{_DIGITS}{{1,3}}\s*[\-\u2013.)]\s*\S")
ANSWER_MARK = re.compile(rf"^\s*(?:پاسخ|جواب|answer|a)\s*{_DIGITS}{{0,3}}\s*{_DELIM}", re.IGNORECASE)
_INLINE_ANSWER = re.compile(r"(?:(?<=\s)|^)((?:پاسخ|جواب|Answer)\s*:)|(?<=\n)(A\s*:)")


@dataclass
class QAItem:
    """Either a pair (question and answer) or a lone paragraph (answer is None)."""

    question: str
    answer: str | None = None


def is_question(text: str) -> bool:
    return bool(QUESTION_MARK.match(text) or ENUMERATOR.match(text))


def is_answer(text: str) -> bool:
    return bool(ANSWER_MARK.match(text))


def split_inline_pair(text: str) -> tuple[str, str] | None:
    """ "1- question? پاسخ: answer" in one paragraph -> (question, answer)."""
    if not is_question(text):
        return None
    # look for the answer marker after the question's own marker
    head = QUESTION_MARK.match(text) or ENUMERATOR.match(text)
    assert head is not None
    for match in _INLINE_ANSWER.finditer(text, head.end()):
        marker = match.lastindex or 1
        question = text[: match.start(marker)].strip()
        answer = text[match.start(marker) :].strip()
        if question and answer and len(answer) > len(match.group(marker)):
            return question, answer
    return None


def pair_paragraphs(paragraphs: list[str]) -> list[QAItem]:
    """Group a run of paragraphs into Q&A pairs and lone paragraphs, in order."""
    items: list[QAItem] = []
    i = 0
    n = len(paragraphs)
    while i < n:
        text = paragraphs[i]
        if is_question(text) and i + 1 < n and is_answer(paragraphs[i + 1]) and not is_answer(text):
            items.append(QAItem(text, paragraphs[i + 1]))
            i += 2
            continue
        inline = split_inline_pair(text)
        if inline is not None:
            items.append(QAItem(inline[0], inline[1]))
        else:
            items.append(QAItem(text))
        i += 1
    return items
