"""Asset jobs that sensors, schedules and backfills launch."""

from dagster import AssetSelection, define_asset_job


parse_documents_job = define_asset_job(
    "parse_documents", selection=["source_documents", "parsed_documents"],
    description="Scan the corpus folder and parse new or changed documents.")

chunk_and_evaluate_job = define_asset_job(
    "chunk_and_evaluate", selection=["chunk_collections", "experiment_results"],
    description="Chunk, embed and evaluate one strategy x corpus model partition.")

evaluate_job = define_asset_job(
    "evaluate", selection=["experiment_results"],
    description="Evaluate one partition's existing collection (new question sets, neighbor sweeps).")

refresh_reports_job = define_asset_job(
    "refresh_reports", selection=["leaderboard", "benchmark_report"],
    description="Rebuild the leaderboard view and the HTML report.")

benchmark_everything_job = define_asset_job(
    "benchmark_everything", selection=AssetSelection.assets("source_documents", "parsed_documents", "chunk_collections",
                                                            "experiment_results", "leaderboard", "benchmark_report"),
    description="The whole benchmark: what `chunkbench run` and `make demo` launch, one run per step and partition "
                "(tags chunkbench/benchmark, chunkbench/batch and chunkbench/trigger).")

ALL_JOBS = [parse_documents_job, chunk_and_evaluate_job, evaluate_job, refresh_reports_job, benchmark_everything_job]
