"""Write the financial-statements fixture: three quarterly reports (PDF) and ten questions (CSV).

Three made-up companies file a quarterly report each. Every report has the shapes real filings
have and that a parser must get right:

* statement tables with multi-row period headers ("Three Months Ended September 30," over
  "2023 | 2022"; "Three Months Ended" over "June 25," over "2022"), a one-line period header over
  two columns only, section rows ("Operating expenses:") and total rows;
* accounting-style ``$`` printed apart from its number, negatives in parentheses;
* a running page header and a page footer with the page number on every page;
* prose paragraphs (management's discussion) that Text questions are about.

The questions come as a CSV in the shape teams' golden sets have: Question, Source Docs (a glob
such as ``*2023 Q3 ACME*``, or a comma-separated list of globs), Question Type, Source Chunk Type
(Table or Text) and Answer (prose that quotes figures in another format, "$82.96 million" for the
table's 82,959, and sentences with curly quotes). ``facts.json`` holds every figure and prose
question, for benchmarks that need more questions than the CSV's ten, and where the answer of each
CSV question is (for benchmarks; a locator under test should find it without this file).

The companies, figures and text are invented for chunkbench. Figures add up (totals are computed).

Usage:
    python scripts/make_financial_fixture.py [--out tests/fixtures/financial]

Deterministic: fixed creation dates and no random numbers, so the files are byte-identical for
the same fpdf2 version. Needs fpdf2 (in the ``test`` extra); uses the PDF core font Helvetica.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "fixtures" / "financial"
FIXED_DATE = datetime(2024, 11, 4, 9, 0, 0, tzinfo=timezone.utc)

# page geometry (mm, US letter)
PAGE_W = 215.9
LEFT = 15.0
LABEL_W = 72.0
INDENT = 3.0
ROW_H = 5.2


# --------------------------------------------------------------------------------------- model
@dataclass
class Row:
    """One statement line: a label and one value per column (None: a section row without values)."""

    label: str
    values: list[int | float] | None = None
    dollar: bool = False  # an accounting "$" printed apart in front of each value
    indent: bool = False
    total: bool = False
    per_share: bool = False  # values with two decimals


@dataclass
class Statement:
    title: str
    header_rows: list[list[tuple[str, int, int]]]  # per header row: (text, first column, last column)
    columns: list[str]  # the full period of each column, e.g. "three months ended September 30, 2023"
    rows: list[Row]
    unit: str = "(In thousands, except per-share amounts)"


@dataclass
class ProseFact:
    heading: str
    paragraph: str
    question: str
    evidence: str  # a phrase of the paragraph that answers the question


@dataclass
class Company:
    name: str
    ticker: str
    file_stem: str
    period: str  # "quarter ended September 30, 2023"
    statements: list[Statement] = field(default_factory=list)
    prose: list[ProseFact] = field(default_factory=list)


def fmt(value: int | float, per_share: bool = False) -> str:
    """Accounting format: thousands separators, negatives in parentheses."""
    text = f"{abs(value):,.2f}" if per_share else f"{abs(int(value)):,}"
    return f"({text})" if value < 0 else text


def _sum(*rows: list[int]) -> list[int]:
    return [sum(vals) for vals in zip(*rows, strict=True)]


def _neg(values: list[int]) -> list[int]:
    return [-v for v in values]


def operations(
    periods: list[str],
    header_rows: list[list[tuple[str, int, int]]],
    products: list[int],
    services: list[int],
    cost_products: list[int],
    cost_services: list[int],
    rnd: list[int],
    sga: list[int],
    other: list[int],
    tax_rate: float,
    shares: list[int],
) -> Statement:
    total_sales = _sum(products, services)
    total_cost = _sum(cost_products, cost_services)
    gross = [a - b for a, b in zip(total_sales, total_cost, strict=True)]
    opex = _sum(rnd, sga)
    operating = [a - b for a, b in zip(gross, opex, strict=True)]
    pretax = _sum(operating, other)
    tax = [round(p * tax_rate) if p > 0 else 0 for p in pretax]
    net = [a - b for a, b in zip(pretax, tax, strict=True)]
    basic = [round(n / s, 2) for n, s in zip(net, shares, strict=True)]
    diluted = [round(n / (s * 1.012), 2) for n, s in zip(net, shares, strict=True)]
    rows = [
        Row("Net sales:"),
        Row("Products", products, dollar=True, indent=True),
        Row("Services", services, indent=True),
        Row("Total net sales", total_sales, total=True),
        Row("Cost of sales:"),
        Row("Products", cost_products, indent=True),
        Row("Services", cost_services, indent=True),
        Row("Total cost of sales", total_cost, total=True),
        Row("Gross margin", gross, total=True),
        Row("Operating expenses:"),
        Row("Research and development", rnd, indent=True),
        Row("Selling, general and administrative", sga, indent=True),
        Row("Total operating expenses", opex, total=True),
        Row("Operating income (loss)", operating),
        Row("Other income (expense), net", other),
        Row("Income (loss) before provision for income taxes", pretax),
        Row("Provision for income taxes", tax),
        Row("Net income (loss)", net, dollar=True, total=True),
        Row("Earnings (loss) per share:"),
        Row("Basic", basic, dollar=True, indent=True, per_share=True),
        Row("Diluted", diluted, dollar=True, indent=True, per_share=True),
    ]
    return Statement("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)", header_rows, periods, rows)


def balance_sheet(
    dates: list[str],
    cash: list[int],
    receivables: list[int],
    inventories: list[int],
    ppe: list[int],
    payables: list[int],
    accrued: list[int],
    debt: list[int],
) -> Statement:
    current = _sum(cash, receivables, inventories)
    assets = _sum(current, ppe)
    liabilities = _sum(payables, accrued, debt)
    equity = [a - b for a, b in zip(assets, liabilities, strict=True)]
    rows = [
        Row("ASSETS:"),
        Row("Cash and cash equivalents", cash, dollar=True, indent=True),
        Row("Accounts receivable, net", receivables, indent=True),
        Row("Inventories", inventories, indent=True),
        Row("Total current assets", current, total=True),
        Row("Property, plant and equipment, net", ppe),
        Row("Total assets", assets, dollar=True, total=True),
        Row("LIABILITIES AND SHAREHOLDERS' EQUITY:"),
        Row("Accounts payable", payables, dollar=True, indent=True),
        Row("Accrued expenses", accrued, indent=True),
        Row("Long-term debt", debt, indent=True),
        Row("Total liabilities", liabilities, total=True),
        Row("Total shareholders' equity", equity, total=True),
        Row("Total liabilities and shareholders' equity", assets, dollar=True, total=True),
    ]
    header = [[(d, i + 1, i + 1) for i, d in enumerate(dates)]]
    return Statement(
        "CONDENSED CONSOLIDATED BALANCE SHEETS (Unaudited)",
        header,
        [f"as of {d}" for d in dates],
        rows,
        unit="(In thousands)",
    )


def cash_flows(
    periods: list[str],
    header_rows: list[list[tuple[str, int, int]]],
    net: list[int],
    depreciation: list[int],
    working: list[int],
    capex: list[int],
    repurchases: list[int],
    dividends: list[int],
) -> Statement:
    operating = _sum(net, depreciation, working)
    investing = _neg(capex)
    financing = _sum(_neg(repurchases), _neg(dividends))
    change = _sum(operating, investing, financing)
    rows = [
        Row("Operating activities:"),
        Row("Net income (loss)", net, dollar=True, indent=True),
        Row("Depreciation and amortization", depreciation, indent=True),
        Row("Changes in operating assets and liabilities", working, indent=True),
        Row("Cash generated by operating activities", operating, total=True),
        Row("Investing activities:"),
        Row("Payments for property, plant and equipment", investing, indent=True),
        Row("Cash used in investing activities", investing, total=True),
        Row("Financing activities:"),
        Row("Repurchases of common stock", _neg(repurchases), indent=True),
        Row("Dividends paid", _neg(dividends), indent=True),
        Row("Cash used in financing activities", financing, total=True),
        Row("Increase (decrease) in cash and cash equivalents", change, dollar=True, total=True),
    ]
    return Statement(
        "CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS (Unaudited)", header_rows, periods, rows, unit="(In thousands)"
    )


def companies() -> list[Company]:
    acme_periods = [
        "three months ended September 30, 2023",
        "three months ended September 30, 2022",
        "nine months ended September 30, 2023",
        "nine months ended September 30, 2022",
    ]
    acme_header = [
        [("Three Months Ended September 30,", 1, 2), ("Nine Months Ended September 30,", 3, 4)],
        [("2023", 1, 1), ("2022", 2, 2), ("2023", 3, 3), ("2022", 4, 4)],
    ]
    acme = Company("ACME Robotics, Inc.", "ACME", "2023 Q3 ACME", "quarter ended September 30, 2023")
    acme.statements = [
        operations(
            acme_periods,
            acme_header,
            products=[61_204, 55_871, 178_930, 160_412],
            services=[21_755, 19_046, 63_118, 54_907],
            cost_products=[35_118, 33_402, 104_377, 97_265],
            cost_services=[8_420, 7_733, 24_861, 22_108],
            rnd=[9_317, 8_046, 27_514, 23_390],
            sga=[12_583, 11_907, 37_022, 34_781],
            other=[-1_204, 386, -2_317, 1_045],
            tax_rate=0.21,
            shares=[30_150, 30_870, 30_340, 31_010],
        ),
        balance_sheet(
            ["September 30, 2023", "December 31, 2022"],
            cash=[41_230, 35_918],
            receivables=[28_764, 25_103],
            inventories=[19_487, 22_361],
            ppe=[88_352, 84_770],
            payables=[17_209, 19_884],
            accrued=[9_641, 8_327],
            debt=[40_000, 45_000],
        ),
        cash_flows(
            acme_periods[2:],
            [[("Nine Months Ended September 30,", 1, 2)], [("2023", 1, 1), ("2022", 2, 2)]],
            net=[0, 0],
            depreciation=[11_406, 10_288],
            working=[-3_817, 2_954],
            capex=[14_988, 12_471],
            repurchases=[9_500, 6_000],
            dividends=[4_557, 4_342],
        ),
    ]
    acme.prose = [
        ProseFact(
            "Net Sales",
            "Total net sales increased 11% compared with the third quarter of 2022, driven by higher "
            "unit shipments of the R7 welding arm to automotive customers and by growth in service "
            "contracts. Services grew faster than products as the installed base expanded.",
            "What drove ACME Robotics' net sales growth in the third quarter of 2023?",
            "driven by higher unit shipments of the R7 welding arm to automotive customers",
        ),
        ProseFact(
            "Gross Margin",
            "Gross margin as a percentage of net sales rose to 47.7% from 45.1%, mainly because the "
            "Company's new Monterrey plant lowered the unit cost of the R7 arm. Lower freight rates "
            "also helped.",
            "Why did ACME's gross margin percentage improve in the third quarter of 2023?",
            "the Company's new Monterrey plant lowered the unit cost of the R7 arm",
        ),
        ProseFact(
            "Liquidity and Capital Resources",
            "The Company believes its cash, cash equivalents and its undrawn $60 million revolving "
            "credit facility will be sufficient to meet its needs for at least the next twelve months. "
            "During the quarter it repaid $5 million of its term loan ahead of schedule.",
            "How much of its term loan did ACME repay early during the quarter?",
            "it repaid $5 million of its term loan ahead of schedule",
        ),
        ProseFact(
            "Risks",
            "Two automotive customers together accounted for 38% of net sales in the first nine months "
            "of 2023. The loss of either customer would have a material adverse effect on results.",
            "How concentrated is ACME Robotics' customer base?",
            "Two automotive customers together accounted for 38% of net sales",
        ),
    ]
    # net income of the cash flow statement is the one of the statement of operations (nine months)
    net_nine = acme.statements[0].rows[17].values[2:]  # type: ignore[index]  # the fixture's rows hold numbers here
    _set_cash_net(acme.statements[2], list(net_nine))

    borl_periods = [
        "three months ended June 25, 2022",
        "three months ended June 26, 2021",
        "nine months ended June 25, 2022",
        "nine months ended June 26, 2021",
    ]
    borl_header = [
        [("Three Months Ended", 1, 2), ("Nine Months Ended", 3, 4)],
        [("June 25,", 1, 1), ("June 26,", 2, 2), ("June 25,", 3, 3), ("June 26,", 4, 4)],
        [("2022", 1, 1), ("2021", 2, 2), ("2022", 3, 3), ("2021", 4, 4)],
    ]
    borl = Company("Borealis Foods Corp.", "BRLF", "2022 Q3 BRLF", "quarter ended June 25, 2022")
    borl.statements = [
        operations(
            borl_periods,
            borl_header,
            products=[47_382, 44_106, 139_455, 131_870],
            services=[3_215, 2_948, 9_604, 8_817],
            cost_products=[39_774, 35_209, 116_921, 104_633],
            cost_services=[1_906, 1_722, 5_713, 5_160],
            rnd=[2_188, 1_874, 6_417, 5_512],
            sga=[10_141, 8_633, 29_874, 25_906],
            other=[-1_066, -811, -3_109, -2_454],
            tax_rate=0.24,
            shares=[18_420, 18_390, 18_410, 18_350],
        ),
        balance_sheet(
            ["June 25, 2022", "September 25, 2021"],
            cash=[12_604, 19_337],
            receivables=[21_470, 18_925],
            inventories=[33_812, 27_406],
            ppe=[61_094, 62_518],
            payables=[24_906, 20_117],
            accrued=[6_733, 7_025],
            debt=[52_500, 50_000],
        ),
        cash_flows(
            borl_periods[2:],
            [[("Nine Months Ended", 1, 2)], [("June 25,", 1, 1), ("June 26,", 2, 2)], [("2022", 1, 1), ("2021", 2, 2)]],
            net=[0, 0],
            depreciation=[7_318, 7_102],
            working=[-9_455, -1_206],
            capex=[4_207, 6_884],
            repurchases=[0, 1_500],
            dividends=[0, 2_753],
        ),
    ]
    borl.prose = [
        ProseFact(
            "Results of Operations",
            "The net loss for the quarter reflects higher prices for wheat, dairy and packaging, which "
            "the Company could only partly pass on to retailers. Management raised list prices by 6% "
            "in May 2022 and expects the full effect in the fourth quarter.",
            "How did Borealis Foods respond to higher input costs in 2022?",
            "Management raised list prices by 6% in May 2022",
        ),
        ProseFact(
            "Supply Chain",
            "A fire at a contract bakery in Winnipeg interrupted supply of frozen pastries for five "
            "weeks in April and May 2022. Lost sales from the interruption are estimated at $2.1 million.",
            "What interrupted Borealis Foods' supply of frozen pastries?",
            "A fire at a contract bakery in Winnipeg interrupted supply of frozen pastries",
        ),
        ProseFact(
            "Liquidity and Capital Resources",
            "On May 12, 2022 the Company amended its credit agreement, which raised the revolving "
            "facility to $40 million and relaxed the leverage covenant until the end of fiscal 2023. "
            "The Company suspended its quarterly dividend to preserve cash.",
            "What did Borealis Foods change in its credit agreement in May 2022?",
            "raised the revolving facility to $40 million and relaxed the leverage covenant",
        ),
        ProseFact(
            "Outlook",
            "The Company expects net sales for fiscal 2022 to grow between 4% and 6%, with gross "
            "margin recovering in the fourth quarter as price increases take effect.",
            "What net sales growth does Borealis Foods expect for fiscal 2022?",
            "expects net sales for fiscal 2022 to grow between 4% and 6%",
        ),
    ]
    net_nine = borl.statements[0].rows[17].values[2:]  # type: ignore[index]  # the fixture's rows hold numbers here
    _set_cash_net(borl.statements[2], list(net_nine))

    cblt_periods = ["three months ended March 31, 2024", "three months ended March 31, 2023"]
    cblt_header = [[("Three Months Ended March 31,", 1, 2)], [("2024", 1, 1), ("2023", 2, 2)]]
    cblt = Company("Cobalt Networks, Inc.", "CBLT", "2024 Q1 CBLT", "quarter ended March 31, 2024")
    cblt.statements = [
        operations(
            cblt_periods,
            cblt_header,
            products=[19_883, 21_407],
            services=[36_512, 30_276],
            cost_products=[11_046, 12_519],
            cost_services=[12_733, 10_981],
            rnd=[14_208, 12_117],
            sga=[15_366, 14_952],
            other=[612, -297],
            tax_rate=0.19,
            shares=[52_310, 51_880],
        ),
        balance_sheet(
            ["March 31, 2024", "December 31, 2023"],
            cash=[96_417, 88_205],
            receivables=[31_662, 34_018],
            inventories=[7_905, 8_377],
            ppe=[22_843, 23_519],
            payables=[8_114, 9_562],
            accrued=[14_390, 16_227],
            debt=[0, 0],
        ),
        cash_flows(
            cblt_periods,
            [[("Three Months Ended March 31,", 1, 2)], [("2024", 1, 1), ("2023", 2, 2)]],
            net=[0, 0],
            depreciation=[2_146, 2_033],
            working=[4_318, -2_719],
            capex=[1_877, 2_365],
            repurchases=[0, 0],
            dividends=[0, 0],
        ),
    ]
    cblt.prose = [
        ProseFact(
            "Revenue",
            "Subscription services revenue grew 21% as enterprise customers moved from perpetual "
            "licenses to the Cobalt Cloud platform; hardware product sales declined as expected.",
            "Why did Cobalt Networks' services revenue grow in the first quarter of 2024?",
            "enterprise customers moved from perpetual licenses to the Cobalt Cloud platform",
        ),
        ProseFact(
            "Operating Expenses",
            "Research and development expenses increased because the Company added 85 engineers "
            "to its Lisbon development center to build the next version of its edge firewall.",
            "Why did Cobalt Networks' research and development expenses increase?",
            "added 85 engineers to its Lisbon development center",
        ),
        ProseFact(
            "Liquidity and Capital Resources",
            "Cobalt has no debt. The Board authorized a share repurchase program of up to $50 million "
            "on April 18, 2024; no shares had been repurchased at the date of this report.",
            "How large is the share repurchase program Cobalt Networks' Board authorized?",
            "authorized a share repurchase program of up to $50 million",
        ),
        ProseFact(
            "Risks",
            "The Company relies on a single manufacturer in Taiwan for its hardware appliances, and a "
            "disruption there could delay shipments for several quarters.",
            "What supplier risk does Cobalt Networks report?",
            "relies on a single manufacturer in Taiwan for its hardware appliances",
        ),
    ]
    net = cblt.statements[0].rows[17].values  # type: ignore[index]  # the fixture's rows hold numbers here
    _set_cash_net(cblt.statements[2], list(net))  # type: ignore[arg-type]  # the fixture's rows hold numbers here
    return [acme, borl, cblt]


def _set_cash_net(statement: Statement, net: list[int]) -> None:
    rows = {r.label: r for r in statement.rows}
    rows["Net income (loss)"].values = net
    depreciation = rows["Depreciation and amortization"].values
    working = rows["Changes in operating assets and liabilities"].values
    operating = _sum(net, depreciation, working)  # type: ignore[arg-type]  # the fixture's rows hold numbers here
    rows["Cash generated by operating activities"].values = operating
    total = _sum(
        operating,
        rows["Cash used in investing activities"].values,  # type: ignore[arg-type]  # the fixture's rows hold numbers here
        rows["Cash used in financing activities"].values,
    )  # type: ignore[arg-type]  # the fixture's rows hold numbers here
    rows["Increase (decrease) in cash and cash equivalents"].values = total


# --------------------------------------------------------------------------------------- PDF
class ReportPDF:
    """A quarterly report drawn with fpdf2: running header and footer on every page."""

    def __init__(self, company: Company) -> None:
        from fpdf import FPDF

        class _Pages(FPDF):
            def header(self) -> None:
                self.set_font("Helvetica", "", 8)
                self.set_xy(LEFT, 8)
                self.cell(90, 4, company.name, align="L")
                self.set_xy(PAGE_W - LEFT - 90, 8)
                self.cell(90, 4, f"Form 10-Q for the {company.period}", align="R")
                self.set_y(20)

            def footer(self) -> None:
                self.set_font("Helvetica", "", 8)
                self.set_xy(LEFT, 266)
                self.cell(100, 4, f"{company.name} | {company.ticker} Quarterly Report", align="L")
                self.set_xy(PAGE_W - LEFT - 40, 266)
                self.cell(40, 4, f"Page {self.page_no()} of {{nb}}", align="R")

        self.company = company
        pdf = _Pages(format="letter", unit="mm")
        pdf.set_creation_date(FIXED_DATE)
        pdf.set_title(f"{company.name} quarterly report, {company.period}")
        pdf.set_author(company.name)
        pdf.set_creator("chunkbench make_financial_fixture.py")
        pdf.set_auto_page_break(False)
        pdf.set_margins(LEFT, 15, LEFT)
        self.pdf = pdf

    def page(self) -> None:
        self.pdf.add_page()

    def heading(self, text: str, size: float = 12, gap: float = 3) -> None:
        pdf = self.pdf
        pdf.ln(gap)
        pdf.set_font("Helvetica", "B", size)
        pdf.set_x(LEFT)
        pdf.multi_cell(PAGE_W - 2 * LEFT, size * 0.5, text, align="L", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(1.5)

    def paragraph(self, text: str) -> None:
        pdf = self.pdf
        pdf.set_font("Helvetica", "", 10)
        pdf.set_x(LEFT)
        pdf.multi_cell(PAGE_W - 2 * LEFT, 5, text, align="L", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)

    def statement(self, st: Statement) -> None:
        pdf = self.pdf
        columns = len(st.columns)
        value_w = 28.0 if columns > 2 else 34.0
        first_x = PAGE_W - LEFT - columns * value_w
        pdf.set_font("Helvetica", "", 10)
        pdf.set_x(LEFT)
        pdf.cell(PAGE_W - 2 * LEFT, 5, self.company.name, align="C", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "B", 10)
        pdf.cell(PAGE_W - 2 * LEFT, 5, st.title, align="C", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", "", 9)
        pdf.cell(PAGE_W - 2 * LEFT, 5, st.unit, align="C", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
        pdf.set_font("Helvetica", "B", 8)
        for header in st.header_rows:
            y = pdf.get_y()
            for text, first, last in header:
                x = first_x + (first - 1) * value_w
                width = (last - first + 1) * value_w
                pdf.set_xy(x, y)
                pdf.cell(width - 2, 4.2, text, align="C" if last > first else "R")
            pdf.set_y(y + 4.2)
        y = pdf.get_y() + 0.6
        pdf.line(first_x, y, PAGE_W - LEFT, y)
        pdf.set_y(y + 1.2)
        for row in st.rows:
            y = pdf.get_y()
            pdf.set_font("Helvetica", "B" if row.total else "", 9)
            pdf.set_xy(LEFT + (INDENT if row.indent else 0), y)
            pdf.cell(LABEL_W, ROW_H, row.label, align="L")
            for i, value in enumerate(row.values or []):
                x = first_x + i * value_w
                if row.dollar:
                    pdf.set_xy(x + 2, y)
                    pdf.cell(4, ROW_H, "$", align="L")
                pdf.set_xy(x, y)
                pdf.cell(value_w - 2, ROW_H, fmt(value, row.per_share), align="R")
            pdf.set_y(y + ROW_H)
        pdf.ln(4)

    def save(self, path: Path) -> None:
        self.pdf.output(str(path))


def write_report(company: Company, path: Path) -> None:
    doc = ReportPDF(company)
    operations_st, balance_st, cash_st = company.statements
    doc.page()
    doc.heading(f"{company.name}", size=14, gap=0)
    doc.paragraph(f"Quarterly Report on Form 10-Q for the {company.period}. All amounts are unaudited.")
    doc.heading("PART I - FINANCIAL INFORMATION", size=11)
    doc.heading("Item 1. Financial Statements", size=11)
    doc.statement(operations_st)
    doc.page()
    doc.statement(balance_st)
    doc.paragraph("The accompanying notes are an integral part of these condensed consolidated financial statements.")
    doc.page()
    doc.statement(cash_st)
    doc.page()
    doc.heading(
        "Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations", size=11, gap=0
    )
    doc.paragraph(
        f"The following discussion should be read with the condensed consolidated financial statements "
        f"of {company.name} in Item 1 of this report."
    )
    for fact in company.prose:
        doc.heading(fact.heading, size=11)
        doc.paragraph(fact.paragraph)
    doc.save(path)


# --------------------------------------------------------------------------------------- questions
CSV_COLUMNS = ("Question", "Source Docs", "Question Type", "Source Chunk Type", "Answer")


def _row(company: Company, statement: int, label: str, section: str | None = None) -> Row:
    current = None
    for row in company.statements[statement].rows:
        if row.values is None:
            current = row.label
            continue
        if row.label == label and (section is None or current == section):
            return row
    raise KeyError(label)


def _millions(value: int) -> str:
    return f"${abs(value) / 1000:,.2f} million"


def _table_evidence(
    company: Company, statement: int, label: str, column: int, section: str | None = None
) -> dict[str, str]:
    row = _row(company, statement, label, section)
    return {
        "document": f"{company.file_stem}.pdf",
        "label": label,
        "section": section or "",
        "figure": fmt(row.values[column], row.per_share),
    }  # type: ignore[index]  # the fixture's rows hold numbers here


def csv_questions(acme: Company, borl: Company, cblt: Company) -> list[tuple[dict[str, str], list[dict[str, str]]]]:
    """The ten questions (six about table figures, four about prose), each with where its answer is."""
    q: list[dict[str, str]] = []
    evidence: list[list[dict[str, str]]] = []
    v = _row(acme, 0, "Total net sales").values
    q.append(
        {
            "Question": "What were ACME Robotics' total net sales for the three months ended September 30, 2023?",
            "Source Docs": "*2023 Q3 ACME*",
            "Question Type": "Single-Doc Single-Chunk RAG",
            "Source Chunk Type": "Table",
            "Answer": f"ACME Robotics reported total net sales of {_millions(v[0])} for the quarter, "
            f"up from {_millions(v[1])} a year earlier.",
        }
    )
    evidence.append([_table_evidence(acme, 0, "Total net sales", 0)])
    v = _row(acme, 0, "Research and development").values
    q.append(
        {
            "Question": "How much did ACME Robotics spend on research and development in the first nine months "
            "of 2023?",
            "Source Docs": "*2023 Q3 ACME*",
            "Question Type": "Single-Doc Single-Chunk RAG",
            "Source Chunk Type": "Table",
            "Answer": f"Research and development expense was {v[2]} thousand dollars for the nine months ended "
            "September 30, 2023.",
        }
    )
    evidence.append([_table_evidence(acme, 0, "Research and development", 2)])
    v = _row(borl, 0, "Net income (loss)").values
    q.append(
        {
            "Question": "What was Borealis Foods' net income or loss for the three months ended June 25, 2022?",
            "Source Docs": "*2022 Q3 BRLF*",
            "Question Type": "Single-Doc Single-Chunk RAG",
            "Source Chunk Type": "Table",
            "Answer": f"Borealis Foods had a net loss of {_millions(v[0])} for the quarter ended June 25, 2022 "
            f"(shown as ({abs(v[0]):,}) in thousands).",
        }
    )
    evidence.append([_table_evidence(borl, 0, "Net income (loss)", 0)])
    v = _row(borl, 1, "Cash and cash equivalents").values
    q.append(
        {
            "Question": "How much cash and cash equivalents did Borealis Foods hold at June 25, 2022?",
            "Source Docs": "*2022 Q3 BRLF*",
            "Question Type": "Single-Doc Single-Chunk RAG",
            "Source Chunk Type": "Table",
            "Answer": f"Cash and cash equivalents were {_millions(v[0])} at June 25, 2022, down from "
            f"{_millions(v[1])} at September 25, 2021.",
        }
    )
    evidence.append([_table_evidence(borl, 1, "Cash and cash equivalents", 0)])
    v = _row(cblt, 0, "Gross margin").values
    q.append(
        {
            "Question": "What was Cobalt Networks' gross margin in the first quarter of 2024?",
            "Source Docs": "*2024 Q1 CBLT*",
            "Question Type": "Single-Doc Single-Chunk RAG",
            "Source Chunk Type": "Table",
            "Answer": f"Gross margin was {v[0]:,} thousand dollars (about {_millions(v[0])}) for the three "
            "months ended March 31, 2024.",
        }
    )
    evidence.append([_table_evidence(cblt, 0, "Gross margin", 0)])
    a = _row(acme, 0, "Research and development").values
    c = _row(cblt, 0, "Research and development").values
    q.append(
        {
            "Question": "Compare the research and development expense of ACME Robotics and Cobalt Networks in "
            "their latest quarter.",
            "Source Docs": "*2023 Q3 ACME*, *2024 Q1 CBLT*",
            "Question Type": "Multi-Doc RAG",
            "Source Chunk Type": "Table",
            "Answer": f"ACME Robotics spent {_millions(a[0])} on research and development in the quarter "
            f"ended September 30, 2023, and Cobalt Networks spent {_millions(c[0])} in the quarter "
            "ended March 31, 2024.",
        }
    )
    evidence.append(
        [
            _table_evidence(acme, 0, "Research and development", 0),
            _table_evidence(cblt, 0, "Research and development", 0),
        ]
    )
    texts = [(acme, 0), (borl, 1), (cblt, 2), (acme, 3)]
    for company, index in texts:
        fact = company.prose[index]
        sentence = next(s for s in _sentences(fact.paragraph) if fact.evidence in s)
        q.append(
            {
                "Question": fact.question,
                "Source Docs": f"*{company.file_stem}*",
                "Question Type": "Single-Doc Single-Chunk RAG",
                "Source Chunk Type": "Text",
                "Answer": f"The report says: \u201c{_curly(sentence)}\u201d",
            }
        )
        evidence.append([{"document": f"{company.file_stem}.pdf", "text": fact.evidence}])
    return list(zip(q, evidence, strict=True))


def _sentences(paragraph: str) -> list[str]:
    out, start = [], 0
    for i, ch in enumerate(paragraph):
        if ch in ".;" and (i + 1 == len(paragraph) or paragraph[i + 1] == " "):
            out.append(paragraph[start : i + 1].strip())
            start = i + 1
    if paragraph[start:].strip():
        out.append(paragraph[start:].strip())
    return out


def _curly(text: str) -> str:
    """Typographic apostrophes, as answers written in a word processor have them."""
    return text.replace("'", "\u2019")


# --------------------------------------------------------------------------------------- facts
def facts(all_companies: list[Company], questions: list[tuple[dict[str, str], list[dict[str, str]]]]) -> dict:
    """Every figure and prose question, for benchmarks that generate more questions than the CSV, and
    where the answer of each CSV question is (a table row's label, section and figure, or a phrase)."""
    out = []
    for company in all_companies:
        statements = []
        for st in company.statements:
            rows = []
            section = None
            for row in st.rows:
                if row.values is None:
                    section = row.label.rstrip(":")
                    continue
                rows.append(
                    {"label": row.label, "section": section, "values": [fmt(v, row.per_share) for v in row.values]}
                )
            statements.append({"title": st.title, "columns": st.columns, "rows": rows})
        out.append(
            {
                "company": company.name,
                "ticker": company.ticker,
                "document": f"{company.file_stem}.pdf",
                "period": company.period,
                "statements": statements,
                "prose": [
                    {"heading": p.heading, "question": p.question, "evidence": p.evidence} for p in company.prose
                ],
            }
        )
    return {
        "companies": out,
        "csv_evidence": [{"question": row["Question"], "evidence": evidence} for row, evidence in questions],
    }


def write_all(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    acme, borl, cblt = all_companies = companies()
    questions = csv_questions(acme, borl, cblt)
    written = []
    for company in all_companies:
        path = out / f"{company.file_stem}.pdf"
        write_report(company, path)
        written.append(path)
    csv_path = out / "questions.csv"
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(row for row, _ in questions)
    written.append(csv_path)
    facts_path = out / "facts.json"
    facts_path.write_text(
        json.dumps(facts(all_companies, questions), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    written.append(facts_path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    for path in write_all(args.out):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
