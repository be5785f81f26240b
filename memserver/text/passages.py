"""What the dense model sees of a chunk (indexing, notes and consolidation embed the same)."""

from __future__ import annotations

from memserver.core.types import Chunk

__all__ = ["embed_text"]


def embed_text(chunk: Chunk) -> str:
    """Where the chunk is and what it is, then the code.

    A note or a conversation turn has no meaningful path: its words are what a
    question matches."""
    if chunk.origin != "file":
        return chunk.text
    return "\n".join(p for p in (chunk.path, chunk.header, chunk.symbol, chunk.text) if p)
