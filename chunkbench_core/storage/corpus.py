"""The corpus folder and the parsed-document store.

``scan_corpus`` lists the documents of the corpus folder with their content hashes
(``scan_corpus_report`` also says what it refused or skipped: the corpus is the folder, so a
symbolic link leading outside it is refused, and hidden files are skipped and counted).
``ParsedStore`` keeps each parsed document as JSON keyed by its content hash, its extension
(which decides the parser) and the parser version, so an unchanged document is never parsed
twice, and a failure is remembered with its reason, reported under the name of the file asked about.
Parsed records and the manifest are derived: one that cannot be read is moved aside (``*.corrupt-<time>``,
with a warning naming it) and treated as missing, so the next parse makes it again.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from chunkbench_core.errors import CorruptStateError
from chunkbench_core.parsing.models import ParsedDocument

from .integrity import Identity, load_json_object, quarantine
from .space import guard_writes

IGNORED_NAMES = {".DS_Store", "Thumbs.db"}
#: the letters by script of a manifest written before they were recorded, by (path, mtime, size)
_COUNTED_SCRIPTS: dict[tuple[str, int, int], dict[str, Any]] = {}


@dataclass(frozen=True)
class SourceDocument:
    document: str  # the file name relative to the corpus folder (posix), the document's identity
    path: str
    sha256: str
    size_bytes: int


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class CorpusScan:
    """What a scan of the corpus folder found.

    documents: the files to parse; refused: {document: reason} for entries that are not taken
    (a symbolic link leading outside the folder, a broken link); hidden: how many hidden or system
    files (``.name``, ``~$`` lock files, ``Thumbs.db``) were skipped.
    """

    documents: list[SourceDocument] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    hidden: int = 0


def _is_hidden(name: str) -> bool:
    return name.startswith(".") or name in IGNORED_NAMES or name.startswith("~$")


def scan_corpus_report(folder: str | Path) -> CorpusScan:
    """Every regular file under ``folder`` (recursively), sorted by name, with what was refused or skipped.

    A symbolic link (to a file or a folder) is followed only when it resolves inside the folder; one that
    leads outside is refused with a reason naming the link, so nothing outside the corpus is read. Links to
    folders inside the corpus are not walked (their files are listed under their own names).
    """
    root = Path(folder)
    if not root.is_dir():
        raise FileNotFoundError(f"corpus folder {root} does not exist (set CHUNKBENCH_CORPUS to a folder of documents)")
    real_root = root.resolve()
    scan = CorpusScan()
    candidates: list[tuple[str, Path]] = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(directory)
        kept = []
        for name in sorted(dirnames):
            path = base / name
            relative = path.relative_to(root).as_posix()
            if _is_hidden(name):
                scan.hidden += 1
            elif path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(real_root):
                    scan.refused[relative] = (
                        f"{path}: symbolic link to a folder outside the corpus ({target}); "
                        "refused: only files inside the corpus folder are read"
                    )
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in filenames:
            path = base / name
            relative = path.relative_to(root).as_posix()
            if _is_hidden(name):
                scan.hidden += 1
                continue
            if path.is_symlink():
                target = path.resolve()
                if not target.exists():
                    scan.refused[relative] = f"{path}: broken symbolic link (to {target})"
                    continue
                if not target.is_relative_to(real_root):
                    scan.refused[relative] = (
                        f"{path}: symbolic link to a file outside the corpus ({target}); "
                        "refused: only files inside the corpus folder are read"
                    )
                    continue
            if path.is_file():
                candidates.append((relative, path))
    for relative, path in sorted(candidates):
        scan.documents.append(SourceDocument(relative, str(path.resolve()), file_sha256(path), path.stat().st_size))
    scan.refused = dict(sorted(scan.refused.items()))
    return scan


def scan_corpus(folder: str | Path) -> list[SourceDocument]:
    """The documents of :func:`scan_corpus_report` (regular files inside the folder, hidden files skipped)."""
    return scan_corpus_report(folder).documents


@lru_cache(maxsize=1)
def parser_version() -> str:
    """A digest of the parsing code: a changed parser re-parses every document."""
    digest = hashlib.sha256()
    for path in sorted((Path(__file__).resolve().parent.parent / "parsing").glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def parsed_store(results_dir: str | Path, options: Any = None) -> "ParsedStore":
    """The parsed documents of the results folder ``results_dir``, keyed by this parser's version.

    ``options`` (the ParseOptions in force) when parsing: each parse is keyed by the options its format reads.
    Readers need none: they read the manifest of the last parse."""
    return ParsedStore(Path(results_dir) / "parsed", parser_version(), options)


class ParsedStore:
    """Parsed documents as JSON files: ``<root>/<sha256>.<extension>.<parser_version>[-<options>].json``.

    The extension is part of the key because it decides the parser: the same bytes as ``notes.txt``
    and as ``notes.pdf`` are two different parses (the second one fails). With ``options`` (the
    ParseOptions in force) each record's key also carries the digest of the options that ITS format
    reads (``options.fingerprint(suffix)``): a changed PDF heading pattern re-parses the PDFs and
    keeps the Word files' parses. A failure is stored as its reason, and reported under the path of the
    file asked about, never of another file with those bytes.
    """

    def __init__(self, root: str | Path, parser_version: str, options: Any = None) -> None:
        self.root = Path(root)
        self.options = options
        # what the manifest records: the code's version and the digest of every option in force
        self.parser_version = parser_version if options is None else f"{parser_version}-{options.fingerprint()}"
        self._code_version = parser_version

    def _path(self, source: SourceDocument) -> Path:
        suffix = Path(source.document).suffix.lower().lstrip(".") or "none"
        version = self._code_version
        if self.options is not None:
            version += "-" + self.options.fingerprint("." + suffix)
        return self.root / f"{source.sha256}.{suffix}.{version}.json"

    _REPARSED = "the document is parsed again by the next parse (materialize parsed_documents; chunkbench run does)"

    def _read_record(self, path: Path, document: str) -> tuple[dict[str, Any], ParsedDocument | None] | None:
        """A record file's content and its parsed document; None when missing, or unreadable (then moved aside
        with a warning)."""
        record = load_json_object(path, f"{document}: {self._REPARSED}", required=("status",))
        if record is None:
            return None
        found = Identity.of(path)
        problem = None
        loaded = None
        if record["status"] not in ("parsed", "failed"):
            problem = f"unknown status {record['status']!r}"
        elif record["status"] == "parsed":
            parsed = record.get("parsed")
            if not isinstance(parsed, dict) or not isinstance(parsed.get("markdown"), str):
                problem = "its parsed document is missing or incomplete"
            else:
                try:
                    loaded = ParsedDocument.from_dict(parsed)
                except Exception as exc:  # any shape the loader cannot take
                    problem = f"its parsed document cannot be loaded ({type(exc).__name__}: {exc})"
        if problem is not None:
            quarantine(path, problem, f"{document}: {self._REPARSED}", found=found)
            return None
        return record, loaded

    def get(self, source: SourceDocument) -> dict[str, Any] | None:
        """The stored record of ``source`` (``{"status", "error", "parsed"}``) or None (never parsed, or its
        record could not be read and was moved aside: parse it again)."""
        read = self._read_record(self._path(source), source.document)
        if read is None:
            return None
        record = read[0]
        if record.get("parsed"):
            record["parsed"]["document"] = source.document  # same bytes under another name
        if record.get("status") == "failed":
            reason = record.get("reason")
            record["error"] = f"{source.path}: {reason}" if reason else record.get("error")
        return record

    def has(self, source: SourceDocument) -> bool:
        """True when a record of ``source`` (its content, format, parser version and options) is stored (it may
        still prove unreadable: :meth:`fetch` says)."""
        return self._path(source).is_file()

    def fetch(self, source: SourceDocument) -> tuple[dict[str, Any], ParsedDocument | None] | None:
        """The stored record of ``source`` (as :meth:`get`) and its parsed document (None for a failure), read once;
        None when nothing usable is stored."""
        read = self._read_record(self._path(source), source.document)
        if read is None:
            return None
        record, parsed = read
        if parsed is not None:
            parsed.document = source.document  # same bytes under another name
            record["parsed"]["document"] = source.document
        if record.get("status") == "failed":
            reason = record.get("reason")
            record["error"] = f"{source.path}: {reason}" if reason else record.get("error")
        return record, parsed

    def put(
        self, source: SourceDocument, parsed: ParsedDocument | None, error: str | None, reason: str | None = None
    ) -> None:
        """Store a parse, or a failure: ``reason`` is the message without the path (so another file with the
        same bytes gets its own name in the error); ``error`` the full message when there is no reason."""
        self.root.mkdir(parents=True, exist_ok=True)
        record = {
            "source": asdict(source),
            "status": "parsed" if parsed is not None else "failed",
            "error": error,
            "reason": reason,
            "parsed": parsed.to_dict() if parsed is not None else None,
        }
        path = self._path(source)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with guard_writes(path, f"the parsed record of {source.document}", cleanup=[tmp]):
            tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)

    def load_parsed(self, source: SourceDocument) -> ParsedDocument | None:
        record = self.get(source)
        if not record or record["status"] != "parsed":
            return None
        return ParsedDocument.from_dict(record["parsed"])

    # The manifest is what the ``parsed_documents`` asset materialized: the corpus as it was
    # parsed, with the record file of each document. Downstream assets read it, so they use
    # exactly the parsed snapshot, whatever changed in the folder or the parser since.
    @property
    def manifest_path(self) -> Path:
        return self.root / "manifest.json"

    def write_manifest(
        self,
        sources: list[SourceDocument],
        parse_options: dict[str, Any] | None = None,
        script: dict[str, Any] | None = None,
        sample: dict[str, Any] | None = None,
    ) -> None:
        """Record the parsed corpus; ``script``: its letters by script (embedding.language.ScriptShare), which
        the boundary model's language rule reads; ``sample``: the sampled corpus's record when ``sources`` are a
        sample (None: the whole corpus)."""
        self.root.mkdir(parents=True, exist_ok=True)
        entries = [{**asdict(s), "record": self._path(s).name} for s in sources]
        tmp = self.manifest_path.with_name(f".manifest.{os.getpid()}.tmp")
        manifest: dict[str, Any] = {
            "parser_version": self.parser_version,
            "parse_options": parse_options or {},
            "documents": entries,
        }
        if script is not None:
            manifest["script"] = script
        manifest["corpus_sample"] = sample
        with guard_writes(self.manifest_path, "the parsed manifest", cleanup=[tmp]):
            tmp.write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, self.manifest_path)

    _MANIFEST_REBUILT = "it is written again by the next parse (materialize parsed_documents; chunkbench run does)"

    def manifest(self) -> dict[str, Any] | None:
        """The manifest of the last parse; None before any parse, or when it could not be read (then it is
        moved aside with a warning, and the next parse writes it again)."""
        manifest = load_json_object(self.manifest_path, self._MANIFEST_REBUILT, required=("documents",))
        if manifest is None:
            return None
        found = Identity.of(self.manifest_path)
        entries = manifest["documents"]
        if not isinstance(entries, list) or not all(
            isinstance(e, dict)
            and isinstance(e.get("document"), str)
            and isinstance(e.get("sha256"), str)
            and isinstance(e.get("record"), str)
            for e in entries
        ):
            quarantine(self.manifest_path, "its document list is incomplete", self._MANIFEST_REBUILT, found=found)
            return None
        return manifest

    def manifest_fingerprint(self) -> str:
        """Digest of the parsed corpus (document, content hash, parser version and options); '' before any parse."""
        manifest = self.manifest()
        if manifest is None:
            return ""
        # the record name carries the parser version and options: re-parsed = a new fingerprint; a sampled
        # corpus holds other documents, so it never shares a fingerprint with the whole corpus (unless it is it)
        return fingerprint({e["document"]: f"{e['sha256']}:{e['record']}" for e in manifest["documents"]})

    def manifest_sample(self) -> dict[str, Any] | None:
        """The sampled corpus of the last parse (its record: label, counts, seed, fingerprint), None for the whole
        corpus."""
        manifest = self.manifest()
        sample = manifest.get("corpus_sample") if manifest else None
        return sample if isinstance(sample, dict) else None

    def manifest_parse(self) -> tuple[str | None, dict[str, Any]]:
        """(parser version and options key, parse options) of the last parse; (None, {}) before any."""
        manifest = self.manifest()
        if manifest is None:
            return None, {}
        return manifest.get("parser_version"), manifest.get("parse_options") or {}

    def manifest_script(self) -> dict[str, Any] | None:
        """The parsed corpus's letters by script (``ScriptShare.to_dict``) as the last parse counted them; for a
        parse recorded before they were counted, counted now from its documents; None before any parse."""
        manifest = self.manifest()
        if manifest is None:
            return None
        if isinstance(manifest.get("script"), dict):
            return manifest["script"]
        from chunkbench_core.embedding.language import ScriptShare

        try:  # counted once per manifest file (sensors ask on every tick)
            stat = self.manifest_path.stat()
            stamp = (str(self.manifest_path), stat.st_mtime_ns, stat.st_size)
        except OSError:
            stamp = None
        if stamp is not None and stamp in _COUNTED_SCRIPTS:
            return _COUNTED_SCRIPTS[stamp]
        counted = ScriptShare.of(d.markdown for d in self.load_manifest_documents()).to_dict()
        if stamp is not None:
            _COUNTED_SCRIPTS.clear()
            _COUNTED_SCRIPTS[stamp] = counted
        return counted

    def load_manifest_documents(self) -> list[ParsedDocument]:
        """The successfully parsed documents of the last ``parsed_documents`` materialization.

        A record that cannot be read is moved aside and raises :class:`CorruptStateError` (permanent): the
        parsed snapshot lacks a document, and chunking without it would change every result; the next parse
        makes the record again."""
        manifest = self.manifest()
        if manifest is None:
            return []
        documents = []
        for entry in manifest["documents"]:
            path = self.root / entry["record"]
            if not path.exists():
                continue
            read = self._read_record(path, entry["document"])
            if read is None:
                raise CorruptStateError(
                    f"the parsed record of {entry['document']} ({path}) could not be read and was moved aside; "
                    "parse the corpus again (materialize parsed_documents; chunkbench run does), then this step",
                    str(path),
                )
            parsed = read[1]
            if parsed is not None:
                parsed.document = entry["document"]
                documents.append(parsed)
        return documents


def fingerprint(entries: dict[str, str]) -> str:
    """A short digest of a {name: sha256} mapping (the state of a folder)."""
    digest = hashlib.sha256()
    for name in sorted(entries):
        digest.update(f"{name}\0{entries[name]}\n".encode())
    return digest.hexdigest()[:16]


def corpus_state(sources: list[SourceDocument]) -> dict[str, str]:
    """{document: sha256} of a corpus scan."""
    return {s.document: s.sha256 for s in sources}


def folder_state(folder: str | Path, pattern: str = "*.json") -> dict[str, str]:
    """{file name: sha256} of the files matching ``pattern`` in ``folder`` (question sets)."""
    root = Path(folder)
    if not root.is_dir():
        return {}
    return {p.name: file_sha256(p) for p in sorted(root.glob(pattern)) if p.is_file()}


def diff_states(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """Names added, changed and deleted between two {name: sha256} states."""
    return {
        "added": sorted(set(after) - set(before)),
        "changed": sorted(n for n in set(after) & set(before) if after[n] != before[n]),
        "deleted": sorted(set(before) - set(after)),
    }
