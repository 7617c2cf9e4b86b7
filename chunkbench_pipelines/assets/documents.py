"""source_documents and parsed_documents."""

import dataclasses

from dagster import AssetExecutionContext, AssetsDefinition, DataVersion, MaterializeResult, MetadataValue, asset

from chunkbench_core.configuration import parse_limits_of, parser_heuristics_of
from chunkbench_core.parsing.isolation import IsolatedParser
from chunkbench_core.stages.documents import ParseRequest, parse_corpus, sample_sources
from chunkbench_core.storage.corpus import scan_corpus_report

from ..concurrency import pool_slots
from ..config import ParsingConfig
from ..failures import permanent_errors_fail_fast
from ..progress_log import progress_to_run_log
from ..resources import DuckDBResource, LLMResource, WorkspaceResource
from ..scope import Scope


def build_document_assets(scope: Scope) -> tuple[AssetsDefinition, AssetsDefinition]:
    """``source_documents`` and ``parsed_documents`` of one benchmark (``scope``)."""

    @asset(
        key=scope.key("source_documents"),
        group_name=scope.group,
        kinds={"python"},
        tags=scope.tags(),
        description=scope.describe("The files of the corpus folder, with content hashes."),
    )
    def source_documents(context: AssetExecutionContext, workspace: WorkspaceResource) -> MaterializeResult:
        workspace = scope.workspace(workspace)
        scan = scan_corpus_report(workspace.corpus_dir())
        sources = scan.documents
        table = "| document | bytes | sha256 |\n|---|---|---|\n" + "".join(
            f"| {s.document} | {s.size_bytes} | `{s.sha256[:12]}` |\n" for s in sources
        )
        return MaterializeResult(
            metadata={
                **scope.metadata(),
                "corpus": MetadataValue.path(str(workspace.corpus_dir())),
                "dagster/row_count": len(sources),
                "documents": MetadataValue.md(table),
                "refused": MetadataValue.md("".join(f"- `{d}`: {e}\n" for d, e in scan.refused.items()) or "none"),
                "hidden_skipped": scan.hidden,
            }
        )

    @asset(
        key=scope.key("parsed_documents"),
        group_name=scope.group,
        kinds={"python", "duckdb"},
        deps=[source_documents],
        tags=scope.tags(),
        description=scope.describe(
            "Documents parsed to markdown + structural units (unchanged files are not parsed again)."
        ),
    )
    def parsed_documents(
        context: AssetExecutionContext,
        config: ParsingConfig,
        workspace: WorkspaceResource,
        duckdb: DuckDBResource,
        llm: LLMResource,
    ) -> MaterializeResult:
        workspace = scope.workspace(workspace)
        results = scope.results(duckdb)
        with permanent_errors_fail_fast():  # a bad setting fails at once, naming it
            # the benchmark's parser.toml (heuristics): a changed setting re-parses only the formats it applies to
            options = dataclasses.replace(
                llm.parse_options(), heuristics=parser_heuristics_of(workspace.settings()), **config.given()
            )
            limits = parse_limits_of(workspace.settings())  # each document in a worker process, memory and time limited
        with (
            pool_slots(context, [llm.pool if llm.vision_model else None], llm.pool_limit),
            IsolatedParser(limits) as parser,
            progress_to_run_log(context),
        ):  # image captions
            scan = scan_corpus_report(workspace.corpus_dir())
            with permanent_errors_fail_fast():  # a sample that cannot hold the evidence says so at once
                sources, sample = sample_sources(
                    scan.documents, workspace.questions_dir(), workspace.parsed_store(options), **config.sample()
                )
            summary = parse_corpus(
                ParseRequest(
                    sources,
                    workspace.parsed_store(options),
                    lambda path: parser.parse(path, options),
                    scan=scan,
                    parse_options=options.describe(),
                    sample=sample,
                ),
                results,
            )
        results.ensure_database()  # the DuckDB file answers SQL as soon as anything is stored
        for error in summary.failed.values():
            context.log.error(f"document failed: {error}")
        # the data version is the parsed corpus's fingerprint: re-parsing unchanged files is no change
        # downstream (automation rebuilds collections only when it differs; see automation.py)
        return MaterializeResult(
            data_version=DataVersion(summary.corpus_fingerprint),
            metadata={
                **scope.metadata(),
                "dagster/row_count": len(summary.parsed) + len(summary.reused),
                "parsed": len(summary.parsed),
                "reused_unchanged": len(summary.reused),
                "corpus_fingerprint": summary.corpus_fingerprint,
                "corpus_sample": (sample or {}).get("label") or f"whole corpus ({len(sources):,} documents)",
                "parse_options": MetadataValue.json(options.describe()),
                "failed": len(summary.failed),
                "hidden_skipped": summary.hidden,
                "parse_limits": f"{limits.describe_memory()}, {limits.describe_timeout()} per document",
                "failures": MetadataValue.md("".join(f"- `{d}`: {e}\n" for d, e in summary.failed.items()) or "none"),
            },
        )

    return source_documents, parsed_documents
