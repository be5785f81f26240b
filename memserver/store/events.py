"""The `events` table: an append-only audit log of what changed memories and notes.

Every remember, forget, staleness change and consolidation step appends one row with
the targets, the text before and after (left empty on erasure), who did it and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memserver.core.ids import content_hash
from memserver.store import lancedb as ldb
from memserver.store.lancedb import Table, in_list, lance_errors, sql_quote

__all__ = ["Event", "EventLog"]

EventRow = tuple[str, Sequence[str], str, str]  # (op, targets, before, after)


@dataclass(frozen=True, slots=True)
class Event:
    time: datetime
    op: str  # add, forget, stale, supersede, consolidate, erase, …
    targets: tuple[str, ...]
    before: str
    after: str
    actor: str
    reason: str

    @property
    def key(self) -> str:
        """A handle on this row (the table has no id column): `e_` + 16 hex of its time, op
        and targets. An `undo` event lists the key of the event it undid among its targets."""
        digest = content_hash(f"{self.time.isoformat()}|{self.op}|{','.join(self.targets)}")
        return "e_" + digest[:16]


class EventLog:
    def __init__(self, table: Table) -> None:
        self.table = table

    def append_many(self, events: Sequence[EventRow], *, actor: str, reason: str) -> None:
        """(op, targets, before, after) rows sharing one actor and reason, in one commit."""
        now = ldb.now()
        rows = [
            {"time": now, "op": op, "targets": list(targets), "before": before, "after": after,
             "actor": actor, "reason": reason}
            for op, targets, before, after in events
        ]  # fmt: skip
        if not rows:
            return
        with lance_errors(f"record {len(rows)} events"):
            ldb.add(self.table, rows)

    def erase(self, targets: Sequence[str]) -> None:
        """Blank the before/after text of every event naming one of `targets`."""
        with lance_errors("erase event text"):
            for batch in ldb.batches(list(targets), 200):
                where = " OR ".join(f"array_has(targets, {sql_quote(t)})" for t in batch)
                ldb.update_where(self.table, where, {"before": "", "after": ""})

    def of(self, target: str) -> list[Event]:
        """Events naming `target`, oldest first."""
        where = f"array_has(targets, {sql_quote(target)})"
        return self.find(where)

    def with_ops(self, ops: Sequence[str]) -> list[Event]:
        """Events of these operations, oldest first."""
        return self.find(in_list("op", ops)) if ops else []

    def find(self, where: str | None = None, limit: int | None = None) -> list[Event]:
        columns = ["time", "op", "targets", "before", "after", "actor", "reason"]
        with lance_errors("read events"):
            found = ldb.scan(self.table, where, columns).to_pylist()
        events = sorted(
            (Event(r["time"], r["op"], tuple(r["targets"] or ()), r["before"] or "",
                   r["after"] or "", r["actor"] or "", r["reason"] or "") for r in found),
            key=lambda e: e.time,
        )  # fmt: skip
        return events if limit is None else events[-limit:]

    def count(self) -> int:
        with lance_errors("count the events"):
            return ldb.count(self.table)
