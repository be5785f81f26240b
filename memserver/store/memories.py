"""Rows of the `memories` table (the distilled view).

Memories distilled from a code chunk follow it: when the chunk is closed they turn `stale`
(and leave search), when it comes back they are `active` again. Reads return our own types;
the writes are called by `IndexStore`'s intents only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memserver.core.types import ACTIVE, FORGOTTEN, STALE, SUPERSEDED, Memory
from memserver.store import lancedb as ldb
from memserver.store.lancedb import ADDRESS, Table, in_list, lance_errors, sql_quote
from memserver.store.schema import scope_pairs, scope_row

__all__ = ["ACTIVE", "FORGOTTEN", "STALE", "SUPERSEDED", "MemoryRows", "memory_from_row"]

_STALE_NOTE = f"status = '{STALE}' AND array_length(source_ids) > 1"
_SHOWN = f"status = '{ACTIVE}' OR ({_STALE_NOTE})"
_MANY = "array_length(source_ids) > 1"
_COLUMNS = [
    "id", "type", "key", "text", "entities", "source_ids", "distiller", "status",
    "event_time", "scope", "derived_from",
]  # fmt: skip


def memory_from_row(row: Mapping[str, Any]) -> Memory:
    return Memory(
        id=row["id"], type=row["type"], key=row["key"], text=row["text"],
        source_ids=tuple(row["source_ids"] or ()), entities=tuple(row["entities"] or ()),
        distiller=row["distiller"] or "", status=row["status"],
        event_time=row.get("event_time"), scope=scope_pairs(row.get("scope")),
        derived_from=tuple(row.get("derived_from") or ()),
    )  # fmt: skip


def memories_where(distillers: Sequence[str], *, but_type: str = "") -> str:
    """A filter of the memories of `distillers` (but those of type `but_type`)."""
    where = in_list("distiller", distillers)
    return where + (f" AND type <> {sql_quote(but_type)}" if but_type else "")


def _unembedded(keyword_only: str | None) -> str:
    where = f"embedded = false AND status = '{ACTIVE}'"
    return where + (f" AND NOT ({keyword_only})" if keyword_only else "")


def _any_of(values: Sequence[str]) -> str:
    return f"array_has_any(source_ids, [{', '.join(sql_quote(c) for c in values)}])"


class MemoryRows:
    def __init__(self, table: Table, dim: int) -> None:
        self.table = table
        self.dim = dim

    def _read(self, columns: list[str], wheres: Sequence[str | None], action: str) -> pa.Table:
        with lance_errors(action):
            parts = [ldb.scan(self.table, w, columns) for w in wheres]
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    # -- reads ------------------------------------------------------------------------

    def states(self, origins: Sequence[str] | None = None) -> dict[str, tuple[str, str]]:
        """Every memory id → (status, origin chunk); only those of `origins` when given."""
        wheres: list[str | None] = [None]
        if origins is not None:
            wheres = [in_list("origin_chunk", b) for b in ldb.batches(list(origins))]
        if not wheres:
            return {}
        t = self._read(["id", "status", "origin_chunk"], wheres, "read memory ids")
        return {
            i: (s, o)
            for i, s, o in zip(
                t.column("id").to_pylist(), t.column("status").to_pylist(),
                t.column("origin_chunk").to_pylist(), strict=True,
            )
        }  # fmt: skip

    def citations(self, of: Sequence[str] | None = None) -> dict[str, tuple[str, ...]]:
        """Memories that cite chunks besides their origin (notes about code) → all sources;
        only those citing one of `of` when given."""
        wheres: list[str | None] = [_MANY]
        if of is not None:
            wheres = [f"{_MANY} AND {_any_of(b)}" for b in ldb.batches(list(of))]
        if not wheres:
            return {}
        t = self._read(["id", "source_ids"], wheres, "read memory sources")
        return {
            i: tuple(s)
            for i, s in zip(t.column("id").to_pylist(), t.column("source_ids").to_pylist(),
                            strict=True)
            if s and len(s) > 1
        }  # fmt: skip

    def about(
        self, chunk_ids: Sequence[str]
    ) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, ...]]]:
        """`states(origins=chunk_ids)` and `citations(of=chunk_ids)` in one read."""
        wheres: list[str | None] = [
            f"{in_list('origin_chunk', b)} OR ({_MANY} AND {_any_of(b)})"
            for b in ldb.batches(list(chunk_ids))
        ]
        if not wheres:
            return {}, {}
        t = self._read(["id", "status", "origin_chunk", "source_ids"], wheres, "read memories")
        wanted = set(chunk_ids)
        states: dict[str, tuple[str, str]] = {}
        citations: dict[str, tuple[str, ...]] = {}
        for i, status, origin, sources in zip(
            t.column("id").to_pylist(), t.column("status").to_pylist(),
            t.column("origin_chunk").to_pylist(), t.column("source_ids").to_pylist(), strict=True,
        ):  # fmt: skip
            if origin in wanted:
                states[i] = (status, origin)
            if sources and len(sources) > 1 and wanted.intersection(sources):
                citations[i] = tuple(sources)
        return states, citations

    def of_origin(self, chunk_ids: Sequence[str]) -> list[Memory]:
        found: list[dict[str, Any]] = []
        with lance_errors("read memories"):
            for batch in ldb.batches(list(chunk_ids)):
                found += ldb.rows(self.table, in_list("origin_chunk", batch), _COLUMNS, None)
        return [memory_from_row(r) for r in found]

    def citing(self, chunk_ids: Sequence[str]) -> list[str]:
        """Ids of memories whose sources include any of `chunk_ids`."""
        wanted = set(chunk_ids)
        return [m for m, sources in self.citations(of=chunk_ids).items() if wanted & set(sources)]

    def derived_from(self, ids: Sequence[str]) -> list[Memory]:
        """Consolidated abstractions built from any of the memories `ids`."""
        if not ids:
            return []
        found: list[dict[str, Any]] = []
        with lance_errors("read memories"):
            for batch in ldb.batches(list(ids)):
                listed = ", ".join(sql_quote(i) for i in batch)
                where = f"array_has_any(derived_from, [{listed}])"
                found += ldb.rows(self.table, where, _COLUMNS, None)
        return [memory_from_row(r) for r in found]

    def get(self, ids: Sequence[str]) -> dict[str, Memory]:
        if not ids:
            return {}
        with lance_errors("read memories"):
            found = ldb.take(self.table, ids, _COLUMNS).to_pylist()
        return {r["id"]: memory_from_row(r) for r in found}

    def all_of(self, ids: Collection[str]) -> dict[str, Memory]:
        """The memories `ids`, read in one scan: for many ids at once, where `get` asks by
        batches of ids (Django's 70k searchable memories: 1.3 s against 6.1 s)."""
        if not ids:
            return {}
        with lance_errors("read memories"):
            table = ldb.scan(self.table, None, _COLUMNS)
            wanted = pc.is_in(table.column("id"), value_set=pa.array(sorted(ids), pa.string()))
            found = table.filter(wanted).to_pylist()
        return {r["id"]: memory_from_row(r) for r in found}

    def unembedded(self, limit: int, keyword_only: str | None = None) -> list[Memory]:
        """Active memories that lack a vector, but those `keyword_only` selects (a filter
        over the table: they are searched by keyword alone)."""
        with lance_errors("read memories to embed"):
            found = ldb.rows(self.table, _unembedded(keyword_only), _COLUMNS, limit)
        return [memory_from_row(r) for r in found]

    def _count(self, where: str | None) -> int:
        with lance_errors("count the memories"):
            return ldb.count(self.table, where)

    def drop_vectors(self, where: str) -> int:
        """The memories `where` selects that have a vector lose it (they are searched by
        keyword alone from now on, and `unembedded` leaves them be); how many did."""
        selected = f"embedded = true AND ({where})"
        n = self._count(selected)
        if n:
            with lance_errors(f"drop the vectors of {n} memories"):
                ldb.update_where(self.table, selected, {"embedded": False})
        return n

    def count_unembedded(self, keyword_only: str | None = None) -> int:
        return self._count(_unembedded(keyword_only))

    def count_active(self) -> int:
        return self._count(f"status = '{ACTIVE}'")

    def count_searchable(self) -> int:
        """Active memories plus stale notes about code (which recall shows, marked stale)."""
        return self.count_active() + self._count(_STALE_NOTE)

    def count(self, status: str) -> int:
        return self._count(f"status = {sql_quote(status)}")

    def count_rows(self) -> int:
        return self._count(None)

    def for_consolidation(
        self, distiller: str
    ) -> tuple[list[tuple[Memory, str, bool]], np.ndarray | None]:
        """Active memories of one distiller as (memory, origin chunk, embedded), with their
        vectors as a matrix in the same order (None without vectors)."""
        columns = [
            "id",
            "type",
            "key",
            "text",
            "entities",
            "source_ids",
            "origin_chunk",
            "event_time",
            "scope",
            "derived_from",
            "embedded",
            "distiller",
            "status",
        ]
        if self.dim:
            columns.append("vector")
        where = f"status = '{ACTIVE}' AND distiller = {sql_quote(distiller)}"
        with lance_errors("read memories to consolidate"):
            data = ldb.scan(self.table, where, columns)
        vectors = ldb.vector_matrix(data, self.dim)
        plain = data.select([c for c in data.column_names if c != "vector"]).to_pylist()
        return [(memory_from_row(r), r["origin_chunk"] or "", bool(r["embedded"]))
                for r in plain], vectors  # fmt: skip

    def active_table(
        self, with_vectors: bool, columns: Sequence[str] | None = None, *,
        ids: Sequence[str] | None = None, addresses: bool = False, embedded_only: bool = False,
    ) -> pa.Table:  # fmt: skip
        """Memories recall may show, as Arrow (id, sources, status, scope…[, vector]): the
        active ones and stale notes about code (shown marked stale). Only those of `ids`
        when given, only those with a vector when `embedded_only`; `addresses` adds each
        row's ADDRESS."""
        columns = list(columns or ["id", "type", "key", "text", "source_ids", "origin_chunk",
                                   "embedded", "status", "scope"])  # fmt: skip
        if with_vectors and self.dim:
            columns.append("vector")
        if addresses:
            columns.append(ADDRESS)
        where = f"{_SHOWN} AND embedded = true" if embedded_only else _SHOWN
        with lance_errors("read memories"):
            return ldb.scan(self.table, where, columns, ids)

    def shown_addresses(self) -> dict[str, int]:
        """Id → ADDRESS of the memories recall may show (see `active_table`)."""
        with lance_errors("read memory ids"):
            t = ldb.scan(self.table, _SHOWN, ["id", ADDRESS])
        return dict(zip(t.column("id").to_pylist(), t.column(ADDRESS).to_pylist(), strict=True))

    # -- writes (through IndexStore) ----------------------------------------------------

    def insert(
        self, memories: Sequence[tuple[Memory, str]], project: str = "", *, replace: bool = False,
        vectors: Mapping[str, Sequence[float]] | None = None,
    ) -> None:  # fmt: skip
        """Add (memory, origin chunk id) pairs; stored ids are left alone unless `replace`.
        Memories with an entry in `vectors` go in embedded."""
        if not memories:
            return
        now = ldb.now()
        rows = [
            {
                "id": m.id, "type": m.type, "key": m.key, "text": m.text,
                "entities": list(m.entities), "source_ids": list(m.source_ids),
                "origin_chunk": origin, "status": m.status, "superseded_by": None,
                "derived_from": list(m.derived_from), "distiller": m.distiller,
                "embedded": False,
                "event_time": m.event_time, "valid_from": now, "valid_to": None,
                "scope": scope_row(project, m.scope),
            }
            for m, origin in memories
        ]  # fmt: skip
        with lance_errors(f"insert {len(rows)} memories"):
            ldb.upsert(self.table, rows, self.dim, vectors, replace=replace)

    def set_status(
        self, ids: Sequence[str], status: str, column: str = "id", was: str | None = None
    ) -> None:
        """Set the status of the memories whose `column` is in `ids` (and whose status is
        `was`, when given)."""
        only = "" if was is None else f" AND status = {sql_quote(was)}"
        with lance_errors(f"mark memories {status}"):
            ldb.update_ids(self.table, column, ids, {"status": status}, only)

    def set_status_by_origin(self, chunk_ids: Sequence[str], status: str, *, was: str) -> None:
        """Set the status of the memories distilled from `chunk_ids` that are now `was`
        (a forgotten or superseded memory keeps its status when its chunk moves)."""
        self.set_status(chunk_ids, status, column="origin_chunk", was=was)

    def set_vectors(
        self, vectors: Mapping[str, Sequence[float]], keys: Mapping[str, str] | None = None
    ) -> None:
        if not vectors:
            return
        with lance_errors(f"store {len(vectors)} vectors"):
            ldb.update_columns(self.table, ldb.vector_columns(vectors, keys))

    def vectors_by_key(self, keys: Sequence[str]) -> dict[str, list[float]]:
        """As `ChunkRows.vectors_by_key`, over memories (any status)."""
        with lance_errors("read stored vectors"):
            return ldb.vectors_by_key(self.table, keys)

    def supersede(self, by: Mapping[str, str], *, close: bool) -> None:
        """Mark memories superseded by others (id → superseding id); `close` also ends their
        validity (a contradicted fact), else they stay valid and attributable."""
        groups: dict[str, list[str]] = {}
        for mid, newer in by.items():
            groups.setdefault(newer, []).append(mid)
        values: dict[str, Any] = {"status": SUPERSEDED}
        if close:
            values["valid_to"] = ldb.now()
        with lance_errors("mark memories superseded"):
            for newer, ids in groups.items():
                ldb.update_ids(self.table, "id", ids, {**values, "superseded_by": newer})

    def outdate(self, by: Mapping[str, str | None]) -> None:
        """Mark memories their chunk no longer gives superseded: by the memory it gives now
        where there is one (id → that id), else by none. One write for them all."""
        if not by:
            return
        with lance_errors("mark outdated memories superseded"):
            ldb.update_columns(self.table, {"id": list(by), "status": [SUPERSEDED] * len(by),
                                            "superseded_by": list(by.values())})  # fmt: skip

    def restore(self, statuses: Mapping[str, str]) -> None:
        """Put memories back to a status (an undone review decision): no longer superseded
        or closed."""
        groups: dict[str, list[str]] = {}
        for mid, status in statuses.items():
            groups.setdefault(status, []).append(mid)
        with lance_errors("restore memories"):
            for status, ids in groups.items():
                values: dict[str, Any] = {"status": status, "superseded_by": None,
                                          "valid_to": None}  # fmt: skip
                ldb.update_ids(self.table, "id", ids, values)

    def reactivate(self, ids: Sequence[str]) -> None:
        """Superseded members of an erased abstraction are active again."""
        values: dict[str, Any] = {"status": ACTIVE, "superseded_by": None, "valid_to": None}
        with lance_errors("reactivate memories"):
            ldb.update_ids(self.table, "id", ids, values)

    def erase(self, ids: Sequence[str]) -> None:
        """Blank a memory's text, key, entities and vector (forget with erasure)."""
        if not ids:
            return
        with lance_errors("erase memories"):
            found = ldb.take(self.table, ids).to_pylist()
            for row in found:
                row.update(text="", key="", entities=[], embedded=False, vector_key=None)
                if self.dim:
                    row["vector"] = None
            ldb.replace_rows(self.table, found)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove rows (memories of a note whose write never completed)."""
        with lance_errors(f"delete {len(ids)} memories"):
            ldb.delete_ids(self.table, "id", ids)
