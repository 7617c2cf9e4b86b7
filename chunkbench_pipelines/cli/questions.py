"""``chunkbench questions check|import|locate|review|generate|draft``: question sets against the parsed corpus.

The logic lives in chunkbench_core.evaluation; this module parses arguments and prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import session as settings


def _resources():
    from .instance import resources

    return resources(settings.current())


def parsed_corpus_texts() -> dict[str, str]:
    """{document: parsed text} of the corpus as it is now (:func:`_parsed_documents`)."""
    return {d.document: d.markdown for d in _parsed_documents()}


def parsed_corpus_pages() -> tuple[dict[str, str], dict[str, list[int]]]:
    """{document: parsed text} and {document: the offset of each page's start} (PDFs), from one parse."""
    documents = _parsed_documents()
    return (
        {d.document: d.markdown for d in documents},
        {d.document: list(d.page_starts) for d in documents if d.page_starts},
    )


def command_check(args: argparse.Namespace) -> int:
    from chunkbench_core.evaluation.question_check import check_questions

    folder = Path(args.folder) if args.folder else settings.questions_dir()
    check = check_questions(folder, parsed_corpus_texts())
    for problem in check.problems:
        print(problem)
    print(("" if check.ok else "\n") + check.summary(), file=sys.stderr if check.problems else sys.stdout)
    return 0 if check.ok else 1


def _print_notes(notes: list[str], limit: int = 10) -> None:
    for note in notes[:limit]:
        print(f"note: {note}", file=sys.stderr)
    if len(notes) > limit:
        print(f"note: ... and {len(notes) - limit} more like these", file=sys.stderr)


def _confirm_mapping(args: argparse.Namespace, source_format: str) -> dict[str, str] | None:
    """The column mapping to use: --map as given, else the guessed one, printed for confirmation (--yes accepts
    it without asking; without a terminal and without --yes nothing is imported). None: not confirmed."""
    from chunkbench_core.evaluation.importers import (
        check_mapping,
        describe_mapping,
        format_mapping,
        guess_mapping,
        parse_mapping,
        ragas_mapping,
        read_table,
    )

    given = parse_mapping(args.map) if args.map else None
    if source_format not in ("table", "ragas"):
        return given or {}
    table = read_table(args.file, args.sheet)
    mapping = given or (ragas_mapping(table) if source_format == "ragas" else guess_mapping(table))
    check_mapping(mapping, table)
    print(f"{'column mapping' if given else 'guessed column mapping'} for {args.file} ({len(table.rows)} rows):")
    print("\n".join(describe_mapping(mapping, table)))
    print(f"  as --map: {format_mapping(mapping)}")
    if given or args.yes or source_format == "ragas":
        return mapping
    if not sys.stdin.isatty():
        print(
            "not imported: confirm the guessed mapping with --yes, or give your own with --map ROLE=COLUMN,...",
            file=sys.stderr,
        )
        return None
    answer = input("Import with this mapping? [y/N] ").strip().lower()
    return mapping if answer in ("y", "yes") else None


def command_import(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import QuestionSetError
    from chunkbench_core.evaluation.importers import ImportOptions, detect_format, import_questions
    from chunkbench_core.evaluation.questions import write_question_file

    try:
        source_format = args.format or detect_format(args.file)
        mapping = _confirm_mapping(args, source_format)
        if mapping is None:
            return 2
        texts, pages = parsed_corpus_pages()
        options = ImportOptions(
            name=args.name or Path(args.out).stem,
            mapping=mapping or None,
            sheet=args.sheet,
            locate=not args.no_locate,
            min_score=args.min_score,
            pages=pages,
        )
        result = import_questions(source_format, args.file, texts, options)
    except QuestionSetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for problem in result.problems:
        print(problem, file=sys.stderr)
    _print_notes(result.notes)
    if result.pages is not None:
        print(result.pages.summary(Path(args.file).name))
    if result.ceiling is not None:
        print(result.ceiling.summary())
    if result.located is not None:
        print(result.located.summary())
    if not result.question_set.questions:
        print(f"{result.summary()}; nothing written", file=sys.stderr)
        return 1
    path = write_question_file(result.to_json(), args.out)
    print(f"{result.summary()}; written to {path}")
    if result.located is not None and result.located.n_found:
        print(f"review the located evidence: chunkbench questions review {path}")
    return 1 if result.problems else 0


def command_locate(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import QuestionSetError
    from chunkbench_core.evaluation.review import locate_file

    try:
        report, problems, path = locate_file(args.file, parsed_corpus_texts(), args.min_score, args.out)
    except QuestionSetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for problem in problems:
        print(f"left as it was: {problem}", file=sys.stderr)
    print(f"{report.summary()}; written to {path}")
    if report.n_found:
        print(f"review it: chunkbench questions review {path}")
    return 0


def command_review(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import QuestionSetError
    from chunkbench_core.evaluation.review import apply_decisions, decide_by_score, read_decisions, review_page

    try:
        if args.decisions or args.accept_all or args.min_score is not None:
            if args.decisions:
                decisions = read_decisions(args.decisions)
            else:
                decisions = decide_by_score(args.file, None if args.accept_all else args.min_score)
            outcome, path = apply_decisions(args.file, decisions, args.out)
            for line in outcome.unknown[:10]:
                print(f"decision not applied (no such located reference in {args.file}): {line}", file=sys.stderr)
            print(f"{outcome.summary()}; written to {path}")
            return 0
        page = Path(args.page) if args.page else Path(args.file).with_suffix(".review.html")
        target, n = review_page(args.file, page, parsed_corpus_texts())
    except QuestionSetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not n:
        print(f"{args.file} has no located reference to review (chunkbench questions locate finds them)")
        return 0
    print(
        f"{n} located reference(s) to review: open {target} in a browser, decide, save the decisions, then run "
        f"chunkbench questions review {args.file} --decisions FILE"
    )
    return 0


def _parsed_documents():
    """The corpus as it is now, parsed (units included): each document's stored parse (by its content, the parser
    and the run's parse options), else parsed now and stored, so the next command and the next run reuse it."""
    from chunkbench_core.configuration import parse_limits_of
    from chunkbench_core import progress
    from chunkbench_core.parsing.isolation import IsolatedParser
    from chunkbench_core.stages.documents import (
        last_parse_settings,
        parse_options_in_force,
        read_or_parse,
        without_captions,
    )
    from chunkbench_core.storage.corpus import parsed_store, scan_corpus

    # the settings in force, not the Dagster resources: reading questions and parsed documents needs no Dagster
    # (importing it took about 1.2 s of each `chunkbench questions` command)
    current = settings.current()
    if not Path(current.corpus).is_dir():  # the corpus moved away: the last run's parse is what there is
        from chunkbench_core.stages.documents import load_parsed_corpus

        print(f"corpus folder {current.corpus} not found: reading the documents the last run parsed", file=sys.stderr)
        return load_parsed_corpus(parsed_store(current.results_dir))
    options = parse_options_in_force(current, last_parse_settings(parsed_store(current.results_dir)))
    # a command here never calls the vision model: a run's parse with captions is read when it exists, else
    # the document is parsed without them
    plain = without_captions(options)
    read_first = [parsed_store(current.results_dir, options)] if plain is not options else []

    def say(line: progress.Progress) -> None:
        print(line.line(), file=sys.stderr, flush=True)

    with IsolatedParser(parse_limits_of(current)) as parser, progress.sink(say):
        corpus = read_or_parse(
            scan_corpus(current.corpus),
            parsed_store(current.results_dir, plain),
            lambda path: parser.parse(path, plain),
            read_first=read_first,
        )
    for error in corpus.summary.failed.values():
        print(f"document not parsed: {error}", file=sys.stderr)
    return corpus.documents


def command_generate(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.evaluation.generation import (
        NO_LLM_MESSAGE as NO_LLM,
        GenerationRequest,
        generate_question_set,
        local_question_embed,
        plan_generation,
    )
    from chunkbench_core.evaluation.questions import write_question_file

    llm = _resources()["llm"]
    try:
        documents = _parsed_documents()
        if args.dry_run:
            plan = plan_generation(
                documents,
                GenerationRequest(args.n, seed=args.seed, documents_pattern=args.documents),
                llm.settings() if llm.configured else None,
            )
            print(plan.summary())
            if not llm.configured:
                print(NO_LLM, file=sys.stderr)
            return 0
        if not llm.configured:
            print(f"error: {NO_LLM}", file=sys.stderr)
            return 2
        data, report = generate_question_set(
            documents,
            llm.client(),
            llm.settings(),
            local_question_embed(),
            GenerationRequest(
                args.n, seed=args.seed, name=args.name or Path(args.out).stem, documents_pattern=args.documents
            ),
        )
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in report.details:
        print(f"dropped: {line}", file=sys.stderr)
    if not data["questions"]:
        print(f"{report.summary()} Nothing written.", file=sys.stderr)
        if report.stopped:
            print(f"error: {report.stopped}", file=sys.stderr)
        return 1
    path = write_question_file(data, args.out)
    print(f"{report.summary()} Written to {path}.")
    lengths, favoured = report.lengths(_chunk_sizes_compared())
    print(lengths)
    if favoured:
        print(f"warning: {favoured}", file=sys.stderr)
    if report.stopped:  # the questions kept are written; what stopped the rest, in its one line
        print(f"error: {report.stopped}", file=sys.stderr)
        return 1
    return 0


def _chunk_sizes_compared() -> list[float]:
    """Each compared configuration's median chunk in tokens, from the benchmark's current chunks; [] before any
    chunking (the evidence lengths are then set against 64 to 512 tokens)."""
    from chunkbench_core.storage.results_db import ResultsDB

    current = settings.current()
    try:
        frame = ResultsDB(current.results_dir).query(
            """SELECT median(token_count) AS size FROM current_chunks
               WHERE coalesce(variant, '') = '' AND coalesce(role, '') <> 'parent' GROUP BY strategy, corpus_model"""
        )
    except Exception:  # noqa: BLE001 - no results yet (or unreadable): the default sizes say as much
        return []
    return [float(x) for x in frame["size"].dropna()]


def command_draft(args: argparse.Namespace) -> int:
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.evaluation.generation import draft_question_set
    from chunkbench_core.evaluation.questions import write_question_file

    try:
        data = draft_question_set(
            _parsed_documents(),
            args.n,
            seed=args.seed,
            name=args.name or Path(args.out).stem,
            documents_pattern=args.documents,
        )
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    path = write_question_file(data, args.out)
    print(
        f"{len(data['questions'])} draft question(s) written to {path}: write each question and expected answer; "
        "the references are exact passages of the parsed documents"
    )
    return 0


def command_questions(args: argparse.Namespace) -> int:
    return int(args.questions_func(args))


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``questions`` and its sub-commands to the ``chunkbench`` parser."""
    q = sub.add_parser("questions", help="check, import, locate evidence, review or generate question sets")
    actions = q.add_subparsers(dest="questions_command", required=True)
    check = actions.add_parser(
        "check", help="validate question sets against the parsed corpus (runs nothing); exit 1 on any problem"
    )
    check.add_argument(
        "folder", nargs="?", help="folder of question sets (default: CHUNKBENCH_QUESTIONS or questions/)"
    )
    check.set_defaults(questions_func=command_check)
    imp = actions.add_parser(
        "import",
        help="import a sheet of questions (CSV, XLSX, JSONL), a RAGAS test set, a LlamaIndex dataset or a "
        "Chroma CSV, and locate its evidence in the parsed documents",
    )
    imp.add_argument("file")
    imp.add_argument(
        "--format",
        choices=["table", "ragas", "llamaindex", "chroma", "financebench"],
        help="the file's format (default: told from the file: a Chroma or RAGAS header, evidence "
        "objects as FinanceBench gives them, a LlamaIndex JSON, else a table)",
    )
    imp.add_argument(
        "--map",
        metavar="ROLE=COLUMN,...",
        help='the columns of a table, e.g. question=Question,answer=Answer,sources="Source Docs",'
        'category="Source Chunk Type" (roles: question, answer, sources, contexts, category, '
        "difficulty, id; every other column is kept as a label). A field of a list of evidence "
        "objects is named LIST[].FIELD, e.g. contexts=evidence[].evidence_text,"
        "sources=evidence[].doc_name,pages=evidence[].evidence_page_num. Without it the mapping "
        "is guessed and printed for confirmation",
    )
    imp.add_argument("--yes", action="store_true", help="accept the guessed mapping without asking")
    imp.add_argument("--sheet", help="the XLSX sheet (default: the first)")
    imp.add_argument(
        "--no-locate",
        action="store_true",
        help="do not look for evidence from the answers (a context not verbatim is still looked for)",
    )
    imp.add_argument(
        "--min-score", type=float, default=0.4, help="keep located evidence scoring at least this (0 to 1; default 0.4)"
    )
    imp.add_argument("--out", required=True, help="the question set to write, e.g. questions/imported.json")
    imp.add_argument("--name", help="question set name (default: the --out file name)")
    imp.set_defaults(questions_func=command_import)
    loc = actions.add_parser(
        "locate",
        help="look for each question's evidence in its source documents (or all) "
        "from its expected answer; rewrites the file",
    )
    loc.add_argument("file", help="a question set, e.g. questions/golden.json")
    loc.add_argument(
        "--min-score", type=float, default=0.4, help="keep located evidence scoring at least this (0 to 1; default 0.4)"
    )
    loc.add_argument("--out", help="write here instead of rewriting FILE")
    loc.set_defaults(questions_func=command_locate)
    rev = actions.add_parser(
        "review",
        help="review located evidence: write an HTML page to accept or reject it, or "
        "apply its decisions (--decisions), or a score threshold",
    )
    rev.add_argument("file", help="a question set with located evidence")
    rev.add_argument("--page", help="where to write the review page (default: FILE with .review.html)")
    rev.add_argument(
        "--decisions",
        help="the decisions file the review page saved: accepted references become "
        "ordinary ones, rejected ones are removed",
    )
    rev.add_argument("--accept-all", action="store_true", help="accept every located reference")
    rev.add_argument(
        "--min-score", type=float, help="accept located references scoring at least this, reject the others"
    )
    rev.add_argument("--out", help="write here instead of rewriting FILE")
    rev.set_defaults(questions_func=command_review)
    for verb, helptext, func in (
        ("generate", "generate grounded questions with the configured LLM (every excerpt verbatim)", command_generate),
        (
            "draft",
            "write a skeleton whose references are exact passages, for a person to write the questions",
            command_draft,
        ),
    ):
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
