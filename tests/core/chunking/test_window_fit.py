"""Every strategy fits what it embeds into the corpus model's window by construction (real MiniLM tokenizer).

The Persian case reproduces a real failure: a long DOCX of similar loan sections under long
Persian headings, where contextual_retrieval's heading prefix (title and heading path) was
added after the chunks were cut to size, so embedded texts went over MiniLM's 256 word pieces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkbench_core.chunking import STRATEGIES, ModelWindow, check_chunks, make_chunker
from chunkbench_core.parsing import parse
from chunkbench_core.parsing.context import document_header

from .helpers import bag_of_words_embed

WINDOW = 256
SIZE, OVERLAP = 192, 48  # the pipeline's defaults for MiniLM's window

PERSIAN_TITLE = "آیین‌نامه جامع اعطای تسهیلات قرض‌الحسنه و وام‌های اضطراری به کارکنان رسمی و پیمانی شرکت"
PERSIAN_HEADINGS = [
    "فصل {n}: شرایط عمومی، مدارک لازم و ضوابط پرداخت وام‌های قرض‌الحسنه ازدواج، مسکن و درمان کارکنان",
    "بخش {n}-۱: نحوه محاسبه سقف مبلغ وام، تعیین ضامنین معتبر و زمان‌بندی بازپرداخت اقساط ماهانه",
    "بند {n}-۱-۱: موارد استثنا، تمدید مهلت بازپرداخت و رسیدگی به درخواست‌های خاص در کمیته رفاه",
]
PERSIAN_PARAGRAPH = (
    "متقاضی وام باید دست‌کم دو سال سابقه خدمت داشته باشد و درخواست خود را همراه با مدارک شناسایی، "
    "گواهی کسر از حقوق و معرفی‌نامه ضامن به واحد رفاه تحویل دهد. مبلغ وام حداکثر برابر شش ماه حقوق "
    "پایه است و اقساط آن در سی و شش ماه از حقوق ماهانه کسر می‌شود. در صورت ترک خدمت، مانده بدهی "
    "یکجا از مطالبات نهایی کارمند برداشت خواهد شد. "
)

ENGLISH_HEADINGS = [
    "Chapter {n}: General conditions, required documents and payment rules for marriage, housing and medical loans",
    "Section {n}.1: How the ceiling of the loan amount is computed, valid guarantors and the repayment schedule",
    "Clause {n}.1.1: Exceptions, extensions of the repayment period and special requests to the welfare committee",
    "Note {n}.1.1.1: Transitional arrangements for staff hired before the current regulation came into force",
]
ENGLISH_PARAGRAPH = (
    "An applicant must have at least two years of service and hand in the request with identity documents, "
    "a payroll deduction certificate and a guarantor's letter to the welfare unit. The loan is at most six "
    "months of base salary and is repaid in thirty-six monthly instalments deducted from the salary. "
)


def build_persian_docx(path: Path, sections: int = 8) -> Path:
    from docx import Document

    document = Document()
    document.add_heading(PERSIAN_TITLE, level=0)
    for n in range(1, sections + 1):
        for level, heading in enumerate(PERSIAN_HEADINGS, start=1):
            document.add_heading(heading.format(n=n), level=level)
        for _ in range(4):
            document.add_paragraph(PERSIAN_PARAGRAPH * 2)
    document.save(str(path))
    return path


def build_english_markdown(path: Path, sections: int = 6) -> Path:
    lines = ["# Staff loan regulation of the company, covering every kind of loan granted to employees", ""]
    for n in range(1, sections + 1):
        for level, heading in enumerate(ENGLISH_HEADINGS, start=2):
            lines += ["#" * level + " " + heading.format(n=n), ""]
        lines += [ENGLISH_PARAGRAPH * 3, "", ENGLISH_PARAGRAPH * 2, ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    folder = tmp_path_factory.mktemp("deep-headings")
    return {
        "persian": parse(str(build_persian_docx(folder / "persian_loans.docx"))),
        "english": parse(str(build_english_markdown(folder / "english_loans.md"))),
    }


def window_of(minilm) -> ModelWindow:
    return ModelWindow(WINDOW, minilm.count_word_pieces, model_id="all-minilm-l6-v2")


@pytest.mark.parametrize("language", ["persian", "english"])
def test_the_heading_prefix_overflowed_without_the_window(language, documents, minilm):
    """The documents reproduce the failure: the same chunks with their prefix added afterwards overflow."""
    document = documents[language]
    chunks = make_chunker("contextual_retrieval", chunk_size=SIZE, chunk_overlap=OVERLAP).chunk(document)
    report = check_chunks(chunks, {document.document: document.markdown}, WINDOW, minilm.count_word_pieces)
    assert not report.passed and report.n_overflows > 0


@pytest.mark.parametrize("language", ["persian", "english"])
@pytest.mark.parametrize("strategy", STRATEGIES.names())
def test_every_embedded_text_fits_the_window_by_construction(strategy, language, documents, minilm):
    document = documents[language]
    chunker = make_chunker(
        strategy, chunk_size=SIZE, chunk_overlap=OVERLAP, window=window_of(minilm), embed=bag_of_words_embed
    )
    chunks = chunker.chunk(document)
    report = check_chunks(chunks, {document.document: document.markdown}, WINDOW, minilm.count_word_pieces)
    assert report.passed, report.problems()
    assert report.max_model_tokens_seen <= WINDOW
    for c in chunks:
        assert document.markdown[c.start : c.end] == c.text
    if strategy == "contextual_retrieval":
        assert all(c.embedded_text.endswith("\n\n" + c.text) and c.context_source == "headings" for c in chunks)
        assert report.max_model_tokens_seen > WINDOW * 3 // 4  # the prefix was counted, not left out


def test_a_heading_path_longer_than_half_the_window_keeps_its_innermost_headings(documents, minilm):
    document = documents["persian"]
    small = ModelWindow(96, minilm.count_word_pieces, model_id="small")
    chunks = make_chunker("contextual_retrieval", chunk_size=64, chunk_overlap=0, window=small).chunk(document)
    report = check_chunks(chunks, {document.document: document.markdown}, 96, minilm.count_word_pieces)
    assert report.passed, report.problems()
    shortened = [c for c in chunks if "…" in c.embedded_text.split("\n\n", 1)[0]]
    assert shortened, "some heading paths must have been shortened to fit"


def test_a_long_llm_context_is_cut_to_fit(documents, minilm):
    document = documents["english"]

    def verbose(document_text, chunk_text):
        return "This passage belongs to the staff loan regulation and explains " + "many details " * 200

    chunker = make_chunker(
        "contextual_retrieval",
        chunk_size=SIZE,
        chunk_overlap=OVERLAP,
        window=window_of(minilm),
        context=verbose,
        document_context=False,
    )
    chunks = chunker.chunk(document)
    report = check_chunks(chunks, {document.document: document.markdown}, WINDOW, minilm.count_word_pieces)
    assert report.passed, report.problems()
    assert all(c.context_source == "llm" and c.embedded_text.split("\n\n", 1)[0].endswith("…") for c in chunks)
    # with the document's header in front, the header and the cut context together still fit
    chunker = make_chunker(
        "contextual_retrieval", chunk_size=SIZE, chunk_overlap=OVERLAP, window=window_of(minilm), context=verbose
    )
    chunks = chunker.chunk(document)
    report = check_chunks(chunks, {document.document: document.markdown}, WINDOW, minilm.count_word_pieces)
    assert report.passed, report.problems()
    header = document_header(document)
    assert header and all(c.embedded_text.startswith(header + "\n\n") for c in chunks)
    assert all(c.embedded_text.split("\n\n", 2)[1].endswith("…") for c in chunks)
