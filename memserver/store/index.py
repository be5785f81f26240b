"""One index directory: metadata, LanceDB tables, the keyword index and the writer lock.

`IndexStore` is the only store name services import, and the only writer: every change is
one intent (`commit_files`, `store_vectors`, `add_notes`, `forget`, `consolidate`) that owns
the order of the writes, the crash marker and, for erasure, the purge of every old copy.

Write order (DESIGN.md): LanceDB rows, then tantivy, then the files manifest, which is the
commit point of indexed files; for notes the note's chunk row is the commit point, written
after its memories. A `DIRTY` marker is present while a writer works; finding it on open
means a write died midway, and `reconcile` brings the stores back into agreement.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memserver.core.errors import IndexMissing, StoreError
from memserver.core.types import Chunk, Memory
from memserver.core.writes import (
    ConsolidationWrite,
    FileChanges,
    ForgetPlan,
    NoteWrite,
    Revision,
    Vectors,
    file_documents,
)
from memserver.store import forgotten, graphsync, statecache
from memserver.store import lancedb as ldb
from memserver.store.bm25 import Bm25Index
from memserver.store.chunks import ChunkRows
from memserver.store.events import EventLog
from memserver.store.graph import GraphRows
from memserver.store.lancedb import Table, in_list, lance_errors
from memserver.store.lock import WriterLock
from memserver.store.manifest import FileManifest
from memserver.store.memories import ACTIVE, FORGOTTEN, STALE, MemoryRows, memories_where
from memserver.store.meta import IndexMeta, check_compatible, read_meta, write_meta
from memserver.store.schema import (
    SCHEMA_VERSION,
    chunk_schema,
    events_schema,
    files_schema,
    memory_schema,
    refs_schema,
    symbols_schema,
)
from memserver.store.statecache import DIRTY

__all__ = [
    "CHUNKS", "EVENTS", "FILES", "MEMORIES", "REFS", "SYMBOLS", "TABLES", "IndexStore",
    "drop_reshaped_graph", "memories_where",
]  # fmt: skip

CHUNKS = "chunks"
FILES = "files"
MEMORIES = "memories"
EVENTS = "events"
SYMBOLS = "symbols"  # the code graph (store/graph.py)
REFS = "refs"
KEYWORD_DEAD_SHARE = 0.5  # a keyword index is written again once this share is deleted
# a code graph table an older memserver wrote (`memserver index` makes it again)
_GRAPH_FIX = ("run `memserver index`: it makes the code graph again from the files (chunks, "
              "memories and vectors are kept)")  # fmt: skip
TABLES = (CHUNKS, FILES, MEMORIES, EVENTS, SYMBOLS, REFS)


FILE_KEYWORD_DIR = "bm25-files"  # the whole-file keyword index, beside the chunks' "bm25"


def _searchable(m: Memory) -> bool:
    """Recall may show it: active, or a stale note about code (marked stale)."""
    return m.status == ACTIVE or (m.status == STALE and len(m.source_ids) > 1)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def drop_reshaped_graph(index_dir: Path, lock_timeout: float | None) -> bool:
    """Drop the code graph's tables when an older memserver wrote one in another shape; the
    graph is made from the files, and the next index run (whose reconciling finds every
    file without its graph) makes it again; chunks, memories and vectors stay. Only an
    index run calls this (or an import, on its private copy: `lock_timeout` None), under
    the writer lock: other writers refuse such an index with the fix. True when dropped."""
    schemas = {SYMBOLS: symbols_schema(), REFS: refs_schema()}
    with lance_errors(f"open the tables in {index_dir / 'lance'}"):
        db = ldb.connect(index_dir / "lance")
        if not ldb.reshaped(db, schemas):
            return False
        if lock_timeout is None:
            return ldb.drop_if_reshaped(db, schemas)
        with WriterLock(index_dir, lock_timeout, purpose="make the code graph again"):
            return ldb.drop_if_reshaped(db, schemas)


class IndexStore:
    ann_min_rows = 0  # chunks from which an index run builds a vector index (0: never)

    def __init__(self, index_dir: Path, meta: IndexMeta, *, create: bool = False) -> None:
        """Open the index; `create`: make missing tables (writers only: a reader that finds
        one missing says so instead of racing a writer to create it)."""
        self.dir = index_dir
        self.meta = meta
        dim = meta.dim
        schemas = {CHUNKS: chunk_schema(dim), FILES: files_schema(),
                   MEMORIES: memory_schema(dim), EVENTS: events_schema(),
                   SYMBOLS: symbols_schema(), REFS: refs_schema()}  # fmt: skip
        with lance_errors(f"open the tables in {index_dir / 'lance'}"):
            self._db = ldb.connect(index_dir / "lance")
            found = {n: ldb.open_table(self._db, n, sc, create=create,
                                       **({"fix": _GRAPH_FIX} if n in (SYMBOLS, REFS) else {}))
                     for n, sc in schemas.items()}  # fmt: skip
        missing = [n for n, t in found.items() if t is None]
        if missing:
            raise IndexMissing(
                f"the index at {index_dir} is not complete: table {missing[0]!r} is missing",
                hint="run `memserver index` (if one is running, it is still creating the "
                "index: wait for it), or `memserver doctor --repair`",
            )
        self._tables: dict[str, Table] = {n: t for n, t in found.items() if t is not None}
        self.chunks = ChunkRows(self._tables[CHUNKS], dim)
        self.files = FileManifest(self._tables[FILES])
        self.memories = MemoryRows(self._tables[MEMORIES], dim)
        self.events = EventLog(self._tables[EVENTS])
        self.graph = GraphRows(self._tables[SYMBOLS], self._tables[REFS])
        self.keyword = Bm25Index(index_dir / "bm25")
        # whole files, in an index of their own: their statistics must not move the chunks'
        self.file_keyword = Bm25Index(index_dir / FILE_KEYWORD_DIR, optional=True)
        self._writing = 0

    @classmethod
    def open(cls, index_dir: Path, embedder: str, dim: int) -> IndexStore:
        """Open an existing index for reading; refuse a schema/embedder mismatch."""
        meta = read_meta(index_dir)
        if meta is None:
            raise IndexMissing(
                f"no index at {index_dir}",
                hint="run `memserver index` in the project root first "
                "(or pass --root / --index-dir to point at an existing index)",
            )
        check_compatible(meta, embedder, dim)
        return cls(index_dir, meta)

    @classmethod
    def create_or_open(
        cls, index_dir: Path, embedder: str, dim: int, project: str, root: str, tokenizer: str
    ) -> IndexStore:
        meta = read_meta(index_dir)
        if meta is None:
            try:
                index_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the index directory {index_dir}: {exc.strerror or exc}",
                    hint="choose a writable place with --index-dir or MEMSERVER_INDEX_DIR",
                ) from exc
            meta = IndexMeta(
                schema_version=SCHEMA_VERSION, embedder=embedder, dim=dim, tokenizer=tokenizer,
                project=project, root=root, created_at=_now_iso(),
            )  # fmt: skip
            with WriterLock(index_dir, purpose="create the index"):  # one creator at a time
                store = cls(index_dir, meta, create=True)
                write_meta(index_dir, meta)  # last: an index exists once its tables do
            return store
        check_compatible(meta, embedder, dim)
        return cls(index_dir, meta, create=True)

    def drop_stat_cache(self) -> None:
        """Forget what the last `memserver index` saw, so the next one looks again."""
        statecache.forget(self.dir)

    def lock(self, timeout: float, purpose: str = "") -> WriterLock:
        return WriterLock(self.dir, timeout, purpose)

    def graph_fingerprint(self) -> list[Any] | None:
        """What readers of the code graph compare to see that it moved (a directory
        listing: the latest manifests of its tables and of the files manifest)."""
        return statecache.fingerprint(self.dir, (SYMBOLS, REFS, FILES))

    def table(self, name: str) -> Table:
        """A LanceDB table, for the store's own read models and maintenance."""
        return self._tables[name]

    # -- crash marker --------------------------------------------------------------------

    @property
    def dirty(self) -> bool:
        return (self.dir / DIRTY).exists()

    def mark_dirty(self) -> None:
        try:
            (self.dir / DIRTY).write_text(str(os.getpid()), encoding="utf-8")
        except OSError as exc:
            raise StoreError(
                f"cannot write to the index directory {self.dir}: {exc.strerror or exc}",
                hint="the index is read-only or the disk is full: fix permissions, free "
                "space, or use --index-dir",
            ) from exc

    def mark_clean(self) -> None:
        (self.dir / DIRTY).unlink(missing_ok=True)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """A write that a crash leaves marked for repair (nested writes share the marker). On
        an error the keyword-index writer is released (so this process can write again) and
        the marker stays, so the next run reconciles whatever was half done."""
        if self._writing == 0:
            self.mark_dirty()
            self.graph.session(True)
        self._writing += 1
        try:
            yield
        except BaseException:
            self.keyword.rollback()
            self.file_keyword.rollback()
            self._writing -= 1
            if self._writing == 0:
                self.graph.session(False)
            raise
        self._writing -= 1
        if self._writing == 0:
            self.graph.session(False)
            self.mark_clean()

    # -- intents ---------------------------------------------------------------------

    def commit_files(self, c: FileChanges) -> None:
        """One batch of an index run, in the order that a crash anywhere leaves repairable:
        new and reopened rows and the keyword index, and beside them (a thread of its own)
        the code graph's new versions of the batch's files (their tags may come from a
        worker still making them), then closings (the graph versions they replace too),
        then the manifest. Reconciling reads the graph against the manifest alone, so the
        graph's rows need only precede the manifest; written beside the chunks' rows, their
        LanceDB writes (1.3 s of Django's 26 s) overlap those: the run is 0.6 s shorter."""
        with self.writing():
            with ThreadPoolExecutor(1, thread_name_prefix="memserver-graph-write") as pool:
                # joined on the way out, also when a write here fails (that error wins)
                graph_write = pool.submit(self._open_graphs, c)
                self._commit_rows(c)
            replaced = graph_write.result()
            self.chunks.set_valid_to(c.closed, closed=True)
            self.graph.set_current(replaced, current=False)
            if c.notes_stale:
                self.memories.set_status(c.notes_stale, STALE, was=ACTIVE)
            if c.follow_origin and c.closed:
                self.memories.set_status_by_origin(c.closed, STALE, was=ACTIVE)
            if c.records or c.removed_paths:
                self.files.write(c.records, c.removed_paths)

    def _commit_rows(self, c: FileChanges) -> None:
        """A batch's new and reopened rows, then its keyword documents."""
        self.chunks.insert(c.added)
        self.memories.insert(c.memories_added)
        # before the reopening and the move: a run cut short here distils again
        self.memories.outdate(c.memories_outdated)
        self.chunks.set_valid_to([x.id for x in c.reopened], closed=False)
        self.chunks.move(c.moved)
        self.memories.set_status(c.memories_revived, ACTIVE, was=STALE)
        if c.closed or c.memories_hidden or c.memories_outdated:
            self.keyword.delete([*c.closed, *c.memories_hidden, *c.memories_outdated])
        if c.added or c.reopened or c.moved_chunks:
            self.keyword.add([*c.added, *c.reopened, *c.moved_chunks])
        if c.memories_searchable:
            self.keyword.add_memories(c.memories_searchable)
        self.keyword.commit()
        if c.removed_paths or c.documents:
            self.file_keyword.delete(c.removed_paths)
            self.file_keyword.add_files(c.documents)
            self.file_keyword.commit()

    def _open_graphs(self, c: FileChanges) -> list[str]:
        """Write the graph versions of the batch not stored yet and reopen those stored but
        closed; return the current versions of these files they replace (to close)."""
        graphs = c.graphs() if callable(c.graphs) else c.graphs
        paths = [g.path for g in graphs] + list(c.removed_paths)
        if not paths:
            return []
        stored = self.graph.file_rows(paths)
        wanted = {g.version for g in graphs}
        self.graph.insert([g for g in graphs if g.version not in stored])
        back = sorted(v for v in wanted if v in stored and not stored[v].current)
        self.graph.set_current(back, current=True)
        return sorted(v for v, row in stored.items() if row.current and v not in wanted)

    def store_vectors(
        self, chunks: Vectors | None = None, memories: Vectors | None = None, *,
        keys: Mapping[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Vectors of rows already stored (the resumable embedding phase); `keys`: row id →
        the key each vector is found under again (`reuse_vectors`)."""
        if chunks:
            self.chunks.set_vectors(chunks, keys)
        if memories:
            self.memories.set_vectors(memories, keys)

    def drop_memory_vectors(self, where: str) -> int:
        """Memories `where` selects are searched by keyword alone from now on: those with a
        vector lose it (`[index] memory_vectors` changed since they were embedded)."""
        return self.memories.drop_vectors(where)

    def reuse_vectors(self, chunks: Mapping[str, str] | None = None,
                      memories: Mapping[str, str] | None = None) -> set[str]:  # fmt: skip
        """Rows still to embed (row id → vector key) whose key a row of the same table holds,
        current or closed, take that row's vector instead of being embedded again: a moved
        file, a re-cut chunk, a tree seen before. The ids that got one. Erasure blanks a
        row's key with its vector, so nothing erased is ever handed on."""
        done: set[str] = set()
        for rows, wanted in ((self.chunks, chunks), (self.memories, memories)):
            if not wanted:
                continue
            known = rows.vectors_by_key(list(wanted.values()))
            found = {i: known[k] for i, k in wanted.items() if k in known}
            rows.set_vectors(found, wanted)
            done.update(found)
        return done

    def add_notes(self, w: NoteWrite) -> None:
        """Notes with their code blocks and statements, all or nothing: the memories go in
        first and the note's chunk after them (its commit point), so a write cut short
        leaves memories without a note, which recall cannot reach and `reconcile` removes;
        the same `remember` then completes it."""
        with self.writing():
            self.memories.insert([(m, m.source_ids[0]) for m in w.memories], self.meta.project,
                                 replace=True, vectors=w.vectors)  # fmt: skip
            self.chunks.insert(w.chunks, replace=True, vectors=w.vectors)
            self.keyword.add(w.chunks)
            self.keyword.add_memories(w.memories)
            self.keyword.commit()
            self.events.append_many(w.events, actor=w.actor, reason=w.reason)

    def forget(self, p: ForgetPlan) -> None:
        """Make chunks and memories unrecallable; with `erase`, blank their text in every
        table and drop every old version and keyword segment that still held it."""
        goes = [*p.chunks, *p.memories, *p.abstractions]
        with self.writing():
            if p.rules:  # first: a crash after this leaves the files out of the next run
                forgotten.add_rules(self.dir, p.rules)
            if p.paths:
                self.files.write([], p.paths)  # then a forgotten file's commit point
                versions = sorted(self.graph.file_rows(p.paths))  # its code graph goes too
                if p.erase:
                    self.graph.delete_versions(versions)
                else:
                    self.graph.set_current(versions, current=False)
            self.chunks.set_valid_to(p.chunks, closed=True)
            self.memories.set_status([*p.memories, *p.abstractions], FORGOTTEN)
            self.memories.set_status(p.stale, STALE)
            self.memories.reactivate(p.reactivate)
            if p.erase:
                self.chunks.erase(p.chunks)
                self.memories.erase([*p.memories, *p.abstractions])
                self.events.erase(goes)
            self.keyword.delete(goes)
            if p.reactivate:
                self.keyword.add_memories(self.memories.get(p.reactivate).values())
            self.keyword.commit()
            if p.paths:  # code is forgotten by whole files only: their documents go
                self.file_keyword.delete(p.paths)
                self.file_keyword.commit()
            log: list[tuple[str, Sequence[str], str, str]] = []
            if goes:
                log.append(("forget", goes, "" if p.erase else p.before, ""))
            if p.stale:
                log.append(("stale", p.stale, "", "cites forgotten chunks"))
            if p.reactivate:
                log.append(("reactivate", p.reactivate, "", "their abstraction was forgotten"))
            self.events.append_many(
                log, actor=p.actor, reason=p.reason + (" (erased)" if p.erase else "")
            )
            if p.erase:
                self.purge()

    def _current_file_chunks(self, paths: Sequence[str] | None = None) -> list[Chunk]:
        """Current chunks of indexed files (of `paths` only, when given)."""
        where = "valid_to IS NULL AND origin = 'file'"
        if paths is not None:
            where += f" AND {in_list('path', paths)}"
        return self.chunks.find(where)

    def consolidate(self, w: ConsolidationWrite) -> None:
        with self.writing():
            # abstractions first: a run cut short leaves them beside still-active members,
            # which the next run finishes
            self.memories.insert(w.abstractions, self.meta.project, vectors=w.vectors)
            self.keyword.add_memories(m for m, _ in w.abstractions)
            self.memories.supersede(w.superseded, close=False)
            self.memories.supersede(w.contradicted, close=True)
            self.keyword.delete([*w.superseded, *w.contradicted])
            self.keyword.commit()
            self.events.append_many(w.events, actor=w.actor, reason="sleep-time consolidation")

    def revise(self, w: Revision) -> None:
        """A review decision (the review page): memories that replace others go in first,
        then the replaced ones are superseded and undone ones restored, then the keyword
        index follows and the events are logged. Restored memories are searchable when
        recall may show them (active, or stale notes about code)."""
        with self.writing():
            self.memories.insert(w.added, self.meta.project, replace=True, vectors=w.vectors)
            self.keyword.add_memories(m for m, _ in w.added)
            self.memories.supersede(w.superseded, close=False)
            self.memories.restore(w.restored)
            back = self.memories.get(list(w.restored))
            shown = [m for m in back.values() if _searchable(m)]
            hidden = {*w.superseded, *w.restored} - {m.id for m in shown}
            if hidden:
                self.keyword.delete(sorted(hidden))
            self.keyword.add_memories(shown)
            self.keyword.commit()
            self.events.append_many(w.events, actor=w.actor, reason=w.reason)

    # -- maintenance -----------------------------------------------------------------

    def vector_tables(self) -> dict[str, Table]:
        return {CHUNKS: self._tables[CHUNKS], MEMORIES: self._tables[MEMORIES]}

    def compact(self) -> None:
        """Compact the tables an index run writes, those worth it (`ldb.worth_compacting`)."""
        with lance_errors("compact the tables"):
            tables = [self._tables[n] for n in (CHUNKS, FILES, SYMBOLS, REFS)]
            ldb.compact([t for t in tables if ldb.worth_compacting(t)])

    def housekeep(self, older_than: timedelta) -> None:
        """Compact the tables worth it (`ldb.worth_compacting`: enough small fragments,
        deleted rows or versions older than `older_than`) and drop those versions, so a long-watched
        index does not pile up versions (a reader still on one that old would lose it); a
        table with few fragments keeps its few versions until it has more. Give the code
        graph its lookup B-trees once it needs them (one grown large under the watcher,
        whose batches run no index run's maintenance)."""
        with lance_errors("compact the tables and drop old versions"):
            tables = [t for t in self._tables.values() if ldb.worth_compacting(t, older_than)]
            ldb.housekeep(tables, older_than)
        self.graph.ensure_indexes()

    def vacuum(self) -> None:
        """Compact every table and delete all older versions (a CI build, before export):
        only for a writer with the index to itself."""
        with lance_errors("compact the tables and drop old versions"):
            ldb.housekeep(list(self._tables.values()), timedelta(0), delete_unverified=True)

    def purge(self) -> None:
        """Erasure's last step: no LanceDB version, data file or keyword segment keeps a
        blanked or deleted row. The keyword index is rebuilt from what is current (tantivy
        drops a deleted document's terms only when it rewrites its segment)."""
        with lance_errors("purge the old versions of the tables"):
            ldb.purge(list(self._tables.values()))
        chunks = self.chunks.find("valid_to IS NULL")
        memories = self._searchable_memories()
        self.keyword.replace_all(chunks, memories.values())
        self.file_keyword.replace_all((), (), file_documents(chunks))

    def maintain_after_run(self, keep_versions: timedelta | None) -> list[str]:
        """After a run that changed something: delete closed code graph versions past their
        share (`prune_graph`), compact (dropping versions older than
        `keep_versions`, when given) and train a vector index again where compaction rewrote
        it — searches on a rewritten index were 1.3-1.6x slower than on a freshly trained one
        (10M tokens, one file changed: recall p50 60 -> 79 ms, trained again 55 ms); and
        give the code graph its lookup indexes (`GraphRows.ensure_indexes`); and write a
        keyword index again when it is half dead (`rewrite_keyword`: the names of those)."""
        trained = self.vector_index_ids()
        self.prune_graph()
        if keep_versions is None:
            self.compact()
            self.graph.ensure_indexes()
        else:
            self.housekeep(keep_versions)  # (which gives the graph its lookup indexes)
        rewritten = {n for n, i in self.vector_index_ids().items() if trained.get(n) != i}
        self.ensure_vector_index(self.ann_min_rows, retrain=rewritten)
        return self.rewrite_keyword()

    def prune_graph(self) -> int:
        """Delete closed code graph versions once they outnumber the current rows
        (`GraphRows.to_prune`), before a compaction reclaims their space; never one the
        manifest names (a version a crash left closed is reopened, not lost). A kill midway
        leaves versions half deleted, which the next run's repair deletes. How many went."""
        drop = self.graph.to_prune(graphsync.versions_of(self.files.read()))
        if drop:
            with self.writing():
                self.graph.delete_versions(drop)  # `refs` first
        return len(drop)

    def rewrite_keyword(self, dead_share: float = KEYWORD_DEAD_SHARE) -> list[str]:
        """Write a keyword index again, holding what it holds now, once `dead_share` of the
        documents in its segments are deleted ones (`Bm25Index.dead_share`); return the
        names of those rewritten. At half, a rewrite costs no more than the writes that
        left the dead documents, so keyword writes at most double over time. On the Django
        tree moved through nine releases (53 % dead) the rewrite took the keyword index
        from 59 to 25 MB, and issue-length recall from p50 76/80 to 67/69 ms and p95
        103/112 to 84/87 ms (`benchmarks/repo_questions.py --issues`, two runs each)."""
        done = []
        current: list[Chunk] | None = None
        for name, index in (("keyword", self.keyword), ("file keyword", self.file_keyword)):
            if index.read_only or index.dead_share() < dead_share:
                continue
            with self.writing():
                if current is None:
                    current = self.chunks.find("valid_to IS NULL")
                if index is self.keyword:
                    held = index.all_ids("chunk")
                    memories = self.memories.all_of(index.all_ids("memory"))
                    index.replace_all([c for c in current if c.id in held], memories.values())
                else:
                    held = index.all_ids("file")
                    documents = [d for d in file_documents(current) if d.path in held]
                    index.replace_all((), (), documents)
            done.append(name)
        return done

    def vector_index_ids(self) -> dict[str, str]:
        with lance_errors("read the vector index statistics"):
            return ldb.indexed_tables(self.vector_tables())

    def vector_index(self, name: str) -> tuple[int, str]:
        """(rows covered, index type) of a table's vector index; (0, "") without one."""
        with lance_errors("read the vector index statistics"):
            return ldb.vector_index(self._tables[name])

    def ensure_vector_index(self, min_rows: int, retrain: Collection[str] = ()) -> list[str]:
        with lance_errors("read the vector index statistics"):
            return ldb.ensure_vector_indexes(self.vector_tables(), self.meta.dim, min_rows,
                                             retrain)  # fmt: skip

    def ann_search(
        self, name: str, qv: np.ndarray, k: int, *, where: str | None, nprobes: int, refine: int
    ) -> list[tuple[str, float]]:
        with lance_errors("search the vector index"):
            return ldb.ann_search(self._tables[name], qv, k, where=where, nprobes=nprobes,
                                  refine=refine)  # fmt: skip

    def forget_manifest(self) -> None:
        """Drop every manifest entry, so the next run passes every file again (a repair
        after the memories table lost rows: code memories are made again)."""
        with self.writing():
            self.files.write([], list(self.files.read()))

    def embed_files_again(self, passages: str) -> int:
        """The file chunks embedded from another text than `passages` names lose their
        vectors, and the index records `passages`: the vectors go first, so a crash in
        between leaves the old record and the next run drops them (none are new yet)."""
        n = self.chunks.drop_file_vectors()
        self.meta = replace(self.meta, passages=passages)
        write_meta(self.dir, self.meta)
        return n

    def adopt_root(self, root: str) -> None:
        """Record `root` as the tree this index holds (the project moved, or is a copy with
        its index inside)."""
        if self.meta.root != root:
            self.meta = replace(self.meta, root=root)
            write_meta(self.dir, self.meta)

    def finish_run(self, commit: str, branch: str, chunker: str) -> None:
        self.meta = self.meta.with_run(
            indexed_at=_now_iso(), git_commit=commit, git_branch=branch, chunker=chunker
        )
        write_meta(self.dir, self.meta)

    # -- reconciliation --------------------------------------------------------------

    def needs_reconcile(self, graph: bool = True) -> bool:
        """Whether the stores seem not to agree (`graph=False`: leave the code graph out,
        see `reconcile`)."""
        if self.dirty:
            return True
        files = self.chunks.count_current(origin="file")
        manifest = self.files.read()
        referenced = sum(len(r.chunk_ids) for r in manifest.values())
        return not (
            files == referenced
            and self.chunks.count_current() == self.keyword.count("chunk")
            and self.memories.count_searchable() == self.keyword.count("memory")
            and (not graph or graphsync.agrees(manifest, self.graph))
            and self.files.count() == self.file_keyword.count("file")
        )

    def _memory_plan(self) -> tuple[list[str], list[str], list[str], set[str]]:
        """(to mark stale, to make active again, to mark superseded, ids the keyword index
        should hold).

        A memory distilled from code follows its chunk: active iff the chunk is current,
        searchable only then; a stale one beside an active one of the same current chunk
        is outdated (the chunk came back under another name and was distilled anew).
        A note's memory stays searchable while its note is current and is stale iff a code
        chunk it cites is no longer current.
        """
        current = {c for c, cur in self.chunks.states().items() if cur}
        cites = self.memories.citations()
        states = self.memories.states()
        distilled_live = {o for m, (st, o) in states.items() if st == ACTIVE and m not in cites}
        stale, back, outdated, searchable = [], [], [], set()
        for m, (status, origin) in states.items():
            if status not in (ACTIVE, STALE):
                continue
            ok = origin in current and all(c in current for c in cites.get(m, ())[1:])
            if status == STALE and ok and m not in cites and origin in distilled_live:
                outdated.append(m)
                continue
            if status == ACTIVE and not ok:
                stale.append(m)
            elif status == STALE and ok:
                back.append(m)
            if ok or (m in cites and origin in current):
                searchable.add(m)
        return stale, back, outdated, searchable

    def _searchable_memories(self) -> dict[str, Memory]:
        *_, searchable = self._memory_plan()
        return self.memories.get(sorted(searchable))

    def reconcile(self, graph: bool = True) -> int:
        """Make LanceDB, tantivy and the manifest agree; return how many ids were fixed.

        The manifest is the truth for which files are done. Rows no manifest entry
        references are closed; a manifest entry whose rows are missing is dropped so
        its file is indexed again; tantivy is made to hold exactly the current rows.
        `graph=False` (before a run that cuts and tags every file again, after the
        chunker or the code graph changed: no stored graph version is the current one of
        its file, and none need be) only drops the graph versions a write cut short; the
        run ends with `reconcile_graph_states`.
        """
        with self.writing():
            return self._reconcile(graph)

    def _reconcile(self, graph: bool = True) -> int:
        fixed = self._reconcile_graph_rows(redo=graph)
        states = self.chunks.states(origin="file")
        manifest = self.files.read()
        referenced = {cid for rec in manifest.values() for cid in rec.chunk_ids}
        current = {cid for cid, is_current in states.items() if is_current}
        orphans = sorted(current - referenced)
        if orphans:
            self.chunks.set_valid_to(orphans, closed=True)
            fixed += len(orphans)
        closed = sorted(cid for cid in referenced - current if cid in states)
        if closed:
            self.chunks.set_valid_to(closed, closed=False)
            fixed += len(closed)
        lost = referenced - set(states)
        if lost:
            redo = [p for p, rec in manifest.items() if lost & set(rec.chunk_ids)]
            keep = {cid for p in redo for cid in manifest[p].chunk_ids} & set(states)
            self.chunks.set_valid_to(sorted(keep), closed=True)
            self.files.write([], redo)
            fixed += len(redo)
            referenced -= {cid for p in redo for cid in manifest[p].chunk_ids}
        # notes, turns and code blocks: LanceDB is their commit point
        others = {c for c, cur in self.chunks.states().items() if cur} - set(states)
        referenced |= others
        in_bm25 = self.keyword.all_ids("chunk")
        extra = in_bm25 - referenced
        missing = sorted(referenced - in_bm25)
        if extra or missing:
            self.keyword.delete(extra)
            self.keyword.add(c for c, _ in self.chunks.get(missing).values())
            self.keyword.commit()
            fixed += len(extra) + len(missing)
        return (
            fixed
            + (self._reconcile_graph_states() if graph else 0)
            + self._reconcile_file_documents()
            + self._reconcile_memories()
        )

    def _reconcile_graph_rows(self, redo: bool = True) -> int:
        """Drop graph versions a write cut short, and (`redo`) the manifest entries of files
        whose current version has no complete graph (their chunks, then unlisted, are
        closed below, and the next run indexes them again)."""
        plan = graphsync.plan(self.files.read(), self.graph)
        if plan.broken:
            self.graph.delete_versions(plan.broken)
        if redo and plan.redo:
            self.files.write([], plan.redo)
        return len(plan.broken) + (len(plan.redo) if redo else 0)

    def reconcile_graph_states(self) -> int:
        """The code graph's versions the manifest names current, every other one closed
        (what a run that wrote every file's graph anew ends with: a run cut short before it
        may have left a version current, or half reopened); how many were fixed."""
        with self.writing():
            return self._reconcile_graph_states()

    def _reconcile_graph_states(self) -> int:
        """The versions the (final) manifest names are current, every other one closed."""
        plan = graphsync.plan(self.files.read(), self.graph)
        self.graph.set_current(plan.reopen, current=True)
        self.graph.set_current(plan.close, current=False)
        return len(plan.reopen) + len(plan.close)

    def _reconcile_file_documents(self) -> int:
        """The file index holds one document per manifest entry (an index made before it
        existed gets them all here)."""
        listed = set(self.files.read())
        held = self.file_keyword.all_ids("file")
        extra, missing = held - listed, sorted(listed - held)
        if not (extra or missing):
            return 0
        self.file_keyword.delete(extra)
        for i in range(0, len(missing), 500):
            self.file_keyword.add_files(
                file_documents(self._current_file_chunks(missing[i : i + 500]))
            )
        self.file_keyword.commit()
        return len(extra) + len(missing)

    def desync(self) -> dict[str, int]:
        """What `reconcile` would fix, counted without changing anything (for `doctor`)."""
        states = self.chunks.states()
        files = self.chunks.states(origin="file")
        manifest = self.files.read()
        referenced = {cid for rec in manifest.values() for cid in rec.chunk_ids}
        current = {c for c, cur in states.items() if cur}
        stored = set(files)
        closed = {c for c in referenced if files.get(c) is False}
        redo = [r.chunk_ids for r in manifest.values() if not stored.issuperset(r.chunk_ids)]
        want = referenced.difference(*redo) | (current - stored)
        in_bm25 = self.keyword.all_ids("chunk")
        stale, back, outdated, searchable = self._memory_plan()
        memories_in_bm25 = self.keyword.all_ids("memory")
        graph = graphsync.plan(manifest, self.graph).counts()
        file_docs = self.file_keyword.all_ids("file")
        return {
            **graph,
            "current chunks no manifest entry lists": len((current & stored) - referenced),
            "closed chunks the manifest lists": len(closed),
            "files whose chunk rows are gone": len(redo),
            "keyword documents to drop": len(in_bm25 - want),
            "keyword documents to add": len(want - in_bm25),
            "memory statuses to correct": len(stale) + len(back) + len(outdated),
            "memories of a note that was never stored": len(self._orphans()),
            "memory keyword documents to drop": len(memories_in_bm25 - searchable),
            "memory keyword documents to add": len(searchable - memories_in_bm25),
            "file keyword documents to drop": len(file_docs - set(manifest)),
            "file keyword documents to add": len(set(manifest) - file_docs),
        }

    def _orphans(self) -> list[str]:
        """Memories whose origin chunk was never stored: a remember cut short between its
        memories and its note (the note's chunk is its commit point)."""
        stored = set(self.chunks.states())
        return sorted(m for m, (_, origin) in self.memories.states().items()
                      if origin and origin not in stored)  # fmt: skip

    def notes_without_memories(self, expects: Callable[[str], bool]) -> list[str]:
        """Current notes and turns without a live memory although `expects(text)` says their
        text makes statements (a write that lost them); closing them lets the same
        `remember` write them again."""
        notes = self.chunks.find("valid_to IS NULL AND (origin = 'note' OR origin = 'turn')")
        if not notes:
            return []
        live = {origin for _, (status, origin) in self.memories.states(
            [c.id for c in notes]).items() if status in (ACTIVE, STALE)}  # fmt: skip
        return [c.id for c in notes if c.id not in live and expects(c.text)]

    def close_notes(self, ids: Sequence[str]) -> None:
        """Take incomplete notes out of search (doctor's repair; a retry completes them)."""
        with self.writing():
            self.chunks.set_valid_to(ids, closed=True)
            self.keyword.delete(ids)
            self.keyword.commit()

    def _reconcile_memories(self) -> int:
        orphans = self._orphans()
        if orphans:
            self.memories.delete(orphans)
        stale, back, outdated, searchable = self._memory_plan()
        self.memories.set_status(stale, STALE)
        self.memories.set_status(back, ACTIVE)
        self.memories.outdate(dict.fromkeys(outdated))
        in_bm25 = self.keyword.all_ids("memory")
        extra, missing = in_bm25 - searchable, sorted(searchable - in_bm25)
        if extra or missing:
            self.keyword.delete(extra)
            self.keyword.add_memories(self.memories.get(missing).values())
            self.keyword.commit()
        return len(orphans) + len(stale) + len(back) + len(outdated) + len(extra) + len(missing)

    # -- reads beyond one table -----------------------------------------------------------

    def sources(self, ids: Sequence[str]) -> tuple[dict[str, Chunk], dict[str, Memory]]:
        """Stored chunks and memories among `ids` (the `Sources` protocol of attribution)."""
        chunks = self.chunks.get([i for i in ids if i.startswith("c_")])
        memories = self.memories.get([i for i in ids if i.startswith("m_")])
        return {cid: c for cid, (c, _) in chunks.items()}, memories

    def current_chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The given chunks that exist and are current."""
        states = self.chunks.states_of(ids)
        live = [i for i, cur in states.items() if cur]
        return {cid: c for cid, (c, _) in self.chunks.get(live).items()}

    def indexed_chunks(self) -> int:
        """Current chunks that count: those the manifest lists (a run cut short may have
        left others, which the next run closes) and every current note, turn and block."""
        listed = sum(len(r.chunk_ids) for r in self.files.read().values())
        return listed + self.chunks.count_current() - self.chunks.count_current(origin="file")

    def counts(self) -> Mapping[str, int]:
        """Rows per table (for `doctor`'s unique-id check)."""
        symbols, refs = self.graph.count_rows()
        return {
            CHUNKS: self.chunks.count_rows(), MEMORIES: self.memories.count_rows(),
            FILES: self.files.count(), SYMBOLS: symbols, REFS: refs,
        }  # fmt: skip
