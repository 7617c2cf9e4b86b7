"""A named benchmark remembers its folders: run again without CHUNKBENCH_CORPUS or CHUNKBENCH_QUESTIONS, it reads
the documents and questions its last run recorded, never the bundled sample's (which would also have rewritten its
record and mixed the sample's documents into its results)."""

from __future__ import annotations

from chunkbench_core.benchmarks import BENCHMARK_FILE, find_benchmarks, register_benchmark
from chunkbench_core.settings import SAMPLE_CORPUS, SAMPLE_QUESTIONS, Settings


def _recorded(tmp_path, name="civic"):
    docs, questions = tmp_path / "docs", tmp_path / "questions"
    docs.mkdir()
    questions.mkdir()
    first = Settings.load(
        {
            "CHUNKBENCH_HOME": str(tmp_path / "home"),
            "CHUNKBENCH_BENCHMARK": name,
            "CHUNKBENCH_CORPUS": str(docs),
            "CHUNKBENCH_QUESTIONS": str(questions),
        }
    )
    return register_benchmark(first), docs.resolve(), questions.resolve()


def test_a_named_benchmark_run_again_without_its_folders_reads_the_recorded_ones(tmp_path):
    record, docs, questions = _recorded(tmp_path)
    again = Settings.load({"CHUNKBENCH_HOME": str(tmp_path / "home"), "CHUNKBENCH_BENCHMARK": "civic"})
    assert (again.corpus, again.questions) == (docs, questions)
    assert again.source("corpus") == f"benchmark civic's last run (its {BENCHMARK_FILE})"
    assert ("CHUNKBENCH_CORPUS", str(docs), again.source("corpus")) in again.rows()  # chunkbench settings
    # registering it again leaves the record as it was
    before = record.read_text(encoding="utf-8")
    register_benchmark(again)
    assert record.read_text(encoding="utf-8") == before
    # the Dagster code location's list gives the same folders
    [found], problems = find_benchmarks(again)
    assert (found.corpus, found.questions, problems) == (docs, questions, [])


def test_a_folder_given_wins_over_the_record_and_the_other_one_is_still_recorded(tmp_path):
    _, docs, questions = _recorded(tmp_path)
    other = tmp_path / "other docs"
    other.mkdir()
    given = Settings.load(
        {"CHUNKBENCH_HOME": str(tmp_path / "home"), "CHUNKBENCH_BENCHMARK": "civic", "CHUNKBENCH_CORPUS": str(other)}
    )
    assert (given.corpus, given.questions) == (other.resolve(), questions)
    assert given.source("corpus") == "environment CHUNKBENCH_CORPUS"


def test_without_a_readable_record_the_defaults_stand(tmp_path):
    fresh = Settings.load({"CHUNKBENCH_HOME": str(tmp_path / "home"), "CHUNKBENCH_BENCHMARK": "new"})
    assert (fresh.corpus, fresh.questions, fresh.source("corpus")) == (SAMPLE_CORPUS, SAMPLE_QUESTIONS, "default")
    record, _, _ = _recorded(tmp_path)
    record.write_text("{not json", encoding="utf-8")
    damaged = Settings.load({"CHUNKBENCH_HOME": str(tmp_path / "home"), "CHUNKBENCH_BENCHMARK": "civic"})
    assert (damaged.corpus, damaged.source("corpus")) == (SAMPLE_CORPUS, "default")
    [_], problems = find_benchmarks(damaged)
    assert problems == []  # the benchmark in force is listed from its settings, never from its own record
    # a record naming another benchmark (copied from its folder) is not this one's either
    record.write_text('{"name": "other", "corpus": "/elsewhere/corpus", "questions": "/elsewhere/q"}', encoding="utf-8")
    copied = Settings.load({"CHUNKBENCH_HOME": str(tmp_path / "home"), "CHUNKBENCH_BENCHMARK": "civic"})
    assert (copied.corpus, copied.source("corpus")) == (SAMPLE_CORPUS, "default")


def test_the_sample_benchmark_is_never_read_from_a_record(tmp_path):
    home = tmp_path / "home"
    record = home / "benchmarks" / "sample" / BENCHMARK_FILE
    record.parent.mkdir(parents=True)
    record.write_text(
        '{"name": "sample", "corpus": "/elsewhere/corpus", "questions": "/elsewhere/q"}', encoding="utf-8"
    )  # another checkout's bundled sample, in a shared home
    sample = Settings.load({"CHUNKBENCH_HOME": str(home), "CHUNKBENCH_BENCHMARK": "sample"})
    assert (sample.corpus, sample.questions) == (SAMPLE_CORPUS, SAMPLE_QUESTIONS)
