"""``chunkbench questions check|import|generate|draft``: question sets against the parsed corpus.

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


def parsed_corpus_texts() -> dict[str, str]:
    """{document: parsed text} of the last parse; parses the corpus in memory (storing nothing) when there is none."""
    return {d.document: d.markdown for d in _parsed_documents()}


def command_check(args: argparse.Namespace) -> int:
    from chunkbench_core.evaluation.question_check import check_questions

    folder = Path(args.folder) if args.folder else settings.questions_dir()
    check = check_questions(folder, parsed_corpus_texts())
    for problem in check.problems:
        print(problem)
    print(("" if check.ok else "\n") + check.summary(), file=sys.stderr if check.problems else sys.stdout)
    return 0 if check.ok else 1


def command_import(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import QuestionSetError
    from chunkbench_core.evaluation.importers import import_questions
    from chunkbench_core.evaluation.questions import write_question_file

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


def _parsed_documents():
    """The parsed corpus as documents (units included); parses in memory when nothing was parsed yet."""
    from chunkbench_core.errors import DocumentProcessingError
    from chunkbench_core.parsing import parse
    from chunkbench_core.stages import load_parsed_corpus
    from chunkbench_core.storage.corpus import scan_corpus

    workspace = _resources()["workspace"]
    documents = load_parsed_corpus(workspace.parsed_store())
    if documents:
        return documents
    print(f"no parsed corpus yet: parsing {workspace.corpus_dir()} in memory (nothing is stored)", file=sys.stderr)
    for source in scan_corpus(workspace.corpus_dir()):
        try:
            document = parse(source.path)
        except DocumentProcessingError as exc:
            print(f"document not parsed: {exc}", file=sys.stderr)
            continue
        document.document = source.document
        documents.append(document)
    return documents


def command_generate(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.evaluation.generation import (
        NO_LLM_MESSAGE as NO_LLM,
        generate_question_set,
        local_question_embed,
        plan_generation,
    )
    from chunkbench_core.evaluation.questions import write_question_file

    llm = _resources()["llm"]
    try:
        documents = _parsed_documents()
        if args.dry_run:
            plan = plan_generation(documents, args.n, llm.settings() if llm.configured else None, seed=args.seed,
                                   documents_pattern=args.documents)
            print(plan.summary())
            if not llm.configured:
                print(NO_LLM, file=sys.stderr)
            return 0
        if not llm.configured:
            print(f"error: {NO_LLM}", file=sys.stderr)
            return 2
        data, report = generate_question_set(
            documents, llm.client(), llm.settings(), local_question_embed(), args.n,
            seed=args.seed, name=args.name or Path(args.out).stem, documents_pattern=args.documents)
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in report.details:
        print(f"dropped: {line}", file=sys.stderr)
    if not data["questions"]:
        print(f"{report.summary()} Nothing written.", file=sys.stderr)
        return 1
    path = write_question_file(data, args.out)
    print(f"{report.summary()} Written to {path}.")
    return 0


def command_draft(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.evaluation.generation import draft_question_set
    from chunkbench_core.evaluation.questions import write_question_file

    try:
        data = draft_question_set(_parsed_documents(), args.n, seed=args.seed, name=args.name or Path(args.out).stem,
                                  documents_pattern=args.documents)
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path = write_question_file(data, args.out)
    print(f"{len(data['questions'])} draft question(s) written to {path}: write each question and expected answer; "
          "the references are exact passages of the parsed documents")
    return 0


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
    for verb, helptext, func in (
            ("generate", "generate grounded questions with the configured LLM (every excerpt verbatim)", command_generate),
            ("draft", "write a skeleton whose references are exact passages, for a person to write the questions",
             command_draft)):
        g = actions.add_parser(verb, help=helptext)
        g.add_argument("--n", type=int, required=True, help="number of questions")
        g.add_argument("--out", required=True, help="the question set to write, e.g. questions/generated.json")
        g.add_argument("--documents", metavar="GLOB", help="only documents whose name matches, e.g. '*.docx'")
        g.add_argument("--seed", type=int, default=0, help="passage sampling seed (recorded in the file)")
        g.add_argument("--name", help="question set name (default: the --out file name)")
        if verb == "generate":
            g.add_argument("--dry-run", action="store_true", help="print the calls and estimated cost, send nothing")
        g.set_defaults(questions_func=func)
    q.set_defaults(func=command_questions)
