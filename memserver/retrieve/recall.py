"""Recall, first version: BM25 and dense over current chunks, fused by RRF, packed."""

from __future__ import annotations

from memserver.config import RecallSettings
from memserver.core.errors import ConfigError
from memserver.core.protocols import Embedder
from memserver.core.types import Evidence, RecallResult
from memserver.retrieve.fuse import rrf
from memserver.retrieve.pack import pack
from memserver.store.bm25 import query_terms
from memserver.store.index import IndexStore


class Recaller:
    def __init__(self, store: IndexStore, embedder: Embedder | None, settings: RecallSettings):
        self.store = store
        self.embedder = embedder
        self.settings = settings

    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        budget_tokens: int | None = None,
        max_files: int | None = None,
    ) -> RecallResult:
        s = self.settings
        k = k or s.k
        budget = s.budget_tokens if budget_tokens is None else budget_tokens
        if not query.strip():
            raise ConfigError("the query is empty", hint="ask in words or name an identifier")
        if budget < 1:
            raise ConfigError(f"budget_tokens must be positive, got {budget}", hint="e.g. 4096")
        n = max(s.candidates, k)
        arms = {"bm25": self.store.bm25.search(query_terms(query), n)}
        if self.embedder is not None:
            arms["dense"] = self.store.lance.vector_search(self.embedder.embed_query(query), n)
        weights = {"bm25": s.bm25_weight, "dense": s.dense_weight}
        fused = rrf(arms, weights, k=s.rrf_k)[:n]
        rows = self.store.lance.get_chunks([f.id for f in fused])
        ranked = []
        for f in fused:
            if f.id not in rows:
                continue
            c, has_vector = rows[f.id]
            ranked.append(
                Evidence(
                    id=c.id,
                    path=c.path,
                    start_line=c.start_line,
                    end_line=c.end_line,
                    symbol=c.symbol,
                    kind=c.kind,
                    language=c.language,
                    text=c.text,
                    score=f.score,
                    tokens=c.tokens,
                    routes=f.arms,
                    embedded=has_vector,
                )
            )
        packed = pack(ranked, budget, max_files or s.max_files, k)
        unembedded = self.store.lance.count_unembedded() if self.embedder is not None else 0
        return RecallResult(
            query=query,
            found=None,
            confidence=None,
            tokens=packed.tokens,
            truncated=packed.truncated,
            evidence=packed.evidence,
            unembedded=unembedded,
        )
