"""Evidence located from the answers: where in the documents does a question's expected answer come from?

Teams' question sets give a reviewed answer and the source documents, rarely the evidence span. This
module finds candidate spans, says how it found each (``located_by``) and how sure it is (``score``,
0 to 1), and leaves the decision to a person (``chunkbench questions review``).

Each question's answer (its ``expected_answer``; for an imported context that is not verbatim in the
documents, that context) is searched in the question's source documents, or in the whole corpus when it
names none, for:

- ``answer_words``: runs of the answer's words found in the same order in a document. Words are runs of
  letters and digits (a time of day such as ``10:00`` is one word), compared case-folded, so whitespace, quotes
  (curly or straight), dashes, ``$`` and punctuation between them never matter. A run counts only when it is informative: at least
  :data:`MIN_RUN_WORDS` words (or the whole answer, of three words or more) and :data:`MIN_INFORMATIVE_CHARS`
  characters of informative words
  (stop words weigh nothing; a word found in every document of a corpus of three or more weighs half),
  and found at no more than :data:`MAX_OCCURRENCES` places of the searched documents (a boilerplate
  phrase such as "for the quarter ended September 30" is found at many and never counts alone). Runs of one
  document close together (a gap of up to :data:`MAX_GAP_WORDS` words in both texts) make one span, and the
  rules apply to the span.
  A short answer rarely has 25 such characters: a span holding at least :data:`MIN_COVERAGE` of the answer's
  informative characters (and at least :data:`MIN_SHORT_CHARS`) counts too. Score: the informative
  characters over 60, or 0.8 times the share of the answer's informative characters the span holds, whichever
  is higher, at most 1.
- ``answer_figures``: the answer's figures, compared by value: ``82,959`` = ``82959`` = ``$82,959``;
  ``(3,000)`` is -3,000 (a figure matches its negative too: "a loss of 3,000" is the table's ``(3,000)``).
  Years, small whole numbers (below 100) and figures with fewer than 3 significant digits found at more
  than one line are not evidence. The evidence is the parsed line holding the figure (a table row is one
  line), or its sentence when the line is a long paragraph. Score: 0.7 per distinctive figure of the line
  (half that for a figure found on two or three lines; 0.6 times that for one with fewer than 3 significant
  digits, which must then be on one line only), at most 1.
- ``answer_figures_scaled``: a figure written with a scale ("$82.9 billion", "4.2 million") matched to a
  table figure in millions or thousands that rounds (or truncates) to it: 82,959 (millions) for "$82.9
  billion". Score 0.45 per figure: a table's unit is not read, so a person should look.

Filings that repeat each other's tables (a quarter's figures are the next year's comparative column) and a
figure a filing prints in several tables are read with the answer's own words:

- an answer that cites documents ("SOURCE(S): 2022 Q3 AAPL.pdf", "(SOURCE: 2023 q1 aapl)", a file name in a
  sentence) is searched in those of its source documents it cites, and keeps the best span of each of them;
- a figure's period is the nearest period its line or sentence of the answer names ("September 30, 2022",
  "Q3 2022", "the third quarter of 2022"); when the documents' names give periods (``2022 Q3 AMZN.pdf``), the
  figure is looked for in the filing of that period (else the first filing after it), and in every searched
  document only when that filing does not hold it;
- a figure found on several lines is placed on the line sharing the most informative words (at least
  :data:`MIN_SHARED_WORDS`) with its sentence of the answer ("Total net sales" for "total net sales were
  $127,101 million"), and then counts as found once.

A span found by several methods keeps the highest score plus 0.2 per further method (at most 1) and
``located_by`` joins the methods with ``+``. At most :data:`MAX_LOCATED` spans per question are kept, each
with a score of at least ``min_score`` (default :data:`DEFAULT_MIN_SCORE`).

Every search is one pass over each document: the answers' word triples go into one index, each document's
words are looked up in it once; figures are indexed per document by value. Time and memory are linear in
the corpus and in the answers' size.
"""

from __future__ import annotations

import functools
import operator
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path

from .questions import Question, Reference, match_documents, resolve_source_documents

MIN_RUN_WORDS = 5
MIN_INFORMATIVE_CHARS = 25.0
MAX_OCCURRENCES = 2
MAX_GAP_WORDS = 3
#: a span shorter than MIN_INFORMATIVE_CHARS still counts when it holds this share of a short answer's
#: informative characters, and at least MIN_SHORT_CHARS of them ("Riders must be 16 or older.")
MIN_COVERAGE = 0.5
MIN_SHORT_CHARS = 12.0
#: the score of a span holding the whole answer, by coverage (less for a part)
COVERAGE_SCORE = 0.8
MAX_LOCATED = 5
#: a figure a filing repeats is placed on the line sharing at least this many informative words with its sentence
MIN_SHARED_WORDS = 2
DEFAULT_MIN_SCORE = 0.4
#: words of a run looked up together (the index key)
GRAM = 3
#: a line longer than this is a paragraph: a figure's evidence is then its sentence
MAX_LINE_CHARS = 400

STOP_WORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of
off on once only or other our ours ourselves out over own same she should so some such than that the their
theirs them themselves then there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours yourself yourselves
""".split()
)

#: a word: a run of letters and digits, or a time of day ("10:00"), so an answer such as "From 10:00 to 18:00 on
#: Saturdays" has informative words (split, its hours would be small whole numbers, which weigh nothing)
_WORD = re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?![\d:])|[^\W_]+(?:['’][^\W_]+)*")
_FIGURE = re.compile(
    r"(?<![\w.,])(?P<open>\()?\s?(?P<minus>[-−–])?\s?(?P<currency>[$€£])?\s?"
    r"(?P<number>\d{1,3}(?:,\d{3})+|\d+)(?P<decimals>\.\d+)?(?![\w,]\d)(?:\s?(?P<close>\)))?(?P<percent>\s?%)?"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|mn)\b)?",
    re.IGNORECASE,
)
_SCALES = {"thousand": 3, "million": 6, "mn": 6, "billion": 9, "bn": 9, "trillion": 12}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _fold(word: str) -> str:
    return word.casefold().replace("’", "'")


@dataclass(frozen=True)
class Figure:
    value: Decimal  # the absolute value as written (no scale applied)
    negative: bool
    significant: int  # significant digits
    decimals: int
    scale: int  # power of ten of a scale word (million = 6), 0 without
    percent: bool
    start: int
    end: int

    @property
    def is_year(self) -> bool:
        return self.decimals == 0 and self.scale == 0 and not self.percent and 1900 <= self.value <= 2100

    @property
    def informative(self) -> bool:
        """Not a year, not a small whole number."""
        return not self.is_year and not (self.decimals == 0 and self.value < 100 and not self.percent)


def figures(text: str) -> list[Figure]:
    """The figures of ``text``: ``(3,000)`` negative, ``$82,959`` = 82959, ``4.2 million`` with its scale."""
    out = []
    for m in _FIGURE.finditer(text):
        digits = m.group("number").replace(",", "")
        decimals = (m.group("decimals") or "")[1:]
        try:
            value = Decimal(f"{digits}.{decimals}" if decimals else digits)
        except InvalidOperation:
            continue
        negative = bool(m.group("minus")) or bool(m.group("open") and m.group("close"))
        significant = len((digits + decimals).strip("0")) or 1
        scale = _SCALES.get((m.group("scale") or "").lower(), 0)
        out.append(
            Figure(
                value, negative, significant, len(decimals), scale, bool(m.group("percent")), m.start("number"), m.end()
            )
        )
    return out


# -- documents, indexed once ----------------------------------------------------------------------
@functools.lru_cache(maxsize=200_000)
def _fold_cached(word: str) -> str:
    return _fold(word)


class IndexedDocument:
    """A document's folded words; their offsets and its figures are read when first needed."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self.words: list[str] = list(map(_fold_cached, _WORD.findall(text)))
        self._starts: array | None = None
        self._ends: array | None = None
        self._figures: dict[Decimal, list[int]] | None = None
        self._sorted: list[Decimal] = []
        self._line_starts: list[int] | None = None
        self._sentences: dict[int, list[int]] = {}  # a long line's start -> its sentence cuts

    def line_span(self, position: int) -> tuple[int, int]:
        """:func:`line_span` with the document's line starts found once, and a long line's sentences cut once:
        each call costs a binary search, so a one-line document of megabytes is searched in linear time."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", self.text))]
        starts = self._line_starts
        i = bisect_right(starts, position) - 1
        start = starts[i]
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(self.text)
        if end - start > MAX_LINE_CHARS:
            cuts = self._sentences.get(start)
            if cuts is None:
                cuts = [start, *(m.end() for m in _SENTENCE_END.finditer(self.text, start, end)), end]
                self._sentences[start] = cuts
            j = bisect_right(cuts, position) - 1
            start, end = cuts[max(0, j)], cuts[min(len(cuts) - 1, max(1, j + 1))]
        return _strip(self.text, start, end)

    def _offsets(self) -> tuple[array, array]:
        """Each word's start and end offsets, made on first use."""
        if self._starts is None or self._ends is None:
            # 8 bytes an offset (a large document stays small in memory), built in C: no Python step per word
            starts = array("q", map(re.Match.start, _WORD.finditer(self.text)))
            self._starts = starts
            self._ends = array("q", map(operator.add, starts, map(len, _WORD.findall(self.text))))
        return self._starts, self._ends

    def start(self, word: int) -> int:
        starts = self._starts  # called once per word matched: the made offsets are read directly
        return (starts if starts is not None else self._offsets()[0])[word]

    def end(self, word: int) -> int:
        ends = self._ends
        return (ends if ends is not None else self._offsets()[1])[word]

    @property
    def figures(self) -> dict[Decimal, list[int]]:
        """Figure value -> positions of the figures with that value (absolute, scale not applied)."""
        if self._figures is None:
            by_value: dict[Decimal, list[int]] = defaultdict(list)
            for f in figures(self.text):
                by_value[f.value].append(f.start)
            self._figures = dict(by_value)
            self._sorted = sorted(by_value)
        return self._figures

    @property
    def sorted_values(self) -> list[Decimal]:
        _ = self.figures
        return self._sorted


def index_document(name: str, text: str) -> IndexedDocument:
    return IndexedDocument(name, text)


def line_span(text: str, position: int) -> tuple[int, int]:
    """The line holding ``position`` (without its line break and surrounding blanks); its sentence when the line
    is a long paragraph."""
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    end = len(text) if end < 0 else end
    if end - start > MAX_LINE_CHARS:
        cuts = [start, *(start + m.end() for m in _SENTENCE_END.finditer(text[start:end])), end]
        i = bisect_right(cuts, position) - 1
        start, end = cuts[max(0, i)], cuts[min(len(cuts) - 1, max(1, i + 1))]
    return _strip(text, start, end)


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    """``start, end`` without the blanks at either end."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _dominating(runs: Sequence[tuple[str, int, int, int, int]]) -> list[int]:
    """For each run, how many runs hold its answer words (``a_first' <= a_first`` and ``a_last' >= a_last``, itself
    included): a sweep over ``a_first`` with a Fenwick tree over ``a_last``, n log n rather than n²."""
    if not runs:
        return []
    size = max(r[4] for r in runs) + 2
    tree = [0] * (size + 1)

    def add(index: int) -> None:
        index += 1
        while index <= size:
            tree[index] += 1
            index += index & -index

    def count_at_most(index: int) -> int:
        index += 1
        total = 0
        while index > 0:
            total += tree[index]
            index -= index & -index
        return total

    order = sorted(range(len(runs)), key=lambda i: runs[i][3])
    out = [0] * len(runs)
    inserted = 0
    k = 0
    while k < len(order):
        group_end = k
        while group_end < len(order) and runs[order[group_end]][3] == runs[order[k]][3]:
            add(runs[order[group_end]][4])
            group_end += 1
        inserted += group_end - k
        for i in order[k:group_end]:
            out[i] = inserted - count_at_most(runs[i][4] - 1)
        k = group_end
    return out


# -- results --------------------------------------------------------------------------------------
@dataclass
class Candidate:
    document: str
    start: int
    end: int
    score: float
    methods: set[str]

    def reference(self, text: str) -> Reference:
        return Reference(
            self.document,
            text[self.start : self.end],
            self.start,
            self.end,
            "+".join(
                m
                for m in ("answer_words", "context_words", "answer_figures", "answer_figures_scaled")
                if m in self.methods
            ),
            round(min(1.0, self.score), 3),
        )


@dataclass
class LocateReport:
    """What ``locate`` found: per question id its located references; counts by method."""

    located: dict[str, list[Reference]] = field(default_factory=dict)
    n_searched: int = 0  # questions with a text to search from
    by_method: Counter = field(default_factory=Counter)  # method -> questions with evidence found by it
    without: list[str] = field(default_factory=list)  # searched, no evidence at all (none found, none reviewed)
    reviewed: list[str] = field(default_factory=list)  # searched, nothing new found, has reviewed evidence

    @property
    def n_found(self) -> int:
        return sum(1 for refs in self.located.values() if refs)

    def summary(self) -> str:
        if not self.n_searched:
            return "no question has an answer to look for evidence from"
        methods = ", ".join(f"{n} by {m.replace('_', ' ')}" for m, n in sorted(self.by_method.items())) or "none"
        located = f"({methods}; a question can count under several)"
        if not self.reviewed:
            return (
                f"evidence located for {self.n_found} of {self.n_searched} question(s) with an answer {located}; "
                f"{len(self.without)} without"
            )
        return (
            f"evidence for {self.n_found + len(self.reviewed)} of {self.n_searched} question(s) with an answer: "
            f"{len(self.reviewed)} with reviewed evidence (accepted or hand-written), {self.n_found} newly located "
            f"{located}; {len(self.without)} without"
        )


@dataclass(frozen=True)
class Search:
    """One text to locate: the question, the text (an answer or a context), where to look, and its method."""

    question_id: str
    text: str
    documents: tuple[str, ...]  # the searched documents (all when the question names none)
    words_method: str = "answer_words"
    #: the documents the text cites ("SOURCE(S): 2022 Q3 AAPL.pdf"): each gets its best span
    cited: tuple[str, ...] = ()


_MONTH_QUARTER = {
    m: (i // 3) + 1
    for i, m in enumerate(
        (
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        )
    )
}
_ORDINAL_QUARTER = {"first": 1, "second": 2, "third": 3, "fourth": 4}
_PERIOD_IN_TEXT = re.compile(
    r"(?P<month>January|February|March|April|May|June|July|August|September|October|November|December)"
    r"\s+\d{1,2},?\s+(?P<year1>(?:19|20)\d\d)"
    r"|\bQ(?P<q2>[1-4])\s*[-_ ]?\s*(?:FY\s*)?(?P<year2>(?:19|20)\d\d)"
    r"|\b(?P<year3>(?:19|20)\d\d)\s*[-_ ]?\s*Q(?P<q3>[1-4])\b"
    r"|\b(?P<ordinal>first|second|third|fourth)\s+quarter\s+(?:of\s+(?:fiscal\s+)?)?(?P<year4>(?:19|20)\d\d)",
    re.IGNORECASE,
)
_PERIOD_IN_NAME = re.compile(
    r"(?<![0-9])(?P<y1>(?:19|20)\d\d)[\s_-]*Q(?P<q1>[1-4])(?![0-9])"
    r"|(?<![A-Za-z0-9])Q(?P<q2>[1-4])[\s_-]*(?:FY)?[\s_-]*(?P<y2>(?:19|20)\d\d)",
    re.IGNORECASE,
)
_CITATION = re.compile(r"SOURCES?(?:\(S\))?\s*:\s*(?P<names>[^\n]+)", re.IGNORECASE)
_FILE_NAME = re.compile(r"[^\s,;:()\[\]\"']+\.(?:pdf|docx?|md|txt|html?|xlsx)\b", re.IGNORECASE)


def document_period(name: str) -> tuple[int, int] | None:
    """The (year, quarter) a filing's name says it covers (``2023 Q3 AMZN.pdf``, ``AMZN_Q3_2023``); None."""
    m = _PERIOD_IN_NAME.search(Path(name).name)
    if m is None:
        return None
    return (int(m.group("y1")), int(m.group("q1"))) if m.group("y1") else (int(m.group("y2")), int(m.group("q2")))


def text_periods(text: str) -> list[tuple[int, tuple[int, int]]]:
    """(position, (year, quarter)) of every period a text names: a quarter-end date (September 30, 2022), Q3 2022,
    2022 Q3, the third quarter of 2022."""
    out = []
    for m in _PERIOD_IN_TEXT.finditer(text):
        if m.group("month"):
            period = (int(m.group("year1")), _MONTH_QUARTER[m.group("month").lower()])
        elif m.group("q2"):
            period = (int(m.group("year2")), int(m.group("q2")))
        elif m.group("q3"):
            period = (int(m.group("year3")), int(m.group("q3")))
        else:
            period = (int(m.group("year4")), _ORDINAL_QUARTER[m.group("ordinal").lower()])
        out.append((m.start(), period))
    return out


def cited_documents(text: str, names: Sequence[str]) -> tuple[str, ...]:
    """The documents a text cites: after ``SOURCE(S):``, and any file name it mentions, each matched to one
    document of ``names`` (by its letters and digits, extension optional); sorted, each once."""
    from .evidence import resolve_document_name

    found: set[str] = set()
    pieces: list[str] = []
    for m in _CITATION.finditer(text):
        pieces += [p.strip(" .") for p in re.split(r"\s*(?:[,;|]|\band\b)\s*", m.group("names")) if p.strip(" .")]
    for m in _FILE_NAME.finditer(text):
        # "the 2023 Q3 AMZN.pdf document": the words before ".pdf" that name one document, longest first
        words = text[max(0, m.start() - 80) : m.end()].split()
        for k in range(min(6, len(words)), 0, -1):
            pieces.append(" ".join(words[-k:]))
    for piece in pieces:
        matches = resolve_document_name(piece, names)
        if len(matches) == 1:
            found.add(matches[0])
    return tuple(sorted(found))


def _segment_text(text: str, position: int) -> str:
    """The line or sentence of ``text`` holding ``position``."""
    cuts = _segment_of(text)
    i = bisect_right(cuts, position) - 1
    return text[cuts[i] : cuts[min(i + 1, len(cuts) - 1)]]


@functools.lru_cache(maxsize=64)
def _segment_of(text: str) -> list[int]:
    """The cut positions of a text's segments: its lines and sentences (a figure's period is read in its own);
    cached, as each figure of a text asks for them (do not change the list)."""
    cuts = {0, len(text)}
    cuts.update(m.end() for m in re.finditer(r"\n|(?<=[.!?])\s+(?=[A-Z(\-•*])", text))
    return sorted(cuts)


class Locator:
    """The corpus indexed once; :meth:`locate` runs any number of searches in one pass over it."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        self.documents = {name: index_document(name, text) for name, text in sorted(documents.items())}
        n = len(self.documents)
        self._half_weight: frozenset[str] = frozenset()
        if n >= 3:
            df = Counter(w for d in self.documents.values() for w in set(d.words))
            self._half_weight = frozenset(w for w, c in df.items() if c == n)

    def names(self) -> list[str]:
        return list(self.documents)

    def _weight(self, word: str) -> float:
        if word in STOP_WORDS:
            return 0.0
        if word.isdigit() and len(word) < 3:
            return 0.0
        return 0.5 if word in self._half_weight else 1.0

    # -- words ------------------------------------------------------------------------------------
    def _word_runs(self, searches: Sequence[Search]) -> dict[int, list[tuple[str, int, int, int, int]]]:
        """Per search: maximal runs (document, first word, last word + 1, answer first, answer last + 1)."""
        grams: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
        for s_index, search in enumerate(searches):
            words = [_fold(w) for w in _WORD.findall(search.text)]
            for j in range(len(words) - GRAM + 1):
                grams[tuple(words[j : j + GRAM])].append((s_index, j))
        wanted: dict[str, set[int]] = defaultdict(set)
        for s_index, search in enumerate(searches):
            for name in search.documents:
                wanted[name].add(s_index)
        runs: dict[int, list[tuple[str, int, int, int, int]]] = defaultdict(list)

        def close(name: str, active: dict[tuple[int, int], int], last: int) -> None:
            # the runs of ``active`` end at gram ``last``: record them (words first..last + GRAM)
            for (s_index, j), begun in active.items():
                length = last - begun + 1  # grams in the run
                runs[s_index].append((name, begun, last + GRAM, j - length + 1, j + GRAM))

        for name, doc in self.documents.items():
            if name not in wanted:
                continue
            mine = wanted[name]
            w = doc.words
            # one pass in C over the document's word triples: the positions found in the answers' index
            found = [(i, grams[g]) for i, g in enumerate(zip(*(w[k:] for k in range(GRAM)))) if g in grams]
            active: dict[tuple[int, int], int] = {}  # (search, answer position) -> gram where the run began
            previous = -2
            for i, hits in found:
                if i != previous + 1:  # a gap: every run ended at the previous position
                    close(name, active, previous)
                    active = {}
                current: dict[tuple[int, int], int] = {}
                for s_index, j in hits:
                    if s_index in mine:
                        current[(s_index, j)] = active.get((s_index, j - 1), i)
                close(name, {k: v for k, v in active.items() if (k[0], k[1] + 1) not in current}, i - 1)
                active, previous = current, i
            close(name, active, previous)
        return runs

    def _informative(self, doc: IndexedDocument, first: int, last: int) -> float:
        return sum(self._weight(word) * len(word) for word in doc.words[first:last])

    def _word_candidates(self, search: Search, runs: list[tuple[str, int, int, int, int]]) -> list[Candidate]:
        runs = sorted(runs, key=lambda r: (r[0], r[1]))
        # the answer's own informative characters: a short answer found whole is sure evidence
        answer_words = [_fold(x) for x in _WORD.findall(search.text)]
        answer_info = sum(self._weight(w) * len(w) for w in answer_words)
        merged: list[list] = []  # [document, first, last, answer first, answer last, informative chars, words]
        # the places (in the searched documents) holding the same answer words: boilerplate is at many
        holding = _dominating(runs)
        for (name, first, last, a_first, a_last), occurrences in zip(runs, holding):
            if occurrences > MAX_OCCURRENCES:
                continue
            info = self._informative(self.documents[name], first, last)
            if (
                merged
                and merged[-1][0] == name
                and first - merged[-1][2] <= MAX_GAP_WORDS
                and abs(a_first - merged[-1][4]) <= MAX_GAP_WORDS
            ):
                # runs a few words apart in both texts (an answer that inserts or drops a word) are one span
                overlap = max(0, merged[-1][2] - first)
                merged[-1][5] += info - self._informative(self.documents[name], first, first + overlap)
                merged[-1][6] += last - first - overlap
                merged[-1][2], merged[-1][4] = max(merged[-1][2], last), max(merged[-1][4], a_last)
            else:
                merged.append([name, first, last, a_first, a_last, info, last - first])
        out: list[Candidate] = []
        for name, first, last, a_first, a_last, info, words in merged:
            # a run of fewer words counts when it is the whole answer ("in the library basement")
            whole = a_first == 0 and a_last >= len(answer_words)
            if words < MIN_RUN_WORDS and not whole:
                continue
            coverage = info / answer_info if answer_info else 0.0
            if info < MIN_INFORMATIVE_CHARS and not (coverage >= MIN_COVERAGE and info >= MIN_SHORT_CHARS):
                continue
            doc = self.documents[name]
            score = max(info / 60.0, COVERAGE_SCORE * min(1.0, coverage))
            out.append(Candidate(name, doc.start(first), doc.end(last - 1), min(1.0, score), {search.words_method}))
        return out

    # -- figures ----------------------------------------------------------------------------------
    def _period_documents(self, search: Search) -> dict[int, list[IndexedDocument]]:
        """Per figure position of the text: the searched filings of the period its segment names (the nearest
        period of its line or sentence), when filings repeat a table (a quarter's figures are also the next
        year's comparatives): the filing of that quarter, else the first filing after it. Empty when the text
        names no period or the documents' names give none."""
        periods = {n: document_period(n) for n in search.documents}
        if not any(periods.values()):
            return {}
        named = text_periods(search.text)
        if not named:
            return {}
        cuts = _segment_of(search.text)
        out: dict[int, list[IndexedDocument]] = {}
        for f in figures(search.text):
            segment = bisect_right(cuts, f.start) - 1
            low, high = cuts[segment], cuts[min(segment + 1, len(cuts) - 1)]
            near = [(abs(position - f.start), period) for position, period in named if low <= position < high]
            if not near:
                continue
            period = min(near)[1]
            same = [n for n, p in periods.items() if p == period]
            if not same:
                later = sorted({p for p in periods.values() if p is not None and p > period})
                same = [n for n, p in periods.items() if later and p == later[0]]
            if same:
                out[f.start] = [self.documents[n] for n in same]
        return out

    def _best_by_words(self, places: set[tuple[str, int, int]], segment: str) -> set[tuple[str, int, int]]:
        """The place whose line shares the most informative words (at least :data:`MIN_SHARED_WORDS`) with
        ``segment``; the first such line when several tie; none when no line shares enough."""
        wanted = {w for w in map(_fold, _WORD.findall(segment)) if self._weight(w) > 0 and not w[0].isdigit()}
        best: tuple[int, tuple[str, int, int]] | None = None
        for place in sorted(places):
            name, start, end = place
            text = self.documents[name].text[start:end]
            shared = len(wanted & set(map(_fold, _WORD.findall(text))))
            if shared >= MIN_SHARED_WORDS and (best is None or shared > best[0]):
                best = (shared, place)
        return {best[1]} if best is not None else set()

    def _figure_candidates(self, search: Search) -> list[Candidate]:
        wanted = [f for f in figures(search.text) if f.informative]
        if not wanted:
            return []
        every = [self.documents[n] for n in search.documents]
        by_period = self._period_documents(search)
        lines: dict[tuple[str, int, int], dict[str, float]] = defaultdict(dict)  # line -> figure key -> weight
        scaled: dict[tuple[str, int, int], dict[str, float]] = defaultdict(dict)
        for f in wanted:
            docs = by_period.get(f.start, every)
            if docs is not every and not any(f.value in d.figures for d in docs) and f.scale < 6:
                docs = every  # the period's filing does not hold it as written: every filing is searched
            key = f"{f.value}{'%' if f.percent else ''}e{f.scale}"
            places = {(d.name, *d.line_span(p)) for d in docs for p in d.figures.get(f.value, ())}
            if (len(places) > 3 and f.significant >= 4) or (len(places) > 1 and f.significant >= 3):
                # a distinctive figure a filing repeats (net sales in the statement, the segments, the MD&A): the
                # line that shares the most words with the answer's sentence around it, when it shares some
                best = self._best_by_words(places, _segment_text(search.text, f.start))
                places = best if best or len(places) > 3 else places
            if places and len(places) <= 3:  # the figure as written
                weight = 0.7 * (1.0 if len(places) == 1 else 0.5)
                if f.significant < 3:
                    weight *= 0.6 if len(places) == 1 else 0.0
                for place in places:
                    lines[place][key] = max(lines[place].get(key, 0.0), weight)
            elif not places and f.scale >= 6:  # "$82.9 billion": a table figure in millions or thousands
                unit = Decimal(10) ** (f.scale - f.decimals)  # one unit of the last digit written
                total = f.value * Decimal(10) ** f.scale
                places = set()
                rounded = set()  # the places whose value rounds to the figure as written (within half a unit)
                for table_unit in (6, 3):
                    scale = Decimal(10) ** table_unit
                    low, high = (total - unit) / scale, (total + unit) / scale
                    for d in docs:
                        for value in d.sorted_values[
                            bisect_left(d.sorted_values, low) : bisect_right(d.sorted_values, high)
                        ]:
                            if len(str(value).replace(".", "").strip("0")) >= 3:
                                found = {(d.name, *d.line_span(p)) for p in d.figures[value]}
                                places |= found
                                if abs(value * scale - total) * 2 < unit:
                                    rounded |= found
                # "$14.21 million" is within one unit of both 14,208 and 14,215 (thousands), but only 14,208
                # rounds to it: one place that rounds to the figure is the figure, whatever else is near
                if len(rounded) == 1:
                    places = rounded
                elif len(places) > 1:  # a figure repeated: the line sharing its sentence's words, if one does
                    best = self._best_by_words(rounded or places, _segment_text(search.text, f.start))
                    places = best if best or len(places) > 3 else places
                if places and len(places) <= 3:
                    for place in places:
                        scaled[place][key] = 0.45 * (1.0 if len(places) == 1 else 0.5)
        out = []
        for method, weighted in (("answer_figures", lines), ("answer_figures_scaled", scaled)):
            for (name, start, end), weights in weighted.items():
                score = sum(weights.values())
                if score > 0 and end > start:
                    out.append(Candidate(name, start, end, min(1.0, score), {method}))
        return out

    # -- all together -----------------------------------------------------------------------------
    def locate(
        self,
        searches: Sequence[Search],
        min_score: float = DEFAULT_MIN_SCORE,
        max_located: int = MAX_LOCATED,
        rejected: Mapping[str, Iterable[tuple[str, int, int]]] | None = None,
    ) -> dict[str, list[Reference]]:
        """Located references per question id (several searches of one question are merged), best first.

        ``rejected``: per question id, spans (document, start, end) a person rejected: never proposed again.
        """
        runs = self._word_runs(searches)
        by_question: dict[str, list[Candidate]] = defaultdict(list)
        cited: dict[str, set[str]] = defaultdict(set)
        for s_index, search in enumerate(searches):
            by_question[search.question_id] += self._word_candidates(search, runs.get(s_index, []))
            by_question[search.question_id] += self._figure_candidates(search)
            cited[search.question_id].update(search.cited)
        out: dict[str, list[Reference]] = {}
        for qid, candidates in by_question.items():
            refused = set((rejected or {}).get(qid, ()))
            kept = _merge_overlapping(candidates)
            kept = [c for c in kept if c.score >= min_score and (c.document, c.start, c.end) not in refused]
            kept.sort(key=lambda c: (-c.score, c.document, c.start))
            # an answer citing several documents gets the best span of each it cites, then the best of the rest
            first = [
                next(c for c in kept if c.document == d)
                for d in sorted(cited[qid])
                if any(c.document == d for c in kept)
            ]
            chosen = [*first, *(c for c in kept if c not in first)][: max(max_located, len(first))]
            chosen.sort(key=lambda c: (-c.score, c.document, c.start))
            out[qid] = [c.reference(self.documents[c.document].text) for c in chosen]
        return out


def _merge_overlapping(candidates: list[Candidate]) -> list[Candidate]:
    """Spans of one document that overlap become one (the union); several methods raise the score."""
    out: list[Candidate] = []
    for c in sorted(candidates, key=lambda c: (c.document, c.start, -c.end)):
        last = out[-1] if out else None
        if last is not None and last.document == c.document and c.start < last.end:
            new_methods = c.methods - last.methods
            last.end = max(last.end, c.end)
            last.score = max(last.score, c.score) + 0.2 * len(new_methods)
            last.methods |= c.methods
        else:
            out.append(Candidate(c.document, c.start, c.end, c.score, set(c.methods)))
    return out


def searches_for(question: Question, names: Sequence[str]) -> list[Search]:
    """The searches of one question: its expected answer, in its source documents (all when it names none)."""
    answer = question.expected_answer.strip()
    if not answer:
        return []
    documents = resolve_source_documents(question, names) or tuple(names)
    # the documents the answer cites, among its source documents, are where its evidence is
    cited = tuple(d for d in cited_documents(answer, names) if d in documents)
    return [Search(question.id, answer, cited or documents, cited=cited)]


def locate_questions(
    questions: Sequence[Question],
    locator: Locator,
    min_score: float = DEFAULT_MIN_SCORE,
    extra: Sequence[Search] = (),
    answers_of: Iterable[str] | None = None,
) -> tuple[list[Question], LocateReport]:
    """``questions`` with their located references replaced by newly located ones.

    The expected answer of each question is searched (of those in ``answers_of`` when given), and the
    ``extra`` searches (an imported context not verbatim in the documents). Hand-written and reviewed
    references are kept; spans a person rejected (kept in the question's ``metadata.rejected_evidence``) are
    never proposed again. Re-running gives the same file.
    """
    names = locator.names()
    chosen = None if answers_of is None else set(answers_of)
    searches = [s for q in questions if chosen is None or q.id in chosen for s in searches_for(q, names)]
    searches += list(extra)
    rejected = {
        q.id: {
            (r["document"], r["start"], r["end"])
            for r in q.metadata.get("rejected_evidence", [])
            if isinstance(r, dict) and {"document", "start", "end"} <= set(r)
        }
        for q in questions
    }
    found = locator.locate(searches, min_score, rejected=rejected)
    searched = {s.question_id for s in searches}
    report = LocateReport(n_searched=len(searched))
    out = []
    for q in questions:
        if q.id not in searched:
            out.append(q)
            continue
        kept = [r for r in q.references if not r.located]
        have = {(k.document, k.start, k.end) for k in kept}
        new = [r for r in found.get(q.id, []) if (r.document, r.start, r.end) not in have]
        report.located[q.id] = new
        if new:
            for method in {m for r in new for m in r.located_by.split("+")}:
                report.by_method[method] += 1
        elif kept:  # nothing new: its accepted or hand-written evidence stands (a re-found span is one of them)
            report.reviewed.append(q.id)
        else:
            report.without.append(q.id)
        out.append(replace(q, references=(*kept, *new)))
    return out, report


__all__ = [
    "DEFAULT_MIN_SCORE",
    "Figure",
    "LocateReport",
    "Locator",
    "Search",
    "figures",
    "line_span",
    "locate_questions",
    "match_documents",
    "searches_for",
]
