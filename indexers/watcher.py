"""File watching (the sole watchdog importer): file events → debounced batches of changed paths.

Events only say *where* to look; the indexer then reads the disk, so an event that is late,
doubled or out of order cannot leave the index wrong. `ChangeQueue` coalesces paths until the
tree has been quiet for `debounce` seconds (or the oldest change has waited `max_delay`), and
keeps collecting while a batch is being indexed, so nothing that happens meanwhile is lost.

What is watched: the root itself (not recursively), every top-level folder the walk would
enter (recursively), and `.git` (not recursively: HEAD, the index and packed refs move on a
commit or a branch switch). The index folder, version-control internals, dependency and
virtualenv folders are never watched. A folder created at the top later gets its own watch.
An edit to an ignore file changes which files count, so it asks for a whole walk.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from indexers.ignore import IGNORE_FILES, dir_reason, marker_reason, relative_dirs

__all__ = ["Batch", "ChangeQueue", "Watcher"]

logger = logging.getLogger("memserver.watch")

_CHANGES = (
    FileCreatedEvent,
    FileModifiedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileClosedEvent,  # closed after writing
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
)
_GIT_FILES = frozenset({"HEAD", "index", "packed-refs", "ORIG_HEAD", "FETCH_HEAD"})


@dataclass(frozen=True, slots=True)
class Batch:
    """Changed root-relative paths (files or folders) to index again."""

    paths: frozenset[str]
    full: bool  # the ignore rules changed or too many paths: walk the whole tree
    git_moved: bool  # HEAD, a ref or the git index moved
    events: int
    oldest: float  # time.monotonic() of the first change in the batch

    def __bool__(self) -> bool:
        return bool(self.paths or self.full or self.git_moved)


class ChangeQueue:
    """Thread-safe coalescing of changes into batches (no watchdog: testable on its own)."""

    def __init__(self, debounce: float = 0.15, max_delay: float = 1.0, max_paths: int = 2000):
        self.debounce = debounce
        self.max_delay = max_delay
        self.max_paths = max_paths
        self._cond = threading.Condition()
        self._reset()

    def _reset(self) -> None:
        self._paths: set[str] = set()
        self._full = False
        self._git = False
        self._events = 0
        self._oldest = 0.0
        self._latest = 0.0

    def _touch(self) -> None:
        now = time.monotonic()
        if not self._events:
            self._oldest = now
        self._latest = now
        self._events += 1
        self._cond.notify_all()

    def add(self, rel: str) -> None:
        with self._cond:
            if len(self._paths) < self.max_paths:
                self._paths.add(rel)
            else:
                self._full = True
            self._touch()

    def add_full(self) -> None:
        with self._cond:
            self._full = True
            self._touch()

    def add_git(self) -> None:
        with self._cond:
            self._git = True
            self._touch()

    def requeue(self, batch: Batch) -> None:
        """Put a batch that failed back, merged with whatever came since."""
        with self._cond:
            for rel in batch.paths:
                if len(self._paths) < self.max_paths:
                    self._paths.add(rel)
                else:
                    self._full = True
            self._full |= batch.full
            self._git |= batch.git_moved
            if not self._events:
                self._oldest = batch.oldest
            self._events += batch.events
            self._cond.notify_all()

    def pending(self) -> int:
        with self._cond:
            return self._events

    def take(self, stop: threading.Event, idle: float = 0.5) -> Batch | None:
        """The next batch once the tree is quiet (or the oldest change is due); None when
        nothing is pending within `idle` seconds or when `stop` is set."""
        deadline_idle = time.monotonic() + idle
        with self._cond:
            while not stop.is_set():
                now = time.monotonic()
                if self._events:
                    due = min(self._latest + self.debounce, self._oldest + self.max_delay)
                    if now >= due:
                        batch = Batch(
                            frozenset(self._paths), self._full, self._git, self._events,
                            self._oldest,
                        )  # fmt: skip
                        self._reset()
                        return batch
                    self._cond.wait(due - now)
                elif now >= deadline_idle:
                    return None
                else:
                    self._cond.wait(deadline_idle - now)
        return None

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.w = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if not isinstance(event, _CHANGES) or isinstance(event, DirModifiedEvent):
            return  # opened/closed-without-writing; a folder's own mtime (its files say more)
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                self.w.saw(os.fsdecode(raw), event)


class Watcher:
    """Watch `root`, calling `on_batch(batch)` from one worker thread, one batch at a time.

    `on_batch` errors are logged and the batch is retried after a back-off, merged with any
    changes that came since. `start()` first queues a whole walk, so changes made while
    nothing was watching are picked up too.
    """

    def __init__(
        self,
        root: Path,
        on_batch: Callable[[Batch], Any],
        *,
        ignore_dirs: Sequence[str] = (),
        debounce: float = 0.15,
        max_delay: float = 1.0,
        max_paths: int = 2000,
        catch_up: bool = True,
        on_idle: Callable[[], Any] | None = None,
        work_left: Callable[[], bool] | None = None,
    ) -> None:
        self.root = str(Path(root).resolve())
        self.on_batch = on_batch
        self.ignore = relative_dirs(self.root, ignore_dirs)
        self.queue = ChangeQueue(debounce, max_delay, max_paths)
        self.catch_up = catch_up
        self.on_idle = on_idle
        self.work_left = work_left  # work `on_idle` still has to do (not idle until done)
        self.batches = 0
        self.errors = 0
        self.last_error = ""
        self.last_batch: Batch | None = None  # the latest batch indexed
        self.events = 0  # file events queued so far (ignored places never count)
        self._seen = threading.Condition()
        self._observer: Any = None
        self._watches: dict[str, Any] = {}  # top-level folder → its recursive watch
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._busy = threading.Event()

    # -- which folders ----------------------------------------------------------------

    def _watchable(self, name: str) -> bool:
        """Is the top-level folder `name` one the walk would enter?"""
        if name in self.ignore or dir_reason(name) is not None:
            return False
        path = os.path.join(self.root, name)
        if not os.path.isdir(path):
            return False
        try:
            names = set(os.listdir(path))
        except OSError:
            return False
        return marker_reason(name, names, path) is None

    def _watch_folder(self, name: str) -> None:
        if name in self._watches or not self._watchable(name):
            return
        try:
            handler = _Handler(self)
            self._watches[name] = self._observer.schedule(
                handler, os.path.join(self.root, name), recursive=True
            )
        except OSError as exc:  # e.g. out of inotify watches: say so, fall back to rescans
            logger.warning("memserver watch: cannot watch %s/: %s", name, exc)

    def _unwatch_folder(self, name: str) -> None:
        watch = self._watches.pop(name, None)
        if watch is not None:
            with contextlib.suppress(KeyError, OSError):
                self._observer.unschedule(watch)

    # -- events -------------------------------------------------------------------------

    def saw(self, abs_path: str, event: FileSystemEvent) -> None:
        """Queue one event path (called from watchdog's threads)."""
        if not abs_path.startswith(self.root):
            return
        rel = abs_path[len(self.root) :].strip(os.sep).replace(os.sep, "/")
        if not rel:
            return
        parts = rel.split("/")
        top = parts[0]
        if top == ".git":
            if len(parts) == 2 and parts[1] in _GIT_FILES:
                self.queue.add_git()
                self._saw_one()
            elif len(parts) == 3 and parts[1] == "info" and parts[2] == "exclude":
                self.queue.add_full()
                self._saw_one()
            return
        if any(rel == d or rel.startswith(d + "/") for d in self.ignore):
            return
        if any(dir_reason("/".join(parts[: i + 1])) for i in range(len(parts) - 1)):
            return  # inside a folder the walk never enters (node_modules, __pycache__, …)
        if len(parts) == 1 and event.is_directory:  # a top-level folder came or went
            if os.path.isdir(abs_path):
                self._watch_folder(top)
            else:
                self._unwatch_folder(top)
        if parts[-1] in IGNORE_FILES:
            self.queue.add_full()
        else:
            self.queue.add(rel)
        self._saw_one()

    def _saw_one(self) -> None:
        with self._seen:
            self.events += 1
            self._seen.notify_all()

    def wait_for_events(self, since: int, timeout: float) -> bool:
        """Wait until more than `since` events have been queued (tests, benchmarks)."""
        with self._seen:
            return self._seen.wait_for(lambda: self.events > since, timeout)

    # -- running ------------------------------------------------------------------------

    def start(self) -> None:
        """Install the watches and start the worker (returns at once)."""
        self._observer = Observer()
        self._observer.schedule(_Handler(self), self.root, recursive=False)
        git = os.path.join(self.root, ".git")
        if os.path.isdir(git):
            self._observer.schedule(_Handler(self), git, recursive=False)
        for entry in sorted(os.listdir(self.root)):
            self._watch_folder(entry)
        self._observer.start()
        if self.catch_up:
            self.queue.add_full()
        self._worker = threading.Thread(target=self._work, name="memserver-watch", daemon=True)
        self._worker.start()

    def _work(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            batch = self.queue.take(self._stop)
            if not batch:
                if self.on_idle is not None and not self._stop.is_set():
                    self._idle_work()
                continue
            self._busy.set()
            try:
                self.on_batch(batch)
                self.last_batch = batch
                self.batches += 1
                backoff = 1.0
            except Exception as exc:  # keep watching; retry the batch later
                self.errors += 1
                self.last_error = str(exc)
                logger.warning("memserver watch: batch failed (retrying in %.0f s): %s",
                               backoff, exc)  # fmt: skip
                self.queue.requeue(batch)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
            finally:
                self._busy.clear()

    def _idle_work(self) -> None:
        assert self.on_idle is not None
        self._busy.set()
        try:
            self.on_idle()
        except Exception as exc:  # housekeeping can wait for the next quiet moment
            logger.warning("memserver watch: idle work failed: %s", exc)
        finally:
            self._busy.clear()

    def idle(self) -> bool:
        """Nothing queued, no batch or idle work running, and none left to do."""
        left = self.work_left is not None and self.work_left()
        return not self._busy.is_set() and self.queue.pending() == 0 and not left

    def wait_idle(self, timeout: float, settle: float = 0.3) -> bool:
        """Wait until the watcher has been idle for `settle` seconds (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        quiet_since = None
        while time.monotonic() < deadline:
            if self.idle():
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= settle:
                    return True
            else:
                quiet_since = None
            time.sleep(0.02)
        return False

    def stop(self, timeout: float = 30.0) -> None:
        """Stop watching; the batch in progress (if any) finishes first."""
        self._stop.set()
        self.queue.wake()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
        if self._worker is not None:
            self._worker.join(timeout)

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
