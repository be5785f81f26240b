"""What the dense model sees of a chunk (indexing, notes and consolidation embed the same)."""

from __future__ import annotations

import hashlib

from memserver.core.types import Chunk

__all__ = ["chunk_vector_key", "embed_text", "vector_key"]


def embed_text(chunk: Chunk) -> str:
    """Where the chunk is and what it is, then the code.

    A note or a conversation turn has no meaningful path: its words are what a
    question matches."""
    if chunk.origin != "file":
        return chunk.text
    return "\n".join(p for p in (chunk.path, chunk.header, chunk.symbol, chunk.text) if p)


def vector_key(model: str, text: str) -> str:
    """What a stored vector is reused under: the model and the text it embedded. Two rows
    with the same key have the same vector, whatever their ids."""
    h = hashlib.sha256()
    for part in (model, text):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:32]


def chunk_vector_key(model: str, chunk: Chunk) -> str:
    """The key of a chunk's vector: its embedded text less the path line, so a file that
    moves (or a tree that moves it between versions) keeps its chunks' vectors. The
    vector then names the old path; the keyword index has the new one."""
    if chunk.origin != "file":
        return vector_key(model, chunk.text)
    return vector_key(model, "\n".join(p for p in (chunk.header, chunk.symbol, chunk.text) if p))
