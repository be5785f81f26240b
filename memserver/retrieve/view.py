"""An in-memory view of the current chunks and active memories for fast recall.

Loaded once from LanceDB and reloaded only when the stores' fingerprint moves
(a cheap directory listing), so a recall costs no table scans: dense search is
one matrix product over unit vectors, filters are boolean masks, and evidence
rows come from memory. From `[recall] ann_min_rows` current chunks on, the lean
view of `retrieve.lean` is loaded instead (no texts or vectors in memory).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memserver.core.types import Chunk
from memserver.store.index import IndexStore
from memserver.store.lance import chunk_from_row, scope_pairs, vector_matrix
from memserver.store.statecache import fingerprint


@dataclass
class Snapshot:
    chunks: list[Chunk]
    embedded: np.ndarray  # bool per chunk
    vectors: np.ndarray | None  # (n, dim) float32, zero rows where not embedded
    row: dict[str, int]  # chunk id → row
    by_symbol: dict[str, list[int]]  # lower-cased symbol and its last part → rows
    by_path: dict[str, list[int]]  # lower-cased path, file name and stem → rows
    next_in_file: dict[int, int]  # row → row of the next chunk of the same file
    memory_ids: list[str] = field(default_factory=list)
    memory_source: list[list[int]] = field(default_factory=list)  # memory → chunk rows
    memory_vectors: np.ndarray | None = None
    memory_row: dict[str, int] = field(default_factory=dict)
    memory_scope: list[tuple[tuple[str, str], ...]] = field(default_factory=list)
    stale_rows: set[int] = field(default_factory=set)  # note chunks with a stale memory
    files: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # path → size, mtime, hash
    ann: Any = None  # the lean view's ANN search (retrieve.lean); None: vectors are in memory

    def id_at(self, row: int) -> str:
        return self.chunks[row].id

    def size(self) -> int:
        return len(self.chunks)

    def mask_by(self, column: str, keep: Callable[[Any], bool]) -> np.ndarray:
        """Rows whose `column` value (path, language, kind, scope) passes `keep`."""
        return np.array([keep(getattr(c, column)) for c in self.chunks], dtype=bool)

    def memory_mask_by(self, keep: Callable[[Any], bool]) -> np.ndarray:
        """Memory rows whose scope passes `keep`."""
        return np.array([keep(s) for s in self.memory_scope], dtype=bool)

    def fetch(self, rows: Sequence[int]) -> list[Chunk]:
        return [self.chunks[r] for r in rows]

    def rows_of(self, ids: Sequence[str], memories: bool = False) -> list[int | None]:
        """Chunk (or memory) rows of many ids at once; None where an id is not current."""
        rows = self.memory_row if memories else self.row
        return [rows.get(i) for i in ids]


def _index_names(chunks: list[Chunk]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    by_symbol: dict[str, list[int]] = defaultdict(list)
    by_path: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(chunks):
        for sym in c.symbol.split(", ") if c.symbol else ():
            keys = {sym.lower(), sym.rsplit(".", 1)[-1].lower()}
            for key in keys:
                by_symbol[key].append(i)
        name = c.path.rsplit("/", 1)[-1].lower()
        for key in {c.path.lower(), name, name.rsplit(".", 1)[0]}:
            by_path[key].append(i)
    return dict(by_symbol), dict(by_path)


def load_snapshot(store: IndexStore, with_memories: bool) -> Snapshot:
    table = store.lance.current_table(with_vectors=True)
    rows = table.select([c for c in table.column_names if c != "vector"]).to_pylist()
    rows.sort(key=lambda r: (r["path"], r["start_line"]))
    order = {r["id"]: i for i, r in enumerate(rows)}
    chunks = [chunk_from_row(r) for r in rows]
    dim = store.meta.dim
    vectors = vector_matrix(table, dim)
    if vectors is not None:  # reorder to the sorted rows
        ids = table.column("id").to_pylist()
        perm = np.empty(len(ids), dtype=np.int64)
        for src, cid in enumerate(ids):
            perm[order[cid]] = src
        vectors = vectors[perm]
    next_in_file = {  # code and docs only: a note and its code blocks are separate texts
        i: i + 1 for i in range(len(chunks) - 1)
        if chunks[i].path == chunks[i + 1].path and chunks[i].origin == chunks[i + 1].origin
        == "file"
    }  # fmt: skip
    by_symbol, by_path = _index_names(chunks)
    snap = Snapshot(
        chunks=chunks, embedded=np.array([bool(r["embedded"]) for r in rows], dtype=bool),
        vectors=vectors, row=order, by_symbol=by_symbol, by_path=by_path,
        next_in_file=next_in_file,
        files={p: (r.size, r.mtime_ns, r.content_hash)
               for p, r in store.lance.manifest().items()},
    )  # fmt: skip
    if with_memories:
        mt = store.memories.active_table(with_vectors=True)
        mids = mt.column("id").to_pylist()
        sources = mt.column("source_ids").to_pylist()
        embedded = mt.column("embedded").to_pylist()
        snap.memory_ids = mids
        snap.memory_row = {m: i for i, m in enumerate(mids)}
        snap.memory_source = [[order[s] for s in src if s in order] for src in sources]
        snap.memory_scope = [scope_pairs(s) for s in mt.column("scope").to_pylist()]
        for status, src in zip(mt.column("status").to_pylist(), sources, strict=True):
            if status == "stale" and src and src[0] in order:
                snap.stale_rows.add(order[src[0]])
        mv = vector_matrix(mt, dim)
        if mv is not None:
            mv[~np.array(embedded, dtype=bool)] = 0.0
        snap.memory_vectors = mv
    return snap


class RecallView:
    """The snapshot, reloaded when the stores change under it (thread-safe)."""

    def __init__(
        self, store: IndexStore, with_memories: bool = True, *, ann_min_rows: int = 0,
        nprobes: int = 20, refine: int = 5, memory_refine: int = 5,
    ) -> None:  # fmt: skip
        self.store = store
        self.with_memories = with_memories
        self.ann_min_rows = ann_min_rows  # from this many current chunks on: the lean view
        self.ann_settings = (nprobes, refine, memory_refine)
        self._lock = threading.Lock()
        self._print: Any = None
        self._snap: Snapshot | None = None

    def get(self) -> Snapshot:
        stores = fingerprint(self.store.dir)
        with self._lock:
            if self._snap is None or stores is None or stores != self._print:
                self.store.bm25.refresh()
                self._snap = self._load()
                self._print = stores
            return self._snap

    def _load(self) -> Snapshot:
        if self.ann_min_rows > 0 and self.store.lance.count_current() >= self.ann_min_rows:
            from memserver.retrieve.lean import Ann, load_lean

            ann = Ann(self.store, *self.ann_settings)
            return load_lean(self.store, self.with_memories, ann)
        return load_snapshot(self.store, self.with_memories)
