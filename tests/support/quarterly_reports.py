"""A family of near-identical quarterly reports (PDF) and a page-cited question file about them.

One made-up company files the same report every quarter: a cover page naming the company, the form and the
quarter, then the statement of operations, the balance sheet, net sales by segment and a short management's
discussion, each on its own page, drawn with the financial fixture's PDF writer
(``scripts/make_financial_fixture.py``: multi-row period headers, ``$`` printed apart from its number,
negatives in parentheses, running page header and footer). Only the periods and the figures change. Each
statement compares the quarter with the same quarter a year earlier, so the report for the first quarter of
2024 also prints the first quarter of 2023's figures in its second column, as real filings do.

The question file (the shape of ``questions/*.json``) asks, for each report, its quarter's total net sales.
Each question's reference is the exact text of the "Total net sales" row of that report's statement of
operations, as the parser gives it (the reports are parsed to find it), with the page it is printed on. The
discussion gives growth rates, never the totals, so the figure is found in the statement's table or not at all.

Deterministic: fixed dates, no random numbers; the figures add up.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
COMPANY = "Halvard Instruments, Inc."
TICKER = "HLVD"


@dataclass(frozen=True)
class Quarter:
    key: str  # "2023 Q1": the report's file name is "{key} HLVD.pdf"
    ended: str  # "March 31, 2023"
    month_day: str  # "March 31,"
    year: int
    year_end: str  # the balance sheet's comparison date: the last fiscal year end

    @property
    def file_name(self) -> str:
        return f"{self.key} {TICKER}.pdf"

    @property
    def prior(self) -> str:
        """The same quarter a year earlier, as its key."""
        year, quarter = self.key.split()
        return f"{int(year) - 1} {quarter}"


QUARTERS = (
    Quarter("2023 Q1", "March 31, 2023", "March 31,", 2023, "December 31, 2022"),
    Quarter("2023 Q2", "June 30, 2023", "June 30,", 2023, "December 31, 2022"),
    Quarter("2023 Q3", "September 30, 2023", "September 30,", 2023, "December 31, 2022"),
    Quarter("2024 Q1", "March 31, 2024", "March 31,", 2024, "December 31, 2023"),
)

# Each quarter's figures (in thousands) from 2022 Q1 to 2024 Q1, so every report's comparison column is the
# same quarter's figures a year earlier. Segment sales add up to products + services.
_SEGMENTS = ("Test and Measurement", "Industrial Sensors", "Field Services")
_FIGURES: dict[str, dict[str, int]] = {}


def _figures() -> dict[str, dict[str, int]]:
    if _FIGURES:
        return _FIGURES
    keys = ["2022 Q1", "2022 Q2", "2022 Q3", "2022 Q4", "2023 Q1", "2023 Q2", "2023 Q3", "2023 Q4", "2024 Q1"]
    for i, key in enumerate(keys):
        measurement = 38_412 + 1_373 * i + (217 * i * i) % 1_109
        sensors = 24_806 + 911 * i + (389 * i) % 743
        services = 11_955 + 402 * i + (131 * i * i) % 517
        _FIGURES[key] = {
            "Test and Measurement": measurement,
            "Industrial Sensors": sensors,
            "Field Services": services,
            "products": measurement + sensors,
            "services": services,
            "cost_products": round((measurement + sensors) * (0.541 + 0.003 * (i % 3))),
            "cost_services": round(services * 0.462),
            "rnd": 7_804 + 263 * i,
            "sga": 10_337 + 301 * i,
            "other": (-1) ** i * (402 + 57 * i),
            "cash": 30_118 + 1_907 * i,
            "receivables": 21_603 + 688 * i,
            "inventories": 17_925 + 455 * i,
            "ppe": 61_740 + 1_212 * i,
            "payables": 13_207 + 507 * i,
            "accrued": 6_981 + 219 * i,
            "debt": 35_000 - 1_000 * (i // 2),
        }
    return _FIGURES


def total_net_sales(key: str) -> int:
    """The quarter's total net sales (in thousands), e.g. ``total_net_sales("2023 Q1")``."""
    figures = _figures()[key]
    return figures["products"] + figures["services"]


def figure_text(value: int) -> str:
    """A figure as the statements print it: ``82,412``."""
    return f"{value:,}"


def _fixture_module() -> Any:
    script = REPO / "scripts" / "make_financial_fixture.py"
    spec = importlib.util.spec_from_file_location("make_financial_fixture", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _statements(fixture: Any, quarter: Quarter) -> list[Any]:
    now, before = _figures()[quarter.key], _figures()[quarter.prior]
    header = [
        [(f"Three Months Ended {quarter.month_day}", 1, 2)],
        [(str(quarter.year), 1, 1), (str(quarter.year - 1), 2, 2)],
    ]
    periods = [f"three months ended {quarter.ended}", f"three months ended {quarter.month_day} {quarter.year - 1}"]
    pair = lambda name: [now[name], before[name]]  # noqa: E731 - a one-line helper reads best beside its use
    operations = fixture.operations(
        periods,
        header,
        products=pair("products"),
        services=pair("services"),
        cost_products=pair("cost_products"),
        cost_services=pair("cost_services"),
        rnd=pair("rnd"),
        sga=pair("sga"),
        other=pair("other"),
        tax_rate=0.21,
        shares=[24_310, 24_580],
    )
    balance_before = _figures()[f"{int(quarter.year_end[-4:])} Q4"]
    balance = fixture.balance_sheet(
        [quarter.ended, quarter.year_end],
        **{
            name: [now[name], balance_before[name]]
            for name in ("cash", "receivables", "inventories", "ppe", "payables", "accrued", "debt")
        },
    )
    Row, Statement = fixture.Row, fixture.Statement
    rows = [Row(name, pair(name), dollar=(i == 0), indent=True) for i, name in enumerate(_SEGMENTS)]
    rows.append(
        Row("Total net sales", [total_net_sales(quarter.key), total_net_sales(quarter.prior)], dollar=True, total=True)
    )
    segments = Statement("NET SALES BY SEGMENT (Unaudited)", header, periods, rows, unit="(In thousands)")
    return [operations, balance, segments]


def _discussion(quarter: Quarter) -> list[tuple[str, str]]:
    now, before = _figures()[quarter.key], _figures()[quarter.prior]
    growth = lambda name: round(100 * (now[name] - before[name]) / before[name])  # noqa: E731 - a one-line helper reads best beside its use
    total = round(
        100 * (total_net_sales(quarter.key) - total_net_sales(quarter.prior)) / total_net_sales(quarter.prior)
    )
    return [
        (
            "Net Sales",
            f"Total net sales grew {total}% compared with the same quarter a year earlier. Test and "
            f"Measurement sales grew {growth('Test and Measurement')}%, Industrial Sensors "
            f"{growth('Industrial Sensors')}% and Field Services {growth('Field Services')}%, as "
            "laboratories renewed their oscilloscope fleets and utilities kept buying line sensors.",
        ),
        (
            "Operating Expenses",
            f"Research and development spending rose {growth('rnd')}% as the Company hired "
            "engineers for its next calibration platform. Selling, general and administrative "
            f"expenses rose {growth('sga')}%, mostly from trade shows in Europe.",
        ),
        (
            "Liquidity",
            "The Company believes its cash and its undrawn revolving credit facility will be sufficient "
            "to meet its needs for at least the next twelve months.",
        ),
    ]


def write_report(fixture: Any, quarter: Quarter, path: Path) -> None:
    company = fixture.Company(COMPANY, TICKER, path.stem, f"quarter ended {quarter.ended}")
    doc = fixture.ReportPDF(company)
    operations, balance, segments = _statements(fixture, quarter)
    doc.page()
    doc.heading(COMPANY, size=14, gap=0)
    doc.paragraph("(Exact name of registrant as specified in its charter)")
    doc.paragraph(
        f"FORM 10-Q. Quarterly report for the quarterly period ended {quarter.ended}. All amounts are unaudited."
    )
    doc.heading("PART I - FINANCIAL INFORMATION", size=11)
    doc.heading("Item 1. Financial Statements", size=11)
    doc.statement(operations)
    doc.page()
    doc.statement(balance)
    doc.paragraph("The accompanying notes are an integral part of these condensed consolidated financial statements.")
    doc.page()
    doc.statement(segments)
    doc.page()
    doc.heading(
        "Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations", size=11, gap=0
    )
    for heading, paragraph in _discussion(quarter):
        doc.heading(heading, size=11)
        doc.paragraph(paragraph)
    doc.save(path)


def question_text(quarter: Quarter) -> str:
    return f"What were {COMPANY}'s total net sales for the three months ended {quarter.ended}?"


def write_family(out: Path) -> tuple[Path, Path]:
    """Write the reports into ``out/docs`` and the question file ``out/questions.json``; return both paths."""
    from chunkbench_core.parsing import parse

    fixture = _fixture_module()
    docs = out / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    questions = []
    for quarter in QUARTERS:
        path = docs / quarter.file_name
        write_report(fixture, quarter, path)
        parsed = parse(path)
        figure = figure_text(total_net_sales(quarter.key))
        row_start = parsed.markdown.index("Total net sales")  # the statement of operations comes first
        row_end = parsed.markdown.index(figure, row_start) + len(figure)
        assert "\n" not in parsed.markdown[row_start:row_end], "the row's figure is on the row's own line"
        page = parsed.page_span(row_start, row_end)
        questions.append(
            {
                "id": f"total_net_sales_{quarter.key.replace(' ', '_').lower()}",
                "question": question_text(quarter),
                "expected_answer": f"${figure} thousand",
                "category": "table figure",
                "references": [
                    {
                        "document": quarter.file_name,
                        "content": parsed.markdown[row_start:row_end],
                        "page": page[0] if page else None,
                    }
                ],
                "metadata": {"figure": figure, "quarter": quarter.key},
            }
        )
    question_file = out / "questions.json"
    question_file.write_text(
        json.dumps(
            {
                "name": "quarterly_family",
                "description": f"Four near-identical quarterly reports of {COMPANY} (made up): the same statements, "
                "different quarters and figures. One question per report: its quarter's total net sales.",
                "questions": questions,
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )
    return docs, question_file
