"""The stored code graph in memory: every current file's tags, indexed for navigation.

`GraphIndex` is one immutable reading of the `symbols` and `refs` tables (built from
`StoredFile`s) with the symbol table resolution runs on, definition ids and chunks, and
references by name, by chunk and by enclosing definition. References are resolved when a
question needs them (`memserver.graph.resolve`), once per reading: a reference into a file
that changed is resolved again against the new reading, never left pointing at what was.

`GraphView` keeps a reading up to date over an `IndexStore`: when the graph tables or the
manifest move (a directory listing), it reads the versions that changed and builds a new
`GraphIndex` around the files that did not.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memserver.core.graph import Definition, FileTags, Reference, StoredFile
from memserver.core.types import FileRecord
from memserver.graph import MIN_CONFIDENCE, Candidate, SymbolTable, resolve
from memserver.store.index import IndexStore

__all__ = ["GraphIndex", "GraphView", "RefAt"]


@dataclass(frozen=True, slots=True)
class RefAt:
    """A stored reference and the chunk it sits in."""

    ref: Reference
    chunk_id: str


class GraphIndex:
    """One reading of the stored graph (immutable; resolution results are memoised)."""

    def __init__(self, files: Iterable[StoredFile], manifest: dict[str, FileRecord]) -> None:
        self.stored: dict[str, StoredFile] = {f.tags.path: f for f in files}  # every file
        self.files = {p: f for p, f in self.stored.items() if _holds_code(f.tags)}
        self.manifest = manifest
        self.table = SymbolTable(f.tags for f in self.files.values())
        self.def_id: dict[Definition, str] = {}
        self.by_id: dict[str, Definition] = {}
        self.def_chunk: dict[Definition, str] = {}
        self.defs_in_chunk: dict[str, list[Definition]] = {}
        self.refs_named: dict[str, list[RefAt]] = {}
        self.refs_in_chunk: dict[str, list[RefAt]] = {}
        self.refs_by_path: dict[str, list[RefAt]] = {}  # in line order
        for f in self.files.values():
            for d, sid, cid in zip(f.tags.definitions, f.definition_ids, f.definition_chunks,
                                   strict=True):  # fmt: skip
                self.def_id[d] = sid
                self.by_id[sid] = d
                self.def_chunk[d] = cid
                self.defs_in_chunk.setdefault(cid, []).append(d)
            for r, cid in zip(f.tags.references, f.reference_chunks, strict=True):
                at = RefAt(r, cid)
                self.refs_named.setdefault(r.name, []).append(at)
                self.refs_in_chunk.setdefault(cid, []).append(at)
                self.refs_by_path.setdefault(r.path, []).append(at)
        self._resolved: dict[Reference, list[Candidate]] = {}
        self._lock = threading.Lock()
        self.cache: dict[str, Any] = {}  # derived results of this reading (the repo map)

    # -- resolution -------------------------------------------------------------------------

    def resolve(self, ref: Reference) -> list[Candidate]:
        held = self._resolved.get(ref)
        if held is None:
            tags = self.files[ref.path].tags
            with self._lock:  # the resolver's own memos are not thread-safe
                held = resolve(ref, tags, self.table)
            self._resolved[ref] = held
        return held

    def targets(self, ref: Reference) -> list[Definition]:
        """The definitions a reference resolves to: its best candidates at or above
        MIN_CONFIDENCE (several when they tie), else none."""
        found = self.resolve(ref)
        if not found or found[0][1] < MIN_CONFIDENCE:
            return []
        best = found[0][1]
        return [d for d, s in found if s >= best - 1e-9]

    # -- questions ----------------------------------------------------------------------------

    def lookup(self, name: str) -> list[Definition]:
        return [d for d in self.table.lookup(name) if d in self.def_id]

    def enclosing(self, path: str, qualified: str) -> Definition | None:
        """The definition a reference's `enclosing` names (the first of overloads)."""
        if not qualified:
            return None
        found = self.table.defined_in(path, qualified)
        return found[0] if found else None

    def inside(self, d: Definition) -> list[RefAt]:
        """References written in a definition's body (its nested definitions included)."""
        refs = self.refs_by_path.get(d.path, [])
        lines = [at.ref.line for at in refs]
        first = bisect.bisect_left(lines, d.start_line)
        return refs[first : bisect.bisect_right(lines, d.end_line)]

    def references_to(self, targets: Sequence[Definition]) -> list[RefAt]:
        """References that resolve to one of `targets`, in file and line order."""
        wanted = set(targets)
        names = {d.name for d in targets}
        found = [
            at
            for name in sorted(names)
            for at in self.refs_named.get(name, ())
            if wanted.intersection(self.targets(at.ref))
        ]
        return sorted(found, key=lambda a: (a.ref.path, a.ref.line, a.ref.column))

    def uncertain(self, targets: Sequence[Definition]) -> int:
        """References named like `targets` that resolve to nothing confidently (a receiver
        of unknown type, a name several definitions share): uses the graph cannot tie."""
        names = {d.name for d in targets}
        return sum(
            1 for name in names for at in self.refs_named.get(name, ()) if not self.targets(at.ref)
        )

    def tags(self, path: str) -> FileTags | None:
        f = self.files.get(path)
        return f.tags if f is not None else None


def _holds_code(tags: FileTags) -> bool:
    return bool(tags.definitions or tags.references or tags.imports or tags.package)


class GraphView:
    """A `GraphIndex` of an `IndexStore`, brought up to date when the stores move
    (thread-safe; readers share one reading until the next change)."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._print: list[Any] | None = None
        self._index: GraphIndex | None = None

    def get(self) -> GraphIndex:
        stores = self.store.graph_fingerprint()
        with self._lock:
            if self._index is None or stores is None or stores != self._print:
                self._index = self._update(self._index)
                self._print = stores
            return self._index

    def _update(self, held: GraphIndex | None) -> GraphIndex:
        """A new reading: the versions the stores hold now; those already held are kept."""
        manifest = self.store.files.read()
        rows = self.store.graph.file_rows()
        current = {r.path: v for v, r in rows.items() if r.current}
        kept: list[StoredFile] = []
        wanted: list[str] = []
        for path, version in current.items():
            mine = held.stored.get(path) if held is not None else None
            if mine is not None and mine.version == version:
                kept.append(mine)
            else:
                wanted.append(version)
        if held is None:
            return GraphIndex(self.store.graph.load(), manifest)
        if not wanted and len(kept) == len(held.stored):
            held.manifest = manifest  # only mtimes or other tables moved
            return held
        return GraphIndex([*kept, *self.store.graph.load(wanted)], manifest)
