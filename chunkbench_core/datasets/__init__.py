"""Data sets that ship inside chunkbench (read-only package data).

- ``sample/``: the bundled sample corpus (``corpus/``) and its question set
  (``questions/sample.json``), the default inputs of a run.
- ``chroma_general_evaluation/``: the public Chroma chunking benchmark (MIT; see its README.md):
  five corpora, 472 questions with character offsets, and the report's published MiniLM table.
"""

from __future__ import annotations

from pathlib import Path

DATASETS_DIR = Path(__file__).resolve().parent

SAMPLE_DIR = DATASETS_DIR / "sample"
SAMPLE_CORPUS = SAMPLE_DIR / "corpus"
SAMPLE_QUESTIONS = SAMPLE_DIR / "questions"

CHROMA_DIR = DATASETS_DIR / "chroma_general_evaluation"
CHROMA_CORPORA = CHROMA_DIR / "corpora"
CHROMA_QUESTIONS = CHROMA_DIR / "questions"
CHROMA_QUESTIONS_FILE = CHROMA_QUESTIONS / "chroma_general.csv"
CHROMA_PUBLISHED_MINILM = CHROMA_DIR / "published_minilm.csv"
