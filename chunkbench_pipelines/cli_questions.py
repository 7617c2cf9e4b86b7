"""``chunkbench questions ...``: check question sets against the parsed corpus (and, later, import and generate).

The logic lives in chunkbench_core.evaluation; this module parses arguments and prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chunkbench_core import settings


def _resources():
    from chunkbench_pipelines.definitions import build_resources

    return build_resources(resolve=True)


def parsed_corpus_texts(out=sys.stderr) -> dict[str, str]:
    """{document: parsed text} of the last parse; parses the corpus in memory (storing nothing) when there is none."""
    from chunkbench_core.errors import DocumentProcessingError
    from chunkbench_core.parsing import parse
    from chunkbench_core.stages import load_parsed_corpus
    from chunkbench_core.storage.corpus import scan_corpus

    workspace = _resources()["workspace"]
    documents = load_parsed_corpus(workspace.parsed_store())
    if documents:
        return {d.document: d.markdown for d in documents}
    corpus = workspace.corpus_dir()
    print(f"no parsed corpus yet: parsing {corpus} in memory (nothing is stored)", file=out)
    texts = {}
    for source in scan_corpus(corpus):
        try:
            texts[source.document] = parse(source.path).markdown
        except DocumentProcessingError as exc:
            print(f"document not parsed: {exc}", file=out)
    return texts


def command_check(args: argparse.Namespace) -> int:
    from chunkbench_core.evaluation.question_check import check_questions

    folder = Path(args.folder) if args.folder else settings.questions_dir()
    check = check_questions(folder, parsed_corpus_texts())
    for problem in check.problems:
        print(problem)
    print(("" if check.ok else "\n") + check.summary(), file=sys.stderr if check.problems else sys.stdout)
    return 0 if check.ok else 1


def write_question_file(data: dict, out: str) -> Path:
    """Write a question set JSON file (atomically: a temporary name, then renamed)."""
    import json
    import os

    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def command_import(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import QuestionSetError
    from chunkbench_core.evaluation.importers import import_questions

    try:
        result = import_questions(args.format, args.file, parsed_corpus_texts(), args.name or Path(args.out).stem)
    except QuestionSetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for problem in result.problems:
        print(problem, file=sys.stderr)
    if not result.question_set.questions:
        print(f"{result.summary()}; nothing written", file=sys.stderr)
        return 1
    path = write_question_file(result.to_json(), args.out)
    print(f"{result.summary()}; written to {path}")
    return 1 if result.problems else 0


def command_questions(args: argparse.Namespace) -> int:
    return int(args.questions_func(args))


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``questions`` and its sub-commands to the ``chunkbench`` parser."""
    q = sub.add_parser("questions", help="check, import or generate question sets")
    actions = q.add_subparsers(dest="questions_command", required=True)
    check = actions.add_parser("check", help="validate question sets against the parsed corpus (runs nothing); "
                                             "exit 1 on any problem")
    check.add_argument("folder", nargs="?", help="folder of question sets (default: CHUNKBENCH_QUESTIONS or questions/)")
    check.set_defaults(questions_func=command_check)
    imp = actions.add_parser("import", help="import a Chroma CSV, a RAGAS test set or a LlamaIndex retrieval "
                                            "dataset, locating its contexts in the parsed documents")
    imp.add_argument("file")
    imp.add_argument("--format", required=True, choices=["chroma", "ragas", "llamaindex"])
    imp.add_argument("--out", required=True, help="the question set to write, e.g. questions/imported.json")
    imp.add_argument("--name", help="question set name (default: the --out file name)")
    imp.set_defaults(questions_func=command_import)
    q.set_defaults(func=command_questions)
