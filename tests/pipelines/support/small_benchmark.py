"""The smallest benchmark a `chunkbench run` can do, run as a user runs it (a subprocess).

Four short documents (three Markdown files and a one-page Word file), four questions, one strategy
(fixed_size) and one corpus model (MiniLM, local): what the fault tests run on an empty or damaged
CHUNKBENCH_HOME, copied per case.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[3]
#: matplotlib's configuration and font cache for the worlds' processes (made by the first of them)
MATPLOTLIB_CACHE = Path(tempfile.gettempdir()) / "chunkbench-test-cache" / "matplotlib"
BENCHMARK = "tiny"
STRATEGY = "fixed_size"
MODEL = "all-minilm-l6-v2"
RUN = ("run", "--strategy", STRATEGY, "--corpus-model", MODEL)

DOCS = {
    "rivers.md": "# Rivers\n\nThe Almo river floods its lower valley every April after the snow melts.\n\n"
    "Its upper course freezes in January and the ferry stops until the ice is gone.\n",
    "bridges.md": "# Bridges\n\nThe Tarn footbridge was rebuilt in 1987 with a steel deck and oak rails.\n\n"
    "Heavy carts must use the stone bridge two miles downstream.\n",
    "mills.md": "# Mills\n\nThe old Halden mill ground barley until 1952, powered by a twelve-metre wheel.\n\n"
    "Its millstones came from a quarry near the northern border.\n",
}
WORD_DOCUMENT = "harbour.docx"
WORD_TEXT = "The harbour master rings the bell twice when a ship enters after dark."
QUESTIONS = [
    ("r1", "When does the Almo river flood?", "rivers.md", "floods its lower valley every April"),
    ("b1", "When was the Tarn footbridge rebuilt?", "bridges.md", "rebuilt in 1987 with a steel deck"),
    ("m1", "What did the Halden mill grind?", "mills.md", "ground barley until 1952"),
    ("h1", "What does the harbour master do when a ship enters after dark?", WORD_DOCUMENT, "rings the bell twice"),
]
LEADERBOARD_SQL = (
    "SELECT rank, strategy, corpus_model, n_questions, round(recall, 9), round(recall_at_512, 9), "
    "round(mrr, 9), verdict FROM leaderboard ORDER BY rank, strategy, corpus_model"
)


@dataclass(frozen=True)
class World:
    """A home with its corpus and question folders beside it (all under ``root``)."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def questions(self) -> Path:
        return self.root / "questions"

    @property
    def results(self) -> Path:
        return self.home / "benchmarks" / BENCHMARK

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster_home"

    def env(self, **extra: str) -> dict[str, str]:
        # PYTHONPATH: the code of this checkout, whichever checkout the installed command points at.
        # MPLCONFIGDIR: matplotlib's font list, shared by the tests' processes; in a fresh HOME each run that draws
        # the leaderboard's chart would build it again (about 0.4 s), which is no part of what these tests check
        return {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),
            "HOME": str(self.root),
            "MPLCONFIGDIR": str(MATPLOTLIB_CACHE),
            "CHUNKBENCH_HOME": str(self.home),
            "CHUNKBENCH_CORPUS": str(self.corpus),
            "CHUNKBENCH_QUESTIONS": str(self.questions),
            "CHUNKBENCH_BENCHMARK": BENCHMARK,
            **extra,
        }

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "chunkbench_pipelines.cli", *args]

    def start(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            self.command(*args), cwd=ROOT, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command(*args), cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=timeout
        )

    def run(self) -> subprocess.CompletedProcess:
        return self.cli(*RUN)

    def here(self, *args: str) -> subprocess.CompletedProcess:
        """``chunkbench ARGS`` called in this test process with this world's environment (what a subprocess gives:
        exit status, both streams), without starting Python, Dagster and the embedding engine again."""
        from .cli import chunkbench

        return chunkbench(args, self.env(), cwd=ROOT)

    def run_here(self) -> subprocess.CompletedProcess:
        return self.here(*RUN)

    def leaderboard(self) -> list[tuple]:
        """The leaderboard as a user reads it from the views file (no timings: they differ between runs)."""
        con = duckdb.connect(str(self.results / "chunkbench.duckdb"), read_only=True)
        try:
            con.execute("SET file_search_path = ?", [self.results.as_posix()])
            return con.execute(LEADERBOARD_SQL).fetchall()
        finally:
            con.close()

    def copy(self, root: Path) -> "World":
        shutil.copytree(self.root, root, symlinks=True)
        return World(root)


def write_word_document(path: Path, text: str) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Harbour", level=1)
    document.add_paragraph(text)
    document.save(str(path))


def make_world(root: Path) -> World:
    """The corpus and question set of the smallest benchmark; the home is not created (a run makes it)."""
    world = World(root)
    world.corpus.mkdir(parents=True)
    world.questions.mkdir()
    for name, text in DOCS.items():
        (world.corpus / name).write_text(text, encoding="utf-8")
    write_word_document(world.corpus / WORD_DOCUMENT, WORD_TEXT)
    (world.questions / "set.json").write_text(
        json.dumps(
            {
                "name": "tiny",
                "questions": [
                    {"id": i, "question": q, "references": [{"document": d, "content": c}]} for i, q, d, c in QUESTIONS
                ],
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return world


def output(result: subprocess.CompletedProcess) -> str:
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def no_traceback(result: subprocess.CompletedProcess) -> bool:
    text = result.stdout + result.stderr
    return "Traceback (most recent call last)" not in text and 'File "/' not in text


def alembic_rows(dagster_home: Path) -> dict[str, int]:
    """{database file: rows of its alembic_version table} for every SQLite file of a Dagster home."""
    import sqlite3

    rows = {}
    for path in sorted(dagster_home.rglob("*.db")):
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            has = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'alembic_version'").fetchone()
            if has:
                rows[str(path.relative_to(dagster_home))] = con.execute(
                    "SELECT count(*) FROM alembic_version"
                ).fetchone()[0]
        finally:
            con.close()
    return rows


def run_statuses(dagster_home: Path) -> list[str]:
    """The status of every run the Dagster instance holds."""
    from dagster import DagsterInstance

    instance = DagsterInstance.from_config(str(dagster_home))
    try:
        return [run.status.value for run in instance.get_runs()]
    finally:
        instance.dispose()
