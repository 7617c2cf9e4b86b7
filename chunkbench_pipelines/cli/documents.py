"""``chunkbench parse FILE`` and ``chunkbench chunk FILE --strategy S``: one document, parsed or chunked.

``parse`` imports the parser only (it starts fast: no Dagster, no embedding engine, no pandas);
``chunk`` resolves the collection as the pipeline does (chunkbench_core.stages.spec: sizes fitted to the
corpus model's window, the boundary model and threshold in force) and prints its chunks.
"""

from __future__ import annotations

import argparse
import json
import sys


def command_parse(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import DocumentProcessingError
    from chunkbench_core.parsing import parse

    try:
        parsed = parse(args.file)
    except DocumentProcessingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.text:  # exactly the text references are located in (no newline added)
        sys.stdout.flush()
        sys.stdout.buffer.write(parsed.markdown.encode("utf-8"))
        sys.stdout.buffer.flush()
        return 0
    data = parsed.to_dict()
    print(json.dumps({k: data[k] for k in ("document", "markdown", "tree", "units", "warnings", "stats")},
                     ensure_ascii=False, indent=2))
    return 0


def command_chunk(args: argparse.Namespace) -> int:
    """Chunks of one document with the pipeline's own chunker (corpus model window, boundary model)."""
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.parsing import parse
    from chunkbench_core.stages.collections import build_chunker
    from chunkbench_core.stages.spec import CollectionRequest, SpecContext, model_window, resolve_collection

    from .instance import resources

    settings = args.settings
    try:
        spec = resolve_collection(CollectionRequest(args.strategy, args.corpus_model, chunk_size=args.chunk_size,
                                                    chunk_overlap=args.chunk_overlap,
                                                    boundary_model=args.boundary_model),
                                  SpecContext.of(settings))
        boundary = resources(settings)["embeddings"].embedder(spec.boundary_model) if spec.boundary_model else None
        chunker = build_chunker(spec, model_window(spec.model), boundary)
        chunks = chunker.chunk(parse(args.file))
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    fields = ("chunk_id", "chunk_index", "start", "end", "token_count", "content_type", "parent_id", "role",
              "context_source", "text")
    out = []
    for c in chunks:
        row = {f: getattr(c, f) for f in fields}
        if c.embedded_text is not None and c.embedded_text != c.text:
            row["embedded_text"] = c.embedded_text
        out.append(row)
    print(json.dumps(out, ensure_ascii=False, indent=2))
    return 0


def register(sub: argparse._SubParsersAction, strategies: list[str], models: list[str] | None) -> None:
    p = sub.add_parser("parse", help="print a parsed document as JSON")
    p.add_argument("file")
    p.add_argument("--text", action="store_true", help="print only the parsed text, exactly: what question "
                                                       "excerpts must match")
    p.set_defaults(func=command_parse)
    c = sub.add_parser("chunk", help="print the chunks of a document as JSON")
    c.add_argument("file")
    c.add_argument("--strategy", required=True, choices=strategies)
    c.add_argument("--chunk-size", type=int, help="cl100k tokens (default: fits the corpus model's window)")
    c.add_argument("--chunk-overlap", type=int)
    c.add_argument("--corpus-model", default="all-minilm-l6-v2", choices=models, help="whose window bounds the chunks")
    c.add_argument("--boundary-model", help="semantic cuts (default: CHUNKBENCH_BOUNDARY_MODEL or MiniLM)")
    c.set_defaults(func=command_chunk)
