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
    assert len({plain, mini, ParseOptions(caption_source=captioner("gpt-4o")).fingerprint(),
                ParseOptions(caption_source=captioner("llava", "http://127.0.0.1:11434/v1")).fingerprint()}) == 4
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
