"""Keep an index in step with its tree from the watcher's batches (a long-lived writer).

Each batch is an ordinary incremental run limited to the changed paths: the partial walk
applies the same ignore rules as `memserver index`, and the indexer reads the disk, so the
index ends the same as a clean run over the final tree. The writer lock is held for one
batch at a time, so `remember` and `memserver index` can still get in between. Tables are
compacted, and versions older than `keep_versions` dropped, after enough changing batches
(when no change is waiting) or when the tree has been quiet for a while, not after every
batch: each small commit adds fragments that every later read and write goes through.

A batch's embedding gives way to the next batch: once `should_yield` says changes are
waiting, it stops after the embedding batch at hand (the phase resumes where it stopped), so
the next batch's keyword phase does not wait behind it. What is left is embedded with the
batches that follow, or when the tree goes quiet.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from indexers.watcher import Batch, Watcher
from memserver.config import Settings
from memserver.core.errors import MemserverError
from memserver.core.protocols import Embedder
from memserver.core.types import IndexReport, PathSet, WalkResult
from memserver.ingest.pipeline import Indexer
from memserver.store.index import IndexStore

logger = logging.getLogger("memserver.watch")


class Workspace(Protocol):
    """What the watcher needs of the composition root (`memserver.engine.Engine`)."""

    root: Path
    index_dir: Path
    settings: Settings

    @property
    def watch_embedder(self) -> Embedder | None: ...

    @property
    def lock_timeout(self) -> float: ...

    def walk(self, only: PathSet | None = None) -> WalkResult: ...

    def writable_store(self, rebuild: bool = False) -> IndexStore: ...

    def indexer(self, store: IndexStore, *, embedder: Embedder | None = None) -> Indexer: ...

    def run_index(
        self, store: IndexStore, walked: WalkResult, report: IndexReport, *,
        git: tuple[str, str], embedder: Embedder | None = None, only: PathSet | None = None,
        optimize: bool = True, trust_marker: bool = False,
        stop_embedding: Callable[[], bool] | None = None,
    ) -> IndexReport: ...  # fmt: skip


class LiveIndex:
    def __init__(
        self,
        engine: Workspace,
        *,
        housekeep_after: int = 10,
        housekeep_idle: float = 30.0,
        keep_versions: timedelta = timedelta(minutes=10),
        on_report: Callable[[IndexReport], Any] | None = None,
        should_yield: Callable[[], bool] | None = None,
    ) -> None:
        self.engine = engine
        self.on_report = on_report
        self.should_yield = should_yield  # changes are waiting: cut the embedding short
        self.housekeep_after = housekeep_after
        self.housekeep_idle = housekeep_idle
        self.keep_versions = keep_versions
        self._store: IndexStore | None = None
        self._lock = threading.Lock()
        self.commits_since_housekeeping = 0
        self.last_change = 0.0
        self.batches = 0
        self.last_report: IndexReport | None = None
        self.embedding_left = False  # an embedding phase gave way before it was done

    @property
    def store(self) -> IndexStore:
        if self._store is None:
            self._store = self.engine.writable_store(rebuild=False)
        return self._store

    def apply(self, batch: Batch) -> IndexReport:
        """Index what `batch` names (everything when it asks for a whole walk)."""
        from memserver.ingest.git import head

        engine = self.engine
        only = None if batch.full else PathSet(batch.paths)
        report = IndexReport(root=str(engine.root), index_dir=str(engine.index_dir))
        with self._lock:
            walked = engine.walk(only)
            store = self.store
            git = head(engine.root)
            if only is not None and not only and git == (store.meta.git_commit,
                                                         store.meta.git_branch):  # fmt: skip
                report.skipped.update({s.path: s.reason for s in walked.skipped})
                return report  # git touched its index, HEAD did not move
            store.drop_stat_cache()  # the no-op shortcut of `memserver index` no longer holds
            yielded = _Asked(self.should_yield)
            engine.run_index(
                store, walked, report, git=git, embedder=engine.watch_embedder, only=only,
                optimize=False, trust_marker=self.batches > 0,  # the first checks thoroughly
                stop_embedding=yielded,
            )  # fmt: skip
            self.embedding_left = yielded.said_yes
            self.batches += 1
            self.last_report = report
            if report.chunks_added or report.chunks_removed or report.files_removed:
                self.commits_since_housekeeping += 1
                self.last_change = time.monotonic()
        lag = time.monotonic() - batch.oldest
        logger.info(
            "memserver watch: %d changed path(s)%s: %d file(s) indexed, %d removed, "
            "+%d/-%d chunks in %.2f s (%.2f s after the first change)",
            len(batch.paths), " (whole tree)" if batch.full else "", report.files_indexed,
            report.files_removed, report.chunks_added, report.chunks_removed, report.seconds, lag,
        )  # fmt: skip
        if self.on_report is not None:
            self.on_report(report)
        if self.commits_since_housekeeping >= self.housekeep_after and not self._waiting():
            try:  # a steady stream of changes may never leave the watcher idle
                self.housekeep()
            except MemserverError as exc:  # the batch is done; compaction can wait
                logger.warning("memserver watch: compacting the tables failed: %s", exc)
        return report

    def _waiting(self) -> bool:
        return self.should_yield is not None and self.should_yield()

    def housekeeping_due(self) -> bool:
        quiet = time.monotonic() - self.last_change >= self.housekeep_idle
        return self.commits_since_housekeeping > 0 and (
            quiet or self.commits_since_housekeeping >= self.housekeep_after
        )

    def housekeep(self) -> None:
        """Delete closed code graph versions past their share, compact the tables and drop
        old versions (the graph's lookup indexes built once it needs them), and write a
        keyword index again when half of it is deleted documents (call when
        `housekeeping_due`)."""
        with self._lock:
            store = self.store
            with store.lock(self.engine.lock_timeout):
                store.prune_graph()
                store.housekeep(self.keep_versions)
                rewritten = store.rewrite_keyword()
            self.commits_since_housekeeping = 0
        again = f"; wrote the {' and '.join(rewritten)} index again" if rewritten else ""
        logger.info("memserver watch: compacted the tables%s", again)

    def finish_embedding(self) -> None:
        """Embed what a batch that gave way left (it gives way again to new changes)."""
        with self._lock:
            store = self.store
            report = IndexReport(root=str(self.engine.root), index_dir=str(self.engine.index_dir))
            with store.lock(self.engine.lock_timeout):
                yielded = _Asked(self.should_yield)
                indexer = self.engine.indexer(store, embedder=self.engine.watch_embedder)
                indexer.embed_pending(report, yielded)
                self.embedding_left = yielded.said_yes
        logger.info("memserver watch: embedded %d chunk(s) and %d memories left by a batch",
                    report.chunks_embedded, report.memories_embedded)  # fmt: skip

    def tick(self) -> None:
        """The watcher's idle call: embedding left over, and housekeeping when it is due."""
        if self.embedding_left:
            self.finish_embedding()
        if self.housekeeping_due():
            self.housekeep()


class _Asked:
    """A stop condition that remembers whether it ever said stop."""

    def __init__(self, ask: Callable[[], bool] | None) -> None:
        self.ask = ask
        self.said_yes = False

    def __call__(self) -> bool:
        if self.ask is not None and self.ask():
            self.said_yes = True
        return self.said_yes


def start_watching(
    engine: Workspace, on_report: Callable[[IndexReport], Any] | None = None
) -> tuple[Watcher, LiveIndex]:
    """A running watcher that keeps `engine`'s index fresh (stop it with `.stop()`);
    `on_report` gets each batch's report."""
    w = engine.settings.watch
    live = LiveIndex(
        engine,
        housekeep_after=w.housekeep_after_commits,
        housekeep_idle=w.housekeep_idle_seconds,
        keep_versions=timedelta(minutes=w.keep_versions_minutes),
        on_report=on_report,
    )
    watcher = Watcher(
        engine.root, live.apply, ignore_dirs=[str(engine.index_dir)],
        debounce=w.debounce_ms / 1000, max_delay=w.max_delay_ms / 1000,
        max_paths=w.max_batch_paths, on_idle=live.tick,
        work_left=lambda: live.embedding_left,
    )  # fmt: skip
    live.should_yield = lambda: watcher.queue.pending() > 0
    watcher.start()
    return watcher, live


__all__ = ["LiveIndex", "Workspace", "start_watching"]
