"""``chunkbench parse FILE --explain``: which rule made each heading, table header and title, and Q&A pair.

:func:`explain_text` renders ``ParsedDocument.explain`` (recorded by the parsers) for a person: one
block per decision, in document order, with the line of the parsed text it concerns, what was
decided and the rule, named so it can be found among the parser settings (``[pdf] heading_size_ratio``,
``[tables] caption_lines``, ...). With the heuristics in force, the settings changed from the
defaults are listed first.
"""

from __future__ import annotations

from chunkbench_core.parsing.heuristics import ParserHeuristics
from chunkbench_core.parsing.models import ParsedDocument

_KIND_LABELS = {"heading": "heading", "table": "table", "qa_pair": "Q&A pair"}


def _line_number(markdown: str, offset: int) -> int:
    return markdown.count("\n", 0, offset) + 1


def _short(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def explain_text(parsed: ParsedDocument, heuristics: ParserHeuristics | None = None) -> str:
    """A readable account of the parser's decisions on ``parsed`` (see the module docstring)."""
    counts = {kind: sum(1 for e in parsed.explain if e.kind == kind) for kind in _KIND_LABELS}
    summary = ", ".join(f"{n} {_KIND_LABELS[k]}{'s' if n != 1 else ''}" for k, n in counts.items())
    lines = [f"{parsed.document} ({parsed.parser}): {summary}"]
    if heuristics is not None:
        changed = heuristics.changed()
        if changed:
            lines.append(
                "settings changed from the defaults: "
                + "; ".join(
                    f"[{group}] {key} = {value!r}" for group, values in changed.items() for key, value in values.items()
                )
            )
        else:
            lines.append("parser settings: the defaults")
    if not parsed.explain:
        lines.append("no headings, tables or Q&A pairs were found")
    for entry in parsed.explain:
        first = _line_number(parsed.markdown, entry.start)
        last = _line_number(parsed.markdown, max(entry.start, entry.end - 1))
        where = f"line {first}" if first == last else f"lines {first}-{last}"
        lines.append("")
        lines.append(f"{_KIND_LABELS.get(entry.kind, entry.kind)} ({where}): {_short(entry.text, 240)}")
        lines.append(f"  rule: {entry.rule}")
    return "\n".join(lines) + "\n"
