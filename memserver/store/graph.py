"""Rows of the code graph's tables, `symbols` and `refs`: the definitions and references of
every indexed version of a file, as `IndexStore.commit_files` writes them with the chunks.

A file's graph is stored per version (`core.graph.file_version` of its manifest record):
every row of a version carries its key, and its id is that key and the row's place in the
file (`s_`/`r_` + the version + 8 hex), so ids come from content and a version is written
once. A version's rows go in together, `refs` first and its `symbols` rows after, the
`file` row among them: a file row proves that the rest of its version is stored. A version
is current (its rows have no `valid_to`) exactly while the files manifest names it; when
the file changes or goes its rows are closed, and reopened when the same version comes
back. Reads return our own types; the writes here are called by `IndexStore` only.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
from memserver.store.lancedb import Table, in_list, lance_errors, sql_quote

__all__ = ["FileRow", "GraphRows"]

FILE = "file"  # the kind of a version's own row in `symbols`
_CURRENT = "valid_to IS NULL"
_CLOSED = "valid_to IS NOT NULL"
_DEF_COLUMNS = [
    "id", "path", "version", "language", "kind", "name", "qualified", "parent", "signature",
    "doc", "start_line", "end_line", "name_line", "declared_type", "declaration", "chunk_id",
]  # fmt: skip
_FILE_COLUMNS = ["id", "path", "version", "language", "package", "imports"]
_EMPTY: dict[str, Any] = {  # what a row leaves out
    "qualified": "", "parent": "", "signature": "", "doc": "", "start_line": 0, "end_line": 0,
    "name_line": 0, "declared_type": "", "declaration": False, "chunk_id": "", "package": "",
    "imports": None, "definitions": 0, "references": 0,
}  # fmt: skip
_REF_COLUMNS = [
    "id", "path", "version", "name", "kind", "line", "column", "enclosing", "qualifier",
    "receiver_type", "chunk_id",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class FileRow:
    """A stored version of a file's graph, from its file row."""

    path: str
    version: str
    current: bool
    definitions: int  # its definition rows in `symbols`
    references: int  # its rows in `refs`


def _row_id(prefix: str, version: str, ordinal: int) -> str:
    return f"{prefix}{version}{ordinal:08x}"


def _chunk_at(starts: list[int], ids: list[str], line: int) -> str:
    """The chunk holding `line` (the last one starting at or before it; chunks tile a file's
    non-blank lines, and a tag starts on a non-blank one)."""
    at = bisect.bisect_right(starts, line) - 1
    return ids[max(0, at)] if ids else ""


class GraphRows:
    def __init__(self, symbols: Table, refs: Table) -> None:
        self.symbols = symbols
        self.refs = refs

    # -- writes (through IndexStore) ----------------------------------------------------

    def insert(self, graphs: Sequence[FileGraph]) -> None:
        """Write the rows of versions not stored yet: `refs` first, then `symbols` with the
        file rows (one commit per table)."""
        if not graphs:
            return
        refs = _columns(_REF_COLUMNS)
        symbols = _columns([*_DEF_COLUMNS, "package", "imports", "definitions", "references"])
        for g in graphs:
            _add_file(g, refs, symbols)
        with lance_errors(f"write the code graph of {len(graphs)} files"):
            if refs["id"]:
                ldb.add_columns(self.refs, {**refs, "valid_to": [None] * len(refs["id"])})
            ldb.add_columns(self.symbols, {**symbols, "valid_to": [None] * len(symbols["id"])})

    def set_current(self, versions: Sequence[str], current: bool) -> None:
        """Close (or reopen) every row of these versions, file rows last on closing."""
        if not versions:
            return
        values: dict[str, Any] = {"valid_to": None if current else ldb.now()}
        state = _CLOSED if current else _CURRENT
        tables = (self.symbols, self.refs) if current else (self.refs, self.symbols)
        with lance_errors(f"{'reopen' if current else 'close'} {len(versions)} file graphs"):
            for table in tables:
                for batch in ldb.batches(list(versions)):
                    ldb.update_where(table, state + " AND " + in_list("version", batch), values)

    def delete_versions(self, versions: Iterable[str]) -> None:
        """Drop every row of these versions (half-written ones a crash left, and erasure)."""
        versions = sorted(set(versions))
        with lance_errors(f"delete {len(versions)} file graphs"):
            for table in (self.refs, self.symbols):
                for batch in ldb.batches(versions):
                    ldb.delete_where(table, in_list("version", batch))

    # -- reads ---------------------------------------------------------------------------

    def file_rows(self, paths: Sequence[str] | None = None) -> dict[str, FileRow]:
        """version → its file row: every stored version, or only those of `paths`."""
        wheres: list[str] = [f"kind = {sql_quote(FILE)}"]
        if paths is not None:
            wheres = [f"kind = {sql_quote(FILE)} AND {in_list('path', b)}"
                      for b in ldb.batches(list(paths))]  # fmt: skip
        out: dict[str, FileRow] = {}
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
        """Distinct ids per table (for `doctor`'s unique-id check)."""
        with lance_errors("read the code graph's ids"):
            return tuple(  # type: ignore[return-value]
                len(set(ldb.scan(t, None, ["id"]).column("id").to_pylist()))
                for t in (self.symbols, self.refs)
            )

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
            files = _read(self.symbols, wheres, _FILE_COLUMNS, f"kind = {sql_quote(FILE)}")
            defs = _read(self.symbols, wheres, _DEF_COLUMNS, f"kind != {sql_quote(FILE)}")
            refs = _read(self.refs, wheres, _REF_COLUMNS)
        return _assemble(files, defs, refs, columns)


def _columns(names: Sequence[str]) -> dict[str, list[Any]]:
    return {name: [] for name in names}


def _add_file(g: FileGraph, refs: dict[str, list[Any]], symbols: dict[str, list[Any]]) -> None:
    """Append one version's rows, column by column."""
    tags, version = g.tags, g.version
    starts = [start for _, start, _ in g.chunks]
    ids = [cid for cid, _, _ in g.chunks]
    for n, r in enumerate(tags.references):
        for name, value in (
            ("id", _row_id("r_", version, n)), ("path", tags.path), ("version", version),
            ("name", r.name), ("kind", r.kind), ("line", r.line), ("column", r.column),
            ("enclosing", r.enclosing), ("qualifier", r.qualifier),
            ("receiver_type", r.receiver_type), ("chunk_id", _chunk_at(starts, ids, r.line)),
        ):  # fmt: skip
            refs[name].append(value)
    imports = [
        {"module": i.module, "name": i.name, "alias": i.alias, "line": i.line, "star": i.star,
         "enclosing": i.enclosing}
        for i in tags.imports
    ]  # fmt: skip
    rows: list[dict[str, Any]] = [{
        "id": _row_id("s_", version, 0), "kind": FILE, "name": tags.path.rsplit("/", 1)[-1],
        "package": tags.package, "imports": imports, "definitions": len(tags.definitions),
        "references": len(tags.references),
    }]  # fmt: skip
    for n, d in enumerate(tags.definitions, start=1):
        rows.append({
            "id": _row_id("s_", version, n), "kind": d.kind, "name": d.name,
            "qualified": d.qualified, "parent": d.parent, "signature": d.signature,
            "doc": d.doc, "start_line": d.start_line, "end_line": d.end_line,
            "name_line": d.name_line, "declared_type": d.declared_type,
            "declaration": d.declaration, "chunk_id": _chunk_at(starts, ids, d.start_line),
        })  # fmt: skip
    shared = {"path": tags.path, "version": version, "language": tags.language}
    for row in rows:
        for name, values in symbols.items():
            values.append(shared[name] if name in shared else row.get(name, _EMPTY.get(name)))


def _read(table: Table, wheres: Sequence[str], columns: Sequence[str], also: str = ""
          ) -> dict[str, list[Any]]:  # fmt: skip
    """Columns of the matching rows, sorted by id (a version's rows in file order)."""
    parts = []
    for where in wheres:
        parts.append(ldb.scan(table, f"({where}) AND {also}" if also else where, columns))
    return ldb.sorted_columns(parts, "id")


_BY_COLUMN = ("name", "kind", "line", "column", "enclosing", "qualifier", "receiver_type",
              "chunk_id")  # fmt: skip


def _by_column(refs: Mapping[str, list[Any]]) -> dict[str, RefColumns]:
    """version → its references as columns (a version's rows are contiguous: ids sort by
    version, then place)."""
    out: dict[str, RefColumns] = {}
    versions = refs["version"]
    start = 0
    for end in range(1, len(versions) + 1):
        if end == len(versions) or versions[end] != versions[start]:
            out[versions[start]] = RefColumns(*(refs[c][start:end] for c in _BY_COLUMN))
            start = end
    return out


def _assemble(
    files: Mapping[str, list[Any]], defs: Mapping[str, list[Any]],
    refs: Mapping[str, list[Any]], columns: bool = False,
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
            r = [x for x in cols.references(path) if x.kind == "inherit"]
        bindings = tuple(
            Import(path, i["module"], i["name"], i["alias"], i["line"], i["star"], i["enclosing"])
            for i in imports or ()
        )
        tags = FileTags(path, language, tuple(d), tuple(r), bindings, package or "")
        out.append(StoredFile(tags, version, tuple(d_ids), tuple(d_chunks), tuple(r_chunks),
                              cols if cols is not None or not by_column else _NO_REFS))  # fmt: skip
    return out


_NO_REFS = RefColumns((), (), (), (), (), (), (), ())
