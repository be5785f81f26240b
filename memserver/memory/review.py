"""What a person decides about remembered notes (the review page), as values and plans.

`MemoryService` runs these; every decision is one `IndexStore.revise` (plus the `remember`
or `forget` it stands on) and one event, and nothing is deleted:

  keep      a stale note's memory still holds: a copy citing the code as it is now
            replaces it (the stale one is superseded, kept, attributable).
  rewrite   a memory is edited into a new note (remembered as any note is); the note's
            first memory supersedes the old one.
  checked   a note whose redactions a person looked at leaves the redaction queue.
  undo      each of those, and a forget of memories that was not an erasure, is undone:
            a replaced memory comes back with the status its sources give it now.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from memserver.core.errors import BadRequest
from memserver.core.ids import memory_id as make_memory_id
from memserver.core.requests import Note
from memserver.core.types import ACTIVE, FORGOTTEN, STALE, Chunk, Memory
from memserver.core.writes import Revision
from memserver.store.index import IndexStore

if TYPE_CHECKING:
    from memserver.memory.service import MemoryService
    from memserver.store.events import Event

__all__ = [
    "UNDOABLE", "ForgetPreview", "ReviewResult", "Reviewer", "reanchored", "restored_statuses",
]  # fmt: skip

UNDOABLE = ("keep", "rewrite", "checked", "forget")  # undone by MemoryService.undo


@dataclass
class ForgetPreview:
    """What a forget would reach, computed as `forget` computes it, changing nothing."""

    chunks: list[str] = field(default_factory=list)  # notes, code blocks, file chunks
    memories: list[str] = field(default_factory=list)  # forgotten with them
    stale: list[str] = field(default_factory=list)  # memories citing them: turn stale
    paths: list[str] = field(default_factory=list)  # indexed files dropped (and ignored)
    derived: list[str] = field(default_factory=list)  # abstractions built from what goes

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ReviewResult:
    op: str
    memory_ids: list[str] = field(default_factory=list)  # memories written or restored
    superseded: list[str] = field(default_factory=list)
    note_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _replacements(chunk: Chunk, now: Sequence[Chunk]) -> list[str]:
    """The current chunks of a file that stand where `chunk` stood: the same symbol, else
    the chunks overlapping its old lines."""
    same = [c for c in now if chunk.symbol and c.symbol == chunk.symbol]
    if not same:
        same = [c for c in now if c.start_line <= chunk.end_line and c.end_line >= chunk.start_line]
    return [c.id for c in sorted(same, key=lambda c: c.start_line)]


def reanchored(store: IndexStore, memory: Memory) -> tuple[str, ...]:
    """`memory`'s sources with each closed code chunk replaced by what its file holds now
    in its place (dropped when the file is gone); its note and code blocks stay first."""
    sources = list(memory.source_ids)
    states = store.chunks.states_of(sources)
    closed = [s for s in sources[1:] if not states.get(s, False)]
    if not closed:
        return tuple(sources)
    old = store.chunks.get(closed)
    manifest = store.files.read()
    out = [sources[0]]
    for s in sources[1:]:
        if states.get(s, False):
            out.append(s)
            continue
        found = old.get(s)
        rec = manifest.get(found[0].path) if found else None
        if found is None or rec is None:  # erased, or its file is no longer indexed
            continue
        now = [c for c, _ in store.chunks.get(list(rec.chunk_ids)).values()]
        out.extend(_replacements(found[0], now))
    return tuple(dict.fromkeys(out))


def restored_statuses(store: IndexStore, memories: Iterable[Memory]) -> dict[str, str]:
    """The status each memory's sources give it now: active when its origin and every
    chunk it cites are current, stale when only its origin is; left out when its origin is
    gone (a forgotten note's memories cannot come back without it)."""
    memories = list(memories)
    states = store.chunks.states_of(list({s for m in memories for s in m.source_ids}))
    out = {}
    for m in memories:
        if not states.get(m.source_ids[0], False):
            continue
        ok = all(states.get(s, False) for s in m.source_ids[1:])
        out[m.id] = ACTIVE if ok else STALE
    return out


class Reviewer:
    """The review decisions of one `MemoryService` (its store, lock, actor and embedder)."""

    def __init__(self, svc: MemoryService) -> None:
        self.svc = svc
        self.store = svc.store

    def _memory(self, memory_id: str, allowed: Sequence[str]) -> Memory:
        found = self.store.memories.get([memory_id]).get(memory_id)
        if found is None:
            raise BadRequest(f"unknown memory {memory_id}", hint="reload the page")
        if found.status not in allowed:
            raise BadRequest(f"{memory_id} is {found.status}, not {' or '.join(allowed)}",
                             hint="reload the page: someone may have changed it")  # fmt: skip
        return found

    def keep(self, memory_id: str, *, reason: str = "") -> ReviewResult:
        """A stale note's memory still holds: a copy of it citing the code as it is now
        supersedes it."""
        with self.store.lock(self.svc.lock_timeout):
            old = self._memory(memory_id, (STALE,))
            origin = self.store.chunks.get(old.source_ids[:1]).get(old.source_ids[0])
            if origin is None or origin[0].origin == "file":
                raise BadRequest(
                    f"{memory_id} was distilled from code: it follows its code",
                    hint="it is active again when the code is; edit it into a note, or forget it",
                )
            sources = reanchored(self.store, old)
            new = Memory(
                make_memory_id(sources, old.type, old.text), old.type, old.key, old.text, sources,
                old.entities, old.distiller, ACTIVE, old.event_time, old.scope,
            )  # fmt: skip
            if new.id == old.id:  # its code is current again: it only needs to be active
                restored = {old.id: ACTIVE}
                self.store.revise(Revision(
                    restored=restored, events=[("keep", [old.id], "", "")], actor=self.svc.actor,
                    reason=reason or "kept: still true",
                ))  # fmt: skip
                return ReviewResult("keep", [old.id])
            self.store.revise(Revision(
                added=[(new, sources[0])], vectors=self.svc._vectors([], [new]),
                superseded={old.id: new.id}, events=[("keep", [old.id, new.id], "", "")],
                actor=self.svc.actor, reason=reason or "kept: still true of the current code",
            ))  # fmt: skip
        return ReviewResult("keep", [new.id], [old.id])

    def rewrite(self, memory_id: str, note: Note, *, reason: str = "") -> ReviewResult:
        """Edit a memory into a new note: `note` is remembered as any note is, and its first
        memory supersedes the old one."""
        old = self._memory(memory_id, (ACTIVE, STALE))
        result = self.svc.remember(note)
        if not result.memory_ids:
            raise BadRequest("the new note holds no statement", hint="write a sentence")
        if old.id in result.memory_ids:
            return ReviewResult("rewrite", result.memory_ids, [], result.note_id)
        after = "\n".join(m.text for m in self.store.memories.get(result.memory_ids).values())
        with self.store.lock(self.svc.lock_timeout):
            self.store.revise(Revision(
                superseded={old.id: result.memory_ids[0]},
                events=[("rewrite", [old.id, result.note_id, *result.memory_ids], old.text,
                         after)],
                actor=self.svc.actor, reason=reason or "edited into a new note",
            ))  # fmt: skip
        return ReviewResult("rewrite", result.memory_ids, [old.id], result.note_id)

    def mark_checked(self, note_id: str, *, reason: str = "") -> ReviewResult:
        """A person looked at a note's redactions (it leaves the redaction queue)."""
        states = self.store.chunks.states_of([note_id])
        if not states.get(note_id):
            raise BadRequest(f"no current note {note_id}", hint="reload the page")
        with self.store.lock(self.svc.lock_timeout):
            self.store.revise(Revision(events=[("checked", [note_id], "", "")],
                                       actor=self.svc.actor,
                                       reason=reason or "redactions checked"))  # fmt: skip
        return ReviewResult("checked")

    def undo(self, event: Event, *, reason: str = "") -> ReviewResult:
        """Undo a keep, rewrite, checked or (not erasing) forget of memories: what was
        replaced comes back with the status its sources give it now, what replaced it is
        superseded by it (a rewrite's note is forgotten, not erased)."""
        op, targets = event.op, list(event.targets)
        if op not in UNDOABLE:
            raise BadRequest(f"a {op} cannot be undone here",
                             hint="undo keep, rewrite, checked and forget events")  # fmt: skip
        if any(e.op == "undo" for e in self.store.events.of(event.key)):
            raise BadRequest("this was undone already", hint="reload the audit log")
        restored: dict[str, str] = {}
        superseded: dict[str, str] = {}
        if op in ("keep", "rewrite"):  # the old memory is back, its replacement goes
            old = self.store.memories.get(targets[:1]).get(targets[0])
            restored = restored_statuses(self.store, [old] if old else [])
            if not restored:
                raise BadRequest(f"{targets[0]} cannot come back: its note is gone",
                                 hint="remember the text again")  # fmt: skip
            if op == "keep":  # the kept copy is superseded by the memory it copied
                superseded = {n: targets[0] for n in targets[1:2] if n != targets[0]}
            else:  # the new note and its memories are forgotten (not erased)
                self.svc.forget([targets[1]], reason=f"undo of {event.key}",
                                scope=self.svc.owner_scope([targets[1]]))  # fmt: skip
        why = reason or f"undo of {op}"
        with self.store.lock(self.svc.lock_timeout):
            if op == "forget":
                restored = self._unforget(event)
            self.store.revise(Revision(
                superseded=superseded, restored=restored,
                events=[("undo", [event.key, *targets], "", "")], actor=self.svc.actor, reason=why,
            ))  # fmt: skip
        return ReviewResult("undo", sorted(restored), sorted(superseded))

    def _unforget(self, event: Event) -> dict[str, str]:
        if event.reason.endswith("(erased)"):
            raise BadRequest("an erasure cannot be undone: the text is gone",
                             hint="remember the note again if it should come back")  # fmt: skip
        if any(not t.startswith("m_") for t in event.targets):
            raise BadRequest("forgotten notes and files cannot be undone here",
                             hint="remember the note again, or index the file again after "
                             "removing its pattern from the forgotten list")  # fmt: skip
        found = self.store.memories.get(list(event.targets))
        restored = restored_statuses(
            self.store, [m for m in found.values() if m.status == FORGOTTEN]
        )
        if not restored:
            raise BadRequest("nothing to bring back: those memories were changed since",
                             hint="reload the memory's page")  # fmt: skip
        return restored
