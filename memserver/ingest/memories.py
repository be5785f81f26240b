"""Keeps the distilled view in step with the chunks while indexing.

New or reopened chunks are distilled (a deterministic distiller, or an LLM one
with a cache) and their memories stored and made searchable; so are chunks that
kept their text but not their name (a renamed class's methods): a live memory the
distiller no longer makes of its chunk is superseded by one it makes now. Memories
of closed chunks turn stale and leave the keyword index. The planner only decides:
what it returns goes into the batch's `FileChanges`, which the store writes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memserver.core.ids import memory_id
from memserver.core.protocols import Distiller
from memserver.core.types import ACTIVE, MEMORY_TYPES, STALE, SUPERSEDED, Chunk, Memory
from memserver.store.index import IndexStore

_LIVE = (ACTIVE, STALE)

MAX_PER_CHUNK = 3


def distill(distiller: Distiller, chunk: Chunk) -> list[Memory]:
    """At most 3 valid memories citing `chunk` (invalid drafts are dropped)."""
    with_source = getattr(distiller, "distill_with_source", None)
    if with_source is not None:  # an LLM distiller says when its fallback answered instead
        producer, drafts = with_source(chunk)
    else:
        producer, drafts = distiller.name, distiller.distill(chunk)
    out: dict[str, Memory] = {}
    for d in drafts[:MAX_PER_CHUNK]:
        if d.type not in MEMORY_TYPES or not d.text.strip():
            continue
        mid = memory_id((chunk.id,), d.type, d.text)
        out[mid] = Memory(mid, d.type, d.key, d.text, (chunk.id,), d.entities, producer)
    return list(out.values())


@dataclass
class Distilled:
    """What distilling a batch's new, reopened and renamed chunks changes."""

    fresh: list[tuple[Memory, str]] = field(default_factory=list)  # to store: (memory, origin)
    revived: list[str] = field(default_factory=list)  # stale memories to make active again
    live: list[Memory] = field(default_factory=list)  # their live memories (keyword index)
    # live memories these chunks no longer give → a memory the chunk gives now (None: none)
    outdated: dict[str, str | None] = field(default_factory=dict)


class MemoryPlanner:
    """`partial`: read the memories of the chunks at hand as they come (a small run over a
    large index, such as one watcher batch) instead of every memory up front."""

    def __init__(self, store: IndexStore, distiller: Distiller | None, partial: bool = False):
        self.store = store
        self.distiller = distiller
        self.partial = partial
        self.states: dict[str, tuple[str, str]] = {}
        self.by_origin: dict[str, list[str]] = defaultdict(list)
        # notes that cite code chunks go stale when that code changes (any distiller)
        self.cited_by: dict[str, list[str]] = defaultdict(list)
        self._seen: set[str] = set()  # chunk ids whose memories are loaded (partial)
        self.added = 0
        self.stale_marked = 0
        if not partial:
            self._take(store.memories.states() if distiller else {},
                       store.memories.citations())  # fmt: skip

    def _take(self, states: dict[str, tuple[str, str]],
              citations: dict[str, tuple[str, ...]]) -> None:  # fmt: skip
        for mid, state in states.items():
            if mid not in self.states:
                self.states[mid] = state
                self.by_origin[state[1]].append(mid)
        for mid, sources in citations.items():
            for cid in sources[1:]:
                if mid not in self.cited_by[cid]:
                    self.cited_by[cid].append(mid)

    def load(self, chunk_ids: Iterable[str]) -> None:
        """Read the memories of these chunks now, in one go (a partial writer reads them as
        they come otherwise; a whole one has them all)."""
        if not self.partial:
            return
        todo = sorted(set(chunk_ids) - self._seen)
        if not todo:
            return
        self._seen.update(todo)
        states, citations = self.store.memories.about(todo)
        self._take(states if self.distiller else {}, citations)

    def chunks_added(self, chunks: Iterable[Chunk]) -> Distilled:
        """Distil chunks that are new, back or renamed: the memories to store, the stale
        ones to make active again, every live memory of these chunks (for the keyword
        index), and the live ones the distiller no longer makes of them (outdated)."""
        if self.distiller is None:
            return Distilled()
        chunks = list(chunks)
        self.load(c.id for c in chunks)
        memories: list[tuple[Memory, str]] = []
        for c in chunks:
            memories.extend((m, c.id) for m in distill(self.distiller, c))
        fresh = [(m, o) for m, o in memories if m.id not in self.states]
        # a memory forgotten or superseded stays so when its chunk comes back
        live = [(m, o) for m, o in memories if self.states.get(m.id, (ACTIVE,))[0] in _LIVE]
        revived = [m.id for m, _ in live if self.states.get(m.id, (ACTIVE,))[0] == STALE]
        made: dict[str, list[str]] = defaultdict(list)
        for m, origin in memories:
            made[origin].append(m.id)
        outdated: dict[str, str | None] = {}
        for c in chunks:
            now = made.get(c.id, [])
            for mid in self.by_origin.get(c.id, ()):
                if mid not in now and self.states[mid][0] in _LIVE:
                    outdated[mid] = now[0] if now else None
                    self.states[mid] = (SUPERSEDED, c.id)
        for m, origin in live:
            self.states[m.id] = (ACTIVE, origin)
            if m.id not in self.by_origin[origin]:
                self.by_origin[origin].append(m.id)
        self.added += len(fresh)
        return Distilled(fresh, revived, [m for m, _ in live], outdated)

    def ids_of(self, chunk_ids: Sequence[str]) -> list[str]:
        self.load(chunk_ids)
        return [mid for cid in chunk_ids for mid in self.by_origin.get(cid, ())]

    def chunks_closed(self, chunk_ids: Sequence[str]) -> list[str]:
        """Memories of closed chunks, and notes citing them, become stale: returns the notes
        (the store marks the distilled memories by their origin).

        Distilled memories leave search with their chunk (the caller drops them from
        the keyword index); a note stays findable, marked stale, so the agent learns
        that what it says about the code may no longer hold.
        """
        if not chunk_ids:
            return []
        self.load(chunk_ids)
        citing = sorted({m for cid in chunk_ids for m in self.cited_by.get(cid, ())})
        self.stale_marked += len(citing)
        if self.distiller is not None:
            for mid in self.ids_of(chunk_ids):
                if self.states[mid][0] == ACTIVE:
                    self.states[mid] = (STALE, self.states[mid][1])
        return citing
