"""A sampled corpus: the evidence kept, seeded distractors, the same everywhere, clear refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chunkbench_core.estimate.errors import EstimateError
from chunkbench_core.estimate.sampling import distractor_order, sample_documents
from chunkbench_core.evaluation.questions import Question, QuestionSet, Reference

ROOT = Path(__file__).resolve().parents[3]
CORPUS = [
    f"filings/2023 Q{q} {ticker}.pdf" for ticker in ("AAPL", "MSFT", "NVDA", "AMZN", "INTC") for q in (1, 2, 3)
] + [f"notes/memo{i}.docx" for i in range(10)]
QUESTIONS = [
    Question("q1", "What was Apple's Q3 revenue?", documents=("*2023 Q3 AAPL*",)),
    Question("q2", "Cash at Microsoft?", references=(Reference("filings/2023 Q1 MSFT.pdf", "cash and equivalents"),)),
    Question("q3", "A question for the judge only"),
    Question("q4", "Gone?", references=(Reference("archive/deleted.pdf", "an excerpt"),)),
    Question("q5", "Memos", documents=("memo3",)),  # a file name without its extension
]
EVIDENCE = {"filings/2023 Q3 AAPL.pdf", "filings/2023 Q1 MSFT.pdf", "notes/memo3.docx"}


def test_every_evidence_document_is_kept_with_seeded_distractors():
    sample = sample_documents(CORPUS, QUESTIONS, n=8, seed=0)
    assert set(sample.evidence) == EVIDENCE
    assert EVIDENCE <= set(sample.documents)
    assert len(sample.documents) == 8 and len(sample.distractors) == 5
    assert sample.documents == tuple(sorted(sample.documents))
    record = sample.record
    assert (record.n_documents, record.n_evidence, record.n_distractors, record.n_corpus) == (8, 3, 5, 25)
    assert record.missing_evidence == ("archive/deleted.pdf",)  # named by a question, not in the corpus
    assert record.label() == "sample of 8 of 25 documents (3 with evidence, seed 0)"
    assert not record.complete


def test_the_sample_depends_on_the_seed_and_nothing_else():
    first = sample_documents(CORPUS, QUESTIONS, n=8, seed=0)
    assert sample_documents(list(reversed(CORPUS)), QUESTIONS, n=8, seed=0) == first  # listing order
    assert sample_documents({d: 100 for d in CORPUS}, list(reversed(QUESTIONS)), n=8).documents == first.documents
    other = sample_documents(CORPUS, QUESTIONS, n=8, seed=1)
    assert other.documents != first.documents and other.record.fingerprint != first.record.fingerprint
    assert set(other.evidence) == EVIDENCE


def test_the_sample_is_the_same_in_another_process_with_other_hash_seeds():
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from tests.core.estimate.test_sampling import CORPUS, QUESTIONS; "
        "from chunkbench_core.estimate.sampling import sample_documents; "
        "s = sample_documents(set(CORPUS), QUESTIONS, n=8, seed=7); "
        "print(json.dumps([s.documents, s.record.fingerprint]))"
    )
    outputs = set()
    for hash_seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run(
            [sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, env=env, cwd=ROOT, check=True
        )
        outputs.add(result.stdout.strip())
    here = sample_documents(CORPUS, QUESTIONS, n=8, seed=7)
    assert outputs == {json.dumps([list(here.documents), here.record.fingerprint])}


def test_a_new_document_never_changes_which_others_are_kept():
    before = sample_documents(CORPUS, QUESTIONS, n=10, seed=3)
    after = sample_documents(CORPUS + ["filings/2024 Q1 AAPL.pdf"], QUESTIONS, n=10, seed=3)
    assert len(set(before.documents) ^ set(after.documents)) in (0, 2)
    if set(before.documents) != set(after.documents):
        assert "filings/2024 Q1 AAPL.pdf" in after.documents
    assert distractor_order(["b", "a", "c"], 3) == distractor_order(["c", "a", "b"], 3)


def test_a_token_budget_keeps_the_evidence_and_fills_up_with_distractors():
    tokens = {d: (50_000 if d.endswith(".pdf") else 2_000) for d in CORPUS}
    sample = sample_documents(tokens, QUESTIONS, token_budget=120_000, seed=0)
    assert EVIDENCE <= set(sample.documents)
    assert sample.record.tokens == sum(tokens[d] for d in sample.documents) <= 120_000
    assert sample.record.tokens > 120_000 - 50_000  # no distractor left that fits (a memo would)
    assert all(tokens[d] + sample.record.tokens > 120_000 for d in CORPUS if d not in sample.documents)
    both = sample_documents(tokens, QUESTIONS, n=5, token_budget=1_000_000)
    assert both.record.n_documents == 5 and both.record.token_budget == 1_000_000


def test_asking_for_more_than_the_corpus_keeps_everything():
    sample = sample_documents(CORPUS, QUESTIONS, n=500)
    assert sample.documents == tuple(sorted(CORPUS))
    assert sample.record.complete and sample.record.label() == "whole corpus (25 documents)"
    everything = sample_documents(CORPUS, QUESTIONS)
    assert everything.documents == sample.documents


def test_question_sets_are_read_like_questions():
    qs = QuestionSet("set", "set.json", "abc", questions=QUESTIONS)
    assert sample_documents(CORPUS, [qs], n=4).evidence == tuple(sorted(EVIDENCE))


def test_a_sample_smaller_than_the_evidence_keeps_whole_questions_and_says_how_many():
    """Asked for fewer documents (or tokens) than the evidence needs, the sample keeps the evidence of as many
    whole questions as fit, and its record names the evidence left out (a run sets those questions aside)."""
    sample = sample_documents(CORPUS, QUESTIONS, n=2)
    record = sample.record
    assert record.n_documents == 2 and len(sample.evidence) == 2 and not sample.distractors
    assert len(record.evidence_left_out) == 1 and set(record.evidence_left_out) | set(sample.evidence) == EVIDENCE
    assert (record.questions, record.questions_kept) == (5, 4)  # q3 (judge-only) and q4 (missing) stay
    assert record.label() == (
        "sample of 2 of 25 documents (2 with evidence, seed 0; 4 of 5 questions, those whose evidence it holds)"
    )
    assert sample_documents(CORPUS, QUESTIONS, n=2) == sample  # deterministic
    # a question whose evidence is in two documents needs both: the single-document ones go first
    pair = Question(
        "q6",
        "Both?",
        references=(Reference("filings/2023 Q1 NVDA.pdf", "x"), Reference("filings/2023 Q2 NVDA.pdf", "y")),
    )
    shared = [Question(f"s{i}", "Apple again", documents=("*2023 Q3 AAPL*",)) for i in range(3)]
    sample = sample_documents(CORPUS, [pair, *QUESTIONS, *shared], n=1)
    assert sample.documents == ("filings/2023 Q3 AAPL.pdf",)  # the document four questions share
    assert sample.record.questions_kept == 6  # q1, s0-s2, q3 (judge-only), q4 (not in the corpus)
    tokens = {d: 50_000 for d in CORPUS}
    budget = sample_documents(tokens, QUESTIONS, token_budget=100_000)
    assert len(budget.evidence) == 2 and budget.record.tokens == 100_000 and budget.record.questions_kept == 4


def test_refusals_say_what_to_do():
    pair = Question(
        "q6",
        "Both?",
        references=(Reference("filings/2023 Q1 NVDA.pdf", "x"), Reference("filings/2023 Q2 NVDA.pdf", "y")),
    )
    with pytest.raises(
        EstimateError,
        match=r"a sample of 1 document\(s\) cannot hold the evidence of any question: "
        r"the smallest needs 2 document\(s\)",
    ):
        sample_documents(CORPUS, [pair], n=1)
    tokens = {d: 50_000 for d in CORPUS}
    with pytest.raises(
        EstimateError, match="token budget of 40,000 cannot hold the evidence of any question.*50,000 tokens"
    ):
        sample_documents(tokens, QUESTIONS, token_budget=40_000)
    with pytest.raises(EstimateError, match="token budget needs each document's tokens"):
        sample_documents(CORPUS, QUESTIONS, token_budget=100_000)
    for bad in (0, -3, 2.5, True, "10"):
        with pytest.raises(EstimateError, match="whole number >= 1"):
            sample_documents(CORPUS, QUESTIONS, n=bad)  # type: ignore[arg-type]  # a wrong type on purpose: the check is what is tested
    with pytest.raises(EstimateError, match="seed must be an integer"):
        sample_documents(CORPUS, QUESTIONS, n=5, seed="x")  # type: ignore[arg-type]  # a wrong type on purpose: the check is what is tested
    with pytest.raises(EstimateError, match="no document"):
        sample_documents([], QUESTIONS, n=5)
    with pytest.raises(EstimateError, match="tokens must be an integer"):
        sample_documents({"a.md": -1}, QUESTIONS, n=5)


def test_the_record_is_ready_for_the_provenance():
    record = sample_documents(CORPUS, QUESTIONS, n=6, seed=2).record.to_dict()
    assert json.loads(json.dumps(record)) == record
    assert set(record) >= {
        "n_documents",
        "n_evidence",
        "n_distractors",
        "n_corpus",
        "seed",
        "requested_documents",
        "token_budget",
        "fingerprint",
        "label",
        "missing_evidence",
    }
