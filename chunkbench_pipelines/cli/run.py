"""``chunkbench run``, ``chunkbench leaderboard`` and ``chunkbench estimate``: the benchmark as a whole.

``run`` materializes the asset graph in-process (chunkbench_pipelines.runner) with the invocation's
settings and its run settings (flags or ``--config``); ``leaderboard`` prints the leaderboard again;
``estimate`` prints what a first build and its experiments would cost, spending nothing.
"""

from __future__ import annotations

import argparse
import os
import sys

from chunkbench_core.configuration import registry_of

from .run_settings import add_run_settings


def command_run(args: argparse.Namespace) -> int:
    from chunkbench_pipelines.run_control import check_run_arguments, fail_own_runs, run_interruptibly, terminal

    from .instance import prepare_state
    from .run_settings import run_settings

    settings = args.settings
    check_run_arguments(args.strategy, args.corpus_model, settings)  # before any work: a bad value exits 2
    try:
        given = run_settings(args)
    except ValueError as exc:
        args.parser.error(str(exc))
    from chunkbench_pipelines.runner import RunConsole, run_everything

    instance = prepare_state(settings)  # once, under the setup lock: concurrent first runs wait for each other here
    out = terminal(sys.stdout)  # progress and signal messages reach the terminal at once, even while a step runs
    try:
        code = run_interruptibly(
            lambda: run_everything(
                settings,
                strategies=args.strategy or None,
                corpus_models=args.corpus_model or None,
                console=RunConsole(out, wide=args.wide),
                instance=instance,
                run_settings=given,
            ),
            instance,
            out,
        )
    except Exception as exc:  # printed in one line by main; the run it was in is not left STARTED
        try:
            fail_own_runs(instance, f"chunkbench run ended: {' '.join(str(exc).split())}")
        except Exception:  # noqa: BLE001 - a full disk may refuse this too: the next run marks it failed
            pass
        raise
    finally:
        if out is not sys.stdout:
            out.close()
    if code >= 128:
        # stopped by a signal: the runs are marked failed and every write is atomic, so the batch of texts
        # still in the model is abandoned rather than awaited (an exit would wait for its threads)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def command_leaderboard(args: argparse.Namespace) -> int:
    from chunkbench_core.reporting.leaderboard import leaderboard_text
    from chunkbench_core.storage.results_db import ResultsDB

    print(leaderboard_text(ResultsDB(args.settings.results_dir), wide=args.wide))
    return 0


def command_estimate(args: argparse.Namespace) -> int:
    """Dry run: what building and evaluating every partition would cost, spending nothing.

    Index: embedding tokens per corpus model at the registry's price, contextual_retrieval's
    LLM calls, image captions. Experiments: LLM answer and judge calls, query embeddings.
    """
    from chunkbench_core.chunking import STRATEGIES
    from chunkbench_core.embedding import get_model
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.evaluation.cost import IndexShape, estimate_captions, estimate_index
    from chunkbench_core.evaluation.llm import DryRunShape, estimate_cost
    from chunkbench_core.evaluation.questions import load_question_sets
    from chunkbench_core.estimate.predict import document_tokens
    from chunkbench_core.stages.spec import chunking_params
    from chunkbench_pipelines.run_estimate import estimate_corpus

    from .instance import resources as make_resources

    settings = args.settings
    resources = make_resources(settings)
    registry = registry_of(settings)
    llm = resources["llm"]
    prices = llm.prices()
    strategies = args.strategy or STRATEGIES.names()
    models = args.corpus_model or resources["embeddings"].available_models()
    try:  # the documents not parsed yet are parsed now (and kept for the run): tokens from their text
        with _progress_to_stderr():
            sources, record, documents = estimate_corpus(resources, _sample_settings(args))
    except ChunkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if record:
        print(f"tokens and dollars of the sampled corpus: {record.get('label') or f'{len(sources)} documents'}")
    tokens = [int(round(t)) for t in document_tokens(documents)[0]]
    uses_llm = llm.configured and any(STRATEGIES[s].capabilities.llm for s in strategies)  # contextual prefixes
    total = 0.0
    for model in models:
        spec = get_model(model, registry)
        params = chunking_params(spec, None, None, registry=registry)
        index = estimate_index(
            tokens,
            model,
            spec.price_per_mtok,
            IndexShape(len(strategies), params["chunk_size"], params["chunk_overlap"], uses_llm),
            prices,
        )
        total += index.embedding_usd + index.context_usd
        print("index " + index.summary())
    n_images = _images(resources, sources) if llm.vision_model else 0
    if n_images:
        calls, captions_usd = estimate_captions(n_images, prices)
        total += captions_usd
        print(f"captions: {calls} vision calls (${captions_usd:,.4f})")
    if not llm.configured:
        print(
            "no LLM configured (set CHUNKBENCH_LLM_MODEL, and CHUNKBENCH_LLM_BASE_URL for a local server): "
            "experiments use evidence metrics only and make no LLM call"
        )
    else:
        sets, errors = load_question_sets(settings.questions)
        for error in errors:
            print(f"warning: {error}", file=sys.stderr)
        questions = [q for qs in sets for q in qs.questions]
        if record and record.get("evidence_left_out"):  # the questions a sample smaller than the evidence keeps
            from chunkbench_core.estimate.sampling import set_aside

            questions, _ = set_aside(questions, record["evidence_left_out"], [s.document for s in sources])
        estimate = estimate_cost(
            questions,
            llm.settings(),
            DryRunShape(
                len(strategies),
                n_corpus_models=len(models),
                top_k=args.top_k,
                neighbor_prev=args.neighbor_prev,
                neighbor_next=args.neighbor_next,
            ),
        )
        print("experiments " + estimate.summary())
        total += estimate.usd or 0.0
    if not prices.known and llm.configured:
        print(
            "the LLM's price is unknown: set CHUNKBENCH_LLM_PRICE_INPUT and CHUNKBENCH_LLM_PRICE_OUTPUT "
            "(USD per million tokens; 0 for a local server)"
        )
    print(f"estimated total: ${total:,.2f} (a first build; cached embeddings and contexts are not paid again)")
    print()
    print_time_estimate(resources, settings, [(s, m) for m in models for s in strategies], args)
    return 0


def _progress_to_stderr():
    """Progress lines (parsing the documents not parsed yet) on standard error, so standard output is the estimate."""
    from chunkbench_core import progress

    return progress.sink(lambda p: print(p.line(), file=sys.stderr, flush=True))


def _images(resources, sources) -> int:
    """The images of the parsed documents (each a vision call when captions are on)."""
    from chunkbench_core.stages.documents import without_captions
    from chunkbench_pipelines.run_estimate import sampled_sources

    _, _, store = sampled_sources(resources, {}, sources)
    stores = [store, resources["workspace"].parsed_store(without_captions(store.options))]
    n = 0
    for source in sources:
        for each in stores:
            fetched = each.fetch(source) if each.has(source) else None
            if fetched is not None:
                n += int(((fetched[1].stats if fetched[1] else None) or {}).get("images", 0) or 0)
                break
    return n


def _sample_settings(args: argparse.Namespace) -> dict:
    """The run settings' ``parsing`` part the sample flags give (empty: the whole corpus)."""
    sample = {
        "sample_documents": args.sample_documents,
        "sample_tokens": args.sample_tokens,
        "sample_seed": args.sample_seed,
    }
    return {k: v for k, v in sample.items() if v is not None}


def print_time_estimate(resources, settings, partitions: list[tuple[str, str]], args: argparse.Namespace) -> None:
    """The expected wall time per corpus model and strategy (engines timed on this machine once, what the cache
    holds, the documents to parse), and the cheaper options when it is long."""
    from chunkbench_core.errors import ChunkbenchError
    from chunkbench_core.estimate.predict import render_estimate
    from chunkbench_core.storage.corpus import scan_corpus
    from chunkbench_pipelines.run_estimate import plan_estimate, sample_teller

    given = {"parsing": _sample_settings(args), "chunking": {}, "experiment": {}}
    try:
        sources = scan_corpus(resources["workspace"].corpus_dir())
        with _progress_to_stderr():
            estimate = plan_estimate(resources, settings, partitions, given, say=print, sources=sources)
        teller = sample_teller(resources, given["parsing"], sources)
    except (ChunkbenchError, ValueError) as exc:
        print(f"no time estimate: {exc}")
        return
    print(render_estimate(estimate, tell_sample=teller))


def register(sub: argparse._SubParsersAction, strategies: list[str], models: list[str] | None) -> None:
    run = sub.add_parser("run", help="materialize the whole asset graph and print the leaderboard")
    # values are checked by run_control.check_run_arguments (one line naming the valid ones, exit 2, before any work)
    run.add_argument(
        "--strategy",
        action="append",
        metavar="STRATEGY",
        help=f"only this strategy (repeatable): {', '.join(strategies)}",
    )
    run.add_argument(
        "--corpus-model",
        action="append",
        metavar="MODEL",
        help=f"only this corpus model (repeatable): {', '.join(models) if models else 'see chunkbench models'}",
    )
    run.add_argument("--wide", action="store_true", help="print every leaderboard column (default: fits 120 columns)")
    add_run_settings(run)
    run.set_defaults(func=command_run, parser=run)
    lb = sub.add_parser("leaderboard", help="print the ranked leaderboard, the recommendation and its warnings")
    lb.add_argument("--wide", action="store_true", help="print every column (default: fits 120 columns)")
    lb.set_defaults(func=command_leaderboard)


def register_estimate(sub: argparse._SubParsersAction, strategies: list[str], models: list[str] | None) -> None:
    e = sub.add_parser(
        "estimate",
        help="dry run: what building and evaluating would cost (embeddings, LLM calls) "
        "and how long it would take on this machine",
    )
    e.add_argument("--strategy", action="append", choices=strategies)
    e.add_argument("--corpus-model", action="append", choices=models)
    e.add_argument("--top-k", type=int, default=5)
    e.add_argument("--neighbor-prev", type=int, default=0)
    e.add_argument("--neighbor-next", type=int, default=0)
    e.add_argument(
        "--sample-documents",
        type=int,
        metavar="N",
        help="the tokens, dollars and time of a sampled corpus: the evidence documents plus seeded others, N in all",
    )
    e.add_argument(
        "--sample-tokens",
        type=int,
        metavar="TOKENS",
        help="the tokens, dollars and time of a sampled corpus of this size",
    )
    e.add_argument("--sample-seed", type=int, metavar="SEED", help="the sample's seed (default 0)")
    e.set_defaults(func=command_estimate)
