"""Legacy Word .doc: converted to .docx by headless LibreOffice, then the DOCX rules apply.

``soffice --headless --convert-to docx`` as a pre-processing step, not a separate parser: the
converted file then gets exactly the treatment of any .docx. The conversion runs in a fresh
temporary directory with its own LibreOffice user profile (so parallel runs and
a desktop LibreOffice do not block each other), is killed - with every process
it started - after ``ParseOptions.soffice_timeout_s`` seconds, and the
temporary directory is always removed. Where soffice is missing the error says
so and how to install it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from chunkbench_core.errors import DocumentProcessingError
from chunkbench_core.parsing.guards import check_ooxml
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.parsing.options import ParseOptions

INSTALL_HINT = (
    "install LibreOffice (Debian/Ubuntu: apt-get install libreoffice-writer-nogui; "
    "macOS: brew install --cask libreoffice) or convert the file to .docx yourself"
)
_CANDIDATES = (
    "/usr/bin/soffice",
    "/usr/lib/libreoffice/program/soffice",
    "/opt/libreoffice/program/soffice",
    "/Applications/LibreOffice.app/Contents/MacOS/soffice",
)


def find_soffice() -> str | None:
    """Path of the LibreOffice ``soffice`` executable, or None."""
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    for candidate in _CANDIDATES:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _soffice_address_space() -> None:  # runs in the soffice child before exec
    """LibreOffice maps far more address space than it uses: inside a parse worker (whose soft RLIMIT_AS is
    the per-document memory limit) give it the hard limit back. It has its own time limit (soffice_timeout_s)."""
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def convert_with_soffice(
    source: Path, target_ext: str, workdir: Path, timeout_s: float, soffice: str | None = None
) -> Path:
    """Convert ``source`` with headless LibreOffice into ``workdir``; returns the new file.

    Also used by the tests to make a .doc from a .docx (``target_ext="doc"``).
    Raises DocumentProcessingError naming ``source`` on a missing soffice, a
    timeout or a failed conversion.
    """
    soffice = soffice or find_soffice()
    if soffice is None:
        raise DocumentProcessingError(
            str(source), f"legacy .doc needs LibreOffice: 'soffice' not found; {INSTALL_HINT}"
        )
    profile = workdir / "lo-profile"
    outdir = workdir / "out"
    outdir.mkdir(parents=True, exist_ok=True)
    staged = workdir / ("input" + source.suffix.lower())
    shutil.copyfile(source, staged)
    cmd = [
        soffice,
        f"-env:UserInstallation={profile.as_uri()}",
        "--headless",
        "--invisible",
        "--nologo",
        "--norestore",
        "--nolockcheck",
        "--nodefault",
        "--convert-to",
        target_ext,
        "--outdir",
        str(outdir),
        str(staged),
    ]
    proc = subprocess.Popen(  # the environment as it is; the profile folder above is the only state soffice writes
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=str(workdir),
        start_new_session=True,
        preexec_fn=_soffice_address_space,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise DocumentProcessingError(
            str(source),
            f"LibreOffice did not convert the file within {timeout_s:g} s (ParseOptions.soffice_timeout_s); "
            "the file may be corrupt or very large",
        ) from None
    result = outdir / ("input." + target_ext)
    if proc.returncode != 0 or not result.is_file() or result.stat().st_size == 0:
        detail = (err or out or b"").decode("utf-8", "replace").strip().splitlines()
        tail = detail[-1] if detail else f"exit code {proc.returncode}"
        raise DocumentProcessingError(
            str(source),
            f"LibreOffice could not convert the file to .{target_ext} (corrupt or not a Word file?): {tail}",
        )
    return result


_WORD_STREAM = "WordDocument".encode("utf-16-le")


def check_word_binary(path: Path, options: ParseOptions) -> None:
    """Cheap checks before LibreOffice runs, so garbage is not imported as plain text.

    An OLE compound file must have the compound-file byte-order mark and sector
    size, and name a "WordDocument" stream in its directory (a Word 97-2003
    file). A zip named .doc must be a sound .docx. RTF and HTML saved as .doc
    are passed to LibreOffice as they are.
    """
    with open(path, "rb") as fh:
        head = fh.read(512)
    if head.startswith(b"PK"):
        check_ooxml(path, ".docx", options)
        return
    if not head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return
    if len(head) < 512 or head[28:30] != b"\xfe\xff" or head[30:32] not in (b"\x09\x00", b"\x0c\x00"):
        raise DocumentProcessingError(str(path), "corrupt or truncated .doc (bad compound-file header)")
    found = False
    tail = b""
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            if _WORD_STREAM in tail + block:
                found = True
                break
            tail = block[-len(_WORD_STREAM) :]
    if not found:
        raise DocumentProcessingError(
            str(path),
            "not a Word 97-2003 document: the compound file has no WordDocument stream "
            "(corrupt, or another Office format?)",
        )


def parse_legacy_doc(path: Path, options: ParseOptions) -> ParsedDocument:
    """Convert a .doc to .docx in a temporary directory and parse that (see module docstring)."""
    from chunkbench_core.parsing.docx import parse_docx

    check_word_binary(path, options)
    soffice = find_soffice()
    if soffice is None:
        raise DocumentProcessingError(str(path), f"legacy .doc needs LibreOffice: 'soffice' not found; {INSTALL_HINT}")
    with tempfile.TemporaryDirectory(prefix="chunkbench-doc-") as tmp:
        converted = convert_with_soffice(path, "docx", Path(tmp), options.soffice_timeout_s, soffice)
        try:
            check_ooxml(converted, ".docx", options)
        except DocumentProcessingError as exc:
            raise DocumentProcessingError(str(path), f"converted .docx is not usable: {exc.reason}") from None
        try:
            parsed = parse_docx(converted, options, display_name=path.name, parser="doc")
        except DocumentProcessingError as exc:
            raise DocumentProcessingError(str(path), exc.reason) from None
    return parsed
