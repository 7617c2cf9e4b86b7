"""Stored parses are keyed by content, parser version and parse options."""

from chunkbench_core.parsing import ParseOptions, parse
from chunkbench_core.parsing.captions import openai_vision_captioner
from chunkbench_core.stages.documents import ParseRequest, parse_corpus
from chunkbench_core.storage.corpus import ParsedStore, scan_corpus
from chunkbench_core.storage.results_db import ResultsDB


def counting_parser(options: ParseOptions, calls: list[str]):
    def run(path: str):
        calls.append(path)
        return parse(path, options)

    return run


def test_changed_parse_options_parse_again_and_change_the_corpus_fingerprint(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "prices.md").write_text("# Prices\n\nThe fee is ۱۲۳ rials.\n", encoding="utf-8")
    sources = scan_corpus(corpus)
    results = ResultsDB(tmp_path / "results")
    calls: list[str] = []

    def run(options: ParseOptions):
        store = ParsedStore(tmp_path / "parsed", f"v1-{options.fingerprint()}")
        summary = parse_corpus(ParseRequest(sources, store, counting_parser(options, calls)), results)
        return summary, store.manifest_fingerprint(), store.load_manifest_documents()[0].markdown

    first, fingerprint_ascii, text = run(ParseOptions())
    assert first.parsed == ["prices.md"] and "123" in text
    again, fingerprint_again, _ = run(ParseOptions(soffice_timeout_s=5))  # a setting that changes nothing
    assert again.reused == ["prices.md"] and fingerprint_again == fingerprint_ascii and len(calls) == 1
    persian, fingerprint_persian, text = run(ParseOptions(persian_digits="persian"))
    assert persian.parsed == ["prices.md"] and "۱۲۳" in text and len(calls) == 2
    assert fingerprint_persian != fingerprint_ascii


def test_caption_sources_count_by_what_they_call():
    def captioner(model: str, url: str | None = None):
        return openai_vision_captioner(model=model, base_url=url, api_key="sk-secret-not-in-the-id", client=object())

    plain = ParseOptions().fingerprint()
    mini = ParseOptions(caption_source=captioner("gpt-4o-mini")).fingerprint()
    assert (
        len(
            {
                plain,
                mini,
                ParseOptions(caption_source=captioner("gpt-4o")).fingerprint(),
                ParseOptions(caption_source=captioner("llava", "http://127.0.0.1:11434/v1")).fingerprint(),
            }
        )
        == 4
    )
    assert ParseOptions(caption_source=captioner("gpt-4o-mini")).fingerprint() == mini  # stable across builds
    assert "sk-secret" not in captioner("gpt-4o-mini").caption_id


def test_a_parser_setting_re_parses_only_the_formats_it_applies_to(tmp_path):
    """Each record's key carries the options its own format reads: a PDF heading pattern leaves Word and text
    files parsed, a Q&A marker leaves text files parsed; the corpus's letters by script go into the manifest."""
    import dataclasses
    import shutil

    from chunkbench_core.datasets import SAMPLE_CORPUS
    from chunkbench_core.embedding.language import ScriptShare
    from chunkbench_core.parsing import ParserHeuristics

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("security_policy.pdf", "persian_leave_policy.docx", "product_faq.md"):
        shutil.copy(SAMPLE_CORPUS / name, corpus / name)
    sources = scan_corpus(corpus)
    results = ResultsDB(tmp_path / "results")
    calls: list[str] = []

    def run(options: ParseOptions):
        store = ParsedStore(tmp_path / "parsed", "v1", options)
        summary = parse_corpus(ParseRequest(sources, store, counting_parser(options, calls)), results)
        return summary, store

    first, store = run(ParseOptions())
    assert sorted(first.parsed) == ["persian_leave_policy.docx", "product_faq.md", "security_policy.pdf"]
    script = ScriptShare.from_dict(store.manifest_script())
    assert script == first.script and script.needs_multilingual and script.share("arabic") > 0.05
    heuristics = ParserHeuristics()
    pdf = dataclasses.replace(heuristics, pdf=dataclasses.replace(heuristics.pdf, heading_size_ratio=1.3))
    changed, _ = run(ParseOptions(heuristics=pdf))
    assert changed.parsed == ["security_policy.pdf"]
    assert sorted(changed.reused) == ["persian_leave_policy.docx", "product_faq.md"]
    qa = dataclasses.replace(pdf, qa=dataclasses.replace(pdf.qa, question_markers=("vraag", "question")))
    changed, store = run(ParseOptions(heuristics=qa))
    assert sorted(changed.parsed) == ["persian_leave_policy.docx", "security_policy.pdf"]
    assert changed.reused == ["product_faq.md"]
    again, _ = run(ParseOptions(heuristics=qa))
    assert again.parsed == [] and len(again.reused) == 3
    # the manifest names the options in force as a whole (provenance), and its fingerprint moved with the parses
    assert store.manifest()["parser_version"] == f"v1-{ParseOptions(heuristics=qa).fingerprint()}"


# -- one parse per document content, whichever command asks ------------------------------------------
def _corpus(tmp_path, files: dict[str, str]):
    corpus = tmp_path / "corpus"
    corpus.mkdir(exist_ok=True)
    for name, text in files.items():
        (corpus / name).write_text(text, encoding="utf-8")
    return corpus


def test_read_or_parse_parses_each_content_once_and_again_when_the_file_or_the_options_change(tmp_path):
    from chunkbench_core.stages.documents import read_or_parse
    from chunkbench_core.storage.corpus import parsed_store

    corpus = _corpus(tmp_path, {"a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nThe fee is ۱۲۳ rials.\n"})
    calls: list[str] = []
    options = ParseOptions()

    def read(options: ParseOptions):
        return read_or_parse(
            scan_corpus(corpus), parsed_store(tmp_path / "results", options), counting_parser(options, calls)
        )

    first = read(options)
    assert sorted(first.summary.parsed) == ["a.md", "b.md"] and len(calls) == 2
    assert [d.document for d in first.documents] == ["a.md", "b.md"]
    second = read(options)  # another command, or the same one again: nothing parsed
    assert len(calls) == 2 and sorted(second.summary.reused) == ["a.md", "b.md"]
    assert [d.markdown for d in second.documents] == [d.markdown for d in first.documents]
    (corpus / "a.md").write_text("# A\n\nAlpha text, changed.\n", encoding="utf-8")
    third = read(options)
    assert third.summary.parsed == ["a.md"] and third.summary.reused == ["b.md"] and len(calls) == 3
    assert "changed" in third.documents[0].markdown
    persian = read(ParseOptions(persian_digits="persian"))  # options a markdown file reads: parsed again
    assert sorted(persian.summary.parsed) == ["a.md", "b.md"] and "۱۲۳" in persian.documents[1].markdown
    # the run's parse step reads the same records: nothing parsed again
    summary = parse_corpus(
        ParseRequest(scan_corpus(corpus), parsed_store(tmp_path / "results", options), counting_parser(options, calls)),
        ResultsDB(tmp_path / "results"),
    )
    assert sorted(summary.reused) == ["a.md", "b.md"] and len(calls) == 5


def test_read_or_parse_reports_a_stored_failure_without_parsing_it_again_and_prints_progress(tmp_path):
    from chunkbench_core import progress
    from chunkbench_core.stages.documents import read_or_parse
    from chunkbench_core.storage.corpus import parsed_store

    corpus = _corpus(tmp_path, {"good.md": "# Good\n\nText.\n", "bad.pdf": "not a pdf at all"})
    calls: list[str] = []
    lines: list[str] = []
    with progress.sink(lambda p: lines.append(p.line())):
        first = read_or_parse(
            scan_corpus(corpus), parsed_store(tmp_path / "results"), counting_parser(ParseOptions(), calls)
        )
    assert [d.document for d in first.documents] == ["good.md"] and "bad.pdf" in first.summary.failed
    assert lines[0].startswith("parsing: 0/2 documents") and lines[-1].startswith("parsing: 2/2 documents")
    again = read_or_parse(
        scan_corpus(corpus), parsed_store(tmp_path / "results"), counting_parser(ParseOptions(), calls)
    )
    assert len(calls) == 2 and again.summary.failed["bad.pdf"] == first.summary.failed["bad.pdf"]
    assert str(corpus / "bad.pdf") in again.summary.failed["bad.pdf"]


def test_a_long_parse_names_its_document_at_least_every_interval(tmp_path, monkeypatch):
    import time

    from chunkbench_core import progress
    from chunkbench_core.stages.documents import read_or_parse
    from chunkbench_core.storage.corpus import parsed_store

    corpus = _corpus(tmp_path, {"slow.md": "# Slow\n\nText.\n"})
    lines: list[str] = []

    def slow(path: str):
        time.sleep(0.5)
        return parse(path)

    monkeypatch.setattr(progress, "REPORT_EVERY_S", 0.1)  # the 10 s interval, shortened for the test
    with progress.sink(lambda p: lines.append(p.line())):
        read_or_parse(scan_corpus(corpus), parsed_store(tmp_path / "results"), slow)
    assert any("still on slow.md" in line for line in lines), lines


def test_two_processes_reading_one_corpus_at_once_each_get_every_document(tmp_path):
    """Records are written whole (a temporary file renamed): a process reading while another writes sees either
    no record (and parses) or a complete one, never a torn one."""
    import subprocess
    import sys
    from pathlib import Path

    corpus = _corpus(tmp_path, {f"doc{i:02d}.md": f"# Doc {i}\n\n" + "Some words here. " * 400 for i in range(30)})
    script = (
        "import sys\n"
        "from chunkbench_core.parsing import parse\n"
        "from chunkbench_core.stages.documents import read_or_parse\n"
        "from chunkbench_core.storage.corpus import parsed_store, scan_corpus\n"
        "corpus = read_or_parse(scan_corpus(sys.argv[1]), parsed_store(sys.argv[2]), parse)\n"
        "print(len(corpus.documents), len(corpus.summary.failed))\n"
    )
    root = str(Path(__file__).resolve().parents[3])
    env = {"PYTHONPATH": root, "PATH": "/usr/bin:/bin"}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(corpus), str(tmp_path / "results")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [out.split() for out, _ in outputs] == [["30", "0"], ["30", "0"]], outputs
    assert not list((tmp_path / "results" / "parsed").glob(".*.tmp"))
