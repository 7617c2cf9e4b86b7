"""Retrieval of Table and Text questions on financial statements, old parsing vs new parsing.

    python benchmarks/table_questions.py [--old-ref REF] [--top-k 5] [--only csv|generated]

Data: the financial fixture (``scripts/make_financial_fixture.py``, tests/fixtures/financial/): three
made-up quarterly reports in PDF with multi-row period headers, ``$`` cells, negatives in parentheses,
running headers and footers and prose. Two question sets:

* ``csv``: the fixture's ten golden-set questions (six Table, four Text); where each answer is comes
  from ``facts.json`` (a table row: its label, section and figure; or a phrase of the prose);
* ``generated``: one question per figure of the statements of operations and balance sheets ("What was
  ACME Robotics, Inc.'s Research and development for the three months ended September 30, 2023?";
  rows that share a label, like "Products" under net sales and under cost of sales, name their
  section) and one per prose fact (twelve Text questions).

The evidence of a Table question is the parsed table row holding the row's label and the figure; of a
Text question, the phrase in the parsed text. Each parse is located on its own.

Old parsing is the parser of git revision ``--old-ref`` (default: the commit before rows kept their
headers), run from ``git archive`` in a subprocess; new parsing is this checkout's. Everything else
is this checkout's code, as the pipeline runs it: parse -> chunk (fixed_size, recursive, structural with
table rows alone or grouped, contextual_retrieval with heading contexts; the pipeline's default sizes for
the model, chunks fitted to its window)
-> embed (all-MiniLM-L6-v2, local ONNX) -> search (Qdrant's embedded engine, one collection for the
three reports, no document filter) -> score (``run_retrieval``, ``aggregate``). Printed per question
type: hit@k (a top-k chunk overlaps the evidence), MRR and character recall of the evidence, for old
and new parsing side by side.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from chunkbench_core.chunking import make_chunker
from chunkbench_core.embedding import Embedder, get_model
from chunkbench_core.evaluation.experiment import (
    ResolvedQuestion,
    RetrievalOptions,
    aggregate,
    collection_chunks,
    run_retrieval,
)
from chunkbench_core.evaluation.questions import Question, Span
from chunkbench_core.parsing import parse
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.stages.spec import chunking_params, model_window
from chunkbench_core.storage.vector_store import VectorStore

FIXTURE = ROOT / "tests" / "fixtures" / "financial"
MODEL_ID = "all-minilm-l6-v2"
#: the last commit whose parser wrote table rows without their headers, titles and sections
DEFAULT_OLD_REF = "ef46c27"
#: (label, strategy, options); sizes are the pipeline's defaults for the model, chunks fit its window
CONFIGS: tuple[tuple[str, str, dict], ...] = (
    ("fixed_size", "fixed_size", {}),
    ("recursive", "recursive", {}),
    ("structural rows", "structural", {"table_chunks": "row"}),
    ("structural groups", "structural", {"table_chunks": "group"}),
    # every chunk embedded after its document title and heading path (no LLM): prose names the company too
    ("contextual headings", "contextual_retrieval", {}),
)


@dataclass
class Evidence:
    document: str
    label: str = ""  # a table row: its label, section and figure
    section: str = ""
    figure: str = ""
    text: str = ""  # prose: a phrase


@dataclass
class BenchQuestion:
    id: str
    question: str
    kind: str  # "Table" or "Text"
    evidence: list[Evidence]


# -- questions ------------------------------------------------------------------------------------
def load_questions(facts: dict) -> dict[str, list[BenchQuestion]]:
    """The ``csv`` and ``generated`` question sets (see the module docstring)."""
    import csv

    with (FIXTURE / "questions.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    by_question = {item["question"]: item["evidence"] for item in facts["csv_evidence"]}
    csv_set = [
        BenchQuestion(
            f"csv-{i + 1}", r["Question"], r["Source Chunk Type"], [Evidence(**e) for e in by_question[r["Question"]]]
        )
        for i, r in enumerate(rows)
    ]
    generated: list[BenchQuestion] = []
    for company in facts["companies"]:
        name, document = company["company"], company["document"]
        for statement in company["statements"][:2]:  # operations and balance sheet
            labels = [r["label"] for r in statement["rows"]]
            for row in statement["rows"]:
                if row["label"].startswith("Basic") or row["label"].startswith("Diluted"):
                    continue  # per-share figures repeat across rows
                what = row["label"]
                if labels.count(what) > 1 and row["section"]:
                    what = f"{row['section'].lower()}: {what.lower()}"
                for column, value in zip(statement["columns"], row["values"], strict=True):
                    period = column if column.startswith("as of") else f"for the {column}"
                    generated.append(
                        BenchQuestion(
                            f"gen-{len(generated) + 1}",
                            f"What was {name}'s {what} {period}?",
                            "Table",
                            [Evidence(document, row["label"], row["section"] or "", value)],
                        )
                    )
        for fact in company["prose"]:
            generated.append(
                BenchQuestion(
                    f"gen-{len(generated) + 1}", fact["question"], "Text", [Evidence(document, text=fact["evidence"])]
                )
            )
    return {"csv": csv_set, "generated": generated}


def _figure_pattern(figure: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\d,.]){re.escape(figure)}(?![\d,])")


def locate(evidence: Evidence, parsed: ParsedDocument) -> Span | None:
    """The span of the evidence in one parse: the table row with the label and figure, or the phrase."""
    text = parsed.markdown
    if evidence.text:
        at = text.find(evidence.text)
        return Span(parsed.document, at, at + len(evidence.text)) if at >= 0 else None
    figure = _figure_pattern(evidence.figure)
    lines = []
    at = 0
    for line in text.split("\n"):
        lines.append((at, line))
        at += len(line) + 1
    found = [(start, line) for start, line in lines if evidence.label in line and figure.search(line)]
    if len(found) > 1 and evidence.section:
        found = [(s, line) for s, line in found if evidence.section in line] or found
    if not found:
        return None
    start, line = found[0]  # still two (net income in two statements): the first, the statement of operations
    return Span(parsed.document, start, start + len(line))


def resolve(
    questions: Sequence[BenchQuestion], documents: dict[str, ParsedDocument]
) -> tuple[list[ResolvedQuestion], list[str]]:
    resolved, missing = [], []
    for q in questions:
        spans = [locate(e, documents[e.document]) for e in q.evidence]
        if any(s is None for s in spans):
            missing.append(q.id)
            continue
        question = Question(q.id, q.question, category=q.kind)
        resolved.append(ResolvedQuestion("financial", question, [s for s in spans if s is not None]))
    return resolved, missing


# -- parsing --------------------------------------------------------------------------------------
def parse_new() -> dict[str, ParsedDocument]:
    return {p.name: parse(p) for p in sorted(FIXTURE.glob("*.pdf"))}


_DUMP = """
import json, sys
from pathlib import Path
import chunkbench_core.parsing
from chunkbench_core.parsing import parse
assert Path(chunkbench_core.parsing.__file__).is_relative_to(sys.argv[3]), chunkbench_core.parsing.__file__
out = {p.name: parse(p).to_dict() for p in sorted(Path(sys.argv[1]).glob("*.pdf"))}
Path(sys.argv[2]).write_text(json.dumps(out), encoding="utf-8")
"""


def parse_old(ref: str, work: Path) -> dict[str, ParsedDocument]:
    """The fixture parsed by the parser of git revision ``ref`` (its chunkbench_core, in a subprocess)."""
    archive = work / "old.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref, "chunkbench_core"], stdout=handle, check=True)
    code = work / "old"
    with tarfile.open(archive) as tar:
        tar.extractall(code, filter="data")
    out = work / "old.json"
    # run from the extracted folder, so its chunkbench_core is imported, not this checkout's
    subprocess.run(
        [sys.executable, "-c", _DUMP, str(FIXTURE), str(out), str(code)],
        check=True,
        cwd=code,
        env={"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin", "HOME": str(work)},
    )
    return {name: ParsedDocument.from_dict(data) for name, data in json.loads(out.read_text("utf-8")).items()}


# -- one run --------------------------------------------------------------------------------------
def run_config(
    strategy: str,
    options: dict,
    documents: dict[str, ParsedDocument],
    questions: Sequence[ResolvedQuestion],
    embedder: Embedder,
    store: VectorStore,
    name: str,
    top_k: int,
) -> tuple[dict[str, dict[str, float]], int, float]:
    params = {**chunking_params(embedder.spec, None, None), **options, "window": model_window(embedder.spec)}
    if strategy == "structural":
        params["embed"] = lambda texts: embedder.embed(list(texts), "document")
        params["chunk_overlap"] = 0
    chunker = make_chunker(strategy, **params)
    chunks = [c for d in documents.values() for c in chunker.chunk(d)]
    vectors = embedder.embed([c.text_to_embed for c in chunks], "document")
    store.ensure_collection(name, embedder.spec.dimension)
    store.replace_points(name, chunks, vectors)
    outcomes = run_retrieval(
        questions,
        embedder,
        store,
        name,
        RetrievalOptions(top_k=top_k, strategy=strategy, chunks=collection_chunks(chunks)),
    )
    failed = [o.error for o in outcomes if o.error]
    if failed:
        raise RuntimeError(f"{len(failed)} questions failed, first: {failed[0]}")
    scores = {}
    for kind in ("Table", "Text"):
        subset = [o for o in outcomes if o.resolved.question.category == kind]
        summary = aggregate(subset, n_resamples=200)
        scores[kind] = {
            "n": summary["n_questions"],
            "hit": summary["hit_rate"],
            "mrr": summary["mrr"],
            "recall": summary["recall"],
        }
    mean_tokens = sum(c.token_count for c in chunks) / max(1, len(chunks))
    return scores, len(chunks), mean_tokens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--old-ref",
        default=DEFAULT_OLD_REF,
        help=f"git revision of the old parser (default {DEFAULT_OLD_REF}); 'none' skips the old parsing",
    )
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--only", choices=("csv", "generated"), help="one question set only")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    facts = json.loads((FIXTURE / "facts.json").read_text(encoding="utf-8"))
    question_sets = load_questions(facts)
    if args.only:
        question_sets = {args.only: question_sets[args.only]}
    embedder = Embedder(get_model(MODEL_ID))
    with tempfile.TemporaryDirectory(prefix="table-questions-") as tmp:
        parses = {"new": parse_new()}
        if args.old_ref != "none":
            try:
                parses = {"old": parse_old(args.old_ref, Path(tmp)), **parses}
            except (subprocess.CalledProcessError, OSError) as exc:
                print(f"old parsing unavailable ({exc}); showing the new parsing only")
        print(
            f"model {MODEL_ID}, top {args.top_k}, one collection for the 3 reports, no document filter; "
            f"old = parser of {args.old_ref}, new = this checkout"
        )
        for kind, documents in parses.items():
            rows = sum(1 for d in documents.values() for u in d.units if u.content_type == "table_row")
            print(f"{kind} parsing: {rows} table rows, {sum(len(d.markdown) for d in documents.values()):,} characters")
        with VectorStore(local_root=Path(tmp) / "qdrant") as store:
            for set_name, questions in question_sets.items():
                resolved = {kind: resolve(questions, documents) for kind, documents in parses.items()}
                counts = {k: sum(1 for q in questions if q.kind == k) for k in ("Table", "Text")}
                print(f"\n{set_name} questions: {counts['Table']} Table, {counts['Text']} Text")
                for kind, (_, missing) in resolved.items():
                    if missing:
                        print(
                            f"  {kind} parsing: evidence not found for {len(missing)} questions "
                            f"({', '.join(missing[:6])}{'...' if len(missing) > 6 else ''}): left out"
                        )
                print(
                    f"  {'configuration':<20}{'parsing':<9}{'Table hit':>10}{'MRR':>7}{'recall':>8}"
                    f"{'Text hit':>10}{'MRR':>7}{'recall':>8}{'chunks':>8}{'tokens':>8}"
                )
                for label, strategy, params in CONFIGS:
                    for kind, documents in parses.items():
                        name = f"{set_name}_{kind}_{label.replace(' ', '_').replace('/', '_')}"
                        scores, n_chunks, tokens = run_config(
                            strategy, params, documents, resolved[kind][0], embedder, store, name, args.top_k
                        )
                        t, x = scores["Table"], scores["Text"]
                        print(
                            f"  {label:<20}{kind:<9}{t['hit']:>10.2f}{t['mrr']:>7.2f}{t['recall']:>8.2f}"
                            f"{x['hit']:>10.2f}{x['mrr']:>7.2f}{x['recall']:>8.2f}{n_chunks:>8}{tokens:>8.0f}"
                        )
    print(
        f"\ntotal {time.perf_counter() - started:.0f}s (hit: a top-{args.top_k} chunk overlaps the evidence; "
        "recall: share of the evidence's characters retrieved)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
