"""``dense``: the nearest chunks to the question's embedding by cosine, exact (the vector store's search)."""

from __future__ import annotations

import numpy as np

from chunkbench_core.errors import ChunkbenchError
from chunkbench_core.evaluation.retrieval import RetrievedChunk

from .registry import Documents, Retriever, SearchRequest, register_retriever


@register_retriever("dense", description="the chunks nearest to the question's embedding (cosine, exact search)")
class DenseRetriever(Retriever):
    def search_all(self, request: SearchRequest) -> list[list[RetrievedChunk] | ChunkbenchError]:
        from chunkbench_core.evaluation.search import search_all

        found, _ = search_all(
            self.store,
            self.collection,
            np.asarray(request.vectors),
            request.top_k,
            list(request.documents),
            request.settings,
            sampled=[],
        )
        return found

    def search_one(
        self, text: str, vector: np.ndarray, top_k: int, documents: Documents = None
    ) -> list[RetrievedChunk]:
        from chunkbench_core.evaluation.search import search_stable

        return search_stable(self.store, self.collection, vector, top_k, documents)
