"""The code graph's tags of an index run's files, made beside the chunker.

Tagging a file (parse, the tags query, nesting and local names: `indexers.tagfile.
tag_file`) costs about as much CPU as chunking it and writing its chunks and keyword
documents, so a run with enough code hands it to a worker process (`ingest.tagworker`, fed
through a pipe): this process chunks and writes while the worker tags, and takes each
file's tags, already in the store's row form (Arrow's buffers as bytes, not objects), when
its batch is committed. A small run (the watcher's saves, a few changed
files, a small project: under `MIN_CHARS` of code) tags here, where a worker's start would
cost more than it saves; so does a run on a machine whose cores have no time for it (there
a worker's start is only more work for the same cores): what the cores did lately says so
(`core.cpuload`), and the load average where that cannot be read. `Engine.index` starts
the worker before it opens the stores (`early_worker`), when the walk found enough code:
its start then overlaps that opening, and it compiles the run's tags queries (told the
languages) while the run reads its files.

The worker is a plain child process, not a multiprocessing one: those re-import the
caller's main script (a user's script without a `__main__` guard would run again in the
worker). It runs isolated (`python -I`) with this process's import path, so it loads
these modules and nothing from the folder it starts in (a project being indexed is never
imported). Whatever happens to it (it cannot start, it dies, a file breaks it), the files
it has not answered for are tagged here: a run never loses its graph to the worker; when
this process goes, the worker reads the end of its input and leaves.

A worker that answered all its run's files is kept, idle, for this process's next run
(`_KEPT`, for `_KEEP_S`): a long-lived process (the server re-indexing after a branch
switch) then pays its start and its tags queries once. Tagging pybind11's headers, those
were most of the graph's cost in a warm run: its share of the keyword phase went from
+29.5 % to +5.2 % and +6.1 % (`benchmarks/graph_overhead.py`, paired medians of 12 runs,
two invocations). Kept, it holds 36 MB (after pybind11) to 46 MB (after Django 3.2) and no
CPU. A forked child holds none: its end leaves the parent's running.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import json
import os
import queue
import subprocess
import sys
import threading
import weakref
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence

from indexers.treesitter import LANGUAGES as CODE_LANGUAGES
from memserver.core import cpuload
from memserver.core.types import ChunkOptions, SourceFile
from memserver.ingest.tagworker import (
    AHEAD,
    HINT,
    Ahead,
    Job,
    messages,
    room_in,
    rows,
    send,
    widen,
)  # fmt: skip

__all__ = ["MIN_CHARS", "Tagger", "early_worker", "start_early", "stop_early", "stop_kept"]

_CHUNK = 8  # files per message to and from the worker
# Below this much code a worker costs more than it saves: its start (~0.2 s) and its tags
# queries (compiled once per language and process, where this process has them already).
# The graph's share of the keyword phase with a worker against in-process (2 cores,
# benchmarks/graph_overhead.py): 0.13 M characters +69 % against +42 %, 0.20 M +37 %
# against +28 %, 0.42 M (cobra) +13-31 % against +25-39 % over three runs and +33-48 %
# against +47-55 % in three later ones (medians of 5-7), 0.86 M (click) +12-27 % against
# +39-58 %: the two cross between 0.20 M and 0.42 M.
MIN_CHARS = 300_000
# A worker needs half a core that other work and the run's own leave free (`core.cpuload`),
# measured since the latest sample (the process's start, a run's start or decision) no older
# than _WINDOW_S and old enough to say (`cpuload.min_window_s`); without one, the load
# average decides.
_SPARE_CORES = 0.5
_WINDOW_S = 10.0
_LOADAVG = getattr(os, "getloadavg", None)  # none on Windows


def _load_below(loadavg: Callable[[], tuple[float, float, float]] | None, cores: int) -> bool:
    """Whether the last minute's load average is below `cores` (true where the system has
    none, or it cannot be read: the cores are trusted)."""
    try:
        load = loadavg()[0] if loadavg is not None else None
    except OSError:
        load = None
    return load is None or load < cores


class Tagger:
    """Tags in row form (`store.graphpart.graph_part`) for a run's files, in their order."""

    def __init__(
        self, options: ChunkOptions, workers: int = 1, min_chars: int = MIN_CHARS,
        loadavg: Callable[[], tuple[float, float, float]] | None = _LOADAVG,
        sample: Callable[[], cpuload.Sample | None] = cpuload.sample,
    ) -> None:  # fmt: skip
        self.options = options
        self.workers = workers  # 0: always here
        self.loadavg = loadavg
        self.sample = sample
        self._samples: deque[cpuload.Sample] = deque(maxlen=8)  # oldest first
        if sample is cpuload.sample:  # the process's start, its earlier runs
            self._samples.extend(cpuload.history())
        self._note()
        self.min_chars = min_chars  # less code than this (characters): tagged here
        self._ready: _Lease | None = None  # a worker `prepare` started, not yet fed
        self._active: _Lease | None = None  # fed: answering a run's files
        self._expected = 0  # characters of changed code the running run found (`expect`)
        self._asked = False  # whether this run has asked for a worker yet

    def prepare(self, languages: Sequence[str] = ()) -> None:
        """Start a worker now (or take the one `start_early` started), while the run still
        reads its files, so that its start (an interpreter, imports, the tags queries of
        `languages`, the run's code languages) overlaps the reading; `tags` uses it, or
        stops it when the run turns out too small for it."""
        if self._ready is None and self._worth_a_worker():
            self._ready = _Lease.of(_take_early() or _Worker.spawn())
            if self._ready is not None and languages:
                self._ready.worker.hint(languages)

    def begin(self) -> None:
        """A run begins: nothing of its code is expected yet (see `expect`)."""
        self._expected, self._asked = 0, False
        self._note()

    def _note(self) -> cpuload.Sample | None:
        found = self.sample()
        if found is not None:
            self._samples.append(found)
        return found

    def expect(self, size: int, languages: Sequence[str] = ()) -> int:
        """The run expects `size` more characters of changed code (the files' sizes, before
        it reads them) in these languages (the most code first): the worker is prepared
        once they reach `min_chars`, not before (for fewer, its start would only be more
        work beside the run), and asked for once a run; `tags` stops it when the files read
        turn out fewer. The characters expected so far."""
        self._expected += size
        if not self._asked and self._expected >= self.min_chars:
            self._asked = True
            self.prepare(languages)
        return self._expected

    def _worth_a_worker(self) -> bool:
        """A worker, and a core with time for it: half a core free of other work and of the
        run's own in the recent past (`_spare_cores`), or where that cannot be told, the
        last minute's load average (which counts this process and its last run) below the
        cores this process may use."""
        cores = cpuload.cores()
        if self.workers < 1 or cores < 2:
            return False
        spare = self._spare_cores()
        if spare is not None:
            return spare >= _SPARE_CORES
        return _load_below(self.loadavg, cores)

    def _spare_cores(self) -> float | None:
        """`cpuload.spare_cores` since the latest sample that says enough, None without one."""
        before, now = list(self._samples), self._note()
        if now is None:
            return None
        for then in reversed(before):
            if now.at - then.at > _WINDOW_S:
                break
            spare = cpuload.spare_cores(then, now)
            if spare is not None:
                return spare
        return None

    def close(self) -> None:
        """Done with the workers: one prepared for a run that did not take it, and one whose
        run answered all its files, are kept for a later run (`_Worker.release`); one whose
        run ended (or failed) before reading all its answers is stopped, and so is one
        started early for this run (`start_early`, in its context) that no run took: not
        one that another engine's run, in this process, started for itself meanwhile."""
        for lease in (self._ready, self._active):
            if lease is not None:
                lease.release()
        self._ready = self._active = None
        stop_early(mine=True)

    def tags(self, files: Sequence[Job]) -> Iterator[object] | None:
        """Each file's tags in row form, in order, from a worker process (its start overlaps
        this process's reading and chunking); None when they are better made here, by the
        chunker from the parse it makes anyway (`Chunker.chunk(..., tags=True)`)."""
        code = [f for f in files if f[2] in CODE_LANGUAGES]
        small = sum(len(f[1]) for f in code) < self.min_chars
        if self._ready is None and not small and not self._asked and self._worth_a_worker():
            self._ready = _Lease.of(_take_early() or _Worker.spawn())  # no `expect` before
        lease = self._ready
        if small or lease is None:
            self.close()
            return None
        self._ready, self._active = None, lease  # `close` releases it, whatever happens now
        lease.worker.feed(self.options, code)
        return self._from_worker(files, lease)

    def _from_worker(self, files: Sequence[Job], lease: _Lease) -> Iterator[object]:
        worker: _Worker | None = lease.worker
        try:
            for f in files:
                if f[2] in CODE_LANGUAGES and worker is not None and lease.held():
                    answer = worker.next()
                    if getattr(answer, "path", None) == f[0]:  # its answer for this file
                        yield answer
                        continue
                    worker.stop()
                    worker = None  # gone: this file and the rest are tagged here
                yield rows(f, self.options.max_parse_bytes)
        finally:
            lease.release()


class _Lease:
    """A run's hold on a worker. Its references to the worker outlive the run's use of it
    (the store's writer keeps the answers' iterator until the run's last batch is
    written; the tagger closes after that); meanwhile the worker may be kept and taken by
    another run of this process (two engines, each with its own index). Only the lease
    the worker was last given releases it (`_Worker.release`)."""

    __slots__ = ("worker",)

    def __init__(self, worker: _Worker) -> None:
        self.worker = worker
        worker.lease = self

    @classmethod
    def of(cls, worker: _Worker | None) -> _Lease | None:
        return None if worker is None else cls(worker)

    def held(self) -> bool:
        """Whether the worker is still this run's."""
        return self.worker.lease is self

    def release(self) -> None:
        """The run is done with the worker: kept or stopped (`_Worker.release`); nothing
        when it is no longer this run's."""
        with _POOL:
            if not self.held():
                return
            self.worker.lease = None
        self.worker.release()


_GONE = object()
_SPAWNED: weakref.WeakSet[_Worker] = weakref.WeakSet()  # every worker alive here (forks)


_BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from memserver.ingest.tagworker import serve_stdio; serve_stdio()"
)


# The worker runs in the idle scheduling class (Linux): on cores this process leaves idle,
# and off them as soon as this process's threads (its LanceDB and tantivy writers among
# them) want them. The graph's share of the keyword phase with it against without it (2
# cores, medians of 21 alternating runs): click +8.8 % against +10.2 %, cobra +10.4 %
# against +12.9 %, mongoose +8.2 % against +10.7 %. Once this process waits for an answer
# longer than _PATIENCE_S, the worker runs as any process until it answers: other work on
# the machine cannot starve a run of its tags.
_IDLE = getattr(os, "SCHED_IDLE", None)
_PATIENCE_S = 0.05


class _Worker:
    """The child process, the thread feeding it the jobs (a chunk per message) and the one
    reading its answers as they come: left in the pipe, they would stop the worker (a
    pipe holds 1 MiB at most; a run's answers are more) until this process asks for them."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.held: list[object] = []
        self.answers: queue.SimpleQueue[object] = queue.SimpleQueue()
        self.idle = False  # whether it runs in the idle scheduling class
        self.owed = 0  # the answers of the run it was fed that were not taken yet
        self.reader: threading.Thread | None = None  # the run's, reading its answers
        self.ended = threading.Event()  # its run's last answer is read: its reader ended
        self.lease: _Lease | None = None  # the run's that holds it (none while kept)
        self.feeder: threading.Thread | None = None  # the run's, sending its jobs
        self.retiring: threading.Timer | None = None  # while kept: stops it unless taken
        self.tagging_ahead = False  # asked to tag a run's files before its jobs (`ahead`)
        self.made_ahead = False  # and not told to forget them since

    @classmethod
    def spawn(cls) -> _Worker | None:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, json.dumps(sys.path)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )  # fmt: skip
        except OSError:
            return None
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                widen(pipe.fileno())
        worker = cls(proc)
        worker.set_idle(True)
        _SPAWNED.add(worker)
        cpuload.count_as_own(proc.pid)  # its CPU is this process's work, not other work
        return worker

    def set_idle(self, idle: bool) -> bool:
        """Move the worker into the idle scheduling class or out of it; whether it runs as
        asked (out of it, always, where the system has no such class)."""
        if _IDLE is None:
            return not idle
        policy = _IDLE if idle else os.SCHED_OTHER
        try:
            os.sched_setscheduler(self.proc.pid, policy, os.sched_param(0))
        except OSError:
            return False
        self.idle = idle
        return True

    def hint(self, languages: Sequence[str]) -> None:
        """Have the worker compile these languages' tags queries before their files come
        (nothing answers; a worker gone is found out when it is fed). Not while it tags
        ahead (its files' queries are compiled as it tags them): anything that comes stops
        that."""
        if self.proc.stdin is not None and not self.tagging_ahead:
            with contextlib.suppress(OSError, ValueError):
                send(self.proc.stdin.fileno(), (HINT, list(languages)))

    def ahead(self, files: Ahead | None) -> None:
        """Have the worker tag these files before their jobs come (`tagworker._tag_ahead`;
        nothing answers), until they come; None: forget what it made ahead (a run done with
        it) and stop making more. A worker just started: the message is cut to the first
        files that fit in `_AHEAD_BYTES` and in its pipe (`room_in`: a user past the
        system's pipe limits gets a smaller one), so writing it never waits for the worker."""
        self.tagging_ahead = files is not None
        self.made_ahead = files is not None
        if self.proc.stdin is None:
            return
        with contextlib.suppress(OSError, ValueError):
            fd = self.proc.stdin.fileno()
            if files is not None:
                root, cap, parse_cap, named = files
                room = min(_AHEAD_BYTES, room_in(fd) - _ROOM_KEPT - _bytes(root))
                first: list[tuple[str, str, str]] = []
                for entry in named:
                    room -= _AHEAD_ENTRY + _bytes(entry[0]) + _bytes(entry[1])
                    if room < 0:
                        break
                    first.append(entry)
                files = (root, cap, parse_cap, first)
            send(fd, (AHEAD, files))

    def feed(self, options: ChunkOptions, jobs: Sequence[Job]) -> None:
        """Send the jobs and take the answers, each from a thread of its own. The input
        stays open: once its answers are all in, the worker waits for another run's."""
        self.tagging_ahead = False  # the jobs end it
        self.held, self.answers, self.owed = [], queue.SimpleQueue(), len(jobs)
        self.ended = threading.Event()  # this run's (an earlier run's reader sets its own)
        if not jobs:
            self.ended.set()
        self.feeder = threading.Thread(
            target=self._feed, args=(options, jobs), name="memserver-tag-feeder", daemon=True
        )
        self.feeder.start()
        self.reader = threading.Thread(
            target=self._read, args=(self.answers, self.ended, len(jobs)),
            name="memserver-tag-reader", daemon=True,
        )  # fmt: skip
        self.reader.start()

    def _read(self, answers: queue.SimpleQueue[object], ended: threading.Event, jobs: int) -> None:
        """The answer messages of the run's `jobs` into `answers` (one a message of
        `_CHUNK` jobs, as fed), then _GONE (also after a death, or garbage). Its last
        answers end the run's reading of the pipe: `ended` is set before they are given
        (so it is when the run has taken them)."""
        assert self.proc.stdout is not None
        left = jobs
        try:
            if left > 0:
                for answer in messages(self.proc.stdout.fileno()):
                    if not isinstance(answer, list) or len(answer) != min(_CHUNK, left):
                        break  # garbled: the caller tags the rest (the worker is not kept)
                    left -= len(answer)
                    if not left:
                        ended.set()
                        answers.put(answer)
                        break
                    answers.put(answer)
        except Exception:  # ended, died or garbled: the caller tags the rest
            pass
        answers.put(_GONE)

    def _feed(self, options: ChunkOptions, jobs: Sequence[Job]) -> None:
        pipe = self.proc.stdin
        assert pipe is not None
        with contextlib.suppress(OSError, ValueError):  # the worker went: it is known
            for at in range(0, len(jobs), _CHUNK):
                send(pipe.fileno(), (options.max_parse_bytes, jobs[at : at + _CHUNK]))

    def next(self) -> object:
        """The next file's tags, or _GONE when the worker cannot give them."""
        if not self.held:
            try:
                answers = self.answers.get(timeout=_PATIENCE_S if self.idle else None)
            except queue.Empty:  # waited for: it runs as any process until it answers
                if not self.set_idle(False) and self.proc.poll() is None:
                    self.stop()  # it cannot be hurried: this process tags the rest
                    return _GONE
                answers = self.answers.get()
                self.set_idle(True)
            if not isinstance(answers, list):
                self.answers.put(_GONE)  # asked again: still gone
                return _GONE
            self.held = answers[::-1]
        self.owed -= 1
        return self.held.pop()

    def release(self) -> None:
        """Its run is done with it (`_Lease.release`): kept for a later run of this process
        (`_keep`) when it is alive and owes nothing (never fed, or all its answers were
        taken), else stopped."""
        if self.owed <= 0 and self.proc.poll() is None:
            if self.made_ahead:  # its run is done with them, whether it asked or not
                self.ahead(None)
            self.set_idle(True)  # waited for at the end, it may not be
            _keep(self)
        else:
            self.stop()

    def reusable(self) -> bool:
        """Whether a run can take it: alive, and done with its last run (every answer read,
        so its reader reads no more from it)."""
        return self.proc.poll() is None and (self.reader is None or self.ended.is_set())

    def stop(self) -> None:
        if self.retiring is not None:
            self.retiring.cancel()
        if self.proc.poll() is None:
            self.proc.kill()
        with cpuload.reaping(self.proc.pid):  # its time moves to the children's
            self.proc.wait()
        for thread in (self.feeder, self.reader):  # they end at its end: before the pipes
            if (
                thread is not None
                and thread.ident is not None
                and (thread is not threading.current_thread())
            ):  # close (a number reused would be another file's)
                thread.join(_THREAD_END_S)
        for pipe in (self.proc.stdin, self.proc.stdout):  # a feeder still writing: it stops
            if pipe is not None and not pipe.closed:
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()


# A worker started at the start of a command that indexes (`start_early`), before the run
# that may take it: at most one, until a run takes it or a tagger closes.
_EARLY: list[_Worker] = []
# the one started in this context (a command's, an engine's run): its tagger stops that one
# only, not one another engine's run started meanwhile for itself
_STARTED_HERE: contextvars.ContextVar[_Worker | None] = contextvars.ContextVar(
    "memserver_early_worker", default=None
)

# A worker whose run is done, kept for this process's next run (`_keep`): its start and its
# tags queries (C++'s 0.13 s of CPU, most of the graph's cost in a C++ project's run) are
# then not paid again. A long-lived process (the server's watcher re-indexing after a
# branch switch, a script's runs) keeps at most one, idle (blocked on its pipe, no CPU), for
# _KEEP_S after its last run; the process's end stops it, and a worker whose parent is gone
# reads the end of its input and leaves.
_KEPT: list[_Worker] = []
_KEEP_S = 600.0  # ten minutes: a branch switched to and back, a script's runs


# over _EARLY, _KEPT and the leases (a worker is stopped outside it); reentrant: the cycle
# collector may end an abandoned run's answers (releasing its worker) inside it
_POOL = threading.RLock()
_THREAD_END_S = 1.0  # at most, for a stopped worker's feeder and reader to end


def _keep(worker: _Worker) -> None:
    """Keep `worker` for a later run, and stop it once it has waited `_KEEP_S` for one
    (not while the interpreter ends: no thread starts then, and no run comes)."""
    if sys.is_finalizing():
        worker.stop()
        return
    retiring = threading.Timer(_KEEP_S, _retire, args=(worker,))
    retiring.daemon = True
    with _POOL:
        extra = bool(_KEPT)  # one is enough
        if not extra:
            worker.retiring = retiring
            _KEPT.append(worker)
            retiring.start()
    if extra:
        worker.stop()


def _retire(worker: _Worker) -> None:
    """Stop `worker` if it is still kept (no run took it since)."""
    with _POOL:
        if worker not in _KEPT:  # a run took it
            return
        _KEPT.remove(worker)
    worker.stop()


def _drain(held: list[_Worker]) -> list[_Worker]:
    with _POOL:
        out = held[:]
        held.clear()
    return out


def stop_kept() -> None:
    """Stop the worker kept for a later run, if any."""
    for worker in _drain(_KEPT):
        worker.stop()


# What a first index's files to tag ahead (`early_worker`) may take of the worker's pipe: the
# message is written where it starts, before anything but the hint, and must fit in the
# pipe (Linux's 64 KiB by default; `_Worker.ahead` cuts it to what the pipe holds, for a
# user past the system's pipe limits) so that writing it never waits for the worker (idle,
# on busy cores it may not read for a while). Their paths come to 300-400 files; the tags
# of as many are what the worker holds for the run (mongoose's 301 files take 0.7 s of a
# core, more than the stores' opening leaves).
_AHEAD_BYTES = 48 * 1024
_AHEAD_ENTRY = 32  # a file's pickled tuple beyond its strings' bytes, at most
_ROOM_KEPT = 4096  # of the pipe, for the hint before it and the message's framing


def _bytes(text: str) -> int:
    """What `text` takes pickled (UTF-8, a lone surrogate as it is)."""
    return len(text.encode("utf-8", "surrogatepass"))


@contextlib.contextmanager
def early_worker(
    files: Sequence[SourceFile], workers: int, ahead: tuple[str, int, int] | None = None
) -> Iterator[None]:
    """A tags worker started now (`start_early`), before an index run opens its stores,
    when `files` (a walk's) hold enough code for one (`MIN_CHARS`) were all of it changed
    and `workers` allow one; stopped on the way out unless the run took it. `ahead`, for a
    run that will cut every file (a first index): (the root's real path, the largest file
    read, the largest file parsed), and the worker tags the first code files (those
    `_Worker.ahead` has room for) while the stores open (`tagworker._tag_ahead`)."""
    code = [f for f in files if f.language in CODE_LANGUAGES]
    if workers > 0 and sum(f.size for f in code) >= MIN_CHARS:
        asked = None
        if ahead is not None and os.name == "posix":  # where the worker can see jobs wait
            asked = (*ahead, [(f.path, f.abs_path, f.language) for f in code])
        sizes: Counter[str] = Counter()
        for f in code:
            sizes[f.language] += f.size
        start_early(ahead=asked, languages=[name for name, _ in sizes.most_common()])
    try:
        yield
    finally:
        stop_early(mine=True)


def start_early(loadavg: Callable[[], tuple[float, float, float]] | None = None,
                ahead: Ahead | None = None, languages: Sequence[str] = ()
                ) -> _Worker | None:  # fmt: skip
    """Start a tags worker now, before the run that may take it opens its stores: its start
    (an interpreter and its imports, 0.03-0.05 s of a core) then overlaps that opening
    (about 0.45 s of one core in a fresh `memserver index` on click: LanceDB's import, the
    tables), not the run's first files. The run's tagger takes it where it would start a
    worker (`Tagger.prepare`, `Tagger.tags`) and, with the run's code languages, has it
    compile their tags queries while the run reads its files; a run that wants none (too
    little changed code, busy cores) stops it when its tagger closes, and so does
    `stop_early` (`early_worker`'s end, or the interpreter's). `ahead`: files it tags
    meanwhile (`_Worker.ahead`), asked before any run can take it, after the tags queries
    of `languages` (told first: the run's hint would stop the tagging ahead). Only on two cores or
    more, and a load average (the last minute's; `loadavg`, default the system's) below
    them: on busy cores a worker would not be taken. None while an earlier run's worker is
    kept: the run takes that one. The worker started, if any."""
    cores = cpuload.cores()
    with _POOL:
        held = bool(_EARLY or _KEPT)
    if held or cores < 2 or not _load_below(loadavg or _LOADAVG, cores):
        return None
    worker = _Worker.spawn()
    if worker is not None:
        if ahead is not None:
            worker.hint(languages)
            worker.ahead(ahead)
        with _POOL:
            _EARLY.append(worker)
        _STARTED_HERE.set(worker)
    return worker


def stop_early(mine: bool = False) -> None:
    """Stop the worker `start_early` started, if no run took it; `mine`: only if it was
    started in this context (this command's or this run's: `early_worker`)."""
    if not mine:
        for worker in _drain(_EARLY):
            worker.stop()
        return
    own = _STARTED_HERE.get()
    if own is None:
        return
    with _POOL:
        if own not in _EARLY:  # taken by a run, or stopped
            return
        _EARLY.remove(own)
    own.stop()


atexit.register(stop_early)
atexit.register(stop_kept)


def _forget_workers() -> None:
    """In a forked child: the workers are the parent's. Its exit must not stop them, and
    its copies of their pipes are closed (a kept worker leaves when its input ends, which
    it would not while a child still held its write end), a run's in the parent too."""
    global _POOL
    _POOL = threading.RLock()  # the parent's may have been held by another thread
    for worker in list(_SPAWNED):  # kept, early, or a run's in the parent
        for pipe in (worker.proc.stdin, worker.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError, ValueError):
                    pipe.close()
    _EARLY.clear()
    _KEPT.clear()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_forget_workers)


def _take_early() -> _Worker | None:
    """The worker kept from an earlier run, else the one `start_early` started, if it is
    still there (else None)."""
    while True:
        with _POOL:
            held = _KEPT or _EARLY
            if not held:
                return None
            worker = held.pop()
            if worker.retiring is not None:
                worker.retiring.cancel()
        if worker.reusable():
            return worker
        worker.stop()
