"""`memserver doctor`: check an index and, with `repair`, put right what can be.

Each check yields a `Check` (check, ok, detail, fixed), in this order:

  meta           meta.json reads; schema version, embedder and dimension are the ones
                 configured. Not repairable: `memserver index --rebuild`.
  writer-lock    who holds writer.lock. The kernel drops a flock when its holder dies,
                 even on kill -9, so a dead holder leaves nothing to repair: reported.
  tables         every LanceDB table opens and a full scan reads. Repair: the newest
                 version that reads becomes current, else the table starts empty
                 (tablecheck.py); the rows lost are re-indexed from the source tree.
  keyword-index  tantivy opens and its documents and terms read. Repair: it is deleted
                 and rebuilt from LanceDB by the sync repair (it holds nothing else).
  tantivy-locks  tantivy's lock files. Its locks are flocks too: a file left by a killed
                 writer blocks nothing, so it is fine; a lock file this user cannot open
                 (left by a run as another user) is removed. A lock held by a live
                 process outside our writer lock is reported, not touched.
  unique-ids     no two rows share an id (or a manifest path). Not repairable: rebuild.
  sync           the manifest, LanceDB's current rows and tantivy's documents (chunks
                 and memories) agree, and the code graph holds exactly the versions of the
                 files the manifest names, complete. Repair: `IndexStore.reconcile` (a file
                 whose graph is gone is indexed again); when the memories table lost rows,
                 every file is also passed again to re-make them.
  crash-marker   a DIRTY marker while nobody holds writer.lock: a write died midway.
                 Repair: reconcile, then clear it.
  notes          notes and turns stored without the memories their text makes. Repair:
                 taken out of search, so remembering the same text again stores them whole.
  pending        chunks and memories without vectors, files a repair re-queued.
                 Reported only: `memserver index` does that work.

Repairs run under the writer lock. Healthy means every check is ok or fixed.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memserver.core.errors import IndexMismatch, IndexMissing, StoreError
from memserver.store import statecache, tablecheck
from memserver.store.bm25 import Bm25Index
from memserver.store.index import EVENTS, FILE_KEYWORD_DIR, MEMORIES, IndexStore
from memserver.store.lancedb import connect
from memserver.store.lock import WriterLock, flock_held, probe
from memserver.store.meta import IndexMeta, check_compatible, read_meta
from memserver.store.statecache import DIRTY

_TANTIVY_LOCKS = (".tantivy-writer.lock", ".tantivy-meta.lock")


@dataclass(frozen=True)
class Check:
    check: str
    ok: bool  # no problem found
    detail: str
    fixed: bool = False  # the problem was repaired (or, for an ok check, tidied)


@dataclass
class DoctorReport:
    index_dir: str
    repair: bool
    checks: list[Check] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return all(c.ok or c.fixed for c in self.checks)

    @property
    def exit_code(self) -> int:
        return 0 if self.healthy else StoreError.exit_code

    def to_dict(self) -> dict[str, Any]:
        return {
            "index_dir": self.index_dir, "healthy": self.healthy, "repair": self.repair,
            "checks": [asdict(c) for c in self.checks],
        }  # fmt: skip


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holder(info: dict[str, Any]) -> str:
    pid, host = info.get("pid"), info.get("host")
    if not isinstance(pid, int):
        return "an unknown process"
    if host and host != socket.gethostname():
        return f"pid {pid} on {host}"
    return f"pid {pid} ({'running' if pid_alive(pid) else 'gone'})"


class Doctor:
    def __init__(
        self, index_dir: Path, embedder: str, dim: int, *, lock_timeout: float = 10.0,
        configured: tuple[str, int] | None = None,
        expects_memories: Callable[[str], bool] | None = None,
        keyword_only: str | None = None,
    ) -> None:  # fmt: skip
        """`embedder`/`dim`: what this run uses; `configured`: what the settings name, which
        an existing index overrides (noted when they differ); `expects_memories`: whether a
        note's text makes statements (the memory service's atomiser), for the notes check."""
        self.keyword_only = keyword_only  # a filter of the memories that get no vector
        self.dir = index_dir
        self.expects_memories = expects_memories
        self.embedder = embedder
        self.dim = dim
        self.configured = configured
        self.lock_timeout = lock_timeout
        self.report = DoctorReport(str(index_dir), repair=False)

    def _add(self, check: str, ok: bool, detail: str, fixed: bool = False) -> None:
        self.report.checks.append(Check(check, ok, detail, fixed))

    def run(self, *, repair: bool = False) -> DoctorReport:
        self.report = DoctorReport(str(self.dir), repair)
        meta = self._meta()
        if meta is None:
            return self.report
        busy, info = probe(self.dir)
        self._writer_lock(busy, info)
        if not repair:
            self._examine(meta, repair=False, busy=busy)
            return self.report
        try:
            with WriterLock(self.dir, self.lock_timeout, purpose="memserver doctor --repair"):
                self._examine(meta, repair=True, busy=False)
        except StoreError as err:  # a full disk, say: the report still says what happened
            self._add("repair", False, f"{err.message}; {err.hint}")
        if any(c.fixed for c in self.report.checks):
            statecache.forget(self.dir)  # the no-op shortcut must not skip the next run
        return self.report

    # -- the checks -----------------------------------------------------------------

    def _meta(self) -> IndexMeta | None:
        try:
            meta = read_meta(self.dir)
        except StoreError as err:
            self._add("meta", False, f"{err.message}; {err.hint}")
            return None
        if meta is None:
            raise IndexMissing(
                f"no index at {self.dir}",
                hint="run `memserver index` first, or point --root / --index-dir at the index",
            )
        try:
            check_compatible(meta, self.embedder, self.dim)
        except IndexMismatch as err:  # the stores are still checked, with the index's dim
            self._add("meta", False, f"{err.message}; {err.hint}")
            return meta
        detail = f"schema v{meta.schema_version}, {meta.embedder} (dim {meta.dim})"
        if self.configured and self.configured != (meta.embedder, meta.dim):
            detail += (
                f"; the settings name {self.configured[0]} (dim {self.configured[1]}), but an "
                "index keeps the embedder that built it (`memserver index --rebuild` switches)"
            )
        self._add("meta", True, detail)
        return meta

    def _writer_lock(self, busy: bool, info: dict[str, Any]) -> None:
        if busy:
            detail = f"held by {_holder(info)} for {info.get('purpose') or 'a write'}"
        elif info:
            detail = f"free; last held by {_holder(info)} (the kernel released it)"
        else:
            detail = "free"
        self._add("writer-lock", True, detail)

    def _examine(self, meta: IndexMeta, *, repair: bool, busy: bool) -> None:
        damaged = self._tables(repair)
        if damaged is None:
            return
        rebuilt = self._keyword_index(repair)
        if rebuilt is None:
            return
        try:
            store = IndexStore(self.dir, meta, create=repair)
        except StoreError as err:
            self._add("stores", False, f"{err.message}; {err.hint}")
            return
        self._tantivy_locks(busy, repair)
        if busy:
            self._add("sync", True, "not compared: a writer is running (rerun when it is done)")
        else:
            requeued = self._sync(store, repair, damaged, forced=rebuilt)
            self._notes(store, repair)
            self._pending(store, meta, requeued, lost=bool(damaged - {EVENTS}))

    def _notes(self, store: IndexStore, repair: bool) -> None:
        """Notes stored without their statements: out of search until remembered again."""
        if self.expects_memories is None:
            return
        incomplete = store.notes_without_memories(self.expects_memories)
        if not incomplete:
            self._add("notes", True, "every note has its memories")
            return
        found = f"{len(incomplete)} notes were stored without their memories"
        if not repair:
            self._add("notes", False, f"{found}; run `memserver doctor --repair`")
            return
        store.close_notes(incomplete)
        self._add("notes", False, f"{found} → taken out of search; remembering the same "
                  "text again stores them whole", fixed=True)  # fmt: skip

    def _tables(self, repair: bool) -> set[str] | None:
        """Names of the tables repaired (empty when all read); None when checking stops."""
        lance_dir = self.dir / "lance"
        try:
            db = connect(lance_dir)
            health = [tablecheck.check(db, name) for name in tablecheck.TABLES]
        except Exception as exc:
            self._add("tables", False, f"LanceDB does not open {lance_dir}: {exc}")
            return None
        bad = [h for h in health if not h.ok]
        if not bad:
            rows = ", ".join(f"{h.name} {h.rows}" for h in health)
            self._add("tables", True, f"every table reads in full (rows: {rows})")
            return set()
        found = "; ".join(f"{h.name}: {h.problem}" for h in bad)
        if not repair:
            self._add("tables", False, f"{found}; run `memserver doctor --repair`")
            return None
        done = []
        for h in bad:
            try:
                done.append(f"{h.name}: {tablecheck.repair(db, lance_dir, h)}")
            except Exception as exc:
                self._add("tables", False, f"{found}; repairing {h.name} failed: {exc}; "
                          "run `memserver index --rebuild`")  # fmt: skip
                return None
        self._add("tables", False, f"{found} → {'; '.join(done)}", fixed=True)
        return {h.name for h in bad}

    def _keyword_index(self, repair: bool) -> bool | None:
        """Whether it was rebuilt; None when it is damaged and checking stops. The file
        index may be missing (an index made before it existed): the sync below adds it."""
        rebuilt = False
        for name, views, required in (("bm25", ("chunk", "memory"), True),
                                      (FILE_KEYWORD_DIR, ("file",), False)):  # fmt: skip
            check = "keyword-index" if required else "file-keyword-index"
            path = self.dir / name
            try:
                if not (path / "meta.json").exists():
                    if not required:
                        self._add(check, True, "not built yet: the sync below builds it")
                        continue
                    raise StoreError(f"the keyword index {path} is missing")
                bm25 = Bm25Index(path)
                docs = sum(len(bm25.all_ids(v)) for v in views)
                bm25.search(["index", "function"], 1, view=views[0])  # reads the postings
                del bm25
            except StoreError as err:
                problem = err.message
            else:
                self._add(check, True, f"{docs} documents read")
                continue
            if not repair:
                self._add(check, False, f"{problem}; run `memserver doctor --repair`")
                return None
            shutil.rmtree(path, ignore_errors=True)
            self._add(check, False, f"{problem} → deleted; rebuilt from LanceDB below",
                      fixed=True)  # fmt: skip
            rebuilt = True
        return rebuilt

    def _tantivy_locks(self, busy: bool, repair: bool) -> None:
        held, unusable = [], []
        writable = os.access(self.dir / "bm25", os.W_OK)  # else the whole index is read-only
        for name in _TANTIVY_LOCKS:
            path = self.dir / "bm25" / name
            if not path.exists():
                continue
            if flock_held(path):
                held.append(name)
            elif writable and not os.access(path, os.R_OK | os.W_OK):
                unusable.append(path)
        if held and not busy and ".tantivy-writer.lock" in held:
            self._add("tantivy-locks", False, "a live process holds tantivy's writer lock "
                      "outside memserver's writer lock: stop it (see `fuser bm25/"
                      ".tantivy-writer.lock`)")  # fmt: skip
            return
        if unusable:
            names = ", ".join(p.name for p in unusable)
            if not repair:
                self._add("tantivy-locks", False, f"{names} cannot be opened by this user "
                          "(left by a run as another user); `memserver doctor --repair` "
                          "removes it")  # fmt: skip
                return
            for p in unusable:
                p.unlink(missing_ok=True)
            self._add("tantivy-locks", False, f"{names} could not be opened: removed", True)
            return
        self._add("tantivy-locks", True, "not held (a file left by a killed writer is harmless: "
                  "tantivy's locks are flocks, released when the holder exits)")  # fmt: skip

    def _sync(self, store: IndexStore, repair: bool, damaged: set[str], forced: bool) -> int:
        """Compare (and reconcile) the three stores; return how many files were re-queued."""
        marker = self.dir / DIRTY
        dirty = marker.exists()
        dirty_detail = f"left by {_marker_owner(marker)}: a write stopped midway" if dirty else ""
        before = {k: v for k, v in store.desync().items() if v}
        duplicates = _duplicates(store)
        self._add("unique-ids", not duplicates, duplicates or "no two rows share an id")
        if not (before or dirty or damaged or forced):
            self._add("sync", True, _agreement(store))
            self._add("crash-marker", True, "none")
            return 0
        found = ", ".join(f"{k}: {v}" for k, v in before.items()) or "no difference counted"
        if not repair:
            self._add("sync", not before, found)
            self._add("crash-marker", not dirty, dirty_detail or "none")
            return 0
        manifest_before = store.files.count()
        if MEMORIES in damaged:  # pass every file again: lost code memories are re-made
            store.forget_manifest()
        fixed = store.reconcile()
        store.mark_clean()
        after = {k: v for k, v in store.desync().items() if v}
        still = f"; still: {after}" if after else ""
        self._add("sync", not before, f"{found} → reconciled ({fixed} ids){still}",
                  fixed=not after and bool(before or damaged or forced))  # fmt: skip
        self._add("crash-marker", not dirty, f"{dirty_detail} → cleared" if dirty else "none",
                  fixed=dirty and not after)  # fmt: skip
        return manifest_before - store.files.count()

    def _pending(self, store: IndexStore, meta: IndexMeta, requeued: int, lost: bool) -> None:
        parts = []
        if meta.dim:
            chunks = store.chunks.count_unembedded()
            memories = store.memories.count_unembedded(self.keyword_only)
            if chunks or memories:
                parts.append(f"{chunks} chunks and {memories} memories wait for vectors")
        if requeued:
            parts.append(f"{requeued} files wait to be indexed again")
        elif lost:
            parts.append("what the lost rows held waits to be indexed again")
        detail = "; ".join(parts) + ": run `memserver index`" if parts else "nothing waits"
        self._add("pending", True, detail)


def _marker_owner(marker: Path) -> str:
    try:
        pid = int(marker.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return "an unknown process"
    return f"pid {pid} ({'still running, not writing' if pid_alive(pid) else 'gone'})"


def _duplicates(store: IndexStore) -> str:
    """Rows sharing an id (or manifest path): not something reconcile can fix."""
    rows = store.counts()
    symbols, refs = store.graph.distinct_ids()
    counts = {
        "chunks": (rows["chunks"], len(store.chunks.states())),
        "memories": (rows["memories"], len(store.memories.states())),
        "files": (rows["files"], len(store.files.read())),
        "symbols": (rows["symbols"], symbols),
        "refs": (rows["refs"], refs),
    }
    extra = [f"{name} {rows - ids}" for name, (rows, ids) in counts.items() if rows != ids]
    if not extra:
        return ""
    return f"duplicate rows ({', '.join(extra)}): run `memserver index --rebuild`"


def _agreement(store: IndexStore) -> str:
    return (
        f"manifest, LanceDB and tantivy agree: {store.files.count()} files, "
        f"{store.chunks.count_current()} current chunks, {store.keyword.count('chunk')} chunk "
        f"and {store.keyword.count('memory')} memory documents"
    )
