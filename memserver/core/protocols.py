"""One-method (or nearly) protocols that the adapters implement."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from memserver.core.types import Chunk, ChunkOptions, ChunkResult, Memory, MemoryDraft

if TYPE_CHECKING:
    import numpy as np


class TokenCounter(Protocol):
    """Counts tokens with a real tokenizer (the same one for chunking and packing)."""

    def count(self, text: str) -> int: ...


class Chunker(Protocol):
    def chunk(self, path: str, text: str, language: str, tags: bool = False) -> ChunkResult:
        """`tags`: the result carries the file's code-graph tags, from the same parse."""
        ...


class Embedder(Protocol):
    """Turns texts into unit vectors. Documents and queries are embedded separately."""

    name: str
    dim: int

    def embed_documents(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> list[list[float]]:
        """Vectors in the order of `texts`; `progress`, when given, is told how many are
        done as they are (in the caller's thread), so one call can cover a large batch."""
        ...

    def embed_query(self, text: str) -> list[float]: ...


__all__ = [
    "LLM", "ChunkOptions", "Chunker", "CodeGraph", "Distiller", "Embedder", "KeywordIndex",
    "NullProgress", "Progress", "Reranker", "Snapshot", "Sources", "TokenCounter",
]  # fmt: skip


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


class Sources(Protocol):
    """Stored chunks and memories by id (what `attribute` scores an answer against)."""

    def sources(self, ids: Sequence[str]) -> tuple[dict[str, Chunk], dict[str, Memory]]:
        """(chunk id → chunk, memory id → memory) for the ids that are stored."""
        ...


class KeywordIndex(Protocol):
    """BM25 over chunks and memories (tantivy behind `memserver.store.bm25`)."""

    def search(self, terms: Sequence[str], k: int, view: str = "chunk") -> list[tuple[str, float]]:
        """(id, score) of one view ("chunk", "memory", or "file" in the file index), best
        first."""
        ...

    def search_weighted(self, terms: Sequence[tuple[str, float]], k: int, view: str = "chunk",
                        path: str | None = None) -> list[tuple[str, float]]:  # fmt: skip
        """As `search`, each term counting `weight` times (a long query's repeated words);
        `path`: within that file only."""
        ...

    def doc_frequencies(self, terms: Sequence[str], view: str = "chunk") -> tuple[int, list[int]]:
        """(documents in `view`, documents holding each term): how rare each term is."""
        ...

    def add(self, chunks: Iterable[Chunk]) -> None: ...

    def add_memories(self, memories: Iterable[Memory]) -> None: ...

    def delete(self, ids: Iterable[str]) -> None: ...

    def commit(self) -> None: ...


FileState = tuple[int, int, str]  # size, mtime_ns, content hash when indexed


class Snapshot(Protocol):
    """The recall read model: every current chunk and showable memory, addressed by row.

    Rows are chunk positions in file order (a file's chunks are consecutive, by line);
    memory rows are positions in the memory side. Two implementations live in
    `memserver.store`: everything in memory, and a lean view for large indexes that
    searches LanceDB's ANN index and reads evidence by id. Ranking (`memserver.retrieve`)
    sees only this protocol.
    """

    large: bool  # the lean view of a large index (no texts or vectors in memory)

    def size(self) -> int: ...

    def id_at(self, row: int) -> str: ...

    def path_at(self, row: int) -> str: ...

    def symbol_at(self, row: int) -> str: ...

    def rows_of(self, ids: Sequence[str], memories: bool = False) -> list[int | None]:
        """Chunk (or memory) rows of many ids at once; None where an id is not shown."""
        ...

    def fetch(self, rows: Sequence[int]) -> list[Chunk]:
        """The chunks at these rows, with their text."""
        ...

    def mask_by(self, column: str, keep: Callable[[Any], bool]) -> np.ndarray:
        """Rows whose `column` (path, language, kind, scope) passes `keep`."""
        ...

    def memory_mask_by(self, keep: Callable[[Any], bool]) -> np.ndarray:
        """Memory rows whose scope passes `keep`."""
        ...

    def scoped(self, memories: bool) -> bool:
        """Whether any chunk (or memory) row is stored with a scope."""
        ...

    def time_mask(self, spans: Sequence[tuple[datetime, datetime]]) -> np.ndarray | None:
        """Rows of notes and turns whose event time falls in one of the [start, end) spans;
        None when none does."""
        ...

    def embedded_at(self, row: int) -> bool: ...

    def unembedded(self) -> int:
        """Current chunks still waiting for a vector."""
        ...

    def has_vectors(self) -> bool: ...

    def prefetch_dense(
        self,
        qv: np.ndarray,
        k: int,
        allowed: np.ndarray | None,
        memory_k: int | None,
        memory_allowed: np.ndarray | None,
    ) -> None:
        """Start the searches `dense`/`dense_memories` will ask for (a no-op in memory)."""
        ...

    def dense(self, qv: np.ndarray, k: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """(row, dot product) of the k nearest allowed, embedded chunks with a positive score."""
        ...

    def dense_memories(
        self, qv: np.ndarray, k: int, allowed: np.ndarray | None
    ) -> list[tuple[int, float]]:
        """(memory row, dot product) of the k nearest allowed memories, positive scores only."""
        ...

    def memory_id_at(self, mrow: int) -> str: ...

    def memory_sources(self, mrow: int) -> Sequence[int]:
        """Rows of the current chunks a memory cites (its origin first)."""
        ...

    def rows_named(self, key: str) -> Sequence[int]:
        """Rows whose symbol (or its last part), lower-cased, is `key`."""
        ...

    def rows_at_path(self, key: str) -> Sequence[int]:
        """Rows whose path, file name or stem, lower-cased, is `key`."""
        ...

    def next_in_file(self, row: int) -> int | None:
        """The row of the next chunk of the same file (code and docs only)."""
        ...

    def file_paths(self) -> Sequence[str]:
        """The paths of the indexed files (code and docs), in no set order."""
        ...

    def rows_in_file(self, path: str) -> Sequence[int]:
        """The rows of one indexed file's chunks, in line order (none for other paths)."""
        ...

    def next_turns(self, row: int, reach: int) -> list[int]:
        """Rows of the turns that follow a turn in its conversation, nearest first, up to
        `reach` turn numbers on."""
        ...

    def is_stale(self, row: int) -> bool:
        """A note whose memories went stale (the code it cites changed)."""
        ...

    def file_state(self, path: str) -> FileState | None: ...


class CodeGraph(Protocol):
    """The code graph as recall's graph arm reads it (`memserver.navigate.arm`): chunk ids
    with a score, best first."""

    def defining(self, names: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """Chunks holding a definition of what `names` name (`Client.send`, `send`,
        `pkg.utils.send`), the best of each name first."""
        ...

    def around(self, chunk_ids: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """Chunks of the callers and callees of what these chunks define, those of the
        first chunk first."""
        ...
