"""The recall read model of one index, kept up to date: a `Snapshot` for every recall.

Below `[recall] ann_min_rows` current chunks the whole snapshot lives in memory
(`store.readview`); from there on the lean view (`store.leanview`) keeps only ids, filters
and names and searches LanceDB's vector index. The snapshot is reloaded, or brought up to
date reading only the rows that changed, when the stores' fingerprint moves (a cheap
directory listing); a keyword-index commit alone only reopens tantivy's searcher.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from memserver.core.protocols import Snapshot
from memserver.store.index import IndexStore
from memserver.store.readview import MemorySnapshot, load_snapshot, refresh_snapshot
from memserver.store.statecache import fingerprint

__all__ = ["AnnSettings", "RecallView"]

_TABLES = ("chunks", "files", "memories")  # what the view is read from (with tantivy)


@dataclass(frozen=True, slots=True)
class AnnSettings:
    """How the lean view searches the vector index (see `configs/default.toml` [recall])."""

    min_rows: int = 0  # from this many current chunks on: the lean view (0: never)
    nprobes: int = 20
    refine: int = 5
    memory_refine: int = 5
    probe_factor: float = 0.0
    memory_probe_factor: float = 0.0
    exact_mb: int = 0  # the lean view holds chunk vectors (exact dense search) up to this size


class RecallView:
    """The snapshot, brought up to date when the stores change under it (thread-safe)."""

    def __init__(self, store: IndexStore, with_memories: bool = True,
                 ann: AnnSettings | None = None) -> None:  # fmt: skip
        self.store = store
        self.with_memories = with_memories
        self.ann = ann or AnnSettings()
        self._lock = threading.Lock()
        self._print: list[Any] | None = None
        self._snap: Snapshot | None = None

    def get(self) -> Snapshot:
        stores = fingerprint(self.store.dir, _TABLES)
        with self._lock:
            if self._snap is None or stores is None or stores != self._print:
                self._snap = self._update(self._snap, _changed(self._print, stores))
                self._print = stores
                # after the rows: a keyword commit made meanwhile is seen now, not next time
                self.store.keyword.refresh()
            return self._snap

    def _update(self, snap: Snapshot | None, changed: set[str] | None) -> Snapshot:
        if not isinstance(snap, MemorySnapshot) or changed is None:
            return self._load()
        if not changed - {"bm25"}:  # only tantivy moved (reopened by `get`)
            return snap
        limit = self.ann.min_rows - 1 if self.ann.min_rows > 0 else None
        fresh = refresh_snapshot(self.store, snap, self.with_memories, changed, limit)
        return fresh if fresh is not None else self._load()

    def _load(self) -> Snapshot:
        a = self.ann
        if a.min_rows > 0 and self.store.chunks.count_current() >= a.min_rows:
            from memserver.store.leanview import Ann, load_lean

            ann = Ann(self.store, a.nprobes, a.refine, a.memory_refine, a.probe_factor,
                      a.memory_probe_factor)  # fmt: skip
            return load_lean(self.store, self.with_memories, ann, exact_bytes=a.exact_mb << 20)
        return load_snapshot(self.store, self.with_memories)


def _changed(before: list[Any] | None, now: list[Any] | None) -> set[str] | None:
    """Names of the fingerprint parts (tables, "bm25") that differ; None: compare nothing."""
    if before is None or now is None:
        return None
    old = {part[0]: part for part in before}
    new = {part[0]: part for part in now}
    if old.keys() != new.keys():
        return None
    return {name for name, part in new.items() if old[name] != part}
