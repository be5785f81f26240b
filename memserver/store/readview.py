"""The in-memory recall read model: every current chunk and showable memory, with vectors.

Loaded once from LanceDB and brought up to date only when the stores move (see
`store.snapshot`), so a recall costs no table scans: dense search is one matrix product
over unit vectors, filters are boolean masks, and evidence rows come from memory.

Bringing it up to date reads only what changed. Lance writes a row anew whenever it changes
it, so each row's address (`ADDRESS`) says whether the row is the one already in memory: a
refresh reads the ids and addresses of the current rows, keeps the rows whose address is the
same and reads the others.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memserver.core.protocols import FileState
from memserver.core.types import Chunk
from memserver.store.chunks import chunks_from_table
from memserver.store.index import IndexStore
from memserver.store.lancedb import ADDRESS, give_back_memory, vector_matrix
from memserver.store.schema import scope_pairs

__all__ = ["MemorySnapshot", "load_snapshot", "refresh_snapshot", "turn_key"]

_DIGITS = "0123456789"


def turn_key(path: str) -> str:
    """A turn's conversation and id prefix: its path without the digits that end it
    (`conversations/s1/D1:12` → `conversations/s1/d1:`), lower-cased."""
    return path.rstrip(_DIGITS).lower()


TIE = 1e-6  # scores closer than this are a tie: two searches sum a dot product differently


def settle_ties(hits: Sequence[tuple[Any, float]], key: Callable[[Any], str]
                ) -> list[tuple[Any, float]]:  # fmt: skip
    """Hits best first, near-equal scores in `key` order, so the exact search and the
    vector index rank the same rows the same way (each orders exact ties its own way)."""
    ordered = sorted(hits, key=lambda h: -h[1])
    out: list[tuple[Any, float]] = []
    start = 0
    for end in range(1, len(ordered) + 1):
        if end == len(ordered) or ordered[start][1] - ordered[end][1] > TIE:
            out += sorted(ordered[start:end], key=lambda h: key(h[0]))
            start = end
    return out


def top_rows(scores: np.ndarray, allowed: np.ndarray, k: int,
             key: Callable[[int], str]) -> list[tuple[int, float]]:  # fmt: skip
    """The k best allowed rows with a positive score: a vector at or below zero shares
    nothing with the query. Ties at the k-th score are settled by `key`, not by row order."""
    allowed = allowed & (scores > 0)
    masked = np.where(allowed, scores, -np.inf)
    k = min(k, int(allowed.sum()))
    if k <= 0:
        return []
    kth = -np.partition(-masked, k - 1)[k - 1]
    idx = np.flatnonzero(masked >= kth - TIE)
    hits = settle_ties([(int(i), float(scores[i])) for i in idx], key)
    return hits[:k]


@dataclass
class MemorySnapshot:
    chunks: list[Chunk]
    embedded: np.ndarray  # bool per chunk
    vectors: np.ndarray | None  # (n, dim) float32, zero rows where not embedded
    row: dict[str, int]  # chunk id → row
    by_symbol: dict[str, list[int]]  # lower-cased symbol and its last part → rows
    by_path: dict[str, list[int]]  # lower-cased path, file name and stem → rows
    following: dict[int, int]  # row → row of the next chunk of the same file
    turns: dict[tuple[str, int], int] = field(default_factory=dict)  # (turn_key, n) → row
    memory_ids: list[str] = field(default_factory=list)
    memory_source: list[list[int]] = field(default_factory=list)  # memory → chunk rows
    # the vectors of the memories that have one, and their memory rows: memories searched
    # by keyword alone (`[index] memory_vectors`, the default) have none, and most do not
    memory_vectors: np.ndarray | None = None
    memory_vector_rows: np.ndarray | None = None
    memory_row: dict[str, int] = field(default_factory=dict)
    memory_scope: list[tuple[tuple[str, str], ...]] = field(default_factory=list)
    stale_rows: set[int] = field(default_factory=set)  # note chunks with a stale memory
    files: dict[str, FileState] = field(default_factory=dict)  # path → size, mtime, hash
    # what a refresh compares and relinks
    addresses: list[int] = field(default_factory=list)  # per chunk row
    memory_addresses: list[int] = field(default_factory=list)
    memory_source_ids: list[tuple[str, ...]] = field(default_factory=list)
    memory_status: list[str] = field(default_factory=list)
    _scoped: dict[str, bool] = field(default_factory=dict)
    _file_rows: dict[str, range] | None = None  # path → its rows, made when first asked
    large = False

    # -- the Snapshot protocol ------------------------------------------------------------

    def size(self) -> int:
        return len(self.chunks)

    def id_at(self, row: int) -> str:
        return self.chunks[row].id

    def rows_of(self, ids: Sequence[str], memories: bool = False) -> list[int | None]:
        rows = self.memory_row if memories else self.row
        return [rows.get(i) for i in ids]

    def fetch(self, rows: Sequence[int]) -> list[Chunk]:
        return [self.chunks[r] for r in rows]

    def mask_by(self, column: str, keep: Callable[[Any], bool]) -> np.ndarray:
        return np.array([keep(getattr(c, column)) for c in self.chunks], dtype=bool)

    def memory_mask_by(self, keep: Callable[[Any], bool]) -> np.ndarray:
        return np.array([keep(s) for s in self.memory_scope], dtype=bool)

    def scoped(self, memories: bool) -> bool:
        key = "memories" if memories else "chunks"
        if key not in self._scoped:  # asked on every recall: worked out once per snapshot
            found = any(self.memory_scope) if memories else any(c.scope for c in self.chunks)
            self._scoped[key] = found
        return self._scoped[key]

    def time_mask(self, spans: Sequence[tuple[datetime, datetime]]) -> np.ndarray | None:
        if not spans or not self.chunks:
            return None
        return np.array([c.event_time is not None and any(a <= c.event_time < b for a, b in spans)
                         for c in self.chunks], dtype=bool)  # fmt: skip

    def embedded_at(self, row: int) -> bool:
        return bool(self.embedded[row])

    def unembedded(self) -> int:
        return int((~self.embedded).sum())

    def has_vectors(self) -> bool:
        return self.vectors is not None

    def prefetch_dense(
        self,
        qv: np.ndarray,
        k: int,
        allowed: np.ndarray | None,
        memory_k: int | None,
        memory_allowed: np.ndarray | None,
    ) -> None:
        return None  # a matrix product needs no head start

    def dense(self, qv: np.ndarray, k: int, allowed: np.ndarray | None
              ) -> list[tuple[int, float]]:  # fmt: skip
        if self.vectors is None:
            return []
        ok = self.embedded if allowed is None else self.embedded & allowed
        return top_rows(self.vectors @ qv, ok, k, self.id_at)

    def dense_memories(self, qv: np.ndarray, k: int, allowed: np.ndarray | None
                       ) -> list[tuple[int, float]]:  # fmt: skip
        rows = self.memory_vector_rows
        if self.memory_vectors is None or rows is None or not len(rows):
            return []
        ok = np.ones(len(rows), dtype=bool) if allowed is None else allowed[rows]
        hits = top_rows(self.memory_vectors @ qv, ok, k, lambda i: self.memory_ids[rows[i]])
        return [(int(rows[i]), score) for i, score in hits]

    def memory_id_at(self, mrow: int) -> str:
        return self.memory_ids[mrow]

    def memory_sources(self, mrow: int) -> Sequence[int]:
        return self.memory_source[mrow]

    def rows_named(self, key: str) -> Sequence[int]:
        return self.by_symbol.get(key, ())

    def rows_at_path(self, key: str) -> Sequence[int]:
        return self.by_path.get(key, ())

    def next_in_file(self, row: int) -> int | None:
        return self.following.get(row)

    def path_at(self, row: int) -> str:
        return self.chunks[row].path

    def symbol_at(self, row: int) -> str:
        return self.chunks[row].symbol

    def file_paths(self) -> Sequence[str]:
        return list(self.files)

    def rows_in_file(self, path: str) -> Sequence[int]:
        if self._file_rows is None:
            spans: dict[str, range] = {}
            start = 0
            for i in range(1, len(self.chunks) + 1):
                if i == len(self.chunks) or self.chunks[i].path != self.chunks[start].path:
                    if self.chunks[start].origin == "file":
                        spans[self.chunks[start].path] = range(start, i)
                    start = i
            self._file_rows = spans
        return self._file_rows.get(path, range(0))

    def next_turns(self, row: int, reach: int) -> list[int]:
        c = self.chunks[row]
        if c.turn < 0:
            return []
        key = turn_key(c.path)
        found = (self.turns.get((key, c.turn + d)) for d in range(1, reach + 1))
        return [r for r in found if r is not None]

    def is_stale(self, row: int) -> bool:
        return row in self.stale_rows

    def file_state(self, path: str) -> FileState | None:
        return self.files.get(path)


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
    table = store.chunks.current_table(with_vectors=True, ids=ids, addresses=True)
    embedded = table.column("embedded").fill_null(False).to_numpy(zero_copy_only=False)
    return _Chunks(
        chunks=chunks_from_table(table),
        embedded=np.asarray(embedded, dtype=bool),
        vectors=_matrix(table, store.meta.dim),
        addresses=table.column(ADDRESS).to_pylist(),
    )


def _read_memories(store: IndexStore, ids: Sequence[str] | None = None) -> _Memories:
    """The memories recall may show (of `ids` when given), vectors zero where missing."""
    if ids is not None and not ids:
        return _Memories([], [], [], [], _pick(None, [], store.meta.dim), [])
    columns = ["id", "source_ids", "embedded", "status", "scope"]
    dim = store.meta.dim
    mt = store.memories.active_table(with_vectors=False, columns=columns, ids=ids, addresses=True)
    memory_ids = mt.column("id").to_pylist()
    # zero rows that are never written (calloc'd pages), and then the vectors of the few
    # memories that have one: distilled memories are found by keyword alone (the default)
    vectors = np.zeros((mt.num_rows, dim), dtype=np.float32) if dim else None
    if vectors is not None and pc.any(mt.column("embedded")).as_py():
        vt = store.memories.active_table(with_vectors=True, columns=["id"], ids=ids,
                                         embedded_only=True)  # fmt: skip
        row = {m: i for i, m in enumerate(memory_ids)}
        # a memory embedded or added between the two reads: its address moved, and the
        # next refresh reads it again; one added is not in this snapshot at all
        at = [(row[m], j) for j, m in enumerate(vt.column("id").to_pylist()) if m in row]
        found = _matrix(vt, dim)
        if at and found is not None:
            rows, picks = map(list, zip(*at, strict=True))
            vectors[rows] = found[picks]
    statuses: dict[str, str] = {}  # one object per distinct value, as the chunks have
    scopes: dict[Any, Any] = {}
    return _Memories(
        ids=memory_ids,
        sources=[tuple(s or ()) for s in mt.column("source_ids").to_pylist()],
        status=[statuses.setdefault(v, v) for v in mt.column("status").to_pylist()],
        scope=[scopes.setdefault(k, k) for k in map(scope_pairs, mt.column("scope").to_pylist())],
        vectors=vectors,
        addresses=mt.column(ADDRESS).to_pylist(),
    )


def _chunks_of(snap: MemorySnapshot) -> _Chunks:
    return _Chunks(snap.chunks, snap.embedded, snap.vectors, snap.addresses)


def _memories_of(snap: MemorySnapshot, dim: int) -> _Memories:
    vectors = None  # a row per memory again, zero where it has no vector
    if dim:
        vectors = np.zeros((len(snap.memory_ids), dim), dtype=np.float32)
        if snap.memory_vectors is not None and snap.memory_vector_rows is not None:
            vectors[snap.memory_vector_rows] = snap.memory_vectors
    return _Memories(snap.memory_ids, snap.memory_source_ids, snap.memory_status,
                     snap.memory_scope, vectors, snap.memory_addresses)  # fmt: skip


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


def name_keys(symbol: str) -> set[str]:
    """The exact arm's keys of a chunk symbol: each name and its last part, lower-cased."""
    keys: set[str] = set()
    for sym in symbol.split(", ") if symbol else ():
        keys |= {sym.lower(), sym.rsplit(".", 1)[-1].lower()}
    return keys


def path_keys(path: str) -> set[str]:
    """The exact arm's keys of a path: the path, the file name and its stem, lower-cased."""
    name = path.rsplit("/", 1)[-1].lower()
    return {path.lower(), name, name.rsplit(".", 1)[0]}


def _index_names(chunks: list[Chunk]) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    by_symbol: dict[str, list[int]] = defaultdict(list)
    by_path: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(chunks):
        for key in name_keys(c.symbol):
            by_symbol[key].append(i)
        for key in path_keys(c.path):
            by_path[key].append(i)
    return dict(by_symbol), dict(by_path)


def _turns(chunks: list[Chunk]) -> dict[tuple[str, int], int]:
    turns: dict[tuple[str, int], int] = {}
    for i, c in enumerate(chunks):
        if c.origin == "turn" and c.turn >= 0:
            turns.setdefault((turn_key(c.path), c.turn), i)
    return turns


def _assemble(part: _Chunks, mem: _Memories | None, files: dict[str, FileState]
              ) -> MemorySnapshot:  # fmt: skip
    """A snapshot of chunks ordered by file and line (ties by id) and memories by id."""
    snap = _chunk_side(part, files)
    if mem is not None:
        _set_memories(snap, mem)
        _link_memories(snap)
    return snap


def _chunk_side(part: _Chunks, files: dict[str, FileState]) -> MemorySnapshot:
    order = sorted(range(len(part.chunks)),
                   key=lambda i: (part.chunks[i].path, part.chunks[i].start_line,
                                  part.chunks[i].id))  # fmt: skip
    chunks = [part.chunks[i] for i in order]
    vectors = part.vectors[np.asarray(order, dtype=np.int64)] if part.vectors is not None else None
    row = {c.id: i for i, c in enumerate(chunks)}
    following = {  # code and docs only: a note and its code blocks are separate texts
        i: i + 1 for i in range(len(chunks) - 1)
        if chunks[i].path == chunks[i + 1].path and chunks[i].origin == chunks[i + 1].origin
        == "file"
    }  # fmt: skip
    by_symbol, by_path = _index_names(chunks)
    return MemorySnapshot(
        chunks=chunks, embedded=part.embedded[order].astype(bool),
        vectors=vectors if chunks else None, row=row, by_symbol=by_symbol, by_path=by_path,
        following=following, turns=_turns(chunks), files=files,
        addresses=[part.addresses[i] for i in order],
    )  # fmt: skip


def _set_memories(snap: MemorySnapshot, mem: _Memories) -> None:
    order = sorted(range(len(mem.ids)), key=mem.ids.__getitem__)
    snap.memory_ids = [mem.ids[i] for i in order]
    snap.memory_row = {m: i for i, m in enumerate(snap.memory_ids)}
    snap.memory_source_ids = [_shared(mem.sources[i], snap) for i in order]
    snap.memory_status = [mem.status[i] for i in order]
    snap.memory_scope = [mem.scope[i] for i in order]
    snap.memory_addresses = [mem.addresses[i] for i in order]
    snap.memory_vectors = snap.memory_vector_rows = None
    if mem.vectors is not None and order:
        ordered = np.asarray(order, dtype=np.int64)
        rows = np.flatnonzero(np.any(mem.vectors != 0, axis=1)[ordered])
        snap.memory_vectors, snap.memory_vector_rows = mem.vectors[ordered[rows]], rows


def _shared(sources: tuple[str, ...], snap: MemorySnapshot) -> tuple[str, ...]:
    """`sources` holding the chunks' own id objects, not copies of them (a tuple that does
    already is kept)."""
    row, chunks = snap.row, snap.chunks
    own = [chunks[row[s]].id if s in row else s for s in sources]
    if all(a is b for a, b in zip(own, sources, strict=True)):
        return sources
    return tuple(own)


def _copy_memories(snap: MemorySnapshot, old: MemorySnapshot) -> None:
    snap.memory_ids, snap.memory_row = old.memory_ids, old.memory_row
    snap.memory_source_ids, snap.memory_status = old.memory_source_ids, old.memory_status
    snap.memory_scope, snap.memory_addresses = old.memory_scope, old.memory_addresses
    snap.memory_vectors, snap.memory_vector_rows = old.memory_vectors, old.memory_vector_rows


def _link_memories(snap: MemorySnapshot) -> None:
    """Memories → chunk rows (new objects: an older snapshot may share the others)."""
    row = snap.row
    snap.memory_source = [[row[s] for s in src if s in row] for src in snap.memory_source_ids]
    snap.stale_rows = {
        row[src[0]]
        for status, src in zip(snap.memory_status, snap.memory_source_ids, strict=True)
        if status == "stale" and src and src[0] in row
    }


def file_states(store: IndexStore) -> dict[str, FileState]:
    return {p: (r.size, r.mtime_ns, r.content_hash) for p, r in store.files.read().items()}


def load_snapshot(store: IndexStore, with_memories: bool) -> MemorySnapshot:
    mem = _read_memories(store) if with_memories else None
    snap = _assemble(_read_chunks(store), mem, file_states(store))
    give_back_memory()  # what reading the rows freed
    return snap


def refresh_snapshot(
    store: IndexStore, snap: MemorySnapshot, with_memories: bool, changed: set[str],
    max_rows: int | None = None,
) -> MemorySnapshot | None:  # fmt: skip
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
        fresh.files = file_states(store)
    fresh._scoped = {}  # worked out again for what it holds now
    return fresh


def _worth_it(stale: int, rows: int) -> bool:
    """Read rows one by one (by id) rather than the whole table?"""
    return stale <= max(256, rows // 4)


def _fresh_chunks(store: IndexStore, snap: MemorySnapshot, max_rows: int | None
                  ) -> _Chunks | None:  # fmt: skip
    now = store.chunks.current_addresses()
    if max_rows is not None and len(now) > max_rows:
        return None
    known = dict(zip((c.id for c in snap.chunks), snap.addresses, strict=True))
    stale = [cid for cid, at in now.items() if known.get(cid) != at]
    if not _worth_it(len(stale), len(now)):
        return None
    dim = store.meta.dim
    return _chunk_delta(_chunks_of(snap), now, _read_chunks(store, stale), dim)


def _fresh_memories(store: IndexStore, snap: MemorySnapshot) -> _Memories | None:
    now = store.memories.shown_addresses()
    known = dict(zip(snap.memory_ids, snap.memory_addresses, strict=True))
    stale = [m for m, at in now.items() if known.get(m) != at]
    if not _worth_it(len(stale), len(now)):
        return None
    dim = store.meta.dim
    return _memory_delta(_memories_of(snap, dim), now, _read_memories(store, stale), dim)
