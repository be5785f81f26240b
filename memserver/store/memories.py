"""Rows of the `memories` table (the distilled view), over the table LanceStore opened.

Memories distilled from a code chunk follow it: when the chunk is closed they
turn `stale` (and leave search), when it comes back they are `active` again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from memserver.core.types import Memory
from memserver.store.lance import (
    ADDRESS,
    _batches,
    _in,
    _now,
    _take,
    scan,
    scope_pairs,
    scope_row,
    select,
    sql_quote,
    store_error,
    upsert,
)

ACTIVE = "active"
STALE = "stale"
FORGOTTEN = "forgotten"
SUPERSEDED = "superseded"
_STALE_NOTE = f"status = '{STALE}' AND array_length(source_ids) > 1"
_SHOWN = f"status = '{ACTIVE}' OR ({_STALE_NOTE})"
_COLUMNS = [
    "id", "type", "key", "text", "entities", "source_ids", "distiller", "status",
    "event_time", "scope", "derived_from",
]  # fmt: skip


def memory_from_row(row: dict[str, Any]) -> Memory:
    return Memory(
        id=row["id"], type=row["type"], key=row["key"], text=row["text"],
        source_ids=tuple(row["source_ids"] or ()), entities=tuple(row["entities"] or ()),
        distiller=row["distiller"] or "", status=row["status"],
        event_time=row.get("event_time"), scope=scope_pairs(row.get("scope")),
        derived_from=tuple(row.get("derived_from") or ()),
    )  # fmt: skip


class MemoryRows:
    def __init__(self, table: Any, dim: int) -> None:
        self.table = table
        self.dim = dim

    def _read(self, columns: list[str], wheres: Sequence[str | None], action: str) -> pa.Table:
        try:
            parts = [
                self.table.search().where(w).select(columns).limit(None).to_arrow()
                if w else self.table.search().select(columns).limit(None).to_arrow()
                for w in wheres
            ]  # fmt: skip
        except Exception as exc:
            raise store_error(action, exc) from exc
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def states(self, origins: Sequence[str] | None = None) -> dict[str, tuple[str, str]]:
        """Every memory id → (status, origin chunk); only those of `origins` when given."""
        wheres: list[str | None] = [None]
        if origins is not None:
            wheres = [_in("origin_chunk", b) for b in _batches(list(origins))] or []
        if not wheres:
            return {}
        t = self._read(["id", "status", "origin_chunk"], wheres, "read memory ids")
        return {
            i: (s, o)
            for i, s, o in zip(
                t.column("id").to_pylist(),
                t.column("status").to_pylist(),
                t.column("origin_chunk").to_pylist(),
                strict=True,
            )
        }

    def citations(self, of: Sequence[str] | None = None) -> dict[str, tuple[str, ...]]:
        """Memories that cite chunks besides their origin (notes about code) → all sources;
        only those citing one of `of` when given."""
        many = "array_length(source_ids) > 1"
        wheres: list[str | None] = [many]
        if of is not None:
            wheres = [
                f"{many} AND array_has_any(source_ids, [{', '.join(sql_quote(c) for c in b)}])"
                for b in _batches(list(of))
            ]  # fmt: skip
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
        wheres = []
        for b in _batches(list(chunk_ids)):
            listed = ", ".join(sql_quote(c) for c in b)
            wheres.append(f"origin_chunk IN ({listed}) OR (array_length(source_ids) > 1 "
                          f"AND array_has_any(source_ids, [{listed}]))")  # fmt: skip
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
        if not chunk_ids:
            return []
        rows = []
        for batch in _batches(list(chunk_ids)):
            rows += select(self.table, _in("origin_chunk", batch), _COLUMNS, None, "read memories")
        return [memory_from_row(r) for r in rows]

    def citing(self, chunk_ids: Sequence[str]) -> list[str]:
        """Ids of memories whose sources include any of `chunk_ids`."""
        wanted = set(chunk_ids)
        return [m for m, sources in self.citations(of=chunk_ids).items() if wanted & set(sources)]

    def erase(self, ids: Sequence[str]) -> None:
        """Blank a memory's text, key, entities and vector (forget with erasure)."""
        if not ids:
            return
        try:
            rows = _take(self.table, ids).to_pylist()
            for row in rows:
                row.update(text="", key="", entities=[], embedded=False)
                if self.dim:
                    row["vector"] = [0.0] * self.dim
            data = pa.Table.from_pylist(rows, schema=self.table.schema)
            self.table.merge_insert("id").when_matched_update_all().execute(data)
        except Exception as exc:
            raise store_error("erase memories", exc) from exc

    def insert(
        self, memories: Sequence[tuple[Memory, str]], project: str = "", *, replace: bool = False,
        vectors: Mapping[str, Sequence[float]] | None = None,
    ) -> None:  # fmt: skip
        """Add (memory, origin chunk id) pairs; stored ids are left alone unless `replace`.
        Memories with an entry in `vectors` go in embedded."""
        if not memories:
            return
        now = _now()
        rows = []
        for m, origin in memories:
            row: dict[str, Any] = {
                "id": m.id, "type": m.type, "key": m.key, "text": m.text,
                "entities": list(m.entities), "source_ids": list(m.source_ids),
                "origin_chunk": origin, "status": m.status, "superseded_by": None,
                "derived_from": list(m.derived_from), "distiller": m.distiller,
                "embedded": False,
                "event_time": m.event_time, "valid_from": now, "valid_to": None,
                "scope": scope_row(project, m.scope),
            }  # fmt: skip
            rows.append(row)
        upsert(self.table, rows, self.dim, vectors, replace=replace, what="memories")

    def set_status_by_origin(self, chunk_ids: Sequence[str], status: str, *, was: str) -> None:
        """Set the status of the memories distilled from `chunk_ids` that are now `was`
        (a forgotten or superseded memory keeps its status when its chunk moves)."""
        self.set_status(chunk_ids, status, column="origin_chunk", was=was)

    def set_status(
        self, ids: Sequence[str], status: str, column: str = "id", was: str | None = None
    ) -> None:
        """Set the status of the memories whose `column` is in `ids` (and whose status is
        `was`, when given)."""
        only = "" if was is None else f" AND status = {sql_quote(was)}"
        try:
            for batch in _batches(list(ids)):
                self.table.update(where=_in(column, batch) + only, values={"status": status})
        except Exception as exc:
            raise store_error(f"mark memories {status}", exc) from exc

    def unembedded(self, limit: int) -> list[Memory]:
        where = f"embedded = false AND status = '{ACTIVE}'"
        rows = select(self.table, where, _COLUMNS, limit, "read memories to embed")
        return [memory_from_row(r) for r in rows]

    def count_unembedded(self) -> int:
        return int(self.table.count_rows(f"embedded = false AND status = '{ACTIVE}'"))

    def count_active(self) -> int:
        return int(self.table.count_rows(f"status = '{ACTIVE}'"))

    def count_searchable(self) -> int:
        """Active memories plus stale notes about code (which recall shows, marked stale)."""
        return self.count_active() + int(self.table.count_rows(_STALE_NOTE))

    def count(self, status: str) -> int:
        return int(self.table.count_rows(f"status = {sql_quote(status)}"))

    def get(self, ids: Sequence[str]) -> dict[str, Memory]:
        try:
            rows = _take(self.table, ids, _COLUMNS).to_pylist()
        except Exception as exc:
            raise store_error("read memories", exc) from exc
        return {r["id"]: memory_from_row(r) for r in rows}

    def consolidation_table(self, distiller: str) -> pa.Table:
        """Active memories of one distiller with everything consolidation weighs."""
        columns = ["id", "type", "key", "text", "entities", "source_ids", "origin_chunk",
                   "event_time", "scope", "derived_from", "embedded"]  # fmt: skip
        if self.dim:
            columns.append("vector")
        where = f"status = '{ACTIVE}' AND distiller = {sql_quote(distiller)}"
        try:
            return self.table.search().where(where).select(columns).limit(None).to_arrow()
        except Exception as exc:
            raise store_error("read memories to consolidate", exc) from exc

    def supersede(self, by: Mapping[str, str], *, close: bool) -> None:
        """Mark memories superseded by others (id → superseding id); `close` also ends their
        validity (a contradicted fact), else they stay valid and attributable."""
        groups: dict[str, list[str]] = {}
        for mid, newer in by.items():
            groups.setdefault(newer, []).append(mid)
        values: dict[str, Any] = {"status": SUPERSEDED}
        if close:
            values["valid_to"] = _now()
        try:
            for newer, ids in groups.items():
                for batch in _batches(ids):
                    self.table.update(where=_in("id", batch),
                                      values={**values, "superseded_by": newer})  # fmt: skip
        except Exception as exc:
            raise store_error("mark memories superseded", exc) from exc

    def active_table(
        self, with_vectors: bool, columns: Sequence[str] | None = None, *,
        ids: Sequence[str] | None = None, addresses: bool = False,
    ) -> pa.Table:  # fmt: skip
        """Memories recall may show, as Arrow (id, sources, status, scope…[, vector]): the
        active ones and stale notes about code (shown marked stale). Only those of `ids`
        when given; `addresses` adds each row's ADDRESS."""
        columns = list(columns or ["id", "type", "key", "text", "source_ids", "origin_chunk",
                                   "embedded", "status", "scope"])  # fmt: skip
        if with_vectors and self.dim:
            columns.append("vector")
        if addresses:
            columns.append(ADDRESS)
        return scan(self.table, _SHOWN, columns, ids, "read memories")

    def shown_addresses(self) -> dict[str, int]:
        """Id → ADDRESS of the memories recall may show (see `active_table`)."""
        t = scan(self.table, _SHOWN, ["id", ADDRESS], None, "read memory ids")
        return dict(zip(t.column("id").to_pylist(), t.column(ADDRESS).to_pylist(), strict=True))
