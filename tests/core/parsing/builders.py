"""Fixture builders for the parsing tests: every binary fixture is made here, none is copied.

DOCX and XLSX are written with python-docx and openpyxl, PDFs with fpdf2 using
Debian's DejaVu fonts (fonts-dejavu-core: DejaVuSans has Arabic script), and the
legacy .doc with LibreOffice from a DOCX built here.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

DEJAVU_DIR = Path("/usr/share/fonts/truetype/dejavu")
DEJAVU = DEJAVU_DIR / "DejaVuSans.ttf"
DEJAVU_BOLD = DEJAVU_DIR / "DejaVuSans-Bold.ttf"


def fonts_available() -> bool:
    return DEJAVU.is_file() and DEJAVU_BOLD.is_file()


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: int = 8) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buf, format="PNG")
    return buf.getvalue()


# --------------------------------------------------------------------------------- DOCX
def _merge_row(table, row: int) -> None:
    cells = table.rows[row].cells
    cells[0].merge(cells[-1])


def build_rich_docx(path: Path) -> Path:
    """One DOCX exercising every DOCX rule of the parser (see test_docx.py for the expected units)."""
    from docx import Document
    from docx.shared import Inches

    doc = Document()
    doc.add_heading("Branch guide", level=1)
    doc.add_paragraph("This guide lists our branches and answers common questions.")

    doc.add_heading("Contacts", level=2)
    # data table with a provable header
    t = doc.add_table(rows=3, cols=3)
    for r, values in enumerate(
        [("Branch", "City", "Phone"), ("Central", "Tehran", "021-5555"), ("South", "Shiraz", "071-4444")]
    ):
        for c, v in enumerate(values):
            t.cell(r, c).text = v
    doc.add_paragraph("Figures per year follow.")
    # table without a header: the first row is numbers
    t = doc.add_table(rows=2, cols=2)
    for r, values in enumerate([("1402", "120"), ("1403", "150")]):
        for c, v in enumerate(values):
            t.cell(r, c).text = v

    doc.add_heading("Directory", level=2)
    # title row (merged), blank separator row, header row, data rows, vertical merge
    t = doc.add_table(rows=5, cols=2)
    _merge_row(t, 0)
    t.cell(0, 0).text = "Branch directory 1403"
    # row 1 stays blank: separator
    t.cell(2, 0).text = "Region"
    t.cell(2, 1).text = "Manager"
    t.cell(3, 0).text = "North"
    t.cell(3, 1).text = "Ms Rahimi"
    t.cell(4, 1).text = "Mr Karimi"
    t.cell(3, 0).merge(t.cell(4, 0))  # "North" covers rows 3 and 4
    t.cell(3, 0).text = "North"

    doc.add_heading("Layout", level=2)
    # layout table: a cell holds a nested table -> cells read as prose, nested table recursed
    t = doc.add_table(rows=1, cols=2)
    left = t.cell(0, 0)
    left.text = "Left column prose about claims."
    left.add_paragraph("A second paragraph in the same cell.")
    right = t.cell(0, 1)
    right.text = "Prices:"
    nested = right.add_table(rows=3, cols=2)
    for r, values in enumerate([("Plan", "Price"), ("Basic", "100"), ("Gold", "250")]):
        for c, v in enumerate(values):
            nested.cell(r, c).text = v

    doc.add_heading("پرسش‌های متداول", level=1)
    # Persian Q&A with Arabic yeh/kaf, Persian digits and a diacritic to normalise
    doc.add_paragraph("سوال: كارت بيمه را چگونه دريافت كنم؟")
    doc.add_paragraph("پاسخ: كارت ظرف ۳ روز كاري ارسال مي‌شود.")
    doc.add_paragraph("1- مهلت اعلام خسارت چقدر است؟")
    doc.add_paragraph("پاسخ: حداکثر پنج روز کاری.")
    doc.add_paragraph("این متن یک پاراگراف عادی است.")

    doc.add_heading("FAQ", level=1)
    doc.add_paragraph("Q: How do I file a claim?")
    doc.add_paragraph("A: Call your branch or use the website.")
    doc.add_paragraph("Photo of the main office:")
    doc.add_picture(io.BytesIO(png_bytes()), width=Inches(0.5))
    doc.save(str(path))
    return path


def build_layout_by_size_docx(path: Path) -> Path:
    """A table whose one cell is longer than a (small) chunk: layout, read as prose."""
    from docx import Document

    doc = Document()
    t = doc.add_table(rows=2, cols=2)
    t.cell(0, 0).text = "Topic"
    t.cell(0, 1).text = "Text"
    t.cell(1, 0).text = "Claims"
    t.cell(1, 1).text = "First long paragraph of the cell with many words in it for the limit."
    t.cell(1, 1).add_paragraph("Second paragraph of the same cell.")
    doc.save(str(path))
    return path


# --------------------------------------------------------------------------------- XLSX
def build_directory_xlsx(path: Path) -> Path:
    """Merged title row, blank separator row, header, merged (vertical) data cells, a dead 2nd sheet."""
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Branches"
    ws["A1"] = "فهرست شعب بیمه"
    ws.merge_cells("A1:C1")
    # row 2 is blank (separator)
    ws.append([])  # keeps openpyxl's append pointer consistent
    ws["A3"], ws["B3"], ws["C3"] = "شهر", "شعبه", "تلفن"
    ws["A4"], ws["B4"], ws["C4"] = "تهران", "مرکزی", "021-1111"
    ws["B5"], ws["C5"] = "ونک", "021-2222"
    ws.merge_cells("A4:A5")
    ws["A6"], ws["B6"], ws["C6"] = "شيراز", "زند", 7132220000
    dead = wb.create_sheet("Sheet2")
    dead["A1"] = None
    wb.save(str(path))
    return path


# --------------------------------------------------------------------------------- PDF
def _pdf(with_dejavu: bool = True):
    from fpdf import FPDF

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(True, margin=15)
    if with_dejavu:
        pdf.add_font("DejaVu", "", str(DEJAVU))
        pdf.add_font("DejaVu", "B", str(DEJAVU_BOLD))
    return pdf


ENGLISH_BODY_1 = (
    "Chunking splits a document into passages that a retriever can index. The size of each passage "
    "changes what the retriever finds, so we measure it on real questions."
)
ENGLISH_BODY_2 = "Each strategy is run on the same corpus with the same embedding model."
ENGLISH_BODY_3 = "Fixed-size chunking cuts the text every N tokens with an overlap between windows."


def build_english_pdf(path: Path, *, outline: bool = False) -> Path:
    """Two pages: font-size headings (18 pt / 14 pt), a bold body-size heading, paragraphs, a table."""
    pdf = _pdf()
    pdf.add_page()
    pdf.set_font("DejaVu", "B", 18)
    if outline:
        pdf.start_section("Chunking benchmark", level=0)
    pdf.cell(0, 10, "Chunking benchmark", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("DejaVu", "", 11)
    pdf.multi_cell(0, 6, ENGLISH_BODY_1, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(5)
    pdf.multi_cell(0, 6, ENGLISH_BODY_2, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(5)
    pdf.set_font("DejaVu", "B", 14)
    if outline:
        pdf.start_section("Strategies", level=1)
    pdf.cell(0, 10, "Strategies", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("DejaVu", "", 11)
    pdf.multi_cell(0, 6, ENGLISH_BODY_3, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(5)
    with pdf.table(col_widths=(40, 40, 40), width=120, align="LEFT", line_height=7) as table:
        for values in (("Strategy", "Tokens", "Recall"), ("fixed_size", "512", "0.71"), ("semantic", "300", "0.78")):
            row = table.row()
            for v in values:
                row.cell(v)
    pdf.add_page()
    pdf.set_font("DejaVu", "B", 14)
    if outline:
        pdf.start_section("Results", level=1)
    pdf.cell(0, 10, "Results", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("DejaVu", "", 11)
    pdf.multi_cell(
        0,
        6,
        "Semantic chunking had the best recall on this corpus, and fixed-size chunking came second "
        "with a much lower cost per document.",
        new_x="LMARGIN",
        new_y="NEXT",
    )
    pdf.ln(5)
    pdf.set_font("DejaVu", "B", 11)
    pdf.cell(0, 8, "Limitations", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("DejaVu", "", 11)
    pdf.multi_cell(
        0, 6, "The corpus is small and every question was written by one person.", new_x="LMARGIN", new_y="NEXT"
    )
    pdf.output(str(path))
    return path


# Persian text used by the Persian PDF (logical order, standard Persian letters).
PERSIAN_HEADING = "فصل اول کلیات"
PERSIAN_LINES = (
    "بیمه بدنه خسارت خودرو را جبران می‌کند",
    "مهلت اعلام خسارت پنج روز کاری است",
)
PERSIAN_ARTICLE = "ماده ۱۲"
PERSIAN_ARTICLE_BODY = "بیمه‌گذار باید حادثه را فوراً به شعبه اطلاع دهد"


def _shape_presentation_forms(word: str) -> str:
    """Persian word -> Arabic presentation forms (contextual glyphs), as a printed PDF stores it."""
    from tests.core.parsing.arabic_forms import shape_word

    return shape_word(word)


def _visual_line(pdf, text: str, size: float, right_x: float, bold: bool = False) -> None:
    """Draw a right-to-left line the way a printing application does: each Persian word is shaped
    into presentation forms with its glyphs stored left to right (visual order), and the words are
    written left to right across the page - the last word first. pypdf's plain extract_text() then
    returns the words in reversed order (environment-facts "Persian text")."""
    pdf.set_font("DejaVu", "B" if bold else "", size)
    y = pdf.get_y()
    x = right_x
    space = pdf.get_string_width(" ")
    placed: list[tuple[float, str, float]] = []
    for word in text.split(" "):
        glyphs = _shape_presentation_forms(word)
        if any("\u0600" <= ch <= "\u06ff" or "\ufb50" <= ch <= "\ufefc" for ch in glyphs):
            glyphs = glyphs[::-1]
        width = pdf.get_string_width(glyphs)
        x -= width
        placed.append((x, glyphs, width))
        x -= space
    for x_pos, glyphs, width in sorted(placed):
        pdf.set_xy(x_pos, y)
        pdf.cell(width, size * 0.6, glyphs)
    pdf.set_xy(pdf.l_margin, y + size * 0.6)


def build_persian_pdf(path: Path) -> Path:
    """A Persian PDF in the printed style: presentation forms, words drawn right to left."""
    pdf = _pdf()
    pdf.add_page()
    right = pdf.w - pdf.r_margin
    _visual_line(pdf, PERSIAN_HEADING, 18, right, bold=True)
    pdf.ln(6)
    for line in PERSIAN_LINES:
        _visual_line(pdf, line, 11, right)
        pdf.ln(6)
    _visual_line(pdf, PERSIAN_ARTICLE, 11, right, bold=True)
    pdf.ln(6)
    _visual_line(pdf, PERSIAN_ARTICLE_BODY, 11, right)
    pdf.output(str(path))
    return path


def build_scanned_pdf(path: Path, pages: int = 2) -> Path:
    """Image-only pages (what a scanner produces): no text layer at all."""
    pdf = _pdf(with_dejavu=False)
    img = io.BytesIO(png_bytes((120, 120, 120), 64))
    for _ in range(pages):
        pdf.add_page()
        img.seek(0)
        pdf.image(img, x=10, y=10, w=180)
    pdf.output(str(path))
    return path


def build_text_pdf(path: Path, pages: list[str]) -> Path:
    """Plain pages of 11 pt text (for gate thresholds and bad-input tests)."""
    pdf = _pdf()
    for text in pages:
        pdf.add_page()
        pdf.set_font("DejaVu", "", 11)
        if text:
            pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def build_encrypted_pdf(
    path: Path, user_password: str = "secret", algorithm: str = "RC4-128", owner_password: str = "owner-pw"
) -> Path:
    """An encrypted PDF; with ``user_password=""`` it opens without a password (owner restrictions only)."""
    from pypdf import PdfReader, PdfWriter

    plain = path.with_name(path.stem + "-plain.pdf")
    build_text_pdf(plain, ["Confidential text " * 20])
    writer = PdfWriter()
    for page in PdfReader(str(plain)).pages:
        writer.add_page(page)
    writer.encrypt(user_password=user_password, owner_password=owner_password, algorithm=algorithm)
    with open(path, "wb") as fh:
        writer.write(fh)
    os.unlink(plain)
    return path


def build_zero_page_pdf(path: Path) -> Path:
    from pypdf import PdfWriter

    with open(path, "wb") as fh:
        PdfWriter().write(fh)
    return path


# --------------------------------------------------------------------------------- hostile zips
def build_docx_bomb(path: Path, declared_mb: int = 600) -> Path:
    """A DOCX whose document.xml inflates to ``declared_mb`` MB of zeros (compressed ~0.6 MB)."""
    import zipfile

    from docx import Document

    base = path.with_name(path.stem + "-base.docx")
    Document().save(str(base))
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info.filename))
        chunk = b"\0" * (1024 * 1024)
        with dst.open("word/media/padding.bin", "w", force_zip64=True) as fh:
            for _ in range(declared_mb):
                fh.write(chunk)
    os.unlink(base)
    return path


def fake_word_ole_bytes() -> bytes:
    """Bytes that pass the cheap .doc checks (compound-file header, a WordDocument stream name)
    without being a real document: for tests that stub out LibreOffice."""
    header = bytearray(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    header[28:32] = b"\xfe\xff\x09\x00"
    return bytes(header) + "WordDocument".encode("utf-16-le") + bytes(100)


# ------------------------------------------------------------------------------ hostile files
def build_sparse_xlsx(path: Path, far_cell: str = "XFD1048576") -> Path:
    """A tiny workbook: a header and one data row at A1:B2, and one more value at ``far_cell``.

    Its bounding box from A1 is the whole sheet (17 billion cells for XFD1048576), while it holds five cells.
    """
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws["A1"], ws["B1"] = "Branch", "City"
    ws["A2"], ws["B2"] = "Central", "Tehran"
    ws[far_cell] = "far away"
    wb.save(path)
    return path


def build_lying_docx(path: Path, inflated_bytes: int = 300 * 1024 * 1024, declared_bytes: int = 2048) -> Path:
    """A valid DOCX whose thumbnail member's zip headers declare ``declared_bytes`` while it inflates to ``inflated_bytes``.

    The member is a run of zeros (deflate compresses it about 1000 times), so the file stays small.
    Headers that understate the size pass every check of the declared sizes.
    """
    import struct
    import zlib
    import zipfile

    from docx import Document

    doc = Document()
    doc.add_paragraph("A normal looking paragraph.")
    buffer = io.BytesIO()
    doc.save(buffer)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = b"\0" * (1 << 20)
    parts = [compressor.compress(block) for _ in range(inflated_bytes >> 20)]
    parts.append(compressor.flush())
    payload = b"".join(parts)
    crc = zlib.crc32(b"\0" * declared_bytes)
    name = b"docProps/thumbnail.jpeg"  # a part python-docx loads (the package's relationships name it)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source:
        members = [(info, source.read(info)) for info in source.infolist() if info.filename != name.decode()]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info, data in members:
            target.writestr(info, data)
    body = out.getvalue()
    # cut the central directory off, append the lying member, then write a new central directory
    end = body.rfind(b"PK\x05\x06")
    cd_offset = struct.unpack("<I", body[end + 16 : end + 20])[0]
    cd_size = struct.unpack("<I", body[end + 12 : end + 16])[0]
    entries = body[cd_offset : cd_offset + cd_size]
    count = struct.unpack("<H", body[end + 10 : end + 12])[0]
    head = body[:cd_offset]
    local_offset = len(head)
    local = (
        struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(payload), declared_bytes, len(name), 0)
        + name
        + payload
    )
    central = (
        struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50,
            20,
            20,
            0,
            8,
            0,
            0,
            crc,
            len(payload),
            declared_bytes,
            len(name),
            0,
            0,
            0,
            0,
            0,
            local_offset,
        )
        + name
    )
    new_cd_offset = local_offset + len(local)
    new_entries = entries + central
    eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count + 1, count + 1, len(new_entries), new_cd_offset, 0)
    path.write_bytes(head + local + new_entries + eocd)
    return path
