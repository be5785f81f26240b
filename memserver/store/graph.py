"""Rows of the code graph's tables, `symbols` and `refs`: the definitions and references of
every indexed version of a file, as `IndexStore.commit_files` writes them with the chunks.

A file's graph is stored per version (`core.graph.file_version` of its manifest record):
every row of a version carries its key and its place in the file: a definition's id is
`s_` + the version + its place in 8 hex, a reference is known by (version, place); so ids
come from content and a version is written once. A version's rows go in together, `refs`
first and its `symbols` rows after, the `file` row among them: a file row proves that the
rest of its version is stored. A version is current (its rows have no `valid_to`) exactly
while the files manifest names it; when the file changes or goes its rows are closed, and
reopened when the same version comes back. Reads return our own types; the writes here
are called by `IndexStore` only.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memserver.core.arrays import ranges
from memserver.core.graph import (
    Definition,
    FileTags,
    Import,
    RefColumns,
    Reference,
    StoredFile,
    make_definition,
    make_reference,
)
from memserver.core.writes import FileGraph
from memserver.store import lancedb as ldb
from memserver.store.graphpart import DEF_OWN, REF_OWN, Columns, GraphPart
from memserver.store.lancedb import Table, in_list, lance_errors, sql_quote

__all__ = ["FileRow", "GraphRows"]

FILE = "file"  # the kind of a version's own row in `symbols`
_TYPES = {"str": pa.string(), "int32": pa.int32(), "bool": pa.bool_()}
_MAX_OFFSET = 2**31 - 1  # the last offset a string array can hold
DEF_OWN_SCHEMA = pa.schema([(name, _TYPES[kind]) for name, kind in DEF_OWN])
REF_OWN_SCHEMA = pa.schema([(name, _TYPES[kind]) for name, kind in REF_OWN])
_CURRENT = "valid_to IS NULL"
_CLOSED = "valid_to IS NOT NULL"
_DEF_COLUMNS = [
    "id", "path", "version", "language", *DEF_OWN_SCHEMA.names, "chunk_id",
]  # fmt: skip
_FILE_COLUMNS = ["id", "path", "version", "language", "package", "imports"]
# what finding a name's definitions reads (`named`): no signature, doc nor declared type,
# a third of the rows' bytes, which a server holds for as long as the table keeps its version
_UNNAMED = ("signature", "doc", "declared_type")
_NAMED_COLUMNS = [c for c in _DEF_COLUMNS if c not in _UNNAMED]
_REF_COLUMNS = ["place", "path", "version", *REF_OWN_SCHEMA.names, "chunk_id"]
_DEF_ORDER = ["id"]  # a version's rows in file order: ids sort by version, then place
_REF_ORDER = ["version", "place"]
_EMPTY: dict[str, Any] = {  # what a row leaves out (valid_to: null, the row is current)
    "qualified": "", "parent": "", "signature": "", "doc": "", "start_line": 0, "end_line": 0,
    "name_line": 0, "declared_type": "", "declaration": False, "chunk_id": "", "package": "",
    "imports": None, "definitions": 0, "references": 0,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class FileRow:
    """A stored version of a file's graph, from its file row."""

    path: str
    version: str
    current: bool
    definitions: int  # its definition rows in `symbols`
    references: int  # its rows in `refs`


# Up to this many `symbols` rows, `named` (recall's graph arm) answers from the current
# definitions held in memory, read once per table version, not from two B-tree scans per
# query. On mongoose (4.4k rows): 0.9 ms a call against 3.3 ms, recall p50 / p95 over
# MCP 15-17 / 29-34 ms against 18-19 / 40-45 ms, and the server ~1 MB smaller after 100
# recalls (the LanceDB code of an index search, which the rest of recall does not run,
# stays unmapped). Above it (Django's 57k rows) holding them would cost more than it saves.
NAMED_IN_MEMORY_ROWS = 20_000
# The rows of `symbols` and of `refs` from which their lookup B-trees are built
# (`ensure_indexes`). Below them a filtered read scans a few milliseconds more than a
# lookup (a name among 10k / 30k / 100k symbol rows: 6.1 / 11.3 / 23.4 ms scanned, 4.5 /
# 4.5 / 7.3 ms looked up; a version among 100k / 300k reference rows: 8.2 / 14.8 ms against
# 4.4 / 3.0), and `named` answers from memory anyway, while building them is a cost of the
# first index run: 21-33 ms of rxjs's, click's or mongoose's (8.0k-35.5k reference rows),
# 3 to 6 % of their keyword phase.
LOOKUP_MIN_ROWS = (NAMED_IN_MEMORY_ROWS, 100_000)


class GraphRows:
    def __init__(self, symbols: Table, refs: Table) -> None:
        self.symbols = symbols
        self.refs = refs
        # (symbols version, (definitions, file rows) or None when too many to hold)
        self._held: tuple[int, tuple[pa.Table, pa.Table] | None] | None = None
        self._shapes: tuple[pa.Schema, pa.Schema] | None = None
        # While a writer's session is open (`session`) and found the table empty: every file
        # row in it, path -> version -> row, all of them this session's; else None.
        self._session = False
        self._mine: dict[str, dict[str, FileRow]] | None = None

    def session(self, open_: bool) -> None:
        """A writer's session (`IndexStore.writing`, the outermost) opens or ends. Where it
        finds the table empty, `file_rows` of given paths answers from the rows the session
        wrote, not from a scan of every row written so far: a first index of Django 3.2
        scanned a table growing to 56k rows once a batch (24 scans, each as long as the rows
        before it: 0.53 s beside the chunks' writes; 0.01 s from the session's rows)."""
        self._session, self._mine = open_, None

    @contextmanager
    def _changing(self) -> Iterator[dict[str, dict[str, FileRow]] | None]:
        """A write to the tables: the session's rows are trusted again only once it is done
        (a write that fails leaves `file_rows` scanning)."""
        mine, self._mine = self._mine, None
        yield mine
        self._mine = mine

    def _schemas(self) -> tuple[pa.Schema, pa.Schema]:
        """The tables' schemas, read once: each read is a trip through LanceDB's event loop
        (0.9 ms; a write read three, of the 28 ms a batch of cobra's graph took). Their
        shape is this memserver's (`drop_reshaped_graph` drops an older one first)."""
        if self._shapes is None:
            self._shapes = (self.symbols.schema, self.refs.schema)
        return self._shapes

    def ensure_indexes(self) -> None:
        """B-trees on what reads and writes filter by, once a table is large enough to need
        them (`LOOKUP_MIN_ROWS`): a definition's name (recall's graph arm) and a version
        (closing, reopening and loading a file's rows). Without them each such read scans
        every stored version: on Django's nine releases in one index (347k symbol rows)
        the graph arm of a short query took 117-138 ms, with them 36-39 ms."""
        with lance_errors("index the code graph's names and versions"):
            ldb.ensure_lookup_indexes(self.symbols, ("name", "version"), LOOKUP_MIN_ROWS[0])
            ldb.ensure_lookup_indexes(self.refs, ("version",), LOOKUP_MIN_ROWS[1])

    # -- writes (through IndexStore) ----------------------------------------------------

    def insert(self, graphs: Sequence[FileGraph]) -> None:
        """Write the rows of versions not stored yet: `refs` first, then `symbols` with the
        file rows (one commit per table)."""
        if not graphs:
            return
        parts = [_part(g) for g in graphs]
        refs = _rows(graphs, [p.references for p in parts], REF_OWN_SCHEMA, None, 0)
        defs = _rows(graphs, [p.definitions for p in parts], DEF_OWN_SCHEMA, "s_", 1)
        files = pa.table({
            "id": [f"s_{g.version}{0:08x}" for g in graphs],
            "path": [p.path for p in parts], "version": [g.version for g in graphs],
            "language": [p.language for p in parts], "kind": [FILE] * len(parts),
            "name": [p.path.rsplit("/", 1)[-1] for p in parts],
            "package": [p.package for p in parts], "imports": [list(p.imports) for p in parts],
            "definitions": [p.counts[0] for p in parts],
            "references": [p.counts[1] for p in parts],
        })  # fmt: skip
        with lance_errors(f"write the code graph of {len(graphs)} files"):
            schemas = self._schemas()
            if refs is not None:
                self.refs.add(_fit(refs, schemas[1]))
            symbols = [_fit(files, schemas[0])]
            if defs is not None:
                symbols.append(_fit(defs, schemas[0]))
            with self._changing() as mine:
                self.symbols.add(pa.concat_tables(symbols))
        if mine is not None:
            for g, p in zip(graphs, parts, strict=True):
                mine.setdefault(p.path, {})[g.version] = FileRow(p.path, g.version, True, *p.counts)

    def set_current(self, versions: Sequence[str], current: bool) -> None:
        """Close (or reopen) every row of these versions, file rows last on closing."""
        if not versions:
            return
        values: dict[str, Any] = {"valid_to": None if current else ldb.now()}
        state = _CLOSED if current else _CURRENT
        tables = (self.symbols, self.refs) if current else (self.refs, self.symbols)
        doing = f"{'reopen' if current else 'close'} {len(versions)} file graphs"
        with lance_errors(doing), self._changing() as mine:
            for table in tables:
                for batch in ldb.batches(list(versions)):
                    ldb.update_where(table, state + " AND " + in_list("version", batch), values)
        if mine is not None:
            wanted = set(versions)
            for rows in mine.values():
                for version in wanted.intersection(rows):
                    rows[version] = replace(rows[version], current=current)

    def delete_versions(self, versions: Iterable[str]) -> None:
        """Drop every row of these versions (half-written ones a crash left, and erasure)."""
        versions = sorted(set(versions))
        with lance_errors(f"delete {len(versions)} file graphs"), self._changing() as mine:
            for table in (self.refs, self.symbols):
                for batch in ldb.batches(versions):
                    ldb.delete_where(table, in_list("version", batch))
        if mine is not None:
            gone = set(versions)
            for rows in mine.values():
                for version in gone.intersection(rows):
                    del rows[version]

    def to_prune(self, keep: Collection[str]) -> list[str]:
        """Closed versions to delete, the longest closed first, once they outnumber the
        current rows, down to half as many: a file saved again and again closes a version
        of its whole graph each time (click's core.py: 2,500 rows a save) and nothing else
        deleted them. A closed version only spares a run the write of a file's graph when
        the file comes back as it was (its tags are made anyway). `keep`: versions never
        deleted (the manifest's)."""
        columns = ["version", "valid_to", "definitions", "references"]
        with lance_errors("read the code graph's files"):
            t = ldb.scan(self.symbols, f"kind = {sql_quote(FILE)}", columns)
        current = held = 0
        closed: list[tuple[Any, str, int]] = []
        for version, until, defs, refs in zip(*(t.column(c).to_pylist() for c in columns),
                                              strict=True):  # fmt: skip
            rows = 1 + (defs or 0) + (refs or 0)
            if until is None:
                current += rows
            elif version not in keep:
                closed.append((until, version, rows))
                held += rows
        drop: list[str] = []
        if held <= current:
            return drop
        for _until, version, rows in sorted(closed):
            if held <= current // 2:
                break
            drop.append(version)
            held -= rows
        return drop

    # -- reads ---------------------------------------------------------------------------

    def file_rows(self, paths: Sequence[str] | None = None) -> dict[str, FileRow]:
        """version → its file row: every stored version, or only those of `paths`. An empty
        table is not scanned (its count is in the table's metadata): a first run's batches
        spare 4-14 ms each."""
        out: dict[str, FileRow] = {}
        if paths is not None and self._mine is not None:
            return {v: row for p in paths for v, row in self._mine.get(p, {}).items()}
        with lance_errors("read the code graph's files"):
            if ldb.count(self.symbols) == 0:
                if self._session:  # every row from now on is this session's
                    self._mine = {}
                return out
        wheres: list[str] = [f"kind = {sql_quote(FILE)}"]
        if paths is not None:
            wheres = [f"kind = {sql_quote(FILE)} AND {in_list('path', b)}"
                      for b in ldb.batches(list(paths))]  # fmt: skip
        columns = ["path", "version", "valid_to", "definitions", "references"]
        with lance_errors("read the code graph's files"):
            for where in wheres:
                t = ldb.scan(self.symbols, where, columns)
                for path, version, closed, defs, refs in zip(
                    *(t.column(c).to_pylist() for c in columns), strict=True
                ):
                    out[version] = FileRow(path, version, closed is None, defs or 0, refs or 0)
        return out

    def version_states(self) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
        """Per table (symbols without file rows, refs): version → (current rows, closed)."""
        out = []
        with lance_errors("read the code graph's versions"):
            for table, where in ((self.symbols, f"kind != {sql_quote(FILE)}"), (self.refs, None)):
                t = ldb.scan(table, where, ["version", "valid_to"])
                counts: dict[str, list[int]] = {}
                closed = t.column("valid_to").is_null().to_pylist()
                for version, current in zip(t.column("version").to_pylist(), closed, strict=True):
                    held = counts.setdefault(version, [0, 0])
                    held[0 if current else 1] += 1
                out.append({v: (c[0], c[1]) for v, c in counts.items()})
        return out[0], out[1]

    def count_current(self) -> tuple[int, int, int]:
        """(current file rows, current definitions, current references)."""
        with lance_errors("count the code graph"):
            files = ldb.count(self.symbols, f"{_CURRENT} AND kind = {sql_quote(FILE)}")
            return (files, ldb.count(self.symbols, _CURRENT) - files,
                    ldb.count(self.refs, _CURRENT))  # fmt: skip

    def count_rows(self) -> tuple[int, int]:
        with lance_errors("count the code graph"):
            return ldb.count(self.symbols), ldb.count(self.refs)

    def distinct_ids(self) -> tuple[int, int]:
        """Distinct keys per table, ids of `symbols` and (version, place) of `refs` (for
        `doctor`'s unique-id check)."""
        with lance_errors("read the code graph's ids"):
            return tuple(
                ldb.scan(t, None, keys).group_by(keys).aggregate([]).num_rows
                for t, keys in ((self.symbols, _DEF_ORDER), (self.refs, _REF_ORDER))
            )

    def named(self, names: Sequence[str]) -> list[StoredFile]:
        """The current definitions with one of these (bare) names, by file, with their
        files' language and package and no references: what finding a name's definitions
        needs (their signatures, docs and declared types are left empty), read without the
        rest of the graph."""
        names = sorted(set(names))
        if not names:
            return []
        held = self._held_definitions()
        if held is not None:
            defs_t = held[0].filter(pc.is_in(held[0].column("name"), pa.array(names)))
            files_t = held[1].filter(pc.is_in(held[1].column("version"),
                                              pc.unique(defs_t.column("version"))))  # fmt: skip
            return _assemble(_lists(files_t), _unnamed(_lists(defs_t)),
                             {c: [] for c in ("version", *_BY_COLUMN)}, True)  # fmt: skip
        with lance_errors("read the code graph's definitions"):
            defs = _read(self.symbols, [f"{_CURRENT} AND {in_list('name', b)}"
                                        for b in ldb.batches(names)], _NAMED_COLUMNS,
                         _DEF_ORDER, f"kind != {sql_quote(FILE)}")  # fmt: skip
            defs = _unnamed(defs)
            versions = sorted(set(defs["version"]))
            files = _read(self.symbols, [in_list("version", b) for b in ldb.batches(versions)],
                          _FILE_COLUMNS, _DEF_ORDER, f"kind = {sql_quote(FILE)}") if versions else {
                c: [] for c in _FILE_COLUMNS}  # fmt: skip
        return _assemble(files, defs, {c: [] for c in ("version", *_BY_COLUMN)}, True)

    def _held_definitions(self) -> tuple[pa.Table, pa.Table] | None:
        """The current definitions and every file row, sorted as `named`'s scans sort
        them, held while the table keeps its version (None: too many rows to hold)."""
        with lance_errors("read the code graph's definitions"):
            version = int(self.symbols.version)
            if self._held is None or self._held[0] != version:
                held = None
                if ldb.count(self.symbols) <= NAMED_IN_MEMORY_ROWS:
                    defs = ldb.scan(self.symbols, f"{_CURRENT} AND kind != {sql_quote(FILE)}",
                                    _NAMED_COLUMNS)  # fmt: skip
                    files = ldb.scan(self.symbols, f"kind = {sql_quote(FILE)}", _FILE_COLUMNS)
                    held = (ldb.sorted_table([defs], _DEF_ORDER),
                            ldb.sorted_table([files], _DEF_ORDER))  # fmt: skip
                    del defs, files
                    ldb.give_back_memory()  # the scans' and the sorts' buffers: 1 MB a server
                self._held = (version, held)  # read after the version: never older than it
        return self._held[1]

    def load(self, versions: Sequence[str] | None = None, *, columns: bool = False
             ) -> list[StoredFile]:  # fmt: skip
        """The stored graphs of these versions (default: every current one); with
        `columns`, references by column (see `StoredFile`): far cheaper for a large graph."""
        wheres: list[str] = [_CURRENT]
        if versions is not None:
            wheres = [in_list("version", b) for b in ldb.batches(list(versions))]
        if not wheres:
            return []
        with lance_errors("read the code graph"):
            files = _read(self.symbols, wheres, _FILE_COLUMNS, _DEF_ORDER,
                          f"kind = {sql_quote(FILE)}")  # fmt: skip
            defs = _read(self.symbols, wheres, _DEF_COLUMNS, _DEF_ORDER,
                         f"kind != {sql_quote(FILE)}")  # fmt: skip
            if not columns:
                return _assemble(files, defs, _read(self.refs, wheres, _REF_COLUMNS, _REF_ORDER))
            compact = _read_compact(self.refs, wheres, _REF_COLUMNS, _REF_ORDER)
        stored = _assemble(files, defs, compact, columns)
        ldb.give_back_memory()  # the scans' buffers, freed by now
        return stored


def _part(g: FileGraph) -> GraphPart:
    if not isinstance(g.rows, GraphPart):
        raise TypeError(f"the graph rows of {g.path} are not a GraphPart: {type(g.rows)}")
    return g.rows


def _batch(parts: Sequence[Columns], schema: pa.Schema) -> pa.RecordBatch:
    """These parts' rows (`graphpart.Columns`, file after file) as one record batch, each
    column one Arrow array over the parts' buffers joined: LanceDB writes a column of one
    array in half the CPU of one in an array per file (click's references: 9 ms against
    19). The whole is validated (offsets in order and within their bytes, every string
    UTF-8): never garbage written."""
    n, rows = sum(p.rows for p in parts), [p.rows for p in parts]
    arrays = []
    for at, f in enumerate(schema):
        values = [p.values[at] for p in parts]
        if f.type == pa.string():  # offsets and bytes
            strings = cast(list[tuple[bytes, bytes]], values)
            arrays.append(_strings(f.name, rows, strings, n))
            continue
        fixed = cast(list[bytes], values)
        width = 1 if f.type == pa.bool_() else f.type.byte_width
        if any(len(v) != count * width for v, count in zip(fixed, rows, strict=True)):
            raise pa.ArrowInvalid(f"a part's column {f.name!r} is not {width} bytes a row")
        data = pa.py_buffer(b"".join(fixed))
        if f.type == pa.bool_():  # a byte per value
            arrays.append(pa.Array.from_buffers(pa.uint8(), n, [None, data]).cast(pa.bool_()))
        else:
            arrays.append(pa.Array.from_buffers(f.type, n, [None, data]))
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    batch.validate(full=True)
    return batch


def _strings(name: str, rows: Sequence[int], values: Sequence[tuple[bytes, bytes]], n: int
             ) -> pa.Array:  # fmt: skip
    """A string column of parts (their offsets and bytes) as one array, in a few NumPy
    operations over all the parts, not a few per part. Each part's offsets must run from 0
    to the end of its bytes: one that stopped short would shift every string of the parts
    after it."""
    counts = np.fromiter(rows, np.int64, len(rows)) + 1  # offsets per part
    held = [offsets for offsets, _ in values]
    if any(len(h) != 4 * c for h, c in zip(held, counts.tolist(), strict=True)):
        raise pa.ArrowInvalid(f"a part of column {name!r} has not one offset more than rows")
    offsets = np.frombuffer(b"".join(held), np.int32).astype(np.int64)
    sizes = np.fromiter((len(data) for _, data in values), np.int64, len(values))
    firsts = np.cumsum(counts) - counts  # where each part's offsets begin
    if (offsets[firsts] != 0).any() or (offsets[firsts + counts - 1] != sizes).any():
        raise pa.ArrowInvalid(f"the offsets of column {name!r} do not span their bytes")
    if len(values) > 1 and int(sizes.sum()) > _MAX_OFFSET:  # `_batches` splits runs before
        raise pa.ArrowInvalid(f"column {name!r} would hold over {_MAX_OFFSET} bytes")
    offsets += np.repeat(np.cumsum(sizes) - sizes, counts)  # each part after the bytes before
    keep = np.ones(len(offsets), bool)
    keep[firsts[1:]] = False  # a part's first offset is the end of the part before
    buffers = [None, pa.py_buffer(offsets[keep].astype(np.int32)),
               pa.py_buffer(b"".join(data for _, data in values))]  # fmt: skip
    return pa.Array.from_buffers(pa.string(), n, buffers)


def _batches(parts: Sequence[Columns], schema: pa.Schema) -> list[pa.RecordBatch]:
    """`_batch`es of runs of these parts, each within the int32 offsets of a string column."""
    out: list[pa.RecordBatch] = []
    run: list[Columns] = []
    size = 0
    for p in parts:
        held = max((len(v[1]) for v in p.values if isinstance(v, tuple)), default=0)
        if run and size + held > _MAX_OFFSET:
            out.append(_batch(run, schema))
            run, size = [], 0
        run.append(p)
        size += held
    if run:
        out.append(_batch(run, schema))
    return out


_HEX: list[pa.Array] = [pa.array([], pa.string())]  # "00000000", "00000001"…, grown as needed


def _hex(places: np.ndarray) -> pa.Array:
    """Row places as 8 hex digits."""
    top = int(places.max(initial=-1)) + 1
    if len(_HEX[0]) < top:
        _HEX[0] = pa.array([f"{n:08x}" for n in range(max(top, 2 * len(_HEX[0])))])
    return _HEX[0].take(pa.array(places, pa.int64()))


def _rows(graphs: Sequence[FileGraph], columns: Sequence[Columns | None], schema: pa.Schema,
          prefix: str | None, first: int) -> pa.Table | None:  # fmt: skip
    """The rows of these files' columns with what ties them to their version: the id
    (prefix, version, place) or, without a prefix, the place, then path, version,
    language and the chunk holding the row's first line (the last chunk starting at or
    before it; chunks tile a file's non-blank lines, and a tag starts on a non-blank one).
    Made by whole columns, not file by file: mongoose's two batches in 10 ms instead of 17,
    Django 3.2's 23 in 118 ms instead of 165."""
    held = [(g, c) for g, c in zip(graphs, columns, strict=True) if c is not None and c.rows]
    if not held:
        return None
    counts = [c.rows for _, c in held]
    table = pa.Table.from_batches(_batches([c for _, c in held], schema))
    owner = pa.array(np.repeat(np.arange(len(held)), counts))
    version = pa.array([g.version for g, _ in held]).take(owner)
    lines = table.column("line" if "line" in table.column_names else "start_line").to_numpy()
    chunk = _chunk_of_rows([g.chunks for g, _ in held], owner.to_numpy(), lines)
    parts = [_part(g) for g, _ in held]
    places = ranges(np.full(len(counts), first), np.array(counts))  # each file's from `first`
    key = ("place", pa.array(places, pa.int32())) if prefix is None else (
        "id", pc.binary_join_element_wise(prefix, version, _hex(places), ""))  # fmt: skip
    return (
        table.append_column(*key)
        .append_column("path", pa.array([p.path for p in parts]).take(owner))
        .append_column("version", version)
        .append_column("language", pa.array([p.language for p in parts]).take(owner))
        .append_column("chunk_id", chunk)
    )  # fmt: skip


def _chunk_of_rows(chunks: Sequence[Sequence[tuple[str, int, int]]], owner: np.ndarray,
                   lines: np.ndarray) -> pa.Array:  # fmt: skip
    """Per row, the id of the chunk holding its line: of its file's (`owner`: the file's
    place in `chunks`, each file's (id, first line, last line) in file order) the last one
    starting at or before the line, the first one for a line above them all, "" for a file
    without chunks. One search over every file's chunks, keyed by (file, first line)."""
    held = np.fromiter(map(len, chunks), np.int64, len(chunks))
    ids = [cid for spans in chunks for cid, _, _ in spans]
    starts = np.fromiter((start for spans in chunks for _, start, _ in spans), np.int64, len(ids))
    keys = (np.repeat(np.arange(len(chunks), dtype=np.int64), held) << 32) + starts
    owner = owner.astype(np.int64)
    at = np.searchsorted(keys, (owner << 32) + lines.astype(np.int64), side="right") - 1
    at = np.maximum(at, (np.cumsum(held) - held)[owner])  # not into the file before
    at = np.where(held[owner] > 0, at, len(ids))
    return pa.array([*ids, ""]).take(pa.array(at))


def _fit(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` in the stored schema's column order, what it leaves out null (valid_to:
    current) or empty as stored before."""
    columns = []
    for f in schema:
        if f.name in table.column_names:
            columns.append(table.column(f.name).cast(f.type))
        elif f.name in _EMPTY:
            value = _EMPTY[f.name]
            columns.append(pa.nulls(table.num_rows, f.type) if value is None
                           else pa.repeat(pa.scalar(value, f.type), table.num_rows))  # fmt: skip
        else:
            columns.append(pa.nulls(table.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _lists(table: pa.Table) -> dict[str, list[Any]]:
    return {name: table.column(name).to_pylist() for name in table.column_names}


def _unnamed(defs: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Definitions read without `_UNNAMED`'s columns, those columns empty."""
    blank = [""] * len(defs["id"])
    return {**defs, **{c: blank for c in _UNNAMED}}


def _read(table: Table, wheres: Sequence[str], columns: Sequence[str], order: Sequence[str],
          also: str = "") -> dict[str, list[Any]]:  # fmt: skip
    """Columns of the matching rows, sorted by `order` (a version's rows in file order)."""
    parts = []
    for where in wheres:
        parts.append(ldb.scan(table, f"({where}) AND {also}" if also else where, columns))
    return ldb.sorted_columns(parts, order)


def _read_compact(table: Table, wheres: Sequence[str], columns: Sequence[str],
                  order: Sequence[str]) -> dict[str, Sequence[Any]]:  # fmt: skip
    """As `_read`, in compact columns (`_compact`): a whole repository's references without
    an object per row."""
    parts = [ldb.scan(table, where, columns) for where in wheres]
    return _compact(ldb.sorted_table(parts, order))


_BY_COLUMN = ("name", "kind", "line", "column", "enclosing", "qualifier", "receiver_type",
              "chunk_id")  # fmt: skip


class _Coded(Sequence[str]):
    """A column of strings as codes into its distinct values: one object per value, where
    a Python list holds one per row (Django's 320k references: 128 MB as lists). The
    files of one read share `values` (see `RefColumns`)."""

    __slots__ = ("codes", "values")

    def __init__(self, codes: np.ndarray, values: list[str]) -> None:
        self.codes, self.values = codes, values

    def __len__(self) -> int:
        return len(self.codes)

    def __iter__(self) -> Iterator[str]:
        return map(self.values.__getitem__, self.codes.tolist())

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return _Coded(self.codes[at], self.values)  # a view of the same codes
        return self.values[int(self.codes[at])]


class _Ints(Sequence[int]):
    """A column of integers in a NumPy array, read as Python ints."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __len__(self) -> int:
        return len(self.array)

    def __iter__(self) -> Iterator[int]:
        return iter(self.array.tolist())

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return _Ints(self.array[at])
        return int(self.array[at])


def _compact(table: pa.Table) -> dict[str, Sequence[Any]]:
    """A table's columns as `_Coded` strings and `_Ints`; a column with nulls (or of
    another type) as a plain list, as `ldb.sorted_columns` gives it."""
    out: dict[str, Sequence[Any]] = {}
    for name in table.column_names:
        column = table.column(name)
        if column.null_count:
            out[name] = column.to_pylist()
        elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            coded = pc.dictionary_encode(column).combine_chunks()
            codes = coded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
            out[name] = _Coded(codes, coded.dictionary.to_pylist())
        elif pa.types.is_integer(column.type):
            out[name] = _Ints(column.to_numpy().astype(np.int64))
        else:
            out[name] = column.to_pylist()
    return out


def _by_column(refs: Mapping[str, Sequence[Any]]) -> dict[str, RefColumns]:
    """version → its references as columns (a version's rows are contiguous: they are read
    sorted by version, then place)."""
    out: dict[str, RefColumns] = {}
    versions = refs["version"]
    if not len(versions):
        return out
    keys = versions.codes if isinstance(versions, _Coded) else np.array(list(versions), object)
    cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1  # where the next version starts
    for start, end in itertools.pairwise([0, *cuts.tolist(), len(keys)]):
        out[versions[start]] = RefColumns(*(refs[c][start:end] for c in _BY_COLUMN))
    return out


def _assemble(
    files: Mapping[str, list[Any]], defs: Mapping[str, list[Any]],
    refs: Mapping[str, Sequence[Any]], columns: bool = False,
) -> list[StoredFile]:  # fmt: skip
    by_version: dict[str, tuple[list[Definition], list[str], list[str]]] = {}
    strings: dict[str, str] = {}
    intern = strings.setdefault  # one object per repeated path, kind, qualifier…
    for i, version in enumerate(defs["version"]):
        held = by_version.setdefault(version, ([], [], []))
        path = intern(defs["path"][i], defs["path"][i])
        held[0].append(make_definition(
            path, intern(defs["language"][i], defs["language"][i]), defs["name"][i],
            defs["qualified"][i], intern(defs["kind"][i], defs["kind"][i]),
            defs["signature"][i], defs["start_line"][i], defs["end_line"][i],
            intern(defs["parent"][i], defs["parent"][i]), defs["doc"][i], defs["name_line"][i],
            defs["declared_type"][i], bool(defs["declaration"][i]),
        ))  # fmt: skip
        held[1].append(defs["id"][i])
        held[2].append(defs["chunk_id"][i])
    if columns:
        return _files(files, by_version, {}, _by_column(refs))
    references: dict[str, tuple[list[Reference], list[str]]] = {}
    names = ("path", "name", "kind", "line", "column", "enclosing", "qualifier",
             "receiver_type", "chunk_id")  # fmt: skip
    for version, path, name, kind, line, column, enclosing, qualifier, typed, chunk in zip(
        refs["version"], *(refs[c] for c in names), strict=True
    ):
        held_refs = references.setdefault(version, ([], []))
        held_refs[0].append(make_reference(
            intern(path, path), intern(name, name), intern(kind, kind), line, column,
            intern(enclosing, enclosing), intern(qualifier, qualifier), intern(typed, typed),
        ))  # fmt: skip
        held_refs[1].append(chunk)
    return _files(files, by_version, references, {})


def _files(
    files: Mapping[str, list[Any]],
    by_version: Mapping[str, tuple[list[Definition], list[str], list[str]]],
    references: Mapping[str, tuple[list[Reference], list[str]]],
    by_column: Mapping[str, RefColumns],
) -> list[StoredFile]:
    out = []
    for path, version, language, package, imports in zip(
        files["path"],
        files["version"],
        files["language"],
        files["package"],
        files["imports"],
        strict=True,
    ):
        d, d_ids, d_chunks = by_version.get(version, ([], [], []))
        r, r_chunks = references.get(version, ([], []))
        cols = by_column.get(version)
        if cols is not None:  # the bases only: what resolution reads of a file's references
            r = cols.of_kind(path, "inherit")
        bindings = tuple(
            Import(path, i["module"], i["name"], i["alias"], i["line"], i["star"], i["enclosing"])
            for i in imports or ()
        )
        tags = FileTags(path, language, tuple(d), tuple(r), bindings, package or "")
        out.append(StoredFile(tags, version, tuple(d_ids), tuple(d_chunks), tuple(r_chunks),
                              cols if cols is not None or not by_column else _NO_REFS))  # fmt: skip
    return out


_NO_REFS = RefColumns((), (), (), (), (), (), (), ())
