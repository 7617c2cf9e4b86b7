"""Markdown (.md) and plain text (.txt): the file text *is* the markdown.

The text is kept exactly as in the file, so character offsets given by an
external benchmark against the .md file line up with ours. The only changes:

* the file is decoded (UTF-8, UTF-8 with BOM - the BOM is removed - or cp1256,
  see :func:`chunkbench_core.parsing.guards.decode_text`);
* the Persian normalisation (parsing.persian; a no-op on text without Arabic script).

Structure:

* ATX headings - a line of 1-6 ``#`` followed by a space (up to 3 spaces of
  indent, optional closing ``#``s) - open sections; in .md files a one-line
  paragraph underlined with ``===`` or ``---`` is a level 1/2 (setext) heading;
* lines inside a fenced code block (``` or ~~~) are never headings, and the
  whole fence, blank lines included, is one paragraph unit;
* a line of only ``---``/``===`` that underlines nothing (a thematic break in .md) is no unit;
* every other run of non-blank lines is one ``paragraph`` unit whose span runs
  from its first to its last non-whitespace character.
"""

from __future__ import annotations

import re
from pathlib import Path

from chunkbench_core.parsing.builder import heading_node_type
from chunkbench_core.parsing.guards import decode_text
from chunkbench_core.parsing.models import Explanation, ParsedDocument, TreeNode, Unit
from chunkbench_core.parsing.options import ParseOptions
from chunkbench_core.parsing.persian import normalize_persian

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class _Outline:
    """Section stack and tree for text whose offsets are already fixed."""

    def __init__(self) -> None:
        self.root = TreeNode(node_type="document")
        self.stack: list[tuple[int, TreeNode]] = [(0, self.root)]
        self.explain: list[Explanation] = []

    def heading(self, title: str, level: int, start: int, end: int, rule: str = "") -> None:
        if rule:
            self.explain.append(Explanation("heading", title, f"level {level}: {rule}", start, end))
        while len(self.stack) > 1 and self.stack[-1][0] >= level:
            self.stack.pop()
        node = TreeNode(node_type=heading_node_type(title), heading=title, heading_level=level, start=start, end=end)
        self.stack[-1][1].children.append(node)
        self.stack.append((level, node))

    def path(self) -> list[str]:
        return [n.heading or "" for _, n in self.stack[1:]]

    def leaf(self, unit: Unit) -> None:
        self.stack[-1][1].children.append(
            TreeNode(
                node_type="paragraph", text=unit.text, content_type=unit.content_type, start=unit.start, end=unit.end
            )
        )


def structure_text(text: str, *, setext: bool, explain: list[Explanation] | None = None) -> tuple[TreeNode, list[Unit]]:
    """Headings and paragraph units of ``text`` (see module docstring); ``explain`` collects the rule
    of each heading."""
    outline = _Outline()
    units: list[Unit] = []
    para_start = -1
    para_end = -1
    para_lines = 0
    para_first_line = (0, 0)
    fence: str | None = None

    def flush() -> None:
        nonlocal para_start, para_end, para_lines
        if para_start >= 0 and para_end > para_start:
            unit = Unit("paragraph", text[para_start:para_end], para_start, para_end, outline.path())
            units.append(unit)
            outline.leaf(unit)
        para_start = -1
        para_end = -1
        para_lines = 0

    pos = 0
    length = len(text)
    while pos <= length:
        nl = text.find("\n", pos)
        line_end = length if nl < 0 else nl
        line = text[pos:line_end]
        line_start = pos
        pos = line_end + 1
        stripped = line.strip()

        if fence is not None:
            if stripped:
                para_end = line_start + len(line.rstrip())
            if stripped.startswith(fence) and stripped.strip(fence[0]) == "":
                fence = None
            if nl < 0:
                break
            continue

        fence_match = _FENCE.match(line)
        if fence_match:
            flush()
            fence = fence_match.group(1)
            para_start = line_start + (len(line) - len(line.lstrip()))
            para_end = line_start + len(line.rstrip())
            para_lines = 2  # never a setext heading
        elif not stripped:
            flush()
        else:
            atx = _ATX.match(line)
            underline = _SETEXT.match(line) if setext else None
            if atx:
                flush()
                title = (atx.group(2) or "").strip()
                if title:
                    h_start = line_start + (len(line) - len(line.lstrip()))
                    outline.heading(
                        title,
                        len(atx.group(1)),
                        h_start,
                        line_start + len(line.rstrip()),
                        f"a line starting with {atx.group(1)!r} (markdown heading)",
                    )
            elif underline and para_lines == 0:
                pass  # a thematic break ("---") on its own: no content
            elif underline and para_lines == 1:
                h_start, h_end = para_first_line
                title = text[h_start:h_end].strip()
                para_start = -1
                para_lines = 0
                outline.heading(
                    title,
                    1 if underline.group(1)[0] == "=" else 2,
                    h_start,
                    line_start + len(line.rstrip()),
                    f"a line underlined with {underline.group(1)[0] * 3!r} (markdown heading)",
                )
            else:
                if para_start < 0:
                    para_start = line_start + (len(line) - len(line.lstrip()))
                    para_first_line = (para_start, line_start + len(line.rstrip()))
                para_end = line_start + len(line.rstrip())
                para_lines += 1
        if nl < 0:
            break
    flush()
    if explain is not None:
        explain.extend(outline.explain)
    return outline.root, units


def parse_text_file(path: Path, data: bytes, options: ParseOptions) -> ParsedDocument:
    """Parse a .md or .txt file (see module docstring)."""
    text, encoding = decode_text(path, data, options.csv_encodings)
    text = normalize_persian(text, options.persian_digits)
    is_md = path.suffix.lower() == ".md"
    explain: list[Explanation] = []
    tree, units = structure_text(text, setext=is_md, explain=explain)
    warnings: list[str] = []
    if encoding.lower() not in ("utf-8-sig", "utf-8", "utf8"):
        warnings.append(f"decoded as {encoding} (not UTF-8)")
    return ParsedDocument(
        document=path.name,
        markdown=text,
        tree=tree,
        units=units,
        parser="markdown" if is_md else "text",
        warnings=warnings,
        stats={"characters": len(text), "paragraph": len(units)},
        explain=explain,
    )
