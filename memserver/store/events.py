"""The `events` table: an append-only audit log of what changed memories and notes.

Every remember, forget, staleness change and consolidation step appends one row with
the targets, the text before and after (left empty on erasure), who did it and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from memserver.store.lance import _now, sql_quote, store_error

__all__ = ["EventLog"]


class EventLog:
    def __init__(self, table: Any) -> None:
        self.table = table

    def append(
        self, op: str, targets: Sequence[str], *, before: str = "", after: str = "",
        actor: str = "memserver", reason: str = "",
    ) -> None:  # fmt: skip
        self.append_many([(op, targets, before, after)], actor=actor, reason=reason)

    def append_many(
        self, events: Sequence[tuple[str, Sequence[str], str, str]], *, actor: str, reason: str
    ) -> None:
        """(op, targets, before, after) rows sharing one actor and reason, in one commit."""
        now = _now()
        rows = [
            {"time": now, "op": op, "targets": list(targets), "before": before, "after": after,
             "actor": actor, "reason": reason}
            for op, targets, before, after in events
        ]  # fmt: skip
        if not rows:
            return
        try:
            self.table.add(pa.Table.from_pylist(rows, schema=self.table.schema))
        except Exception as exc:
            raise store_error(f"record {len(rows)} events", exc) from exc

    def erase(self, targets: Sequence[str]) -> None:
        """Blank the before/after text of every event naming one of `targets`."""
        try:
            for i in range(0, len(targets), 200):
                where = " OR ".join(
                    f"array_has(targets, {sql_quote(t)})" for t in targets[i : i + 200]
                )
                self.table.update(where=where, values={"before": "", "after": ""})
        except Exception as exc:
            raise store_error("erase event text", exc) from exc

    def of(self, target: str) -> list[dict[str, Any]]:
        """Events naming `target`, oldest first."""
        try:
            rows = (
                self.table.search().where(f"array_has(targets, {sql_quote(target)})")
                .limit(None).to_list()
            )  # fmt: skip
        except Exception as exc:
            raise store_error("read events", exc) from exc
        return sorted(rows, key=lambda r: r["time"])

    def count(self) -> int:
        return int(self.table.count_rows())
