"""The lean recall view, for indexes past `[recall] ann_min_rows`.

The in-memory Snapshot holds every chunk's text and vector: fast, but at a
million chunks it is gigabytes and a reload takes a minute. The lean snapshot
keeps only what ranking needs for every row, as numpy arrays: ids (sorted, for
lookups by binary search), per-row codes of path / language / kind / scope
(filters are decided once per distinct value), the file order (to merge
neighbours), and the symbol and path name maps. While the current chunks' vectors
fit in `[recall] exact_dense_mb` they are held too and the chunk arm scores every
row, as the in-memory view does; past it the chunk arm searches LanceDB's ANN index
(re-scored on full vectors). Evidence rows are read from LanceDB by id (a B-tree
lookup) for the few fused candidates only; BM25 is tantivy as before.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memserver.core.protocols import FileState
from memserver.core.types import Chunk
from memserver.store.index import CHUNKS, MEMORIES, IndexStore
from memserver.store.lancedb import give_back_memory, vector_matrix
from memserver.store.readview import (
    file_states,
    name_keys,
    path_keys,
    settle_ties,
    top_rows,
    turn_key,
)
from memserver.store.schema import scope_pairs

_COLUMNS = ["id", "project", "path", "start_line", "end_line", "origin", "language", "kind",
            "symbol", "tokens", "scope", "embedded", "event_time", "speaker", "turn"]  # fmt: skip
_MEMORY_COLUMNS = ["id", "source_ids", "status", "scope", "embedded"]
_MAX_WIDEN = 4.0  # a dense search asks for at most this many times k rows
# Up to this many active memories with a vector (notes among memories kept for keyword
# search alone) are searched exactly in memory (1.5 MB at 384 dimensions): LanceDB would
# scan every memory row to find them (100 ms over Django's 70k), having no index over so few
_FEW_MEMORY_VECTORS = 1024


class IdRows:
    """id → row over numpy arrays (binary search): no dict of a million strings."""

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
        found: np.ndarray = np.where(self._sorted[at] == ids, self._order[at].astype(np.int64), -1)
        return found


class StrColumn:
    """A numpy bytes array read as strings."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i: int) -> str:
        return str(self.values[i].decode())

    def __iter__(self) -> Iterator[str]:
        return (str(v.decode()) for v in self.values)


class NextInFile:
    """row → row + 1 where the next row is the next chunk of the same file."""

    def __init__(self, flags: np.ndarray) -> None:
        self.flags = flags

    def get(self, row: int) -> int | None:
        return row + 1 if 0 <= row < len(self.flags) and self.flags[row] else None


class Groups:
    """key → rows (numpy), grouped through codes: rows share a code, keys name codes."""

    def __init__(self, codes: np.ndarray, keys: dict[str, list[int]]) -> None:
        self._order = np.argsort(codes, kind="stable").astype(np.int32)
        self._starts = np.searchsorted(codes[self._order], np.arange(int(codes.max(initial=0)) + 2))
        self._keys = keys

    def get(self, key: str) -> list[int]:
        codes = self._keys.get(key)
        if not codes:
            return []
        parts = [self._order[self._starts[c] : self._starts[c + 1]] for c in codes]
        return [int(r) for r in np.sort(np.concatenate(parts))]


class Csr:
    """Lists of rows, flattened: item i is values[offsets[i]:offsets[i + 1]]."""

    def __init__(self, offsets: np.ndarray, values: np.ndarray) -> None:
        self.offsets, self.values = offsets, values

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> list[int]:
        return [int(r) for r in self.values[self.offsets[i] : self.offsets[i + 1]]]


@dataclass
class Coded:
    """A column as distinct values plus one code per row."""

    values: list[Any]
    codes: np.ndarray

    def mask(self, keep: Callable[[Any], bool]) -> np.ndarray:
        chosen: np.ndarray = np.array([bool(keep(v)) for v in self.values], dtype=bool)[self.codes]
        return chosen

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
        for memories, name in ((False, CHUNKS), (True, MEMORIES)):
            rows, _ = self.store.vector_index(name)
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
        table = self.store.memories if memories else self.store.chunks
        self.widen[memories] = min(_MAX_WIDEN, table.count_rows() / max(1, rows))

    def _search(self, qv: np.ndarray, k: int, memories: bool) -> list[tuple[str, float]]:
        """The k nearest rows of the table, more when the table holds rows the view does not
        show. No filter: a post-filter costs a quarter of a search, and the caller keeps only
        rows of the view with a positive score (an unembedded row's vector is zero)."""
        refine = self.memory_refine if memories else self.refine
        nprobes = self.probes.get(memories, self.nprobes)
        wide = math.ceil(k * self.widen.get(memories, 1.0))
        return self.store.ann_search(MEMORIES if memories else CHUNKS, qv, wide, where=None,
                                     nprobes=nprobes, refine=refine)  # fmt: skip


def _ann_k(k: int, allowed: np.ndarray | None) -> int:
    return k if allowed is None else k * 10  # a narrow filter may leave fewer than k


@dataclass
class LeanSnapshot:
    """The `Snapshot` of a large index: ids, codes and line numbers per row, no text."""

    store: IndexStore
    ann: Ann
    ids: np.ndarray
    row: IdRows
    embedded: np.ndarray
    columns: dict[str, Coded]  # path, language, kind, scope, symbol, project, origin, speaker
    by_symbol: Groups
    by_path: Groups
    following: NextInFile
    row_ids: np.ndarray
    lines: np.ndarray  # per row: start line, end line, tokens, turn
    event_times: np.ndarray  # per row: microseconds since the epoch (UTC), or a minimum
    files: dict[str, FileState]
    turns: dict[tuple[str, int], int] = field(default_factory=dict)
    memory_ids: StrColumn = field(default_factory=lambda: StrColumn(np.array([], np.bytes_)))
    memory_row: IdRows = field(default_factory=lambda: IdRows(np.array([], np.bytes_)))
    memory_source: Csr = field(
        default_factory=lambda: Csr(np.zeros(1, np.int64), np.zeros(0, np.int32))
    )
    memory_scopes: Coded | None = None
    memory_vectors: int = 0  # active memories with a vector: none, and no memory ANN search
    # when memory_vectors is at most _FEW_MEMORY_VECTORS: (their memory rows, vectors)
    few_memory_vectors: tuple[np.ndarray, np.ndarray] | None = None
    stale_rows: set[int] = field(default_factory=set)
    # (rows, dim) float32 in row order, zero where not embedded: the chunk arm is exact
    vectors: np.ndarray | None = None
    _path_codes: dict[str, int] | None = None  # path → its code, made when first asked
    large = True

    def size(self) -> int:
        return len(self.ids)

    def id_at(self, row: int) -> str:
        return str(self.ids[row].decode())

    def rows_of(self, ids: Sequence[str], memories: bool = False) -> list[int | None]:
        index = self.memory_row if memories else self.row
        if not ids:
            return []
        found = index.rows(np.array([i.encode() for i in ids]))
        return [None if r < 0 else int(r) for r in found]

    def fetch(self, rows: Sequence[int]) -> list[Chunk]:
        """The chunks evidence shows: their text read from the table, the rest from the view
        (each column read costs ~1 ms per 60 rows at 348k chunks: all 13 took 16-22 ms,
        id and text 4-5 ms). Header, content hash, event time, scope and tags are left out."""
        ids = [self.id_at(r) for r in rows]
        texts = self.store.chunks.texts_at(self.row_ids[list(rows)].tolist(), ids)
        if texts is None:  # a compaction moved rows since the view was loaded
            found = self.store.chunks.get(ids)
            texts = [found[i][0].text for i in ids]
        col = self.columns
        return [
            Chunk(id=cid, project=col["project"].at(r), origin=col["origin"].at(r),
                  path=col["path"].at(r), language=col["language"].at(r), kind=col["kind"].at(r),
                  symbol=col["symbol"].at(r), start_line=int(self.lines[r, 0]),
                  end_line=int(self.lines[r, 1]), text=text, header="",
                  tokens=int(self.lines[r, 2]), content_hash="",
                  speaker=col["speaker"].at(r) or "", turn=int(self.lines[r, 3]))
            for cid, r, text in zip(ids, rows, texts, strict=True)
        ]  # fmt: skip

    def mask_by(self, column: str, keep: Callable[[Any], bool]) -> np.ndarray:
        return self.columns[column].mask(keep)

    def memory_mask_by(self, keep: Callable[[Any], bool]) -> np.ndarray:
        assert self.memory_scopes is not None
        return self.memory_scopes.mask(keep)

    def scoped(self, memories: bool) -> bool:
        coded = self.memory_scopes if memories else self.columns["scope"]
        return coded is not None and any(coded.values)

    def time_mask(self, spans: Sequence[tuple[datetime, datetime]]) -> np.ndarray | None:
        if not spans or not len(self.ids):
            return None
        keep = np.zeros(len(self.ids), dtype=bool)
        for a, b in spans:
            keep |= (self.event_times >= _micros(a)) & (self.event_times < _micros(b))
        return keep

    def embedded_at(self, row: int) -> bool:
        return bool(self.embedded[row])

    def unembedded(self) -> int:
        return int((~self.embedded).sum())

    def has_vectors(self) -> bool:
        return True

    def prefetch_dense(
        self,
        qv: np.ndarray,
        k: int,
        allowed: np.ndarray | None,
        memory_k: int | None,
        memory_allowed: np.ndarray | None,
    ) -> None:
        requests = [] if self.vectors is not None else [(_ann_k(k, allowed), False)]
        if memory_k is not None and self.memory_vectors and self.few_memory_vectors is None:
            requests.append((_ann_k(memory_k, memory_allowed), True))
        self.ann.prefetch(qv, requests)

    def _ann_rows(self, qv: np.ndarray, allowed: np.ndarray | None, k: int, memories: bool
                  ) -> list[tuple[int, float]]:  # fmt: skip
        """LanceDB's ANN search, then the mask (asking for more when the mask can drop hits)."""
        hits = settle_ties(self.ann.search(qv, _ann_k(k, allowed), memories), str)
        out = []
        for (_, score), row in zip(hits, self.rows_of([h for h, _ in hits], memories),
                                   strict=True):  # fmt: skip
            if row is not None and score > 0 and (allowed is None or allowed[row]):
                out.append((row, score))
        return out[:k]

    def dense(self, qv: np.ndarray, k: int, allowed: np.ndarray | None
              ) -> list[tuple[int, float]]:  # fmt: skip
        """Every row scored while the vectors are held (~3 ms over Django's 35k chunks);
        else LanceDB's ANN search, whose candidates depend on the partitions trained over
        every version the table holds, not only on the current rows."""
        if self.vectors is not None:
            ok = self.embedded if allowed is None else self.embedded & allowed
            return top_rows(self.vectors @ qv, ok, k, self.id_at)
        return self._ann_rows(qv, allowed, k, memories=False)

    def dense_memories(self, qv: np.ndarray, k: int, allowed: np.ndarray | None
                       ) -> list[tuple[int, float]]:  # fmt: skip
        """Memories searched by keyword alone (`[index] memory_vectors`) have no vectors:
        without one vector among them the search is skipped, not run over every row (a
        flat scan of Django's 70k memories took 100 ms of each recall); a few are searched
        exactly, in memory."""
        if not self.memory_vectors:
            return []
        if self.few_memory_vectors is not None:
            return _exact(qv, *self.few_memory_vectors, allowed, k)
        return self._ann_rows(qv, allowed, k, memories=True)

    def memory_id_at(self, mrow: int) -> str:
        return self.memory_ids[mrow]

    def memory_sources(self, mrow: int) -> Sequence[int]:
        return self.memory_source[mrow]

    def rows_named(self, key: str) -> Sequence[int]:
        return self.by_symbol.get(key)

    def rows_at_path(self, key: str) -> Sequence[int]:
        return self.by_path.get(key)

    def next_in_file(self, row: int) -> int | None:
        return self.following.get(row)

    def path_at(self, row: int) -> str:
        return str(self.columns["path"].at(row))

    def symbol_at(self, row: int) -> str:
        return str(self.columns["symbol"].at(row) or "")

    def file_paths(self) -> Sequence[str]:
        return list(self.files)

    def rows_in_file(self, path: str) -> Sequence[int]:
        paths = self.columns["path"]
        if self._path_codes is None:
            self._path_codes = {v: i for i, v in enumerate(paths.values)}
        code = self._path_codes.get(path)
        if code is None or path not in self.files:
            return ()
        return [int(r) for r in np.flatnonzero(paths.codes == code)]

    def next_turns(self, row: int, reach: int) -> list[int]:
        turn = int(self.lines[row, 3])
        if turn < 0:
            return []
        key = turn_key(self.columns["path"].at(row))
        found = (self.turns.get((key, turn + d)) for d in range(1, reach + 1))
        return [r for r in found if r is not None]

    def is_stale(self, row: int) -> bool:
        return row in self.stale_rows

    def file_state(self, path: str) -> FileState | None:
        return self.files.get(path)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NO_TIME = np.iinfo(np.int64).min


def _micros(when: datetime) -> int:
    return (when - _EPOCH) // timedelta(microseconds=1)


def _names(paths: Coded, symbols: Coded) -> tuple[Groups, Groups]:
    """The exact arm's maps: symbol (and its last part) → rows; path, name, stem → rows."""
    sym_keys: dict[str, list[int]] = defaultdict(list)
    for code, value in enumerate(symbols.values):
        for key in name_keys(value):
            sym_keys[key].append(code)
    by_path: dict[str, list[int]] = defaultdict(list)
    for code, path in enumerate(paths.values):
        for key in path_keys(path):
            by_path[key].append(code)
    return Groups(symbols.codes, dict(sym_keys)), Groups(paths.codes, dict(by_path))


def _turn_rows(paths: Coded, origins: Coded, turns: np.ndarray) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    turn_code = origins.values.index("turn") if "turn" in origins.values else -1
    for row in np.flatnonzero((origins.codes == turn_code) & (turns >= 0)):
        out.setdefault((turn_key(paths.at(int(row))), int(turns[row])), int(row))
    return out


def load_lean(store: IndexStore, with_memories: bool, ann: Ann, *, exact_bytes: int = 0
              ) -> LeanSnapshot:  # fmt: skip
    """The lean view; the chunks' vectors too when they take at most `exact_bytes`."""
    ann.calibrate()
    dim = store.meta.dim
    exact = bool(dim) and store.chunks.count_current() * dim * 4 <= exact_bytes
    table = store.chunks.current_columns([*_COLUMNS, "vector"] if exact else _COLUMNS)
    table = table.take(pc.sort_indices(table, [("path", "ascending"),
                                               ("start_line", "ascending")]))  # fmt: skip
    ids = _bytes(table.column("id"))
    paths, symbols = _coded(table.column("path")), _coded(table.column("symbol"))
    origins = _coded(table.column("origin"))
    origin = np.array([v == "file" for v in origins.values], dtype=bool)[origins.codes]
    same = paths.codes[:-1] == paths.codes[1:]
    by_symbol, by_path = _names(paths, symbols)
    turns = pc.fill_null(table.column("turn"), -1).to_numpy().astype(np.int32)
    times = pc.fill_null(table.column("event_time").cast(pa.int64()), _NO_TIME).to_numpy()
    snap = LeanSnapshot(
        store=store, ann=ann, ids=ids, row=IdRows(ids),
        embedded=table.column("embedded").to_numpy(zero_copy_only=False).astype(bool),
        columns={"path": paths, "language": _coded(table.column("language")),
                 "kind": _coded(table.column("kind")), "scope": _scoped(table.column("scope")),
                 "symbol": symbols, "project": _coded(table.column("project")),
                 "origin": origins, "speaker": _coded(table.column("speaker"))},
        by_symbol=by_symbol, by_path=by_path,
        following=NextInFile(np.append(same & origin[:-1] & origin[1:], False)),
        row_ids=table.column("_rowid").to_numpy().astype(np.uint64),
        lines=np.stack([table.column(c).to_numpy().astype(np.int32)
                        for c in ("start_line", "end_line", "tokens")] + [turns], axis=1),
        event_times=times.astype(np.int64), files=file_states(store),
        turns=_turn_rows(paths, origins, turns),
        vectors=_vectors(table, dim) if exact else None,
    )  # fmt: skip
    del table
    ann.shown(False, len(ids))
    if with_memories:
        _load_memories(store, snap)
        ann.shown(True, len(snap.memory_ids))
    give_back_memory()  # the columns read above
    return snap


def _vectors(table: pa.Table, dim: int) -> np.ndarray:
    """The chunks' vectors in row order, zero rows where a chunk has none."""
    if "vector" in table.column_names and table.column("vector").null_count:
        table = table.set_column(table.column_names.index("vector"), "vector",
                                 pc.fill_null(table.column("vector"), [0.0] * dim))  # fmt: skip
    found = vector_matrix(table, dim)
    return found if found is not None else np.zeros((0, dim), dtype=np.float32)


def _memory_vectors(store: IndexStore, memory_row: IdRows, ids: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(memory rows, vectors) of the memories `ids` (those with a vector)."""
    table = store.memories.active_table(with_vectors=True, columns=["id"],
                                        ids=[i.decode() for i in ids])  # fmt: skip
    rows = memory_row.rows(_bytes(table.column("id")))
    vectors = table.column("vector").combine_chunks()
    matrix = vectors.flatten().to_numpy().astype(np.float32).reshape(len(rows), -1)
    keep = rows >= 0
    return rows[keep].astype(np.int64), matrix[keep]


def _exact(qv: np.ndarray, rows: np.ndarray, vectors: np.ndarray, allowed: np.ndarray | None,
           k: int) -> list[tuple[int, float]]:  # fmt: skip
    """The k best of a few memory rows by dot product (LanceDB's score), best first."""
    if allowed is not None:
        keep = allowed[rows]
        rows, vectors = rows[keep], vectors[keep]
    scores = vectors @ np.asarray(qv, dtype=np.float32)
    order = sorted(range(len(rows)), key=lambda i: (-scores[i], int(rows[i])))[:k]
    return [(int(rows[i]), float(scores[i])) for i in order if scores[i] > 0]


def _load_memories(store: IndexStore, snap: LeanSnapshot) -> None:
    mt = store.memories.active_table(with_vectors=False, columns=_MEMORY_COLUMNS)
    mids = _bytes(mt.column("id"))
    sources = mt.column("source_ids").combine_chunks()
    flat = np.array(sources.flatten().to_pylist(), dtype=np.bytes_)
    rows = snap.row.rows(flat)
    offsets = sources.offsets.to_numpy().astype(np.int64)
    owner = np.repeat(np.arange(len(mids)), np.diff(offsets))
    keep = rows >= 0
    kept_offsets = np.searchsorted(owner[keep], np.arange(len(mids) + 1))
    snap.memory_ids = StrColumn(mids)
    snap.memory_row = IdRows(mids)
    snap.memory_source = Csr(kept_offsets, rows[keep].astype(np.int32))
    snap.memory_scopes = _scoped(mt.column("scope"))
    embedded = mt.column("embedded").to_numpy(zero_copy_only=False).astype(bool)
    snap.memory_vectors = int(embedded.sum())
    if 0 < snap.memory_vectors <= _FEW_MEMORY_VECTORS:
        snap.few_memory_vectors = _memory_vectors(store, snap.memory_row, mids[embedded])
    stale = mt.column("status").to_numpy(zero_copy_only=False) == "stale"
    firsts = offsets[:-1]
    has_first = np.diff(offsets) > 0
    for m in np.flatnonzero(stale & has_first):
        if rows[firsts[m]] >= 0:
            snap.stale_rows.add(int(rows[firsts[m]]))
