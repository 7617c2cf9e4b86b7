"""Data sets that ship inside chunkbench (read-only package data).

- ``sample/``: the bundled sample corpus (``corpus/``), the default corpus of a run. Its question set
  lives in the repository's top-level ``questions/`` folder, one folder per benchmark
  (``questions/sample/sample.json``): ``questions/sample/`` is the default question folder of a source
  checkout, and a built package carries a copy in ``sample/questions/`` (``setup.py`` copies it), the
  default question folder of an installed chunkbench. A folder per benchmark keeps one benchmark's
  question sets out of another's run.
- ``chroma_general_evaluation/``: the public Chroma chunking benchmark (MIT; see its README.md):
  five corpora, 472 questions with character offsets, and the report's published MiniLM table.
"""

from __future__ import annotations

from pathlib import Path

DATASETS_DIR = Path(__file__).resolve().parent

SAMPLE_DIR = DATASETS_DIR / "sample"
SAMPLE_CORPUS = SAMPLE_DIR / "corpus"
#: the sample's folder in the top-level questions/ of a source checkout (the package's own root holds pyproject.toml)
PROJECT_QUESTIONS = DATASETS_DIR.parent.parent / "questions" / "sample"
#: the copy a built package carries
PACKAGED_QUESTIONS = SAMPLE_DIR / "questions"


def _sample_questions() -> Path:
    source_checkout = (DATASETS_DIR.parent.parent / "pyproject.toml").is_file()
    return (
        PROJECT_QUESTIONS if source_checkout and (PROJECT_QUESTIONS / "sample.json").is_file() else PACKAGED_QUESTIONS
    )


#: the default question folder (CHUNKBENCH_QUESTIONS): questions/ of a source checkout, else the packaged copy
SAMPLE_QUESTIONS = _sample_questions()

CHROMA_DIR = DATASETS_DIR / "chroma_general_evaluation"
CHROMA_CORPORA = CHROMA_DIR / "corpora"
CHROMA_QUESTIONS = CHROMA_DIR / "questions"
CHROMA_QUESTIONS_FILE = CHROMA_QUESTIONS / "chroma_general.csv"
CHROMA_PUBLISHED_MINILM = CHROMA_DIR / "published_minilm.csv"
