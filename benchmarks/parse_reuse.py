"""Is a document parsed once? ``chunkbench questions check`` twice on an unchanged PDF corpus, timed side by side.

    python benchmarks/parse_reuse.py [--documents 12] [--pages 60]

In a temporary folder (nothing of yours is read or written): a corpus of generated multi-page PDFs
(statement-like tables and prose on every page, made with fpdf2) and a question set whose evidence is in
each of them. ``chunkbench questions check`` runs as its own process three times: first on a fresh home
(every PDF parsed, then stored), then again on the unchanged corpus (every parse read back), then once
more after one PDF was rewritten (that one parsed again). It prints each wall time and the ratio of the
second to the first; the target is under 15 %.

The machine may be shared: the figures are from this one run, side by side; the ratio is what counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).with_name("chunkbench"))

PROSE = (
    "Revenue grew in every segment during the quarter, led by services, while operating expenses rose "
    "more slowly than sales. Management expects the trend to continue into the next fiscal year, subject "
    "to the risks described in the annual report. "
)


def write_pdf(path: Path, company: str, pages: int) -> str:
    """A filing-like PDF of ``pages`` pages; returns a sentence of its last page (the question's evidence)."""
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_creation_date(__import__("datetime").datetime(2024, 1, 1, tzinfo=__import__("datetime").timezone.utc))
    evidence = ""
    for page in range(1, pages + 1):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 14)
        pdf.cell(0, 10, f"{company} Quarterly Report - Part {page}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 10)
        for row in range(12):
            values = [f"{(page * 131 + row * 17 + col * 7) % 9000 + 1000:,}" for col in range(4)]
            pdf.cell(60, 6, f"Line item {row + 1} of section {page}")
            for value in values:
                pdf.cell(30, 6, value, align="R")
            pdf.ln(6)
        pdf.ln(4)
        evidence = f"In part {page}, {company} reported net sales of {page * 1234:,} thousand dollars for the quarter."
        pdf.multi_cell(0, 5, PROSE * 3 + evidence + " " + PROSE * 2)
    pdf.output(str(path))
    return evidence


def check(env: dict[str, str], questions: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    result = subprocess.run(
        [CLI, "questions", "check", str(questions)], env=env, capture_output=True, text=True, timeout=1800
    )
    return time.perf_counter() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=12)
    parser.add_argument("--pages", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        corpus, questions = root / "corpus", root / "questions"
        corpus.mkdir()
        questions.mkdir()
        items = []
        for i in range(args.documents):
            company = f"Company{i:02d}"
            evidence = write_pdf(corpus / f"{company} 2024 Q1.pdf", company, args.pages)
            items.append(
                {
                    "id": f"q{i}",
                    "question": f"What were {company}'s net sales in the last part?",
                    "references": [{"document": f"{company} 2024 Q1.pdf", "content": evidence}],
                }
            )
        (questions / "filings.json").write_text(json.dumps({"questions": items}), encoding="utf-8")
        size = sum(p.stat().st_size for p in corpus.iterdir())
        print(
            f"corpus: {args.documents} PDFs of {args.pages} pages, {size / 1e6:.1f} MB; "
            f"{len(items)} questions with evidence"
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "CHUNKBENCH_HOME": str(root / "home"),
            "CHUNKBENCH_CORPUS": str(corpus),
            "PYTHONPATH": str(ROOT),
        }
        first, result = check(env, questions)
        print(
            f"first check (every PDF parsed and stored): {first:.1f} s, exit {result.returncode}; "
            f"{result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr.strip()[-200:]}"
        )
        second, result = check(env, questions)
        parsed_again = "parsing:" in result.stderr
        print(
            f"second check (unchanged corpus): {second:.1f} s, exit {result.returncode}"
            f"{', PARSED AGAIN' if parsed_again else ', every parse read back'}"
        )
        write_pdf(corpus / "Company00 2024 Q1.pdf", "Company00", args.pages + 1)  # one file changed
        third, result = check(env, questions)
        lines = [line for line in result.stderr.splitlines() if line.startswith("parsing:")]
        print(f"after one PDF changed: {third:.1f} s ({lines[-1] if lines else 'nothing parsed'})")
        ratio = second / first
        print(f"second / first: {ratio:.1%} (target: under 15%)")
        return 0 if ratio < 0.15 and not parsed_again else 1


if __name__ == "__main__":
    raise SystemExit(main())
