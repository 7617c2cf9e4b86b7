"""The commands shown in README.md and docs/*.md: found, run, and the help texts in docs/commands.md rewritten.

    python scripts/doc_commands.py --list          every command shown, with its page and line
    python scripts/doc_commands.py --write-help    rewrite the output under each `$ chunkbench ... --help` line
                                                   of docs/commands.md with what the command line prints now

The convention of the pages: a fenced block marked ``console`` is run by the documentation test
(``tests/test_docs_commands.py``). Each line starting with ``$ `` is a command (a line ending with ``\\``
continues on the next one); the lines after it, up to the next command, are the output it must print, where
``...`` stands for any text and differences in whitespace do not count. Every other fence names what it holds
(``text``, ``json``, ``toml``, ``sql``, ...) and is not run; a block of commands that cannot run in the test
(an API key, a server, tens of minutes) is fenced ``text`` with a sentence saying why.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the page whose help texts are the command line's, in full (elsewhere a help text is shown in part)
COMMANDS_PAGE = ROOT / "docs" / "commands.md"
#: the terminal width the help texts in the pages are written for (argparse wraps to COLUMNS)
COLUMNS = "100"
PROMPT = "$ "
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")


def pages(root: Path = ROOT) -> list[Path]:
    """README.md and every page under docs/ (not deploy/README.md: its commands need a cluster)."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Fence:
    info: str  # the word after the opening fence ("" when none)
    line: int  # 1-based line of the opening fence
    body: tuple[str, ...]


@dataclass(frozen=True)
class Command:
    text: str  # the command as the shell gets it (continuation lines joined by newlines)
    line: int  # 1-based line of its `$ ` in the page
    expected: str  # the output shown under it ("" when none is shown)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    commands: tuple[Command, ...]

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page.name}:{self.line}"


def fences(text: str) -> list[Fence]:
    """The fenced blocks of a Markdown text, in order. Raises ValueError for a fence left open."""
    out: list[Fence] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        marker, info, start = match.group(1), match.group(2), i
        i += 1
        body: list[str] = []
        while i < len(lines) and not (lines[i].startswith(marker) and not lines[i].strip(marker[0]).strip()):
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            raise ValueError(f"line {start + 1}: the fence {marker}{info} is never closed")
        out.append(Fence(info, start + 1, tuple(body)))
        i += 1
    return out


def commands(fence: Fence) -> tuple[Command, ...]:
    """The `$ ` commands of a console block with the output shown under each."""
    out: list[Command] = []
    body = list(fence.body)
    i = 0
    while i < len(body):
        line = body[i]
        if not line.startswith(PROMPT):  # only before the first command: the output of one is read below
            if line.strip():
                raise ValueError(f"line {fence.line + 1 + i}: a console block starts with a `$ ` command")
            i += 1
            continue
        start = i
        parts = [line[len(PROMPT):]]
        while parts[-1].endswith("\\") and i + 1 < len(body):
            i += 1
            parts.append(re.sub(r"^> ?", "", body[i]))
        i += 1
        output: list[str] = []
        while i < len(body) and not body[i].startswith(PROMPT):
            output.append(body[i])
            i += 1
        expected = "\n".join(output).strip("\n")
        out.append(Command("\n".join(parts), fence.line + 1 + start, expected + "\n" if expected else ""))
    return tuple(out)


def blocks(page: Path) -> list[Block]:
    """The console blocks of one page."""
    found = []
    for fence in fences(page.read_text(encoding="utf-8")):
        if fence.info == "console":
            found.append(Block(page, fence.line, commands(fence)))
    return found


def help_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment the help texts are printed in: the offline defaults, the pages' terminal width."""
    env = {k: v for k, v in (base if base is not None else os.environ).items()
           if not k.startswith(("CHUNKBENCH_", "OPENAI_", "QDRANT_")) and k != "DAGSTER_HOME"}
    env["COLUMNS"] = COLUMNS
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def is_help(command: Command) -> bool:
    return command.text.startswith("chunkbench ") and command.text.split()[-1] == "--help"


def help_text(command: Command) -> str:
    """What the command line prints for a `chunkbench ... --help` command now."""
    done = subprocess.run(["bash", "-c", command.text], capture_output=True, text=True, env=help_environment(),
                          cwd=ROOT, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{command.text}: exit status {done.returncode}\n{done.stderr}")
    return done.stdout


def write_help(page: Path) -> int:
    """Rewrite the output under every `chunkbench ... --help` command of ``page``; returns how many changed."""
    lines = page.read_text(encoding="utf-8").splitlines()
    changed = 0
    for block in reversed(blocks(page)):
        for command in reversed(block.commands):
            if not is_help(command):
                continue
            first = command.line  # 1-based line of the `$ `; the output starts after its continuation lines
            after = first + command.text.count("\n")
            end = after
            while end < len(lines) and not lines[end].startswith(PROMPT) and not FENCE.match(lines[end]):
                end += 1
            new = help_text(command).rstrip("\n").splitlines()
            if lines[after:end] != new:
                lines[after:end] = new
                changed += 1
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every command shown, with its page and line")
    parser.add_argument("--write-help", action="store_true", help="rewrite the help texts of docs/commands.md")
    args = parser.parse_args()
    if args.write_help:
        changed = write_help(COMMANDS_PAGE)
        print(f"{COMMANDS_PAGE.relative_to(ROOT)}: {changed} help text(s) rewritten")
        return 0
    for page in pages():
        for block in blocks(page):
            for command in block.commands:
                print(f"{page.relative_to(ROOT)}:{command.line}: {command.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
