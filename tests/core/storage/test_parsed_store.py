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
