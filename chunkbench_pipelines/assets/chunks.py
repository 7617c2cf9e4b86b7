"""chunk_collections: one Qdrant collection per strategy x corpus model."""


from typing import Optional

import numpy as np
from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset

from chunkbench_core.stages import build_chunk_collection, chunking_params, load_parsed_corpus

from ..partitions import split_key, strategy_x_model
from ..resources import DuckDBResource, EmbeddingResource, QdrantResource, WorkspaceResource
from .documents import parsed_documents


class ChunkingConfig(Config):
    """Chunk size and overlap in cl100k tokens; empty = the default for the corpus model's window."""

    chunk_size: Optional[int] = None
    chunk_overlap: Optional[int] = None


@asset(partitions_def=strategy_x_model, group_name="chunks", kinds={"qdrant", "duckdb"}, deps=[parsed_documents],
       description="The corpus chunked by one strategy and embedded by one corpus model, stored in Qdrant.")
def chunk_collections(context: AssetExecutionContext, config: ChunkingConfig, workspace: WorkspaceResource,
                      duckdb: DuckDBResource, qdrant: QdrantResource, embeddings: EmbeddingResource) -> MaterializeResult:
    strategy, corpus_model = split_key(context.partition_key)
    embedder = embeddings.embedder(corpus_model)  # fails fast with the reason if unavailable
    params = chunking_params(embedder.spec, config.chunk_size, config.chunk_overlap)
    documents = load_parsed_corpus(workspace.parsed_store())
    with qdrant.open() as store:
        summary = build_chunk_collection(strategy, embedder.spec, documents, embedder, store, duckdb.results(), params)
    sizes = np.asarray(summary.token_counts or [0])
    return MaterializeResult(metadata={
        "collection": summary.collection,
        "dagster/row_count": summary.n_chunks,
        "documents": summary.n_documents,
        "points_removed": summary.removed,
        "chunking_params": MetadataValue.json(summary.params),
        "token_count_median": float(np.median(sizes)),
        "token_count_max": int(sizes.max()),
    })
