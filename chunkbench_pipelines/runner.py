"""Materialize the whole graph in-process: what ``chunkbench run`` and ``make demo`` do.

Each step is a run of the benchmark's job ``<benchmark>__benchmark_everything`` over its own assets (documents,
then each partition, then the reports), so the runs are listed under that job in the UI, with their partitions, and
carry the tags ``chunkbench/trigger=cli``, ``chunkbench/benchmark=<benchmark name>`` and
``chunkbench/batch=<start time>`` (which groups the runs of one invocation).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Sequence, TextIO

from dagster import DagsterInstance

from chunkbench_core.benchmarks import BENCHMARK_FILE, register_benchmark
from chunkbench_core.configuration import ranking_of, registry_of
from chunkbench_core.chunking import STRATEGIES
from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.evaluation.question_check import check_questions
from chunkbench_core.estimate.calibration import CalibrationStore
from chunkbench_core.estimate.predict import RunEstimate, render_estimate
from chunkbench_core.labels import configuration_label
from chunkbench_core.progress import StopRequested, check_stop, timed
from chunkbench_core.redaction import redact
from chunkbench_core.reporting.leaderboard import leaderboard_text
from chunkbench_core.settings import SAMPLE_BENCHMARK, Settings
from chunkbench_core.stages.documents import load_parsed_corpus
from chunkbench_core.storage.corpus import scan_corpus
from chunkbench_core.storage.results_db import ResultsDB

from .benchmarks import benchmark_job
from .failures import ERROR_KIND, STORAGE_KINDS
from .jobs import BENCHMARK_EVERYTHING
from .resources import build_resources
from .partitions import partition_key, strategy_by_model
from .run_control import fail_orphaned_runs, process_tags
from .run_estimate import RunTimer, plan_estimate, sample_teller

# the code location (workspace.yaml's location_name, [tool.dg.project] code_location_name): runs of this
# process carry its label, which the UI uses to list them under the job of that location
REPOSITORY_LABEL = "__repository__@chunkbench"


def failure_reason(event) -> str:
    """A step failure's reason: the Failure's own description (e.g. the failed check's problems), else the error."""
    data = event.step_failure_data
    if data.user_failure_data is not None and data.user_failure_data.description:
        return data.user_failure_data.description.strip()
    return str(data.error.message).strip() if data.error is not None else "failed"


def failure_kind(event) -> str | None:
    """The chunkbench error a step failure stands for (``StorageFullError`` ...), or None: the kind a fail-fast
    Failure carries in its metadata, else the class of the error or of one of its causes."""
    data = event.step_failure_data
    if data.user_failure_data is not None:
        value = (data.user_failure_data.metadata or {}).get(ERROR_KIND)
        if value is not None:
            return str(getattr(value, "value", value))
    error = data.error
    while error is not None:
        if error.cls_name in STORAGE_KINDS:
            return error.cls_name
        error = error.cause
    return None


@dataclass(frozen=True)
class RunConsole:
    """Where a run says what it does: ``out`` (None: nothing is printed), the level of Dagster's own console log
    (quiet by default: a step's failure is printed in one line, never as Dagster's stack trace) and whether the
    leaderboard printed at the end is the wide one."""

    out: TextIO | None = None
    log_level: str = "CRITICAL"
    wide: bool = False


def run_everything(
    settings: Settings,
    strategies: Sequence[str] | None = None,
    corpus_models: Sequence[str] | None = None,
    console: RunConsole | None = None,
    instance: DagsterInstance | None = None,
    run_settings: dict[str, dict] | None = None,
) -> int:
    """Documents once, then every strategy x available corpus model, then leaderboard and report, with the
    resources of ``settings`` (the settings in force: the command line built them).

    A failing partition is reported and the others go on. Returns 0 when everything
    succeeded, 1 otherwise: a partition failed, a document was not parsed, or a question
    (or a whole question set) was dropped. The leaderboard of what did run is printed
    either way, then each problem once, on ``console`` (:class:`RunConsole`). A full disk stops the run at
    the step that met it (one line naming the folder, the space needed and free). ``run_settings``: the ``parsing`` / ``chunking`` /
    ``experiment`` run config (``chunkbench run`` flags or --config). ``instance``: the Dagster
    instance (default: the one of ``settings``).
    """
    console = console or RunConsole()
    out, log_level, wide = console.out, console.log_level, console.wide
    given = run_settings or {}
    op_config = {
        "parsed_documents": given.get("parsing") or {},
        "chunk_collections": given.get("chunking") or {},
        "experiment_results": {**(given.get("chunking") or {}), **(given.get("experiment") or {})},
    }

    def say(text: str) -> None:
        if out is not None:
            print(text, file=out, flush=True)

    instance = instance or DagsterInstance.from_config(str(settings.dagster_home_dir))
    fail_orphaned_runs(instance, say)  # runs of a chunkbench run killed with -9 stay STARTED otherwise
    first_run = not (settings.results_dir / BENCHMARK_FILE).is_file()
    register_benchmark(settings)  # the code location lists it from now on (after a reload)
    if first_run and settings.benchmark != SAMPLE_BENCHMARK:  # a running UI built its assets before this one existed
        say(
            f"new benchmark {settings.benchmark}: a running chunkbench ui shows it within seconds (it reloads "
            "its code location); a dagster dev started otherwise shows it after Reload on its Deployment page"
        )
    # the partitions of every registered model: those not runnable here are skipped below, with the reason
    registry = registry_of(settings)
    # this benchmark's assets only, under its key prefix, as the code location defines them
    scope, job = benchmark_job(settings, strategy_by_model(list(registry)), BENCHMARK_EVERYTHING)
    resolved = build_resources(settings, resolve=True)
    embeddings = resolved["embeddings"]  # availability is decided outside a run
    failures: list[str] = []
    disk: list[str] = []  # a step met a full disk or an input/output error: no further step runs
    benchmark = settings.benchmark
    tags = {
        ".dagster/repository": REPOSITORY_LABEL,
        "chunkbench/trigger": "cli",
        "chunkbench/benchmark": benchmark,
        "chunkbench/batch": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **process_tags(),
    }

    experiment_runs: list[str] = []  # the experiment runs this invocation recorded (their LLM failures are said)

    def step(selection: list[str], key=None, label: str = "") -> bool:
        result = job.execute_in_process(
            asset_selection=scope.keys(*selection),
            partition_key=str(key) if key is not None else None,
            instance=instance,
            raise_on_error=False,
            tags=tags,
            run_config={
                "loggers": {"console": {"config": {"log_level": log_level}}},
                "ops": {
                    scope.key(name).to_python_identifier(): {"config": op_config[name]}
                    for name in selection
                    if op_config.get(name)
                },
            },
        )
        check_stop()  # a signal during this step: no further step
        experiment_runs.extend(recorded_runs(result))
        if not result.success:
            failed = [e for e in result.all_events if e.is_step_failure]
            reason = redact(failure_reason(failed[-1])) if failed else "failed"
            if any(failure_kind(e) in STORAGE_KINDS for e in failed):
                # a full disk (or a failing one): every further step would meet it; the run stops here, its
                # Dagster run marked failed, and what was stored before stays as it was
                disk.append(reason)
                say(f"stopped: {reason}")
                return False
            failures.append(f"{label or ','.join(selection)}: {reason}")
            say(f"  FAILED {label or ','.join(selection)}: {reason}")
        return result.success

    say(f"benchmark {benchmark}: {settings.results_dir}")
    models = list(corpus_models or registry)
    runnable, unavailable = [], []
    for model in models:
        try:
            ok, reason = embeddings.availability(model)
        except ChunkbenchError as exc:
            ok, reason = False, str(exc)
        if not ok:
            if corpus_models:  # asked for by name: a failure, said as one
                failures.append(f"{model}: {reason}")
                say(f"skipping corpus model {model}: {reason}")
            else:
                unavailable.append(f"{model} ({reason.removeprefix(model).strip()})")
            continue
        runnable.append(model)
    if unavailable:  # the registry's models this machine cannot reach: one line, not one error-like line each
        say(f"corpus models left out, not available here: {'; '.join(unavailable)}")
    partitions = [(strategy, model) for model in runnable for strategy in (strategies or STRATEGIES.names())]
    timer = RunTimer()
    with timer:
        # the documents not parsed yet are parsed for the estimate (its tokens are their text's), in the timer
        timer.set_estimate(announce_estimate(resolved, settings, partitions, given, say))
        say("parsing documents ...")
        if not step(["source_documents", "parsed_documents"]):
            if failures:
                say("\n".join(failures))
            return 1
        sample = resolved["workspace"].parsed_store().manifest_sample()
        if sample:
            say(f"corpus: {sample.get('label')} (results from a sample are labelled so in every view)")
            if sample.get("evidence_left_out"):
                say(
                    f"questions: {sample.get('questions_kept')} of {sample.get('questions')} kept, those whose "
                    f"evidence lies in the sampled documents (the others' evidence is in "
                    f"{len(sample['evidence_left_out'])} document(s) the sample left out)"
                )
        for strategy, model in partitions:
            say(f"chunking, embedding and evaluating: {configuration_label(strategy, model)} ...")
            timer.start_partition()
            step(["chunk_collections", "experiment_results"], partition_key(strategy, model), f"{strategy}|{model}")
            timer.end_partition(strategy, model)
            if disk:
                return 1
        say("building leaderboard and report ...")
        with timed("finishing"):
            step(["leaderboard", "benchmark_report"])
        if disk:
            return 1
    results = ResultsDB(settings.results_dir)
    summary = timer.finish(
        CalibrationStore(settings.home),
        results,
        tags["chunkbench/batch"],
        benchmark,
        sample=resolved["workspace"].parsed_store().manifest_sample(),
    )
    say("")
    say(leaderboard_text(results, wide))
    say("")
    say(
        f"DuckDB:  {results.database_path}  (its views read tables/ beside it: cd {results.root}, then "
        "SELECT * FROM leaderboard, or chunkbench leaderboard from anywhere)"
    )
    reports = settings.reports_dir
    say(f"Report:  {reports / 'benchmark_report.html'}")
    say(f"         {reports / 'technical_report.html'} (retrieval inspector), {reports / 'decision_board.html'}")
    dropped = dropped_inputs(results, resolved["workspace"])
    dropped += llm_failures(results, experiment_runs)
    for line in dropped:
        say(line)
    say("")
    for line in summary:
        say(line)
    if failures:
        say("\nfailures:\n" + "\n".join(f"- {f}" for f in failures))
    return 1 if failures or dropped else 0


def announce_estimate(
    resources, settings: Settings, partitions: list[tuple[str, str]], run_settings: dict[str, dict], say
) -> RunEstimate | None:
    """Print the expected time of the run before it starts (None, with one line saying why, when it cannot be
    estimated: the run goes on)."""
    if not partitions:
        return None
    try:
        sources = scan_corpus(resources["workspace"].corpus_dir())
        estimate = plan_estimate(resources, settings, partitions, run_settings, say, sources=sources)
        teller = sample_teller(resources, run_settings.get("parsing") or {}, sources)
    except StopRequested:
        raise
    except Exception as exc:  # noqa: BLE001 - the estimate is advice; the run does not depend on it
        say(f"no time estimate: {redact(str(exc))}")
        return None
    texts = sum(p.texts for p in estimate.partitions)
    cached = sum(p.cached for p in estimate.partitions)
    say(
        f"work: {estimate.n_documents:,} documents, {len(partitions)} configurations, about {texts:,} texts to "
        f"embed ({cached:,} of them cached)"
    )
    say(render_estimate(estimate, tell_sample=teller))
    return estimate


def recorded_runs(result) -> list[str]:
    """The experiment run ids a step's materializations recorded (its experiment_results metadata)."""
    found: list[str] = []
    for event in result.all_events:
        if not event.is_step_materialization:
            continue
        metadata = event.step_materialization_data.materialization.metadata
        every = metadata.get("experiment_run_ids")  # one run per retriever when several were listed
        value = every if every is not None else metadata.get("experiment_run_id")
        if value is not None:
            found.extend(part.strip() for part in str(getattr(value, "value", value)).split(",") if part.strip())
    return found


#: what to do about an LLM failure whose line does not say it (a provider's own line does)
_JUDGE_FIX = (
    "the judge did not return the JSON object it is asked for: use a stronger chat model "
    "(CHUNKBENCH_LLM_MODEL) or a larger judge_max_tokens_cap"
)


def llm_failures(results: ResultsDB, experiment_runs: Sequence[str]) -> list[str]:
    """One line per configuration of ``experiment_runs`` whose answers or judgements failed: how many, why (the
    first failure's own line) and what to do; [] when none did. Their evidence metrics are kept either way."""
    if not experiment_runs:
        return []
    try:
        rows = results.query(
            "SELECT strategy, corpus_model, experiment_run_id, count(*) AS n, count(answer_error) AS answers, "
            "count(*) FILTER (WHERE answer_error IS NULL AND judge_error IS NOT NULL) AS judgements, "
            "list(coalesce(answer_error, judge_error) ORDER BY question_set, question_id) "
            "FILTER (WHERE coalesce(answer_error, judge_error) IS NOT NULL) AS errors "
            f"FROM question_results WHERE experiment_run_id IN ({', '.join('?' * len(experiment_runs))}) "
            "GROUP BY ALL HAVING answers > 0 OR judgements > 0 ORDER BY strategy, corpus_model",
            list(experiment_runs),
        )
    except Exception:  # noqa: BLE001 - a results file that cannot be read is reported by its own check
        return []
    if rows.empty:
        return []
    lines = [
        (
            f"\nLLM failures ({len(rows)} configuration{'s' if len(rows) != 1 else ''}; their evidence metrics "
            "are kept, the judge's scores leave the failed questions out):"
        )
    ]
    for row in rows.itertuples():
        errors = [str(e) for e in row.errors]
        first = next((e for e in errors if ": skipped, " not in e), errors[0])
        reason = first.split(": ", 1)[-1].removeprefix("skipped, ")
        if not first.startswith(("answer: LLM server", "judge: LLM server", "answer: skipped, LLM server")):
            reason += f"; {_JUDGE_FIX}" if first.startswith("judge: no valid judgement") else ""
        failed = int(row.answers) + int(row.judgements)
        lines.append(
            f"- {configuration_label(row.strategy, row.corpus_model)}: {failed} of {int(row.n)} questions "
            f"not judged ({int(row.answers)} without an answer, {int(row.judgements)} without a "
            f"judgement): {redact(' '.join(reason.split()))}"
        )
    return lines


def dropped_inputs(results: ResultsDB, workspace) -> list[str]:
    """The documents that did not parse and the question problems, each once ([] when nothing was dropped)."""
    lines: list[str] = []
    failed = results.query("SELECT document, error FROM documents WHERE status = 'failed' ORDER BY document")
    if not failed.empty:
        lines.append(f"\ndocuments not parsed ({len(failed)}), left out of every collection:")
        # the corpus is the user's: never changed by chunkbench, so the fix is theirs to make
        lines += [
            f"- {r.document}: {r.error}; fix or replace the file, or remove it from the corpus"
            for r in failed.itertuples()
        ]
    documents = {d.document: d.markdown for d in load_parsed_corpus(workspace.parsed_store())}
    sample = workspace.parsed_store().manifest_sample() or {}
    check = check_questions(workspace.questions_dir(), documents, sample.get("evidence_left_out") or ())
    if check.problems:
        lines.append(
            f"\nquestion problems ({len(check.problems)}), each question dropped alone "
            f"(check with: chunkbench questions check):"
        )
        # a file that cannot be read at all: the user's to fix (chunkbench never changes it)
        lines += [
            f"- {p}"
            + (
                "; fix the file (chunkbench questions check says what is wrong)"
                if p.question_id is None and p.field is None
                else ""
            )
            for p in check.problems
        ]
    return lines


def run_sweep(
    settings: Settings,
    sweep: str,
    config: dict,
    out: TextIO | None = None,
    instance: DagsterInstance | None = None,
    log_level: str = "WARNING",
) -> int:
    """Run the benchmark's sweep job ``sweep`` (``neighbor_sweep`` or ``chunk_size_sweep``) in-process with the
    sweep op's ``config`` (levels or sizes, strategies, corpus models), as the launchpad would; print its rows of
    ``leaderboard_by_setting``. Returns 0 when every step succeeded, else 1 (the failing step named)."""
    from chunkbench_core.sweeps import format_sweep

    from .sweeps import CHUNK_SIZE_SWEEP

    def say(text: str) -> None:
        if out is not None:
            print(text, file=out, flush=True)

    instance = instance or DagsterInstance.from_config(str(settings.dagster_home_dir))
    fail_orphaned_runs(instance, say)
    register_benchmark(settings)
    scope, job = benchmark_job(settings, strategy_by_model(list(registry_of(settings))), sweep)
    op = scope.name("sweep_chunk_sizes" if sweep == CHUNK_SIZE_SWEEP else "sweep_neighbors")
    tags = {
        ".dagster/repository": REPOSITORY_LABEL,
        "chunkbench/trigger": "cli",
        "chunkbench/benchmark": settings.benchmark,
        "chunkbench/batch": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **process_tags(),
    }
    say(f"benchmark {settings.benchmark}: {sweep.replace('_', ' ')} (Dagster job {job.name}) ...")
    result = job.execute_in_process(
        instance=instance,
        raise_on_error=False,
        tags=tags,
        run_config={"loggers": {"console": {"config": {"log_level": log_level}}}, "ops": {op: {"config": config}}},
    )
    check_stop()
    run_ids = [
        e.step_materialization_data.materialization.metadata["experiment_run_id"].value
        for e in result.all_events
        if e.is_step_materialization
        and e.step_materialization_data.materialization.asset_key == scope.key("experiment_results")
    ]
    results = ResultsDB(settings.results_dir)
    rows = results.query("SELECT * FROM leaderboard_by_setting") if run_ids else None
    if rows is not None:
        rows = rows[rows["experiment_run_id"].isin(run_ids)]
    metric = ranking_of(settings).rank_metric
    say("")
    say(format_sweep(rows, metric))
    say("")
    say(
        f"{len(run_ids)} experiment runs (Dagster run {result.run_id[:8]}); side by side with earlier sweeps: "
        f"SELECT * FROM leaderboard_by_setting in {results.database_path}; reports: "
        f"{settings.reports_dir / 'technical_report.html'}"
    )
    if not result.success:
        errors = [failure_reason(e) for e in result.all_events if e.is_step_failure]
        say(f"\nfailed: {redact(errors[-1]) if errors else 'failed'}")
        return 1
    return 0
