"""One-method (or nearly) protocols that the adapters implement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memserver.core.types import Chunk, ChunkOptions, ChunkResult, MemoryDraft


class TokenCounter(Protocol):
    """Counts tokens with a real tokenizer (the same one for chunking and packing)."""

    def count(self, text: str) -> int: ...


class Chunker(Protocol):
    def chunk(self, path: str, text: str, language: str) -> ChunkResult: ...


class Embedder(Protocol):
    """Turns texts into unit vectors. Documents and queries are embedded separately."""

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


__all__ = ["ChunkOptions", "Chunker", "Embedder", "TokenCounter"]


class Progress(Protocol):
    """Progress of long work; the CLI draws it on a terminal, everything else ignores it."""

    def start(self, phase: str, total: int) -> None: ...

    def advance(self, n: int = 1) -> None: ...

    def finish(self) -> None: ...


class NullProgress:
    def start(self, phase: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass

    def finish(self) -> None:
        pass


class Distiller(Protocol):
    """Turns a chunk into at most 3 typed memories. `name` identifies it (and its prompt)."""

    name: str

    def distill(self, chunk: Chunk) -> list[MemoryDraft]: ...


class LLM(Protocol):
    """A text-completion model used for optional steps; every caller has a fallback."""

    name: str

    def complete(self, system: str, user: str, *, max_tokens: int = 512) -> str: ...


class Reranker(Protocol):
    """Scores (query, passage) pairs; higher is more relevant."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...
