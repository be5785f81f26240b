"""The stored code graph in memory: every current file's tags, indexed for navigation.

`GraphIndex` is one immutable reading of the `symbols` and `refs` tables: the symbol table
resolution runs on, and per file its definitions (ids and chunks from their place) and its
references, read by column and made into `Reference`s only when a question reaches the
file. References are resolved when a question needs them (`memserver.graph.resolve`), once
per reading: a reference into a file that changed is resolved again against the new
reading, never left pointing at what was.

`GraphView` keeps a reading up to date over an `IndexStore`: when the graph tables or the
manifest move (a directory listing), it reads only the versions that changed and derives
a new reading from the last one (`GraphIndex.changed`: dict copies and the changed files'
entries, not a rebuild), so a saved file's definitions are found as soon as its text is.
"""

from __future__ import annotations

import bisect
import gc
import threading
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from memserver.core.graph import (
    Definition,
    FileTags,
    Reference,
    StoredFile,
    file_stem,
    file_version,
    module_stem,
)  # fmt: skip
from memserver.core.types import FileRecord
from memserver.graph import MIN_CONFIDENCE, SymbolTable, resolve
from memserver.graph.languages import exported_as, family
from memserver.store.index import IndexStore

__all__ = ["FileEntry", "GraphIndex", "GraphView", "RefAt", "ref_place"]

_NONE: tuple[Definition, ...] = ()  # what most references resolve to, one object for all


@dataclass(frozen=True, slots=True)
class RefAt:
    """A stored reference and the chunk it sits in."""

    ref: Reference
    chunk_id: str


class FileEntry:
    """One file of a reading: its stored graph, with its references made on first use."""

    __slots__ = ("_at", "_named", "_refs", "stored")

    def __init__(self, stored: StoredFile) -> None:
        self.stored = stored
        self._refs: list[RefAt] | None = None
        self._named: dict[str, list[RefAt]] | None = None
        self._at: dict[Definition, int] | None = None

    @property
    def tags(self) -> FileTags:
        return self.stored.tags

    def names(self) -> Iterable[str]:
        """The names its references use (without making them)."""
        cols = self.stored.columns
        return cols.name if cols is not None else (r.name for r in self.stored.tags.references)

    def refs(self) -> list[RefAt]:
        """Every reference of the file, in line order."""
        if self._refs is None:
            s = self.stored
            if s.columns is not None:
                made = s.columns.references(s.tags.path)
                self._refs = [RefAt(r, c) for r, c in zip(made, s.columns.chunk_id, strict=True)]
            else:
                pairs = zip(s.tags.references, s.reference_chunks, strict=True)
                self._refs = [RefAt(r, c) for r, c in pairs]
        return self._refs

    def named(self, name: str) -> list[RefAt]:
        """Its references that use `name`, in line order. Before its references are made,
        only these are (the first `references` of `filter` over Django 3.2's 248 files that
        use it made 124k references to keep 2.5k: 0.34 s of its 1.1 s)."""
        if self._named is None:
            self._named = {}
        held = self._named.get(name)
        if held is None:
            s = self.stored
            if self._refs is None and s.columns is not None:
                rows = s.columns.rows_named(name)
                made = s.columns.at_rows(s.tags.path, rows)
                held = [RefAt(r, s.columns.chunk_id[at]) for r, at in zip(made, rows, strict=True)]
            else:
                held = [at for at in self.refs() if at.ref.name == name]
            self._named[name] = held
        return held

    def place(self, d: Definition) -> int:
        """The index of one of its definitions among `tags.definitions`."""
        if self._at is None:
            self._at = {x: i for i, x in enumerate(self.stored.tags.definitions)}
        return self._at[d]


class GraphIndex:
    """One reading of the stored graph (immutable; resolution results are memoised)."""

    def __init__(
        self, files: Iterable[StoredFile], manifest: dict[str, FileRecord],
        base: GraphIndex | None = None, gone: Iterable[str] = (),
    ) -> None:  # fmt: skip
        """A reading of `files`; with `base`, the reading `base` changed: `files` replace
        theirs, the files at `gone` leave, and the rest is shared."""
        files = list(files)
        self.manifest = manifest
        self.cache: dict[str, Any] = {}  # derived results of this reading (the repo map)
        self._targets: dict[Reference, tuple[Definition, ...]] = {}
        self._lock = threading.Lock()
        changed = {f.tags.path for f in files} | set(gone)
        if base is None:
            self.stored: dict[str, FileEntry] = {}
            self.versions: dict[str, str] = {}  # version -> path
            self.chunks: dict[str, str] = {}  # chunk id -> path
            self.name_files: dict[str, list[str]] = {}  # reference name -> paths using it
            # what an import binds under a name of its own: the name it imports, or the
            # stem of a module imported whole (or its default) -> (path, local name)
            self.aliases: dict[str, list[tuple[str, str]]] = {}
            old: dict[str, FileEntry] = {}
        else:
            old = {p: base.stored[p] for p in changed if p in base.stored}
            self.stored = {p: e for p, e in base.stored.items() if p not in changed}
            self.versions = dict(base.versions)
            self.chunks = dict(base.chunks)
            self.name_files = dict(base.name_files)
            self.aliases = dict(base.aliases)
        for entry in old.values():
            self._forget(entry)
        added = [FileEntry(f) for f in files]
        for entry in added:
            self._learn(entry)
        # files holding code: the rest (text, markdown, configs) have nothing to navigate
        self.files = {p: e for p, e in self.stored.items() if _holds_code(e.stored)}
        tags = [e.tags for e in added if _holds_code(e.stored)]
        if base is None:
            self.table = SymbolTable(tags)
        else:
            self.table = base.table.replaced([p for p in changed if p in base.table.files], tags)

    def changed(self, files: Iterable[StoredFile], gone: Iterable[str],
                manifest: dict[str, FileRecord]) -> GraphIndex:  # fmt: skip
        return GraphIndex(files, manifest, base=self, gone=gone)

    def _learn(self, entry: FileEntry) -> None:
        s = entry.stored
        path = s.tags.path
        self.stored[path] = entry
        self.versions[s.version] = path
        for cid in (*s.definition_chunks, *_ref_chunks(s)):
            self.chunks.setdefault(cid, path)
        for name in set(entry.names()):
            self.name_files[name] = [*self.name_files.get(name, ()), path]
        for key, local in _renamed(s.tags):
            self.aliases[key] = [*self.aliases.get(key, ()), (path, local)]

    def _forget(self, entry: FileEntry) -> None:
        s = entry.stored
        path = s.tags.path
        self.versions.pop(s.version, None)
        for cid in (*s.definition_chunks, *_ref_chunks(s)):
            if self.chunks.get(cid) == path:
                del self.chunks[cid]
        for name in set(entry.names()):
            kept = [p for p in self.name_files.get(name, ()) if p != path]
            if kept:
                self.name_files[name] = kept
            else:
                self.name_files.pop(name, None)
        for key in {key for key, _ in _renamed(s.tags)}:
            bound = [a for a in self.aliases.get(key, ()) if a[0] != path]
            if bound:
                self.aliases[key] = bound
            else:
                self.aliases.pop(key, None)

    # -- definitions ---------------------------------------------------------------------------

    def def_id(self, d: Definition) -> str:
        entry = self.stored[d.path]
        return entry.stored.definition_ids[entry.place(d)]

    def def_chunk(self, d: Definition) -> str:
        entry = self.stored[d.path]
        return entry.stored.definition_chunks[entry.place(d)]

    def by_id(self, symbol_id: str) -> Definition | None:
        """The definition with this id (s_ + version + place), if current."""
        path = self.versions.get(symbol_id[2:26])
        if path is None:
            return None
        s = self.stored[path].stored
        try:
            place = s.definition_ids.index(symbol_id)
        except ValueError:
            return None
        return s.tags.definitions[place]

    def defs_in_chunk(self, chunk_id: str) -> list[Definition]:
        """Definitions that start in a chunk."""
        path = self.chunks.get(chunk_id)
        if path is None:
            return []
        s = self.stored[path].stored
        return [d for d, c in zip(s.tags.definitions, s.definition_chunks, strict=True)
                if c == chunk_id]  # fmt: skip

    def lookup(self, name: str) -> list[Definition]:
        return self.table.lookup(name)

    def enclosing(self, path: str, qualified: str, line: int = 0) -> Definition | None:
        """The definition a reference's `enclosing` names: of several (overloads, C++
        specializations, a getter and its setter), the innermost whose lines hold `line`,
        else the first. (The first always, as before, gave all 31 of pybind11's
        `process_attribute<...>` the first one's lines as the place of their uses.)"""
        if not qualified:
            return None
        found = self.table.defined_in(path, qualified)
        if len(found) > 1 and line:
            around = [d for d in found if d.start_line <= line <= d.end_line]
            if around:
                return min(around, key=lambda d: d.end_line - d.start_line)
        return found[0] if found else None

    def tags(self, path: str) -> FileTags | None:
        entry = self.files.get(path)
        return entry.tags if entry is not None else None

    # -- references ----------------------------------------------------------------------------

    def refs_named(self, name: str, within: Collection[str] = ()) -> list[RefAt]:
        """The references using `name` (in the files at `within`, when given)."""
        paths = self.name_files.get(name, ())
        if within:
            paths = [path for path in paths if path in within]
        return [at for path in paths for at in self.stored[path].named(name)]

    def count_named(self, name: str) -> int:
        """How many references use a name (cheaper than making them: an upper bound by
        files when their references were not made yet)."""
        return len(self.name_files.get(name, ()))

    def refs_in_chunk(self, chunk_id: str) -> list[RefAt]:
        path = self.chunks.get(chunk_id)
        if path is None:
            return []
        return [at for at in self.stored[path].refs() if at.chunk_id == chunk_id]

    def refs_of(self, path: str) -> list[RefAt]:
        entry = self.stored.get(path)
        return entry.refs() if entry is not None else []

    def inside(self, d: Definition) -> list[RefAt]:
        """References written in a definition's body (its nested definitions included)."""
        refs = self.refs_of(d.path)
        lines = [at.ref.line for at in refs]
        first = bisect.bisect_left(lines, d.start_line)
        return refs[first : bisect.bisect_right(lines, d.end_line)]

    def targets(self, ref: Reference) -> tuple[Definition, ...]:
        """The definitions a reference resolves to: its best candidates at or above
        MIN_CONFIDENCE (several when they tie), else none. Resolved once per reading, and
        only these are kept: a use of a name a hundred classes define has a hundred
        candidates, none trusted (mongoose: 74k candidates for 6k references, a third of
        the objects the cyclic GC walks)."""
        held = self._targets.get(ref)
        if held is None:
            tags = self.stored[ref.path].tags
            with self._lock:  # the resolver's own memos are not thread-safe
                found = resolve(ref, tags, self.table, floor=MIN_CONFIDENCE)
            held = _NONE
            if found and found[0][1] >= MIN_CONFIDENCE:
                best = found[0][1]
                held = tuple(d for d, s in found if s >= best - 1e-9)
            self._targets[ref] = held
        return held

    def references_to(self, targets: Sequence[Definition]) -> list[RefAt]:
        """References that resolve to one of `targets`, in file and line order: uses of
        their names, and in a file importing one under a name of its own (`import Store as
        S`, `const read = require("./parse")`, `import Market from "./shop"`), of that name."""
        wanted = set(targets)
        names = {d.name for d in targets}
        renamed: dict[str, set[str]] = {}  # local name -> the files binding it so
        imports: dict[str, set[str]] = {}  # module's last segment -> the files importing it
        for key in names | {file_stem(d.path) for d in targets}:
            for path, local in self.aliases.get(key, ()):
                if local not in names:
                    renamed.setdefault(local, set()).add(path)
                if key not in names:  # the import itself, named by its module's last segment
                    imports.setdefault(key, set()).add(path)
        # …and what those files export it as (`exports.parse = read`): a name anywhere
        bound = {(d.path, d.name) for d in targets}
        bound |= {(path, local) for local, paths in renamed.items() for path in paths}
        anywhere: set[str] = set()
        for path in {path for path, _ in bound}:
            tags = self.tags(path)
            if tags is None:
                continue
            for imp in tags.imports:
                if not imp.module and (path, imp.name) in bound:
                    exported = exported_as(imp.alias, tags.language)
                    if exported and exported not in names:
                        anywhere.add(exported)
        for exported in anywhere:
            renamed[exported] = set()  # empty: in any file
        found = [
            at for name in sorted(names) for at in self.refs_named(name)
            if wanted.intersection(self.targets(at.ref))
        ]  # fmt: skip
        found += [
            at for local in sorted(renamed) for at in self.refs_named(local, renamed[local])
            if wanted.intersection(self.targets(at.ref))
        ]  # fmt: skip
        found += [  # (only the imports: other uses of such a name are none of these)
            at for stem in sorted(imports) for at in self.refs_named(stem, imports[stem])
            if at.ref.kind == "import" and wanted.intersection(self.targets(at.ref))
        ]  # fmt: skip
        once = {(a.ref.path, a.ref.line, a.ref.column, a.ref.name): a for a in found}
        return sorted(once.values(), key=ref_place)

    def unresolved(self, targets: Sequence[Definition]) -> list[RefAt]:
        """References named like `targets` that resolve to nothing confidently (a receiver
        of unknown type, a name several definitions share): uses the graph cannot tie, any
        of which may be one of them; in file and line order; only in the targets' language
        families (a Python method is not used from JavaScript)."""
        names = {d.name for d in targets}
        families = {family(d.language) for d in targets}
        found = []
        for name in names:
            for at in self.refs_named(name):
                tags = self.tags(at.ref.path)
                elsewhere = tags is not None and family(tags.language) not in families
                if not elsewhere and not self.targets(at.ref):
                    found.append(at)
        return sorted(found, key=ref_place)


def ref_place(at: RefAt) -> tuple[str, int, int]:
    """Where a reference is: file, line, column (an order for lists of them)."""
    return at.ref.path, at.ref.line, at.ref.column


def _renamed(tags: FileTags) -> Iterator[tuple[str, str]]:
    """(what is imported, the local name) of each import binding a name of its own: the
    name it imports (`from m import Store as S`: Store), or for a module imported whole or
    its default export (`const read = require("./parse")`, `import Market from "./shop"`,
    `import pkg.mod as m`), the module's last segment."""
    for imp in tags.imports:
        if not imp.alias or imp.star or not imp.module:
            continue
        if imp.name and imp.name != "default":
            yield imp.name.rsplit(".", 1)[-1], imp.alias
        else:
            stem = module_stem(imp.module, tags.language)
            if stem:
                yield stem, imp.alias


def _one_a_file(current: Iterable[tuple[str, str]], manifest: dict[str, FileRecord]
                ) -> Iterator[tuple[str, str]]:  # fmt: skip
    """(version, path) of the current versions a reading takes: one a file. A batch's
    commit writes a file's new version before it closes the old one, so a reader between
    the two (or after a run killed there, until it is repaired) finds both current: then
    the one the manifest names, written last (until it moves the file is what it was),
    else the first by version. Two versions of one file in a reading would mix their
    definitions (a name found in one, looked up in the other)."""
    pairs = sorted(current)
    if len({p for _, p in pairs}) == len(pairs):  # one a file already (a reader's usual case)
        return iter(pairs)
    named = {file_version(p, r.content_hash, r.chunk_ids) for p, r in manifest.items()}
    chosen: dict[str, str] = {}
    for version, path in pairs:
        held = chosen.get(path)
        if held is None or (version in named and held not in named):
            chosen[path] = version
    return ((v, p) for p, v in chosen.items())


def _ref_chunks(s: StoredFile) -> Sequence[str]:
    return s.columns.chunk_id if s.columns is not None else s.reference_chunks


def _holds_code(s: StoredFile) -> bool:
    tags = s.tags
    refs = s.columns.name if s.columns is not None else tags.references
    return bool(tags.definitions or refs or tags.imports or tags.package)


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
        graph = self.store.graph
        if held is None:
            loaded = graph.load(columns=True)
            chosen = {v for v, _ in _one_a_file(((s.version, s.tags.path) for s in loaded),
                                                manifest)}  # fmt: skip
            reading = GraphIndex([s for s in loaded if s.version in chosen], manifest)
            del loaded
            # A whole reading is most of the process's long-lived objects, made at once: the
            # cyclic GC's next full pass was due, on whichever call came next (41 ms of
            # mongoose's first repository map). Paid here, within this slow call.
            gc.collect()
            return reading
        rows = graph.file_rows()
        current = {
            p: v
            for v, p in _one_a_file(((v, r.path) for v, r in rows.items() if r.current), manifest)
        }
        wanted = [v for p, v in current.items() if v not in held.versions]
        gone = [p for p in held.stored if p not in current]
        if not wanted and not gone:
            held.manifest = manifest  # only mtimes or other tables moved
            return held
        return held.changed(graph.load(wanted, columns=True), gone, manifest)
