"""Q&A pair detection over a run of paragraphs: a question and its answer are one unit, so no chunk separates
them.

Deterministic heuristics, no model call; the markers are settings
(:class:`~chunkbench_core.parsing.heuristics.QAHeuristics`), by default:

* question paragraph: starts with "سوال"/"سؤال"/"پرسش", "Q" or "Question"
  (optionally numbered, e.g. "سوال ۱:" or "Q1:") followed by ":" / "-" / "." / ")"
  or the end of the line; or starts with an enumerator "1-", "۲.", "3)";
* answer paragraph: starts with "پاسخ"/"جواب", "A" or "Answer" followed by a
  delimiter (":" / "-" / "." / ")").

A question paragraph immediately followed by an answer paragraph is one
``qa_pair`` unit. A single paragraph that starts like a question and holds an
answer marker on a later line (or after the question, e.g. "1- ...؟ پاسخ: ...")
is also one pair. An enumerator paragraph without an answer stays prose.
Each pair records the rule that made it (:attr:`QAItem.rule`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from chunkbench_core.parsing.heuristics import QAHeuristics

_DIGITS = r"[0-9\u0660-\u0669\u06f0-\u06f9]"
_DELIM = r"[:\uff1a\-\u2013.)]"
ENUMERATOR = re.compile(rf"^\s*{_DIGITS}{{1,3}}\s*[\-\u2013.)]\s*\S")
_DEFAULT = QAHeuristics()


def _alternatives(markers: tuple[str, ...]) -> str:
    # longest first, so "question" is tried before "q"
    return "|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True))


@dataclass(frozen=True)
class _Patterns:
    question: re.Pattern[str]
    answer: re.Pattern[str]
    inline: re.Pattern[str] | None
    numbered: bool


@lru_cache(maxsize=32)
def patterns(qa: QAHeuristics = _DEFAULT) -> _Patterns:
    """The compiled marker patterns of ``qa`` (cached per settings)."""
    question = re.compile(
        rf"^\s*(?:{_DIGITS}{{1,3}}\s*{_DELIM}\s*)?(?:{_alternatives(qa.question_markers)})\s*{_DIGITS}{{0,3}}"
        rf"\s*(?:{_DELIM}|$)",
        re.IGNORECASE,
    )
    answer = re.compile(rf"^\s*(?:{_alternatives(qa.answer_markers)})\s*{_DIGITS}{{0,3}}\s*{_DELIM}", re.IGNORECASE)
    words = tuple(m for m in qa.inline_answer_markers if len(m) > 1)
    letters = tuple(sorted({m.upper() for m in qa.answer_markers if len(m) == 1}))
    parts = []
    if words:
        parts.append(rf"(?:(?<=\s)|^)((?:{_alternatives(words)})\s*:)")
    if letters:
        parts.append(rf"(?<=\n)((?:{_alternatives(letters)})\s*:)")
    inline = re.compile("|".join(parts)) if parts else None
    return _Patterns(question, answer, inline, qa.numbered_questions)


# the default patterns, for callers that only need to know where an item starts (PDF line joining)
QUESTION_MARK = patterns().question
ANSWER_MARK = patterns().answer


@dataclass
class QAItem:
    """Either a pair (question and answer) or a lone paragraph (answer is None); ``rule`` says why a pair."""

    question: str
    answer: str | None = None
    rule: str = ""


def _question_head(text: str, p: _Patterns) -> re.Match[str] | None:
    return p.question.match(text) or (ENUMERATOR.match(text) if p.numbered else None)


def is_question(text: str, qa: QAHeuristics = _DEFAULT) -> bool:
    return _question_head(text, patterns(qa)) is not None


def is_answer(text: str, qa: QAHeuristics = _DEFAULT) -> bool:
    return bool(patterns(qa).answer.match(text))


def starts_item(text: str, qa: QAHeuristics = _DEFAULT) -> bool:
    """The text opens a question, an answer or an enumerated item (a new paragraph in a PDF)."""
    p = patterns(qa)
    return bool(p.question.match(text) or p.answer.match(text) or ENUMERATOR.match(text))


def _marker(match: re.Match[str]) -> str:
    return match.group(0).strip()


def _describe_question(text: str, p: _Patterns) -> str:
    head = p.question.match(text)
    if head is not None:
        return f"question marker {_marker(head)!r}"
    head = ENUMERATOR.match(text)
    assert head is not None
    return f"numbered question {text[: head.end() - 1].strip()!r}"


def split_inline_pair(text: str, qa: QAHeuristics = _DEFAULT) -> tuple[str, str, str] | None:
    """ "1- question? پاسخ: answer" in one paragraph -> (question, answer, rule)."""
    p = patterns(qa)
    head = _question_head(text, p)
    if head is None or p.inline is None:
        return None
    # look for the answer marker after the question's own marker
    for match in p.inline.finditer(text, head.end()):
        marker = match.lastindex or 1
        question = text[: match.start(marker)].strip()
        answer = text[match.start(marker) :].strip()
        if question and answer and len(answer) > len(match.group(marker)):
            rule = (
                f"{_describe_question(text, p)} + answer marker {match.group(marker).strip()!r} in the same paragraph"
            )
            return question, answer, rule
    return None


def pair_paragraphs(paragraphs: list[str], qa: QAHeuristics = _DEFAULT) -> list[QAItem]:
    """Group a run of paragraphs into Q&A pairs and lone paragraphs, in order."""
    p = patterns(qa)
    items: list[QAItem] = []
    i = 0
    n = len(paragraphs)
    while i < n:
        text = paragraphs[i]
        if (
            _question_head(text, p) is not None
            and i + 1 < n
            and p.answer.match(paragraphs[i + 1])
            and not p.answer.match(text)
        ):
            answer = paragraphs[i + 1]
            answer_head = p.answer.match(answer)
            assert answer_head is not None
            rule = f"{_describe_question(text, p)} + answer marker {_marker(answer_head)!r} in the next paragraph"
            items.append(QAItem(text, answer, rule))
            i += 2
            continue
        inline = split_inline_pair(text, qa)
        if inline is not None:
            items.append(QAItem(*inline))
        else:
            items.append(QAItem(text))
        i += 1
    return items
