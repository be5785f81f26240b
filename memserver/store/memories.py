"""Rows of the `memories` table (the distilled view), over the table LanceStore opened.

Memories distilled from a code chunk follow it: when the chunk is closed they
turn `stale` (and leave search), when it comes back they are `active` again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from memserver.core.types import Memory
from memserver.store.lance import _batches, _in, _now, _take, store_error

ACTIVE = "active"
STALE = "stale"
_COLUMNS = ["id", "type", "key", "text", "entities", "source_ids", "distiller", "status"]


def memory_from_row(row: dict[str, Any]) -> Memory:
    return Memory(
        id=row["id"], type=row["type"], key=row["key"], text=row["text"],
        source_ids=tuple(row["source_ids"] or ()), entities=tuple(row["entities"] or ()),
        distiller=row["distiller"] or "", status=row["status"],
    )  # fmt: skip


class MemoryRows:
    def __init__(self, table: Any, dim: int) -> None:
        self.table = table
        self.dim = dim

    def states(self) -> dict[str, tuple[str, str]]:
        """Every memory id → (status, origin chunk)."""
        try:
            t = self.table.search().select(["id", "status", "origin_chunk"]).limit(None).to_arrow()
        except Exception as exc:
            raise store_error("read memory ids", exc) from exc
        return {
            i: (s, o)
            for i, s, o in zip(
                t.column("id").to_pylist(),
                t.column("status").to_pylist(),
                t.column("origin_chunk").to_pylist(),
                strict=True,
            )
        }

    def insert(self, memories: Sequence[tuple[Memory, str]]) -> None:
        """Add (memory, origin chunk id) pairs; ids already stored are left alone."""
        if not memories:
            return
        now = _now()
        rows = []
        for m, origin in memories:
            row: dict[str, Any] = {
                "id": m.id, "type": m.type, "key": m.key, "text": m.text,
                "entities": list(m.entities), "source_ids": list(m.source_ids),
                "origin_chunk": origin, "status": m.status, "superseded_by": None,
                "derived_from": [], "distiller": m.distiller, "embedded": False,
                "event_time": None, "valid_from": now, "valid_to": None,
                "scope": {"project": None, "user": None, "session": None, "agent": None},
            }  # fmt: skip
            if self.dim:
                row["vector"] = [0.0] * self.dim
            rows.append(row)
        data = pa.Table.from_pylist(rows, schema=self.table.schema)
        try:
            self.table.merge_insert("id").when_not_matched_insert_all().execute(data)
        except Exception as exc:
            raise store_error(f"insert {len(rows)} memories", exc) from exc

    def set_status_by_origin(self, chunk_ids: Sequence[str], status: str) -> None:
        self.set_status(chunk_ids, status, column="origin_chunk")

    def set_status(self, ids: Sequence[str], status: str, column: str = "id") -> None:
        """Set the status of the memories whose `column` is in `ids`."""
        try:
            for batch in _batches(list(ids)):
                self.table.update(where=_in(column, batch), values={"status": status})
        except Exception as exc:
            raise store_error(f"mark memories {status}", exc) from exc

    def unembedded(self, limit: int) -> list[Memory]:
        try:
            rows = (
                self.table.search()
                .where(f"embedded = false AND status = '{ACTIVE}'")
                .select(_COLUMNS)
                .limit(limit)
                .to_list()
            )
        except Exception as exc:
            raise store_error("read memories to embed", exc) from exc
        return [memory_from_row(r) for r in rows]

    def count_unembedded(self) -> int:
        return int(self.table.count_rows(f"embedded = false AND status = '{ACTIVE}'"))

    def count_active(self) -> int:
        return int(self.table.count_rows(f"status = '{ACTIVE}'"))

    def get(self, ids: Sequence[str]) -> dict[str, Memory]:
        try:
            rows = _take(self.table, ids, _COLUMNS).to_pylist()
        except Exception as exc:
            raise store_error("read memories", exc) from exc
        return {r["id"]: memory_from_row(r) for r in rows}

    def active_table(self, with_vectors: bool) -> pa.Table:
        """Active memories as Arrow (id, origin, sources, text…[, vector]) for the recall view."""
        columns = ["id", "type", "key", "text", "source_ids", "origin_chunk", "embedded"]
        if with_vectors and self.dim:
            columns.append("vector")
        try:
            return (
                self.table.search().where(f"status = '{ACTIVE}'").select(columns)
                .limit(None).to_arrow()
            )  # fmt: skip
        except Exception as exc:
            raise store_error("read memories", exc) from exc
