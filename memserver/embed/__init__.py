"""Embedders: fastembed for real use, a hashing embedder for fast tests, or none."""

from __future__ import annotations

from memserver.config import EmbeddingSettings
from memserver.core.protocols import Embedder

NONE = "none"
HASHING = "hashing"
# characters of a query the model sees: a 256-token model reads no further ([embedding]
# max_chars clips only what is indexed)
QUERY_CHARS = 2000


def make_embedder(settings: EmbeddingSettings, *, download: bool = False) -> Embedder | None:
    """The embedder the settings name; None for BM25-only indexes. Loads lazily; `download`:
    it may fetch the model when the cache lacks it (else it only reads the cache)."""
    if settings.model == NONE:
        return None
    if settings.model.startswith(HASHING):
        from memserver.embed.hashing import HashingEmbedder

        return HashingEmbedder()
    from memserver.embed.fastembed import FastEmbedder

    return FastEmbedder(settings, download=download)


def embedder_identity(settings: EmbeddingSettings) -> tuple[str, int]:
    """(name, dim) without loading a model: what the index metadata records."""
    if settings.model == NONE:
        return NONE, 0
    if settings.model.startswith(HASHING):
        from memserver.embed.hashing import HashingEmbedder

        return HashingEmbedder.name, HashingEmbedder.dim
    from memserver.embed.fastembed import known_dim

    return settings.model, known_dim(settings.model)
