"""The corpus is the folder: links leading outside it are refused, hidden files are skipped and counted,
and a stored parse is reused only for the same bytes under the same extension, with errors naming the right file."""

import os

from chunkbench_core.parsing import ParseOptions, parse
from chunkbench_core.stages.documents import ParseRequest, parse_corpus
from chunkbench_core.storage.corpus import ParsedStore, scan_corpus, scan_corpus_report
from chunkbench_core.storage.results_db import ResultsDB


def test_links_outside_the_corpus_are_refused_naming_the_link(tmp_path):
    corpus, outside = tmp_path / "corpus", tmp_path / "outside"
    corpus.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("the payroll of everyone", encoding="utf-8")
    (corpus / "notes.md").write_text("notes", encoding="utf-8")
    (corpus / "sub").mkdir()
    (corpus / "sub" / "deep.md").write_text("deep", encoding="utf-8")
    os.symlink(outside / "secret.md", corpus / "secret.md")
    os.symlink(outside, corpus / "elsewhere")
    os.symlink(corpus / "notes.md", corpus / "alias.md")  # inside the corpus: taken
    os.symlink(corpus / "sub", corpus / "sub-alias")  # a folder inside: not walked twice
    os.symlink(tmp_path / "missing.md", corpus / "broken.md")
    (corpus / ".hidden.md").write_text("x", encoding="utf-8")
    (corpus / "~$lock.docx").write_bytes(b"x")
    (corpus / ".git").mkdir()
    (corpus / ".git" / "HEAD").write_text("ref", encoding="utf-8")
    scan = scan_corpus_report(corpus)
    assert [s.document for s in scan.documents] == ["alias.md", "notes.md", "sub/deep.md"]
    assert set(scan.refused) == {"secret.md", "elsewhere", "broken.md"}
    assert str(corpus / "secret.md") in scan.refused["secret.md"] and "outside the corpus" in scan.refused["secret.md"]
    assert "folder outside the corpus" in scan.refused["elsewhere"]
    assert scan.hidden == 3
    assert [s.document for s in scan_corpus(corpus)] == ["alias.md", "notes.md", "sub/deep.md"]

    results = ResultsDB(tmp_path / "results")
    summary = parse_corpus(ParseRequest(scan.documents, ParsedStore(tmp_path / "parsed", "v1"), parse, scan), results)
    assert summary.hidden == 3 and set(summary.failed) == {"secret.md", "elsewhere", "broken.md"}
    rows = {r["document"]: r for r in results.read("documents", "corpus")}
    assert rows["secret.md"]["status"] == "failed" and "symbolic link" in rows["secret.md"]["error"]
    assert all("payroll" not in d.markdown for d in ParsedStore(tmp_path / "parsed", "v1").load_manifest_documents())


def test_the_parse_cache_is_keyed_by_extension_and_errors_name_their_file(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "empty.txt").write_bytes(b"")
    (corpus / "zero.docx").write_bytes(b"")
    (corpus / "none.docx").write_bytes(b"")
    text = "Plain text that is not a PDF at all, but long enough to look like a document.\n"
    (corpus / "notes.txt").write_text(text, encoding="utf-8")
    (corpus / "notes.pdf").write_text(text, encoding="utf-8")
    sources = scan_corpus(corpus)
    results = ResultsDB(tmp_path / "results")
    options = ParseOptions()
    for attempt in range(2):  # the second run reuses every stored record
        summary = parse_corpus(
            ParseRequest(sources, ParsedStore(tmp_path / "parsed", "v1"), lambda p: parse(p, options)), results
        )
        for name in ("empty.txt", "zero.docx", "none.docx"):
            assert summary.failed[name].startswith(str(corpus / name) + ":"), (attempt, summary.failed[name])
        assert "notes.pdf" in summary.failed and summary.failed["notes.pdf"].startswith(str(corpus / "notes.pdf"))
        assert "notes.txt" not in summary.failed
