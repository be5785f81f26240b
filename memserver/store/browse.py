"""Read-only queries for people looking at an index (the review page, `memserver ui`).

Memories listed by status, type, scope and time with the chunks they cite; the audit log
filtered by op, actor, target and time; notes whose text was redacted; a chunk with the
memories around it. Our own frozen types come out; filters are SQL built with `sql_quote`
and `in_list` only. Nothing here writes.

An event is named by its `key` (`Event.key`): an `undo` event lists the key of the event
it undid among its targets, which is how `EventRecord.undone_by` is found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from memserver.core.requests import SCOPE_KEYS, Scope
from memserver.core.types import ACTIVE, STALE, Chunk, Memory
from memserver.store import lancedb as ldb
from memserver.store.chunks import CHUNK_COLUMNS, chunks_from_table
from memserver.store.events import Event
from memserver.store.index import EVENTS, MEMORIES, IndexStore
from memserver.store.lancedb import in_list, lance_errors, sql_quote
from memserver.store.memories import memory_from_row

__all__ = [
    "REDACTION_MARK",
    "Browser",
    "ChunkDetail",
    "CitedChunk",
    "EventQuery",
    "EventRecord",
    "MemoryDetail",
    "MemoryQuery",
    "MemoryRecord",
    "Page",
    "RedactedNote",
]

T = TypeVar("T")
REDACTION_MARK = "[REDACTED:"  # what the scrubber leaves in place of a secret
NOTE_ORIGINS = ("note", "turn")
_MEMORY_COLUMNS = [
    "id", "type", "key", "text", "entities", "source_ids", "distiller", "status",
    "event_time", "scope", "derived_from", "origin_chunk", "superseded_by", "valid_from",
    "valid_to", "embedded",
]  # fmt: skip
_EVENT_COLUMNS = ["time", "op", "targets", "before", "after", "actor", "reason"]
_ABOUT_NOTES = "array_length(source_ids) > 1"  # notes citing code, abstractions


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: tuple[T, ...]
    total: int
    offset: int
    limit: int

    @property
    def next_offset(self) -> int | None:
        return self.offset + self.limit if self.offset + self.limit < self.total else None

    @property
    def previous_offset(self) -> int | None:
        return max(0, self.offset - self.limit) if self.offset > 0 else None


@dataclass(frozen=True, slots=True)
class MemoryQuery:
    """Which memories to list; empty fields do not filter. `scope` matches exactly the
    given keys; `project_wide` keeps only memories without any scope key."""

    statuses: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    scope: Scope = ()
    project_wide: bool = False
    since: datetime | None = None  # on the memory's time: when it happened, else stored
    until: datetime | None = None
    distillers: tuple[str, ...] = ()  # what made them: notes, consolidation, code distillers
    limit: int = 50
    offset: int = 0


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A memory with the columns `Memory` leaves out."""

    memory: Memory
    origin_chunk: str
    superseded_by: str
    stored_at: datetime | None
    valid_to: datetime | None
    embedded: bool

    @property
    def time(self) -> datetime | None:
        return self.memory.event_time or self.stored_at


@dataclass(frozen=True, slots=True)
class CitedChunk:
    """One chunk a memory cites, and whether it is still what the index holds."""

    chunk: Chunk
    current: bool
    role: str  # origin (the note or code it was made from), code block, cited code


@dataclass(frozen=True, slots=True)
class MemoryDetail:
    record: MemoryRecord
    sources: tuple[CitedChunk, ...]
    missing: tuple[str, ...]  # cited ids no row holds any more (erased notes)
    replacement: MemoryRecord | None  # what superseded it
    members: tuple[MemoryRecord, ...]  # an abstraction's `derived_from`
    derived: tuple[MemoryRecord, ...]  # abstractions built from it
    events: tuple[EventRecord, ...]


@dataclass(frozen=True, slots=True)
class ChunkDetail:
    cited: CitedChunk
    made: tuple[MemoryRecord, ...]  # memories made from it (its origin)
    citing: tuple[MemoryRecord, ...]  # other memories that cite it
    code_blocks: tuple[Chunk, ...]  # a note's code blocks
    events: tuple[EventRecord, ...]


@dataclass(frozen=True, slots=True)
class EventQuery:
    ops: tuple[str, ...] = ()
    actors: tuple[str, ...] = ()
    target: str = ""
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 100
    offset: int = 0


@dataclass(frozen=True, slots=True)
class EventRecord:
    event: Event
    key: str
    undone_by: str = ""  # the key of the `undo` event that undid it


@dataclass(frozen=True, slots=True)
class RedactedNote:
    chunk: Chunk
    kinds: dict[str, int] = field(default_factory=dict)  # redaction kind → how many
    memory_ids: tuple[str, ...] = ()
    checked: bool = False  # a person marked it checked (and did not undo that)


def _ts(when: datetime) -> str:
    utc = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return f"timestamp {sql_quote(utc.strftime('%Y-%m-%d %H:%M:%S.%f'))}"


def _and(parts: Sequence[str]) -> str | None:
    return " AND ".join(f"({p})" for p in parts) if parts else None


def _record(row: dict[str, Any]) -> MemoryRecord:
    return MemoryRecord(
        memory_from_row(row), row.get("origin_chunk") or "", row.get("superseded_by") or "",
        row.get("valid_from"), row.get("valid_to"), bool(row.get("embedded")),
    )  # fmt: skip


def _event(row: dict[str, Any]) -> Event:
    return Event(row["time"], row["op"], tuple(row["targets"] or ()), row["before"] or "",
                 row["after"] or "", row["actor"] or "", row["reason"] or "")  # fmt: skip


def redaction_kinds(text: str) -> dict[str, int]:
    kinds: dict[str, int] = {}
    start = text.find(REDACTION_MARK)
    while start != -1:
        end = text.find("]", start)
        if end == -1:
            break
        kind = text[start + len(REDACTION_MARK) : end]
        kinds[kind] = kinds.get(kind, 0) + 1
        start = text.find(REDACTION_MARK, end)
    return kinds


class Browser:
    """Read-only views of one index for a person (every read sees the latest commit)."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store

    # -- memories -----------------------------------------------------------------------

    def _memory_rows(self, where: str | None) -> list[dict[str, Any]]:
        with lance_errors("read memories"):
            return list(ldb.scan(self.store.table(MEMORIES), where, _MEMORY_COLUMNS).to_pylist())

    def memories(self, q: MemoryQuery) -> Page[MemoryRecord]:
        """Memories matching `q`, newest first."""
        parts = []
        if q.statuses:
            parts.append(in_list("status", q.statuses))
        if q.types:
            parts.append(in_list("type", q.types))
        parts += [f"scope.{k} = {sql_quote(v)}" for k, v in q.scope if k in SCOPE_KEYS]
        if q.project_wide:
            parts += [f"scope.{k} IS NULL" for k in SCOPE_KEYS]
        if q.since is not None:
            parts.append(f"coalesce(event_time, valid_from) >= {_ts(q.since)}")
        if q.until is not None:
            parts.append(f"coalesce(event_time, valid_from) <= {_ts(q.until)}")
        if q.distillers:
            parts.append(in_list("distiller", q.distillers))
        # sort on three columns, then read the page's rows whole
        with lance_errors("read memories"):
            keys = ldb.scan(self.store.table(MEMORIES), _and(parts),
                            ["id", "event_time", "valid_from"]).to_pylist()  # fmt: skip
        never = datetime.min.replace(tzinfo=UTC)
        keys.sort(key=lambda r: (r["event_time"] or r["valid_from"] or never, r["id"]),
                  reverse=True)  # fmt: skip
        window = [r["id"] for r in keys[q.offset : q.offset + q.limit]]
        return Page(tuple(self.records(window)), len(keys), q.offset, q.limit)

    def stale_notes(self, limit: int = 200) -> list[MemoryRecord]:
        """Stale memories of notes that cite code (the review queue), oldest change first."""
        rows = self._memory_rows(f"status = '{STALE}' AND {_ABOUT_NOTES}")
        return sorted((_record(r) for r in rows), key=lambda r: r.memory.id)[:limit]

    def counts(self) -> dict[str, int]:
        """Memories per status."""
        with lance_errors("count memories"):
            t = ldb.scan(self.store.table(MEMORIES), None, ["status"])
        out: dict[str, int] = {}
        for s in t.column("status").to_pylist():
            out[s] = out.get(s, 0) + 1
        return out

    def memory_facets(self) -> tuple[list[str], list[str]]:
        """(types, distillers) the memories table holds, for filter menus."""
        with lance_errors("read memory types"):
            t = ldb.scan(self.store.table(MEMORIES), None, ["type", "distiller"])
        return (sorted(set(t.column("type").to_pylist())),
                sorted(set(d or "" for d in t.column("distiller").to_pylist())))  # fmt: skip

    def memory(self, memory_id: str) -> MemoryDetail | None:
        rows = self._memory_rows(in_list("id", [memory_id]))
        if not rows:
            return None
        record = _record(rows[0])
        m = record.memory
        replacement = None
        if record.superseded_by:
            found = self._memory_rows(in_list("id", [record.superseded_by]))
            replacement = _record(found[0]) if found else None
        members = self.records(m.derived_from)
        derived = [_record(r) for r in self._memory_rows(
            f"array_has(derived_from, {sql_quote(m.id)})")]  # fmt: skip
        sources, missing = self.cited(m.source_ids, record.origin_chunk)
        return MemoryDetail(record, tuple(sources), tuple(missing), replacement, tuple(members),
                            tuple(derived), tuple(self.events_of(m.id)))  # fmt: skip

    def records(self, ids: Sequence[str]) -> list[MemoryRecord]:
        """The memories `ids` that exist, in that order."""
        if not ids:
            return []
        by_id = {}
        for batch in ldb.batches(list(ids)):
            by_id.update({r["id"]: _record(r) for r in self._memory_rows(in_list("id", batch))})
        return [by_id[i] for i in ids if i in by_id]

    def cited(self, ids: Sequence[str], origin: str = "") -> tuple[list[CitedChunk], list[str]]:
        """The chunks `ids` in that order, each with whether it is current, and the ids no
        row holds."""
        found = self.store.chunks.get(list(ids))
        states = self.store.chunks.states_of(list(found))
        out, missing = [], []
        for i, cid in enumerate(ids):
            if cid not in found:
                missing.append(cid)
                continue
            chunk = found[cid][0]
            role = "origin" if cid == origin or (i == 0 and not origin) else (
                "code block" if chunk.origin == "code_block" else "cited code")  # fmt: skip
            out.append(CitedChunk(chunk, states.get(cid, False), role))
        return out, missing

    # -- chunks -------------------------------------------------------------------------

    def chunk(self, chunk_id: str) -> ChunkDetail | None:
        found, _ = self.cited([chunk_id], chunk_id)
        if not found:
            return None
        cited = found[0]
        made = [_record(r) for r in self._memory_rows(in_list("origin_chunk", [chunk_id]))]
        made_ids = {r.memory.id for r in made}
        rows = self._memory_rows(f"array_has(source_ids, {sql_quote(chunk_id)})")
        citing = [r for r in map(_record, rows) if r.memory.id not in made_ids]
        blocks: list[Chunk] = []
        if cited.chunk.origin in NOTE_ORIGINS:
            blocks = self.store.chunks.code_blocks_of(cited.chunk.path, current_only=False)
        return ChunkDetail(cited, tuple(made), tuple(citing), tuple(blocks),
                           tuple(self.events_of(chunk_id)))  # fmt: skip

    def current_chunks_of(self, path: str) -> list[Chunk]:
        """The chunks the index holds now for one indexed file, in line order."""
        rec = self.store.files.read().get(path)
        if rec is None:
            return []
        chunks = [c for c, _ in self.store.chunks.get(list(rec.chunk_ids)).values()]
        return sorted(chunks, key=lambda c: c.start_line)

    def redacted_notes(self, limit: int = 200) -> list[RedactedNote]:
        """Current notes and turns whose text holds a redaction, newest first."""
        where = (f"{in_list('origin', NOTE_ORIGINS)} AND valid_to IS NULL AND "
                 f"text LIKE {sql_quote('%' + REDACTION_MARK + '%')}")  # fmt: skip
        with lance_errors("read redacted notes"):
            found = ldb.scan(self.store.table("chunks"), where, CHUNK_COLUMNS)
        chunks = sorted(chunks_from_table(found),
                        key=lambda c: (c.event_time or datetime.min.replace(tzinfo=UTC), c.id),
                        reverse=True)[:limit]  # fmt: skip
        checked = self._checked({c.id for c in chunks})
        out = []
        for c in chunks:
            mems = self._memory_rows(in_list("origin_chunk", [c.id]))
            out.append(RedactedNote(c, redaction_kinds(c.text), tuple(r["id"] for r in mems),
                                    c.id in checked))  # fmt: skip
        return out

    def _checked(self, ids: set[str]) -> set[str]:
        if not ids:
            return set()
        records = self.events(EventQuery(ops=("checked",), limit=10_000)).items
        return {t for r in records if not r.undone_by for t in r.event.targets if t in ids}

    # -- events -------------------------------------------------------------------------

    def _event_rows(self, where: str | None) -> list[Event]:
        with lance_errors("read events"):
            rows = ldb.scan(self.store.table(EVENTS), where, _EVENT_COLUMNS).to_pylist()
        return [_event(r) for r in rows]

    def _undone(self, keys: Sequence[str]) -> dict[str, str]:
        """Event key → the key of the `undo` event naming it."""
        if not keys:
            return {}
        out: dict[str, str] = {}
        for batch in ldb.batches(list(keys), 200):
            listed = ", ".join(sql_quote(k) for k in batch)
            for e in self._event_rows(f"op = 'undo' AND array_has_any(targets, [{listed}])"):
                for t in e.targets:
                    if t in batch:
                        out[t] = e.key
        return out

    def events(self, q: EventQuery) -> Page[EventRecord]:
        """Events matching `q`, newest first."""
        parts = []
        if q.ops:
            parts.append(in_list("op", q.ops))
        if q.actors:
            parts.append(in_list("actor", q.actors))
        if q.target:
            parts.append(f"array_has(targets, {sql_quote(q.target)})")
        if q.since is not None:
            parts.append(f"time >= {_ts(q.since)}")
        if q.until is not None:
            parts.append(f"time <= {_ts(q.until)}")
        found = sorted(self._event_rows(_and(parts)), key=lambda e: (e.time, e.key),
                       reverse=True)  # fmt: skip
        window = found[q.offset : q.offset + q.limit]
        undone = self._undone([e.key for e in window])
        items = tuple(EventRecord(e, e.key, undone.get(e.key, "")) for e in window)
        return Page(items, len(found), q.offset, q.limit)

    def events_of(self, target: str) -> list[EventRecord]:
        return list(self.events(EventQuery(target=target, limit=1000)).items)

    def event(self, key: str, near: str = "") -> EventRecord | None:
        """The event with this key; `near`, one of its targets, narrows the read."""
        where = f"array_has(targets, {sql_quote(near)})" if near else None
        for e in self._event_rows(where):
            if e.key == key:
                return EventRecord(e, key, self._undone([key]).get(key, ""))
        return None

    def event_facets(self) -> tuple[list[str], list[str]]:
        """(ops, actors) the log holds, for filter menus."""
        with lance_errors("read events"):
            t = ldb.scan(self.store.table(EVENTS), None, ["op", "actor"])
        return (sorted(set(t.column("op").to_pylist())),
                sorted(set(a or "" for a in t.column("actor").to_pylist())))  # fmt: skip


def is_searchable(record: MemoryRecord) -> bool:
    """Whether recall may show this memory (active, or a stale note about code)."""
    m = record.memory
    return m.status == ACTIVE or (m.status == STALE and len(m.source_ids) > 1)
