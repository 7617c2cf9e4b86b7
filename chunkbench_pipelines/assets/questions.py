"""generated_questions: on demand, a question set generated from the parsed documents by the configured LLM.

Not part of the default materialization (no job, sensor or schedule selects it): run it from the UI
with its config. The work is chunkbench_core.evaluation.generation.
"""

from typing import Optional

from dagster import AssetExecutionContext, AssetsDefinition, Config, Failure, MaterializeResult, MetadataValue, asset

from chunkbench_core.evaluation.generation import (
    NO_LLM_MESSAGE,
    GenerationRequest,
    generate_question_set,
    local_question_embed,
)
from chunkbench_core.evaluation.questions import write_question_file
from chunkbench_core.stages.documents import load_parsed_corpus

from ..concurrency import pool_slots
from ..resources import LLMResource, WorkspaceResource
from ..scope import Scope


class GeneratedQuestionsConfig(Config):
    """n: questions wanted. out: file name in the questions folder (or an absolute path). seed: passage
    sampling seed. documents: only documents whose name matches this glob (empty = all)."""

    n: int = 20
    out: str = "generated.json"
    seed: int = 0
    documents: Optional[str] = None


def build_generated_questions(scope: Scope) -> AssetsDefinition:
    """The on-demand ``generated_questions`` asset of one benchmark."""

    @asset(
        key=scope.key("generated_questions"),
        group_name=scope.group,
        kinds={"python"},
        deps=[scope.key("parsed_documents")],
        tags=scope.tags(),
        description=scope.describe(
            "On demand: generate a question set from the parsed documents with the configured LLM; every "
            "reference is verbatim parsed text. Writes a JSON file into the questions folder."
        ),
    )
    def generated_questions(
        context: AssetExecutionContext, config: GeneratedQuestionsConfig, workspace: WorkspaceResource, llm: LLMResource
    ) -> MaterializeResult:
        workspace = scope.workspace(workspace)
        if not llm.configured:
            raise Failure(description=NO_LLM_MESSAGE, allow_retries=False)
        documents = load_parsed_corpus(workspace.parsed_store())
        if not documents:
            raise Failure(description="no parsed documents: materialize parsed_documents first", allow_retries=False)
        with pool_slots(context, [llm.pool], llm.pool_limit):
            request = GenerationRequest(
                config.n,
                seed=config.seed,
                documents_pattern=config.documents,
                name=config.out.rsplit("/", 1)[-1].removesuffix(".json"),
            )
            data, report = generate_question_set(
                documents, llm.client(), llm.settings(), local_question_embed(), request
            )
        if report.stopped and not data["questions"]:
            raise Failure(description=f"{report.summary()} Nothing written. {report.stopped}", allow_retries=False)
        path = write_question_file(data, workspace.questions_dir() / config.out)
        if report.stopped:  # the questions kept are written; the endpoint's failure ends the step
            raise Failure(
                description=f"{report.summary()} Written to {path}. {report.stopped}",
                allow_retries=False,
                metadata={"path": MetadataValue.path(str(path)), "kept": report.kept},
            )
        return MaterializeResult(
            metadata={
                "path": MetadataValue.path(str(path)),
                "tried": report.tried,
                "kept": report.kept,
                "dropped": report.tried - report.kept,
                "dropped_reasons": MetadataValue.json(dict(report.dropped)),
                "summary": MetadataValue.md(report.summary()),
                "generator": MetadataValue.json(data["generator"]),
            }
        )

    return generated_questions
