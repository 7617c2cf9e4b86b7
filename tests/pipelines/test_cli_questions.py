"""``chunkbench questions check``: every problem once (file, question, field, reason), exit 1 on any."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = [str(Path(sys.executable).with_name("chunkbench"))]
HANDBOOK = "# Leave\n\nEveryone gets 25 days of annual leave. Unused days expire in March.\n"


def run(*args, home, corpus):
    env = {"PATH": "/usr/bin:/bin", "CHUNKBENCH_HOME": str(home), "CHUNKBENCH_CORPUS": str(corpus),
           **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}}  # a worktree's code first
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


def test_questions_check_lists_each_problem_once_and_fails(tmp_path):
    corpus, questions = tmp_path / "corpus", tmp_path / "questions"
    corpus.mkdir()
    questions.mkdir()
    (corpus / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    good = {"id": "good", "question": "How many days?", "references": [{"document": "handbook.md", "content": "25 days"}]}
    (questions / "set.json").write_text(json.dumps({"questions": [
        good,
        {"id": "wrong-key", "question": "?", "references": [{"doc": "handbook.md", "content": "25 days"}]},
        {"id": "no-doc", "question": "?", "references": [{"document": "other.md", "content": "25 days"}]},
        {"id": "no-excerpt", "question": "?", "references": [{"document": "handbook.md", "content": "40 days"}]},
        {"id": "judge", "question": "When do days expire?"},
    ]}), encoding="utf-8")
    (questions / "syntax.json").write_text('{"questions": [\n  {"id": "a", "question": "b"},\n]}\n', encoding="utf-8")
    result = run("questions", "check", str(questions), home=tmp_path / "home", corpus=corpus)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4, result.stdout
    assert sum("'wrong-key', field 'references[0].doc'" in line and "did you mean 'document'" in line
               for line in lines) == 1
    assert sum("'no-doc', field 'references[0].document'" in line for line in lines) == 1
    assert sum("'no-excerpt', field 'references[0].content'" in line for line in lines) == 1
    assert sum("syntax.json: JSON syntax error at line 3, column 1" in line for line in lines) == 1
    assert "2 of 5 questions usable (1 with evidence, 1 judge-only" in result.stderr
    assert not (tmp_path / "home" / "parsed").exists()  # nothing was run or stored

    (questions / "syntax.json").unlink()
    (questions / "set.json").write_text(json.dumps({"questions": [good]}), encoding="utf-8")
    result = run("questions", "check", str(questions), home=tmp_path / "home", corpus=corpus)
    assert result.returncode == 0 and "1 of 1 questions usable" in result.stdout


def test_parse_text_prints_the_parsed_text_exactly(tmp_path):
    from chunkbench_core.parsing import parse

    from chunkbench_core.datasets import SAMPLE_CORPUS

    sample = SAMPLE_CORPUS / "persian_leave_policy.docx"
    result = subprocess.run([*CLI, "parse", str(sample), "--text"], capture_output=True, timeout=300, cwd=ROOT,
                            env={"PATH": "/usr/bin:/bin", "CHUNKBENCH_HOME": str(tmp_path),
                                 **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}})
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode("utf-8") == parse(str(sample)).markdown


def test_questions_import_writes_a_set_that_checks_clean(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    source = tmp_path / "testset.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in [
        {"user_input": "How many days?", "reference": "25", "reference_contexts": ["25 days of annual leave"]},
        {"user_input": "Pets?", "reference": "?", "reference_contexts": ["Dogs are welcome"]},
    ]), encoding="utf-8")
    out = tmp_path / "questions" / "imported.json"
    result = run("questions", "import", "--format", "ragas", str(source), "--out", str(out), home=tmp_path / "h",
                 corpus=corpus)
    assert result.returncode == 1  # one question was left out, and said so
    assert "ragas-0002" in result.stderr and "2 question(s) read" in result.stdout and "1 kept" in result.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["name"] == "imported" and [q["id"] for q in data["questions"]] == ["ragas-0001"]
    assert run("questions", "check", str(out.parent), home=tmp_path / "h", corpus=corpus).returncode == 0


def test_generate_without_an_llm_says_what_to_set(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "handbook.md").write_text(HANDBOOK * 5, encoding="utf-8")
    result = run("questions", "generate", "--n", "2", "--out", str(tmp_path / "g.json"), home=tmp_path / "h",
                 corpus=corpus)
    assert result.returncode == 2 and "CHUNKBENCH_LLM_MODEL" in result.stderr and "questions draft" in result.stderr
    assert not (tmp_path / "g.json").exists()
    dry = run("questions", "generate", "--n", "2", "--out", str(tmp_path / "g.json"), "--dry-run",
              home=tmp_path / "h", corpus=corpus)
    assert dry.returncode == 0 and "dry run:" in dry.stdout and "Nothing was sent" in dry.stdout
