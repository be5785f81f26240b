"""The lean recall view, for indexes past `[recall] ann_min_rows`.

The in-memory Snapshot holds every chunk's text and vector: fast, but at a
million chunks it is gigabytes and a reload takes a minute. The lean snapshot
keeps only what ranking needs for every row, as numpy arrays: ids (sorted, for
lookups by binary search), per-row codes of path / language / kind / scope
(filters are decided once per distinct value), the file order (to merge
neighbours), and the symbol and path name maps. Dense arms search LanceDB's
ANN index (prefiltered to current, embedded rows, re-scored on full vectors);
evidence rows are read from LanceDB by id (a B-tree lookup) for the few fused
candidates only; BM25 is tantivy as before.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memserver.core.types import Chunk
from memserver.retrieve.view import Snapshot
from memserver.store.index import IndexStore
from memserver.store.lance import scope_pairs

_COLUMNS = ["id", "project", "path", "start_line", "end_line", "origin", "language", "kind",
            "symbol", "tokens", "scope", "embedded"]  # fmt: skip
_MEMORY_COLUMNS = ["id", "source_ids", "status", "scope"]
_MAX_WIDEN = 4.0  # a dense search asks for at most this many times k rows


class IdRows:
    """id → row over numpy arrays (binary search), a dict's `get`/`in`/`[]` without the dict."""

    def __init__(self, ids: np.ndarray) -> None:
        self._order = np.argsort(ids, kind="stable").astype(np.int32)
        self._sorted = ids[self._order]

    def __len__(self) -> int:
        return len(self._sorted)

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """Rows of many ids at once; -1 where an id is unknown."""
        if not len(self._sorted) or not len(ids):
            return np.full(len(ids), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._sorted, ids), len(self._sorted) - 1)
        return np.where(self._sorted[at] == ids, self._order[at].astype(np.int64), -1)

    def get(self, cid: str, default: Any = None) -> Any:
        row = int(self.rows(np.array([cid.encode()]))[0])
        return default if row < 0 else row

    def __contains__(self, cid: object) -> bool:
        return isinstance(cid, str) and self.get(cid) is not None

    def __getitem__(self, cid: str) -> int:
        row = self.get(cid)
        if row is None:
            raise KeyError(cid)
        return int(row)


class StrColumn(Sequence[str]):
    """A numpy bytes array read as strings."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i: Any) -> Any:
        return self.values[i].decode()

    def __iter__(self) -> Iterator[str]:
        return (v.decode() for v in self.values)


class NextInFile:
    """row → row + 1 where the next row is the next chunk of the same file (`dict.get`)."""

    def __init__(self, flags: np.ndarray) -> None:
        self.flags = flags

    def get(self, row: int, default: Any = None) -> Any:
        return row + 1 if 0 <= row < len(self.flags) and self.flags[row] else default


class Groups:
    """key → rows (numpy), grouped through codes: rows share a code, keys name codes."""

    def __init__(self, codes: np.ndarray, keys: dict[str, list[int]]) -> None:
        self._order = np.argsort(codes, kind="stable").astype(np.int32)
        self._starts = np.searchsorted(codes[self._order], np.arange(int(codes.max(initial=0)) + 2))
        self._keys = keys

    def get(self, key: str, default: Any = ()) -> Any:
        codes = self._keys.get(key)
        if not codes:
            return default
        parts = [self._order[self._starts[c] : self._starts[c + 1]] for c in codes]
        return np.sort(np.concatenate(parts)).tolist()


class Csr(Sequence[Sequence[int]]):
    """Lists of rows, flattened: item i is values[offsets[i]:offsets[i + 1]]."""

    def __init__(self, offsets: np.ndarray, values: np.ndarray) -> None:
        self.offsets, self.values = offsets, values

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: Any) -> Any:
        return self.values[self.offsets[i] : self.offsets[i + 1]].tolist()


@dataclass
class Coded:
    """A column as distinct values plus one code per row."""

    values: list[Any]
    codes: np.ndarray

    def mask(self, keep: Callable[[Any], bool]) -> np.ndarray:
        return np.array([bool(keep(v)) for v in self.values], dtype=bool)[self.codes]

    def at(self, row: int) -> Any:
        return self.values[self.codes[row]]


def _coded(column: pa.ChunkedArray, convert: Callable[[Any], Any] = lambda v: v) -> Coded:
    enc = column.combine_chunks().dictionary_encode()
    return Coded([convert(v) for v in enc.dictionary.to_pylist()],
                 enc.indices.to_numpy(zero_copy_only=False).astype(np.int32))  # fmt: skip


def _scoped(column: pa.ChunkedArray) -> Coded:
    pairs = [scope_pairs(v) for v in column.to_pylist()]
    distinct = list(dict.fromkeys(pairs))
    index = {p: i for i, p in enumerate(distinct)}
    return Coded(distinct, np.array([index[p] for p in pairs], dtype=np.int32))


def _bytes(column: pa.ChunkedArray) -> np.ndarray:
    return np.array(column.to_pylist(), dtype=np.bytes_)


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="memserver-ann")


@dataclass
class Ann:
    """Dense arms through LanceDB's vector index. The chunk and memory searches of one
    query can be started side by side (`prefetch`): each is mostly waiting on LanceDB.

    A search visits `probe_factor` × √partitions of a table's ~√rows IVF partitions (so
    rows^¼), at least `nprobes`. A fixed count covers less and less of a growing table;
    a fixed share costs linear time. On the scale corpora (hashing embedder) 80 of 217
    chunk partitions gave recall@10 0.96 against exact search at 47k chunks, and 120 to
    160 of 590 gave 0.95 to 0.97 at 348k: the probes needed grew as √partitions.
    """

    store: IndexStore
    nprobes: int
    refine: int
    memory_refine: int
    probe_factor: float = 0.0
    memory_probe_factor: float = 0.0  # the memory arm's (it weighs 0.3 in fusion)
    probes: dict[bool, int] = field(default_factory=dict)  # memories? → probes
    # memories? → rows in the table per row the view shows: the search filters nothing
    # (the view drops closed, unembedded and hidden rows), so it asks for that many more
    widen: dict[bool, float] = field(default_factory=dict)
    _pending: dict[tuple[bytes, int, bool], Future[list[tuple[str, float]]]] = field(
        default_factory=dict
    )

    def calibrate(self) -> None:
        """Probes per table from the rows its index covers now (on every view load)."""
        lance = self.store.lance
        for memories, table in ((False, lance.chunks), (True, lance.memories)):
            rows, _ = lance.vector_index(table)
            factor = self.memory_probe_factor if memories else self.probe_factor
            self.probes[memories] = max(self.nprobes, math.ceil(factor * rows**0.25))

    def prefetch(self, qv: np.ndarray, requests: Sequence[tuple[int, bool]]) -> None:
        if len(self._pending) > 64:  # searches started and never asked for
            self._pending.clear()
        for k, memories in requests:
            key = (qv.tobytes(), k, memories)
            self._pending[key] = _pool().submit(self._search, qv, k, memories)

    def search(self, qv: np.ndarray, k: int, memories: bool) -> list[tuple[str, float]]:
        started = self._pending.pop((qv.tobytes(), k, memories), None)
        return started.result() if started is not None else self._search(qv, k, memories)

    def shown(self, memories: bool, rows: int) -> None:
        """The view shows `rows` rows of the chunk (or memory) table."""
        table = self.store.lance.memories if memories else self.store.lance.chunks
        self.widen[memories] = min(_MAX_WIDEN, int(table.count_rows()) / max(1, rows))

    def _search(self, qv: np.ndarray, k: int, memories: bool) -> list[tuple[str, float]]:
        """The k nearest rows of the table, more when the table holds rows the view does not
        show. No filter: a post-filter costs a quarter of a search, and the caller keeps only
        rows of the view with a positive score (an unembedded row's vector is zero)."""
        lance = self.store.lance
        table = lance.memories if memories else lance.chunks
        refine = self.memory_refine if memories else self.refine
        nprobes = self.probes.get(memories, self.nprobes)
        wide = math.ceil(k * self.widen.get(memories, 1.0))
        return lance.ann_search(table, qv, wide, where=None, nprobes=nprobes, refine=refine)


@dataclass
class LeanSnapshot(Snapshot):
    ids: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.bytes_))
    columns: dict[str, Coded] = field(default_factory=dict)  # path, language, kind, scope
    memory_scopes: Coded | None = None
    store: IndexStore | None = None
    row_ids: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.uint64))
    # per row: start line, end line, tokens
    lines: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), dtype=np.int32))

    def id_at(self, row: int) -> str:
        return str(self.ids[row].decode())

    def size(self) -> int:
        return len(self.ids)

    def mask_by(self, column: str, keep: Callable[[Any], bool]) -> np.ndarray:
        return self.columns[column].mask(keep)

    def memory_mask_by(self, keep: Callable[[Any], bool]) -> np.ndarray:
        assert self.memory_scopes is not None
        return self.memory_scopes.mask(keep)

    def rows_of(self, ids: Sequence[str], memories: bool = False) -> list[int | None]:
        index = self.memory_row if memories else self.row
        if not ids:
            return []
        found = index.rows(np.array([i.encode() for i in ids]))  # type: ignore[attr-defined]
        return [None if r < 0 else int(r) for r in found]

    def fetch(self, rows: Sequence[int]) -> list[Chunk]:
        """The chunks evidence shows: their text read from the table, the rest from the view
        (each column read costs ~1 ms per 60 rows at 348k chunks: all 13 took 16-22 ms,
        id and text 4-5 ms). Header, content hash, event time, scope and tags are left out."""
        assert self.store is not None
        ids = [self.id_at(r) for r in rows]
        texts = self.store.lance.texts_at(self.row_ids[list(rows)].tolist(), ids)
        if texts is None:  # a compaction moved rows since the view was loaded
            found = self.store.lance.get_chunks(ids)
            texts = [found[i][0].text for i in ids]
        col = self.columns
        return [
            Chunk(id=cid, project=col["project"].at(r), origin=col["origin"].at(r),
                  path=col["path"].at(r), language=col["language"].at(r), kind=col["kind"].at(r),
                  symbol=col["symbol"].at(r), start_line=int(self.lines[r, 0]),
                  end_line=int(self.lines[r, 1]), text=text, header="",
                  tokens=int(self.lines[r, 2]), content_hash="")
            for cid, r, text in zip(ids, rows, texts, strict=True)
        ]  # fmt: skip


def _names(paths: Coded, symbols: Coded) -> tuple[Groups, Groups]:
    """The exact arm's maps: symbol (and its last part) → rows; path, name, stem → rows."""
    sym_keys: dict[str, list[int]] = defaultdict(list)
    for code, value in enumerate(symbols.values):
        for sym in value.split(", ") if value else ():
            for key in {sym.lower(), sym.rsplit(".", 1)[-1].lower()}:
                sym_keys[key].append(code)
    path_keys: dict[str, list[int]] = defaultdict(list)
    for code, path in enumerate(paths.values):
        name = path.rsplit("/", 1)[-1].lower()
        for key in {path.lower(), name, name.rsplit(".", 1)[0]}:
            path_keys[key].append(code)
    return Groups(symbols.codes, dict(sym_keys)), Groups(paths.codes, dict(path_keys))


def load_lean(store: IndexStore, with_memories: bool, ann: Ann) -> LeanSnapshot:
    ann.calibrate()
    table = store.lance.current_columns(_COLUMNS)
    table = table.take(pc.sort_indices(table, [("path", "ascending"),
                                               ("start_line", "ascending")]))  # fmt: skip
    ids = _bytes(table.column("id"))
    paths, symbols = _coded(table.column("path")), _coded(table.column("symbol"))
    origins = _coded(table.column("origin"))
    origin = np.array([v == "file" for v in origins.values], dtype=bool)[origins.codes]
    same = paths.codes[:-1] == paths.codes[1:]
    by_symbol, by_path = _names(paths, symbols)
    snap = LeanSnapshot(
        chunks=[], embedded=table.column("embedded").to_numpy(zero_copy_only=False).astype(bool),
        vectors=None, row=IdRows(ids), by_symbol=by_symbol, by_path=by_path,  # type: ignore[arg-type]
        next_in_file=NextInFile(np.append(same & origin[:-1] & origin[1:], False)),  # type: ignore[arg-type]
        files={p: (r.size, r.mtime_ns, r.content_hash)
               for p, r in store.lance.manifest().items()},
        ids=ids, store=store, ann=ann,
        row_ids=table.column("_rowid").to_numpy().astype(np.uint64),
        lines=np.stack([table.column(c).to_numpy().astype(np.int32)
                        for c in ("start_line", "end_line", "tokens")], axis=1),
        columns={"path": paths, "language": _coded(table.column("language")),
                 "kind": _coded(table.column("kind")), "scope": _scoped(table.column("scope")),
                 "symbol": symbols, "project": _coded(table.column("project")),
                 "origin": origins},
    )  # fmt: skip
    del table
    ann.shown(False, len(ids))
    if with_memories:
        _load_memories(store, snap)
        ann.shown(True, len(snap.memory_ids))
    pa.default_memory_pool().release_unused()  # the columns read above: ~20% of the view's RSS
    return snap


def _load_memories(store: IndexStore, snap: LeanSnapshot) -> None:
    mt = store.memories.active_table(with_vectors=False, columns=_MEMORY_COLUMNS)
    mids = _bytes(mt.column("id"))
    sources = mt.column("source_ids").combine_chunks()
    flat = np.array(sources.flatten().to_pylist(), dtype=np.bytes_)
    rows = snap.row.rows(flat) if isinstance(snap.row, IdRows) else np.array([], np.int64)
    offsets = sources.offsets.to_numpy().astype(np.int64)
    owner = np.repeat(np.arange(len(mids)), np.diff(offsets))
    keep = rows >= 0
    kept_offsets = np.searchsorted(owner[keep], np.arange(len(mids) + 1))
    snap.memory_ids = StrColumn(mids)  # type: ignore[assignment]
    snap.memory_row = IdRows(mids)  # type: ignore[assignment]
    snap.memory_source = Csr(kept_offsets, rows[keep].astype(np.int32))  # type: ignore[assignment]
    snap.memory_scopes = _scoped(mt.column("scope"))
    stale = mt.column("status").to_numpy(zero_copy_only=False) == "stale"
    firsts = offsets[:-1]
    has_first = np.diff(offsets) > 0
    for m in np.flatnonzero(stale & has_first):
        if rows[firsts[m]] >= 0:
            snap.stale_rows.add(int(rows[firsts[m]]))
