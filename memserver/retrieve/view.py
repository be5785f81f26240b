"""An in-memory view of the current chunks and active memories for fast recall.

Loaded once from LanceDB and brought up to date only when the stores' fingerprint moves
(a cheap directory listing), so a recall costs no table scans: dense search is one matrix
product over unit vectors, filters are boolean masks, and evidence rows come from memory.
From `[recall] ann_min_rows` current chunks on, the lean view of `retrieve.lean` is loaded
instead (no texts or vectors in memory).

Bringing it up to date reads only what changed. Lance writes a row anew whenever it changes
it, so each row's address (`ADDRESS`) says whether the row is the one already in memory: a
refresh reads the ids and addresses of the current rows, keeps the rows whose address is the
same and reads the others. A keyword-index commit alone only reopens tantivy's searcher.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa

from memserver.core.types import Chunk
from memserver.store.index import IndexStore
from memserver.store.lance import ADDRESS, chunk_from_row, scope_pairs, vector_matrix
from memserver.store.statecache import fingerprint

_TABLES = ("chunks", "files", "memories")  # what the view is read from (with tantivy)


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
    # what a refresh compares and relinks (the in-memory view only)
    addresses: list[int] = field(default_factory=list)  # per chunk row
    memory_addresses: list[int] = field(default_factory=list)
    memory_source_ids: list[tuple[str, ...]] = field(default_factory=list)
    memory_status: list[str] = field(default_factory=list)

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


@dataclass
class _Chunks:
    """The chunk side of a snapshot, in any order."""

    chunks: list[Chunk]
    embedded: np.ndarray
    vectors: np.ndarray | None
    addresses: list[int]


@dataclass
class _Memories:
    """The memory side of a snapshot, in any order."""

    ids: list[str]
    sources: list[tuple[str, ...]]
    status: list[str]
    scope: list[tuple[tuple[str, str], ...]]
    vectors: np.ndarray | None
    addresses: list[int]


def _matrix(table: pa.Table, dim: int) -> np.ndarray | None:
    """The vectors of `table` (a (0, dim) matrix when it has none); None without a model."""
    if not dim:
        return None
    found = vector_matrix(table, dim)
    return found if found is not None else np.zeros((0, dim), dtype=np.float32)


def _pick(matrix: np.ndarray | None, rows: Sequence[int], dim: int) -> np.ndarray | None:
    if not dim:
        return None
    if matrix is None:  # a snapshot of nothing
        return np.zeros((0, dim), dtype=np.float32)
    return matrix[np.asarray(rows, dtype=np.int64)]


def _read_chunks(store: IndexStore, ids: Sequence[str] | None = None) -> _Chunks:
    """The current chunks (of `ids` when given) with their vectors and addresses."""
    if ids is not None and not ids:
        return _Chunks([], np.zeros(0, dtype=bool), _pick(None, [], store.meta.dim), [])
    table = store.lance.current_table(with_vectors=True, ids=ids, addresses=True)
    plain = table.select([c for c in table.column_names if c not in ("vector", ADDRESS)])
    rows = plain.to_pylist()
    return _Chunks(
        chunks=[chunk_from_row(r) for r in rows],
        embedded=np.array([bool(r["embedded"]) for r in rows], dtype=bool),
        vectors=_matrix(table, store.meta.dim),
        addresses=table.column(ADDRESS).to_pylist(),
    )


def _read_memories(store: IndexStore, ids: Sequence[str] | None = None) -> _Memories:
    """The memories recall may show (of `ids` when given), vectors zero where missing."""
    if ids is not None and not ids:
        return _Memories([], [], [], [], _pick(None, [], store.meta.dim), [])
    columns = ["id", "source_ids", "embedded", "status", "scope"]
    mt = store.memories.active_table(with_vectors=True, columns=columns, ids=ids, addresses=True)
    vectors = _matrix(mt, store.meta.dim)
    if vectors is not None and len(vectors):
        vectors[~np.array(mt.column("embedded").to_pylist(), dtype=bool)] = 0.0
    return _Memories(
        ids=mt.column("id").to_pylist(),
        sources=[tuple(s or ()) for s in mt.column("source_ids").to_pylist()],
        status=mt.column("status").to_pylist(),
        scope=[scope_pairs(s) for s in mt.column("scope").to_pylist()],
        vectors=vectors,
        addresses=mt.column(ADDRESS).to_pylist(),
    )


def _chunks_of(snap: Snapshot) -> _Chunks:
    return _Chunks(snap.chunks, snap.embedded, snap.vectors, snap.addresses)


def _memories_of(snap: Snapshot) -> _Memories:
    return _Memories(snap.memory_ids, snap.memory_source_ids, snap.memory_status,
                     snap.memory_scope, snap.memory_vectors, snap.memory_addresses)  # fmt: skip


def _chunk_delta(old: _Chunks, now: dict[str, int], fresh: _Chunks, dim: int) -> _Chunks:
    """`old` rows still current at the same address, plus the `fresh` rows read again."""
    keep = [i for i, c in enumerate(old.chunks) if now.get(c.id) == old.addresses[i]]
    vectors = _pick(old.vectors, keep, dim)
    if vectors is not None and fresh.vectors is not None:
        vectors = np.concatenate([vectors, fresh.vectors])
    return _Chunks(
        chunks=[old.chunks[i] for i in keep] + fresh.chunks,
        embedded=np.concatenate([old.embedded[keep], fresh.embedded]).astype(bool),
        vectors=vectors,
        addresses=[old.addresses[i] for i in keep] + fresh.addresses,
    )


def _memory_delta(old: _Memories, now: dict[str, int], fresh: _Memories, dim: int) -> _Memories:
    keep = [i for i, m in enumerate(old.ids) if now.get(m) == old.addresses[i]]
    vectors = _pick(old.vectors, keep, dim)
    if vectors is not None and fresh.vectors is not None:
        vectors = np.concatenate([vectors, fresh.vectors])
    return _Memories(
        ids=[old.ids[i] for i in keep] + fresh.ids,
        sources=[old.sources[i] for i in keep] + fresh.sources,
        status=[old.status[i] for i in keep] + fresh.status,
        scope=[old.scope[i] for i in keep] + fresh.scope,
        vectors=vectors,
        addresses=[old.addresses[i] for i in keep] + fresh.addresses,
    )


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


def _assemble(
    part: _Chunks, mem: _Memories | None, files: dict[str, tuple[int, int, str]]
) -> Snapshot:
    """A snapshot of chunks ordered by file and line (ties by id) and memories by id."""
    snap = _chunk_side(part, files)
    if mem is not None:
        _set_memories(snap, mem)
        _link_memories(snap)
    return snap


def _chunk_side(part: _Chunks, files: dict[str, tuple[int, int, str]]) -> Snapshot:
    order = sorted(range(len(part.chunks)),
                   key=lambda i: (part.chunks[i].path, part.chunks[i].start_line,
                                  part.chunks[i].id))  # fmt: skip
    chunks = [part.chunks[i] for i in order]
    vectors = part.vectors[np.asarray(order, dtype=np.int64)] if part.vectors is not None else None
    row = {c.id: i for i, c in enumerate(chunks)}
    next_in_file = {  # code and docs only: a note and its code blocks are separate texts
        i: i + 1 for i in range(len(chunks) - 1)
        if chunks[i].path == chunks[i + 1].path and chunks[i].origin == chunks[i + 1].origin
        == "file"
    }  # fmt: skip
    by_symbol, by_path = _index_names(chunks)
    return Snapshot(
        chunks=chunks, embedded=part.embedded[order].astype(bool),
        vectors=vectors if chunks else None, row=row, by_symbol=by_symbol, by_path=by_path,
        next_in_file=next_in_file, files=files, addresses=[part.addresses[i] for i in order],
    )  # fmt: skip


def _set_memories(snap: Snapshot, mem: _Memories) -> None:
    order = sorted(range(len(mem.ids)), key=mem.ids.__getitem__)
    snap.memory_ids = [mem.ids[i] for i in order]
    snap.memory_row = {m: i for i, m in enumerate(snap.memory_ids)}
    snap.memory_source_ids = [mem.sources[i] for i in order]
    snap.memory_status = [mem.status[i] for i in order]
    snap.memory_scope = [mem.scope[i] for i in order]
    snap.memory_addresses = [mem.addresses[i] for i in order]
    snap.memory_vectors = None
    if mem.vectors is not None and order:
        snap.memory_vectors = mem.vectors[np.asarray(order, dtype=np.int64)]


def _copy_memories(snap: Snapshot, old: Snapshot) -> None:
    snap.memory_ids, snap.memory_row = old.memory_ids, old.memory_row
    snap.memory_source_ids, snap.memory_status = old.memory_source_ids, old.memory_status
    snap.memory_scope, snap.memory_addresses = old.memory_scope, old.memory_addresses
    snap.memory_vectors = old.memory_vectors


def _link_memories(snap: Snapshot) -> None:
    """Memories → chunk rows (new objects: an older snapshot may share the others)."""
    row = snap.row
    snap.memory_source = [[row[s] for s in src if s in row] for src in snap.memory_source_ids]
    snap.stale_rows = {
        row[src[0]]
        for status, src in zip(snap.memory_status, snap.memory_source_ids, strict=True)
        if status == "stale" and src and src[0] in row
    }


def _files(store: IndexStore) -> dict[str, tuple[int, int, str]]:
    return {p: (r.size, r.mtime_ns, r.content_hash) for p, r in store.lance.manifest().items()}


def load_snapshot(store: IndexStore, with_memories: bool) -> Snapshot:
    mem = _read_memories(store) if with_memories else None
    return _assemble(_read_chunks(store), mem, _files(store))


def refresh_snapshot(
    store: IndexStore, snap: Snapshot, with_memories: bool, changed: set[str],
    max_rows: int | None = None,
) -> Snapshot | None:  # fmt: skip
    """`snap` brought up to date, reading only the rows of the `changed` tables whose
    address moved; None when a whole load is the better way (too much changed, or more
    than `max_rows` current chunks). What did not change is shared with `snap`."""
    if "chunks" in changed:
        part = _fresh_chunks(store, snap, max_rows)
        if part is None:
            return None
        fresh = _chunk_side(part, snap.files)
        _copy_memories(fresh, snap)
    else:
        fresh = replace(snap)
    if with_memories and "memories" in changed:
        mem = _fresh_memories(store, snap)
        if mem is None:
            return None
        _set_memories(fresh, mem)
    if with_memories and changed & {"chunks", "memories"}:
        _link_memories(fresh)
    if "files" in changed:
        fresh.files = _files(store)
    return fresh


def _worth_it(stale: int, rows: int) -> bool:
    """Read rows one by one (by id) rather than the whole table?"""
    return stale <= max(256, rows // 4)


def _fresh_chunks(store: IndexStore, snap: Snapshot, max_rows: int | None) -> _Chunks | None:
    now = store.lance.current_addresses()
    if max_rows is not None and len(now) > max_rows:
        return None
    known = dict(zip((c.id for c in snap.chunks), snap.addresses, strict=True))
    stale = [cid for cid, at in now.items() if known.get(cid) != at]
    if not _worth_it(len(stale), len(now)):
        return None
    dim = store.meta.dim
    return _chunk_delta(_chunks_of(snap), now, _read_chunks(store, stale), dim)


def _fresh_memories(store: IndexStore, snap: Snapshot) -> _Memories | None:
    now = store.memories.shown_addresses()
    known = dict(zip(snap.memory_ids, snap.memory_addresses, strict=True))
    stale = [m for m, at in now.items() if known.get(m) != at]
    if not _worth_it(len(stale), len(now)):
        return None
    dim = store.meta.dim
    return _memory_delta(_memories_of(snap), now, _read_memories(store, stale), dim)


class RecallView:
    """The snapshot, brought up to date when the stores change under it (thread-safe)."""

    def __init__(
        self, store: IndexStore, with_memories: bool = True, *, ann_min_rows: int = 0,
        nprobes: int = 20, refine: int = 5, memory_refine: int = 5, probe_factor: float = 0.0,
        memory_probe_factor: float = 0.0,
    ) -> None:  # fmt: skip
        self.store = store
        self.with_memories = with_memories
        self.ann_min_rows = ann_min_rows  # from this many current chunks on: the lean view
        self.ann_settings = (nprobes, refine, memory_refine, probe_factor, memory_probe_factor)
        self._lock = threading.Lock()
        self._print: Any = None
        self._snap: Snapshot | None = None

    def get(self) -> Snapshot:
        stores = fingerprint(self.store.dir, _TABLES)
        with self._lock:
            if self._snap is None or stores is None or stores != self._print:
                self._snap = self._update(self._snap, _changed(self._print, stores))
                self._print = stores
                # after the rows: a keyword commit made meanwhile is seen now, not next time
                self.store.bm25.refresh()
            return self._snap

    def _update(self, snap: Snapshot | None, changed: set[str] | None) -> Snapshot:
        if snap is None or changed is None or snap.ann is not None:
            return self._load()
        if not changed - {"bm25"}:  # only tantivy moved (reopened by `get`)
            return snap
        limit = self.ann_min_rows - 1 if self.ann_min_rows > 0 else None
        fresh = refresh_snapshot(self.store, snap, self.with_memories, changed, limit)
        return fresh if fresh is not None else self._load()

    def _load(self) -> Snapshot:
        if self.ann_min_rows > 0 and self.store.lance.count_current() >= self.ann_min_rows:
            from memserver.retrieve.lean import Ann, load_lean

            ann = Ann(self.store, *self.ann_settings)
            return load_lean(self.store, self.with_memories, ann)
        return load_snapshot(self.store, self.with_memories)


def _changed(before: list[Any] | None, now: list[Any] | None) -> set[str] | None:
    """Names of the fingerprint parts (tables, "bm25") that differ; None: compare nothing."""
    if before is None or now is None:
        return None
    old = {part[0]: part for part in before}
    new = {part[0]: part for part in now}
    if old.keys() != new.keys():
        return None
    return {name for name, part in new.items() if old[name] != part}
