"""One index directory: metadata, LanceDB tables, the BM25 index and the writer lock.

Write order (DESIGN.md): LanceDB rows, then tantivy, then the files manifest,
which is the commit point. A `DIRTY` marker is present while a writer works;
finding it on open means a run died midway, and `reconcile` brings the three
stores back into agreement before anything else happens.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from memserver.core.errors import IndexMissing, StoreError
from memserver.store.bm25 import Bm25Index
from memserver.store.lance import LanceStore
from memserver.store.lock import WriterLock
from memserver.store.memories import MemoryRows
from memserver.store.meta import IndexMeta, check_compatible, read_meta, write_meta
from memserver.store.schema import SCHEMA_VERSION
from memserver.store.statecache import DIRTY


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class IndexStore:
    ann_min_rows = 0  # chunks from which an index run builds a vector index (0: never)

    def __init__(self, index_dir: Path, meta: IndexMeta) -> None:
        self.dir = index_dir
        self.meta = meta
        self.lance = LanceStore(index_dir / "lance", meta.dim)
        self.bm25 = Bm25Index(index_dir / "bm25")
        self.memories = MemoryRows(self.lance.memories, meta.dim)

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
                schema_version=SCHEMA_VERSION,
                embedder=embedder,
                dim=dim,
                tokenizer=tokenizer,
                project=project,
                root=root,
                created_at=_now_iso(),
            )
            write_meta(index_dir, meta)
        check_compatible(meta, embedder, dim)
        return cls(index_dir, meta)

    def lock(self, timeout: float) -> WriterLock:
        return WriterLock(self.dir, timeout)

    # -- crash marker and reconciliation ----------------------------------------

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
        """A write that a crash leaves marked for repair. On an error the keyword-index
        writer is released (so this process can write again) and the marker stays, so
        the next run reconciles whatever was half done."""
        self.mark_dirty()
        try:
            yield
        except BaseException:
            self.bm25.rollback()
            raise
        self.mark_clean()

    def needs_reconcile(self) -> bool:
        if self.dirty:
            return True
        files = self.lance.count_current(origin="file")
        referenced = sum(len(r.chunk_ids) for r in self.lance.manifest().values())
        return not (
            files == referenced
            and self.lance.count_current() == self.bm25.count("chunk")
            and self.memories.count_searchable() == self.bm25.count("memory")
        )

    def _memory_plan(self) -> tuple[list[str], list[str], set[str]]:
        """(to mark stale, to make active again, ids the keyword index should hold).

        A memory distilled from code follows its chunk: active iff the chunk is current,
        searchable only then. A note's memory stays searchable while its note is current
        and is stale iff a code chunk it cites is no longer current.
        """
        chunk_states = self.lance.chunk_states()
        current = {c for c, cur in chunk_states.items() if cur}
        cites = self.memories.citations()
        stale, back, searchable = [], [], set()
        for m, (status, origin) in self.memories.states().items():
            if status not in ("active", "stale"):
                continue
            ok = origin in current and all(c in current for c in cites.get(m, ())[1:])
            if status == "active" and not ok:
                stale.append(m)
            elif status == "stale" and ok:
                back.append(m)
            if ok or (m in cites and origin in current):
                searchable.add(m)
        return stale, back, searchable

    def reconcile(self) -> int:
        """Make LanceDB, tantivy and the manifest agree; return how many ids were fixed.

        The manifest is the truth for which files are done. Rows no manifest entry
        references are closed; a manifest entry whose rows are missing is dropped so
        its file is indexed again; tantivy is made to hold exactly the current rows.
        """
        states = self.lance.chunk_states(origin="file")
        manifest = self.lance.manifest()
        referenced = {cid for rec in manifest.values() for cid in rec.chunk_ids}
        current = {cid for cid, is_current in states.items() if is_current}
        fixed = 0
        orphans = sorted(current - referenced)
        if orphans:
            self.lance.set_valid_to(orphans, closed=True)
            fixed += len(orphans)
        closed = sorted(cid for cid in referenced - current if cid in states)
        if closed:
            self.lance.set_valid_to(closed, closed=False)
            fixed += len(closed)
        lost = referenced - set(states)
        if lost:
            redo = [p for p, rec in manifest.items() if lost & set(rec.chunk_ids)]
            keep = {cid for p in redo for cid in manifest[p].chunk_ids} & set(states)
            self.lance.set_valid_to(sorted(keep), closed=True)
            self.lance.write_manifest([], redo)
            fixed += len(redo)
            referenced -= {cid for p in redo for cid in manifest[p].chunk_ids}
        # notes, turns and code blocks: LanceDB is their commit point
        others = {c for c, cur in self.lance.chunk_states().items() if cur} - set(states)
        referenced |= others
        in_bm25 = self.bm25.all_ids("chunk")
        extra = in_bm25 - referenced
        missing = sorted(referenced - in_bm25)
        if extra or missing:
            self.bm25.delete(extra)
            self.bm25.add(c for c, _ in self.lance.get_chunks(missing).values())
            self.bm25.commit()
            fixed += len(extra) + len(missing)
        return fixed + self._reconcile_memories()

    def desync(self) -> dict[str, int]:
        """What `reconcile` would fix, counted without changing anything (for `doctor`)."""
        states = self.lance.chunk_states()
        files = self.lance.chunk_states(origin="file")
        manifest = self.lance.manifest()
        referenced = {cid for rec in manifest.values() for cid in rec.chunk_ids}
        current = {c for c, cur in states.items() if cur}
        stored = set(files)
        closed = {c for c in referenced if files.get(c) is False}
        redo = [r.chunk_ids for r in manifest.values() if not stored.issuperset(r.chunk_ids)]
        want = referenced.difference(*redo) | (current - stored)
        in_bm25 = self.bm25.all_ids("chunk")
        stale, back, searchable = self._memory_plan()
        memories_in_bm25 = self.bm25.all_ids("memory")
        return {
            "current chunks no manifest entry lists": len((current & stored) - referenced),
            "closed chunks the manifest lists": len(closed),
            "files whose chunk rows are gone": len(redo),
            "keyword documents to drop": len(in_bm25 - want),
            "keyword documents to add": len(want - in_bm25),
            "memory statuses to correct": len(stale) + len(back),
            "memory keyword documents to drop": len(memories_in_bm25 - searchable),
            "memory keyword documents to add": len(searchable - memories_in_bm25),
        }

    def _reconcile_memories(self) -> int:
        stale, back, searchable = self._memory_plan()
        self.memories.set_status(stale, "stale")
        self.memories.set_status(back, "active")
        in_bm25 = self.bm25.all_ids("memory")
        extra, missing = in_bm25 - searchable, sorted(searchable - in_bm25)
        if extra or missing:
            self.bm25.delete(extra)
            self.bm25.add_memories(self.memories.get(missing).values())
            self.bm25.commit()
        return len(stale) + len(back) + len(extra) + len(missing)

    def finish_run(self, commit: str, branch: str, chunker: str) -> None:
        self.meta = self.meta.with_run(
            indexed_at=_now_iso(), git_commit=commit, git_branch=branch, chunker=chunker
        )
        write_meta(self.dir, self.meta)
