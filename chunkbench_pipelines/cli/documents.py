"""``chunkbench parse FILE`` and ``chunkbench chunk FILE --strategy S``: one document, parsed or chunked.

``parse`` imports the parser only (it starts fast: no Dagster, no embedding engine, no pandas) and reads
with the benchmark's parser heuristics (``parser.toml`` in the benchmark's folder, when it exists);
``--explain`` says which rule made each heading, table header and Q&A pair, ``--write-settings`` writes
the defaults as a starting ``parser.toml``. ``chunk`` resolves the collection as the pipeline does
(chunkbench_core.stages.spec: sizes fitted to the corpus model's window, the boundary model and threshold
in force, the boundary model fitted to the document's language) and prints its chunks.
"""

from __future__ import annotations

import argparse
import json
import sys

from chunkbench_core.configuration import corpus_model_default, parser_heuristics_of


def command_parse(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import DocumentProcessingError
    from chunkbench_core.parsing import ParseOptions, explain_text, parse

    settings = args.settings
    if args.write_settings:
        return _write_settings(settings.parser_settings_file, args.force)
    if args.file is None:
        args.parser.error("parse needs a FILE (or --write-settings)")
    heuristics = parser_heuristics_of(settings)  # a bad parser.toml: ConfigError, reported by main in one line
    try:
        parsed = parse(args.file, ParseOptions(heuristics=heuristics))
    except DocumentProcessingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.explain:
        where = settings.parser_settings_file
        print(f"parser settings file: {where if where.is_file() else 'none (' + str(where) + ' does not exist)'}")
        print(f"document header: {parsed.context.get('header', '')} ({_sources(parsed.context)})")
        print(explain_text(parsed, heuristics), end="")
        return 0
    if args.text:  # exactly the text references are located in (no newline added)
        sys.stdout.flush()
        sys.stdout.buffer.write(parsed.markdown.encode("utf-8"))
        sys.stdout.buffer.flush()
        return 0
    data = parsed.to_dict()
    print(
        json.dumps(
            {
                k: data[k]
                for k in ("document", "context", "page_starts", "markdown", "tree", "units", "warnings", "stats")
            },
            ensure_ascii=False,
            indent=2,
        )
    )
    return 0


def _sources(context: dict) -> str:
    """Where each part of the document header was told from, in words."""
    return ", ".join(f"{part} from the {where}" for part, where in sorted((context.get("sources") or {}).items()))


def _write_settings(path, force: bool) -> int:
    """Write the default parser heuristics to the benchmark's parser.toml (never over an existing file
    without ``--force``)."""
    from chunkbench_core.parsing import ParserHeuristics

    if path.exists() and not force:
        print(f"error: {path} exists; edit it, or add --force to replace it with the defaults", file=sys.stderr)
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(ParserHeuristics().to_toml(), encoding="utf-8")
    tmp.replace(path)
    print(f"wrote the default parser settings to {path}")
    return 0


def command_chunk(args: argparse.Namespace) -> int:
    """Chunks of one document with the pipeline's own chunker (corpus model window, boundary model)."""
    from chunkbench_core.embedding.language import ScriptShare
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.parsing import ParseOptions, parse
    from chunkbench_core.stages.collections import build_chunker
    from chunkbench_core.stages.spec import CollectionRequest, SpecContext, model_window, resolve_collection

    from .instance import resources

    settings = args.settings
    try:
        parsed = parse(args.file, ParseOptions(heuristics=parser_heuristics_of(settings)))
        # the boundary model must read the document's language (chunkbench_core.embedding.language)
        context = SpecContext.of(settings, ScriptShare.of([parsed.markdown]))
        corpus_model = args.corpus_model or corpus_model_default(settings).model
        spec = resolve_collection(
            CollectionRequest(
                args.strategy,
                corpus_model,
                chunk_size=args.chunk_size,
                chunk_overlap=args.chunk_overlap,
                boundary_model=args.boundary_model,
            ),
            context,
        )
        if spec.boundary_choice is not None:
            choice = spec.boundary_choice
            print(f"boundary model: {choice.model} ({choice.source}: {choice.reason})", file=sys.stderr)
            if choice.warning:
                print(f"warning: {choice.warning}", file=sys.stderr)
        boundary = resources(settings)["embeddings"].embedder(spec.boundary_model) if spec.boundary_model else None
        chunker = build_chunker(spec, model_window(spec.model), boundary)
        chunks = chunker.chunk(parsed)
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    fields = (
        "chunk_id",
        "chunk_index",
        "start",
        "end",
        "token_count",
        "content_type",
        "parent_id",
        "role",
        "context_source",
        "text",
    )
    out = []
    for c in chunks:
        row = {f: getattr(c, f) for f in fields}
        if c.embedded_text is not None and c.embedded_text != c.text:
            row["embedded_text"] = c.embedded_text
        out.append(row)
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return 0


def register(sub: argparse._SubParsersAction, strategies: list[str], models: list[str] | None) -> None:
    p = sub.add_parser(
        "parse",
        help="print a parsed document as JSON, or explain the parser's decisions",
        description="Parse one document with the benchmark's parser settings (parser.toml in the "
        "benchmark's folder, when it exists; see `chunkbench parse --write-settings`).",
    )
    p.add_argument("file", nargs="?")
    p.add_argument(
        "--text", action="store_true", help="print only the parsed text, exactly: what question excerpts must match"
    )
    p.add_argument(
        "--explain", action="store_true", help="say which rule made each heading, table header and title, and Q&A pair"
    )
    p.add_argument(
        "--write-settings",
        action="store_true",
        help="write the default parser settings to the benchmark's parser.toml, to edit",
    )
    p.add_argument("--force", action="store_true", help="--write-settings: replace an existing parser.toml")
    p.set_defaults(func=command_parse, parser=p)
    c = sub.add_parser("chunk", help="print the chunks of a document as JSON")
    c.add_argument("file")
    c.add_argument("--strategy", required=True, choices=strategies)
    c.add_argument("--chunk-size", type=int, help="cl100k tokens (default: fits the corpus model's window)")
    c.add_argument("--chunk-overlap", type=int)
    c.add_argument(
        "--corpus-model",
        choices=models,
        help="whose window bounds the chunks (default: the corpus model in force, see chunkbench models)",
    )
    c.add_argument(
        "--boundary-model",
        help="semantic cuts (default: the one in force, fitted to the document's language; see chunkbench models)",
    )
    c.set_defaults(func=command_chunk)
