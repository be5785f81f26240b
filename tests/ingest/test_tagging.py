"""The code graph's tags made in a worker process: the same rows as made in-process, in
the files' order, whatever happens to the worker; and nothing of the indexed folder is
imported by it."""

from __future__ import annotations

import contextlib
import contextvars
import os
import pickle
import queue
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from indexers.tagfile import tag_file
from indexers.treesitter import LANGUAGES as CODE_LANGUAGES
from memserver.core import cpuload
from memserver.core.types import ChunkOptions
from memserver.ingest import tagging
from memserver.ingest.tagging import Tagger
from memserver.ingest.tagworker import send
from memserver.store.graphpart import graph_part
from tests.indexers.test_chunking import FIXTURES, POLYGLOT

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a worker needs 2 cores")


def idle() -> tuple[float, float, float]:  # the machine's other work: none
    return (0.0, 0.0, 0.0)


def no_sample() -> None:  # the cores' times cannot be read: the load average decides
    return None


def _files(copies: int = 3, languages: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    """The polyglot fixture (code and text files; or only those of `languages`) several
    times over, under other paths."""
    out = []
    for n in range(copies):
        for name, language in sorted(FIXTURES.items()):
            if languages and language not in languages:
                continue
            text = (POLYGLOT / name).read_text(encoding="utf-8")
            out.append((f"copy{n}/{name}", text, language))
    return out


def _tree(root: Path, files: list[tuple[str, str, str]]) -> Path:
    """A project folder holding these files (their texts as `_files` gives them)."""
    for name, text, _ in files:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


LIGHT = ("python", "markdown", "yaml")  # one tags query to compile: the cheaper runs
_TAGGED: dict[tuple[str, str, str], object] = {}  # a job -> its tags made here (once)


def _expected(files: list[tuple[str, str, str]]) -> list[object]:
    for job in files:
        if job not in _TAGGED:
            _TAGGED[job] = graph_part(tag_file(*job, ChunkOptions().max_parse_bytes))
    return [_TAGGED[job] for job in files]


def _watch_workers(monkeypatch: pytest.MonkeyPatch) -> list[tagging._Worker | None]:
    """The workers the tagger starts (the real ones), as they start."""
    started: list[tagging._Worker | None] = []
    real = tagging._Worker.spawn

    def spawn() -> object:
        started.append(real())
        return started[-1]

    monkeypatch.setattr(tagging._Worker, "spawn", spawn)
    return started


def _kept() -> list[tagging._Worker]:
    """The worker kept for this process's next run (none, or one)."""
    return list(tagging._KEPT)


def test_the_worker_gives_what_tagging_here_gives_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _files()
    started = _watch_workers(monkeypatch)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    got = list(tagger.tags(files) or ())
    assert len(started) == 1 and started[0] is not None  # the worker did the tagging
    assert got == _expected(files)
    assert any(p.counts[1] for p in got)  # references crossed the pipe
    tagger.close()


def _a_run_that_keeps_its_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[tuple[str, str, str]], list[tagging._Worker | None], tagging._Worker]:
    """A run whose worker is kept after it: its files, the workers started (watched from
    now on), and that worker."""
    files = _files(3, LIGHT)
    started = _watch_workers(monkeypatch)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    assert list(tagger.tags(files) or ()) == _expected(files)
    tagger.close()
    worker = started[0]
    assert worker is not None and _kept() == [worker]
    return files, started, worker


def test_a_run_keeps_its_worker_for_the_next_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that answered all its run's files is kept, alive and idle, for the next
    run, which takes it instead of starting one (its start and tags queries not paid
    again); after `_KEEP_S` without a run it is stopped, and so it is with the process."""
    files, started, worker = _a_run_that_keeps_its_worker(monkeypatch)
    assert worker.proc.poll() is None
    if _IDLE_CLASS is not None:
        assert os.sched_getscheduler(worker.proc.pid) == _IDLE_CLASS
    again = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    assert list(again.tags(files[::-1]) or ()) == _expected(files[::-1])
    again.close()
    assert len(started) == 1 and _kept() == [worker]  # the same process, kept again
    monkeypatch.setattr(tagging, "_KEEP_S", 0.05)
    third = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    assert list(third.tags(files) or ()) == _expected(files)
    third.close()
    assert worker.proc.wait(timeout=60) is not None and not tagging._KEPT  # retired
    assert len(started) == 1


def test_at_most_one_worker_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of one process, each with its own worker, end: one worker is kept for a
    later run and the other is stopped, not left waiting."""
    started = _watch_workers(monkeypatch)
    taggers = [Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
               for _ in range(2)]  # fmt: skip
    for tagger in taggers:
        tagger.prepare(["python"])
    assert len(started) == 2 and all(w is not None for w in started)
    for tagger in taggers:
        tagger.close()
    assert _kept() == [started[0]] and started[0] is not None
    assert started[0].proc.poll() is None
    assert started[1] is not None and started[1].proc.returncode is not None


def test_a_kept_worker_that_died_or_is_not_done_is_not_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kept worker killed while it waited, or one whose last run's answers were not all
    read yet (its reader may still read from it), is stopped, and the run starts another:
    its tags are the same."""
    files = _files(3, LIGHT)
    started = _watch_workers(monkeypatch)

    def run() -> list[object]:
        tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
        try:
            return list(tagger.tags(files) or ())
        finally:
            tagger.close()

    assert run() == _expected(files)
    first = started[0]
    assert first is not None and _kept() == [first]
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait(timeout=60)
    assert run() == _expected(files)
    second = started[-1]
    assert len(started) == 2 and second is not None and _kept() == [second]
    second.ended.clear()  # as if its reader were still reading
    assert run() == _expected(files)
    assert len(started) == 3 and second.proc.returncode is not None  # stopped, not taken


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_does_not_stop_its_parent_s_kept_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A child forked after a run (a script's `multiprocessing` with fork) holds no worker:
    its end (its `atexit`, here called outright) leaves the parent's kept one running."""
    _, _, worker = _a_run_that_keeps_its_worker(monkeypatch)
    with warnings.catch_warnings():  # 3.12+: a fork beside threads warns (the child is tiny)
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:  # pragma: no cover - the child
        code = 0 if not tagging._KEPT else 1
        tagging.stop_kept()
        tagging.stop_early()
        os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert worker.proc.poll() is None and _kept() == [worker]


def test_a_run_done_with_its_worker_cannot_release_it_once_another_run_holds_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two runs of one process (two engines, each with its own index): A's answers are
    all taken, so its worker is kept, and B takes it before A's tagger closes. A's close
    leaves B's worker alone (neither stopped nor kept for a third run), and a third run
    starts its own: every run's tags are its files'."""
    a, b, c = _files(2, LIGHT), _files(4, LIGHT), _files(3, LIGHT)
    started = _watch_workers(monkeypatch)

    def tagger() -> Tagger:
        return Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)

    first = tagger()
    tags = first.tags(a)
    assert tags is not None
    code = sum(1 for f in a if f[2] in CODE_LANGUAGES)
    got = [next(tags) for _ in range(len(a))]  # as the store reads them: the last is kept
    assert got == _expected(a)
    del tags  # its generator ends: all answers taken, the worker is kept
    worker = started[0]
    assert code and worker is not None and _kept() == [worker]
    second = tagger()
    second.prepare(["python"])  # B takes it
    assert len(started) == 1 and not _kept()
    first.close()  # A, done long ago, closes now
    assert worker.proc.poll() is None and not _kept()
    third = tagger()
    third.prepare(["python"])
    assert len(started) == 2  # its own worker, not B's
    assert list(second.tags(b) or ()) == _expected(b)
    assert list(third.tags(c) or ()) == _expected(c)
    second.close()
    third.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_kept_worker_leaves_when_its_process_is_killed_though_a_fork_lives_on(
    tmp_path: Path,
) -> None:
    """A process with a kept worker forks a child (it lives on), then is killed: the
    worker's input ends, since the child closed its copies of the worker's pipes, so it
    leaves at once instead of waiting for the child's end."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, signal, sys, time, warnings\n"
        "from memserver.core.types import ChunkOptions\n"
        "from memserver.ingest import tagging\n"
        "from tests.ingest.test_tagging import LIGHT, _files, idle, no_sample\n"
        "t = tagging.Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, "
        "sample=no_sample)\n"
        "list(t.tags(_files(2, LIGHT)) or ())\n"
        "t.close()\n"
        "print(tagging._KEPT[0].proc.pid, flush=True)\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    child = os.fork()\n"
        "if child == 0:  # off the test's pipes: it waits for the parent alone\n"
        "    null = os.open(os.devnull, os.O_RDWR)\n"
        "    os.dup2(null, 1)\n"
        "    os.dup2(null, 2)\n"
        "    time.sleep(30)\n"
        "    os._exit(0)\n"
        "print(child, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n",
        encoding="utf-8",
    )
    worker, child = (int(line) for line in _run_script(script).stdout.split())
    try:
        deadline = time.monotonic() + 10
        while _running(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _running(worker)
        assert _running(child)  # the fork lives on
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGKILL)


def test_a_process_ends_though_a_run_s_answers_outlive_it(tmp_path: Path) -> None:
    """A caller that took all its answers but never closed its tagger, the answers' iterator
    still alive when the interpreter ends: the worker is stopped then, not kept (no thread
    starts while the interpreter ends: keeping it would hang the exit)."""
    script = tmp_path / "unclosed.py"
    script.write_text(
        "from memserver.core.types import ChunkOptions\n"
        "from memserver.ingest import tagging\n"
        "from tests.ingest.test_tagging import LIGHT, _files, idle, no_sample\n"
        "files = _files(2, LIGHT)\n"
        "t = tagging.Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, "
        "sample=no_sample)\n"
        "tags = t.tags(files)\n"
        "got = [next(tags) for _ in files]  # every answer, the iterator left open\n"
        "print(tagging._SPAWNED and next(iter(tagging._SPAWNED)).proc.pid, flush=True)\n",
        encoding="utf-8",
    )
    done = _run_script(script)
    assert done.returncode == 0, done.stderr
    worker = int(done.stdout.split()[0])
    assert not _running(worker)


def test_a_short_answer_message_ends_the_reading_as_garbled() -> None:
    """An answer message with fewer answers than its chunk's jobs (a worker gone wrong) ends
    the reading without marking the run done: the run tags the rest itself, and the worker
    is not kept."""
    read_end, write_end = os.pipe()
    stdout = os.fdopen(read_end, "rb", buffering=0)
    try:

        class Proc:  # the reader's view of a worker: its answers' pipe
            pass

        Proc.stdout = stdout  # type: ignore[attr-defined]

        worker = tagging._Worker.__new__(tagging._Worker)
        worker.proc = Proc()  # type: ignore[assignment]
        answers: queue.SimpleQueue[object] = queue.SimpleQueue()
        ended = threading.Event()
        send(write_end, ["first"] * (tagging._CHUNK - 1))  # a chunk of 8 answered by 7
        reader = threading.Thread(target=worker._read, args=(answers, ended, 20))
        reader.start()
        reader.join(timeout=60)
        assert not reader.is_alive() and not ended.is_set()
        assert answers.get_nowait() is tagging._GONE
    finally:
        os.close(write_end)
        stdout.close()


def _run_script(script: Path) -> subprocess.CompletedProcess[str]:
    """Run a Python script from the repository's root, with it on the import path."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=root, env=env, timeout=120)  # fmt: skip


def _running(pid: int) -> bool:
    """Whether `pid` is a process that has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_a_run_that_leaves_answers_unread_stops_its_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker whose run ended before taking all its answers (it failed, or stopped
    reading) may still be tagging them: it is stopped, not kept."""
    files = _files(6, LIGHT)
    started = _watch_workers(monkeypatch)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    tags = tagger.tags(files)
    assert tags is not None
    next(tags)
    tagger.close()
    worker = started[0]
    assert worker is not None and worker.proc.wait(timeout=60) is not None
    assert not tagging._KEPT


def test_a_small_run_is_tagged_here_and_keeps_the_prepared_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _files(2, LIGHT)
    started = _watch_workers(monkeypatch)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=10**9, loadavg=idle, sample=no_sample)
    tagger.prepare()
    assert tagger.tags(files) is None  # made with the chunks
    assert len(started) == 1 and started[0] is not None
    assert _kept() == [started[0]]  # unused: kept for a later run


def test_a_prepared_run_uses_its_worker_and_a_failed_one_stops_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _files(12, LIGHT)
    started = _watch_workers(monkeypatch)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    tagger.prepare()
    assert list(tagger.tags(files)) == _expected(files)
    assert len(started) == 1  # the prepared one answered
    tagger.prepare()  # takes it again (kept)
    tags = tagger.tags(files)  # a run that fails before reading its tags
    tagger.close()
    assert tags is not None
    assert len(started) == 1 and started[0] is not None
    assert started[0].proc.returncode is not None and not tagging._KEPT  # stopped
    assert list(tags) == _expected(files)  # what is read anyway is made here


def test_a_killed_worker_leaves_the_rest_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _files(12, LIGHT)
    started = _watch_workers(monkeypatch)
    tags = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample).tags(
        files
    )
    assert tags is not None
    first = [next(tags) for _ in range(3)]
    worker = started[0]
    assert worker is not None and worker.proc.poll() is None  # running
    os.kill(worker.proc.pid, signal.SIGKILL)
    assert first + list(tags) == _expected(files)
    assert worker.proc.returncode == -signal.SIGKILL


_IDLE_CLASS = getattr(os, "SCHED_IDLE", None)
needs_idle_class = pytest.mark.skipif(_IDLE_CLASS is None, reason="no idle scheduling class")


def _watch_policies(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, bool, int]]:
    """(asked idle, done, the worker's scheduling policy after) for each move, as done."""
    moves: list[tuple[bool, bool, int]] = []
    real = tagging._Worker.set_idle

    def set_idle(self: tagging._Worker, idle: bool) -> bool:
        done = real(self, idle)
        policy = os.sched_getscheduler(self.proc.pid) if self.proc.poll() is None else -1
        moves.append((idle, done, policy))
        return done

    monkeypatch.setattr(tagging._Worker, "set_idle", set_idle)
    return moves


@needs_idle_class
def test_the_worker_runs_idle_until_this_process_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beside a busy run the worker takes only idle cores; waited for longer than the
    patience, it runs as any process until it answers, then goes back to idle."""
    files = [f for f in _files(12, LIGHT) if f[2] in CODE_LANGUAGES]
    started = _watch_workers(monkeypatch)
    moves = _watch_policies(monkeypatch)
    monkeypatch.setattr(tagging, "_PATIENCE_S", 0.0)  # any wait is a long one
    tags = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample).tags(
        files
    )
    assert tags is not None
    worker = started[0]
    assert worker is not None
    assert moves[0] == (True, True, _IDLE_CLASS)  # from its start
    first = next(tags)  # asked at once: the worker is still starting, so it is waited for
    assert moves[1] == (False, True, os.SCHED_OTHER)
    assert moves[2][:2] == (True, True)  # answered: idle again
    assert [first, *tags] == _expected(files)
    assert _kept() == [worker]


@needs_idle_class
def test_a_worker_that_cannot_be_hurried_leaves_the_rest_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the system refuses to move the worker out of the idle class, a wait for it
    stops it, and this process tags what it has not answered for: busy cores elsewhere
    cannot starve a run of its tags."""
    files = _files(12, LIGHT)
    started = _watch_workers(monkeypatch)
    real = os.sched_setscheduler

    def refuse_to_raise(pid: int, policy: int, param: object) -> None:
        if policy != _IDLE_CLASS:
            raise PermissionError(1, "Operation not permitted")
        real(pid, policy, param)

    here: list[str] = []
    real_rows = tagging.rows

    def rows_here(job: tuple[str, str, str], max_parse_bytes: int) -> object:
        here.append(job[0])
        return real_rows(job, max_parse_bytes)

    monkeypatch.setattr(os, "sched_setscheduler", refuse_to_raise)
    monkeypatch.setattr(tagging, "rows", rows_here)
    monkeypatch.setattr(tagging, "_PATIENCE_S", 0.0)
    tags = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample).tags(
        files
    )
    assert tags is not None
    assert list(tags) == _expected(files)
    worker = started[0]
    assert worker is not None and worker.proc.returncode is not None  # stopped at the wait
    assert here == [f[0] for f in files]  # the first wait (it was starting): all made here


def test_messages_cross_a_pipe_whatever_their_size_and_a_cut_one_is_refused() -> None:
    """The worker's framing: a message over the pipe's capacity arrives whole, each one in
    order; one cut short raises instead of giving garbage."""
    from memserver.ingest.tagworker import PIPE_BYTES, messages, send, widen

    sent = [b"x" * (3 * PIPE_BYTES), ("small", 1), list(range(50_000))]
    read_end, write_end = os.pipe()
    widen(read_end)

    def write() -> None:
        for value in sent:
            send(write_end, value)
        os.close(write_end)

    import threading

    writer = threading.Thread(target=write)
    writer.start()
    got = list(messages(read_end))
    writer.join()
    os.close(read_end)
    assert got == sent
    read_end, write_end = os.pipe()
    os.write(write_end, (100).to_bytes(8, "little") + b"short")
    os.close(write_end)
    with pytest.raises(EOFError):
        list(messages(read_end))
    os.close(read_end)


def test_a_pipe_is_widened_where_the_system_can_and_left_as_it_is_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memserver.ingest.tagworker import PIPE_BYTES, widen

    read_end, write_end = os.pipe()
    try:
        monkeypatch.setitem(sys.modules, "fcntl", None)  # as on Windows: no fcntl to import
        widen(read_end)  # nothing to do, nothing raised
        monkeypatch.delitem(sys.modules, "fcntl")
        fcntl = pytest.importorskip("fcntl")
        if not hasattr(fcntl, "F_GETPIPE_SZ"):
            pytest.skip("pipes of a fixed size here")
        widen(read_end)
        assert fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ) == PIPE_BYTES
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_worker_imports_nothing_from_the_folder_it_starts_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "imported"
    for package in ("indexers", "memserver"):  # our own top-level names, in a hostile tree
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(
            f"open({str(marker)!r}, 'a').write({package!r})\n", encoding="utf-8"
        )
    monkeypatch.chdir(tmp_path)
    files = _files(12, LIGHT)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    assert list(tagger.tags(files)) == _expected(files)
    assert not marker.exists()


def test_a_busy_machine_tags_here(monkeypatch: pytest.MonkeyPatch) -> None:
    files = _files(12, LIGHT)
    started = _watch_workers(monkeypatch)
    cores = float(os.cpu_count() or 1)
    tagger = Tagger(
        ChunkOptions(), workers=1, min_chars=1, loadavg=lambda: (cores, 0.0, 0.0), sample=no_sample
    )
    tagger.prepare()
    assert tagger.tags(files) is None  # made with the chunks
    assert started == []
    never = Tagger(ChunkOptions(), workers=0, min_chars=1, loadavg=idle, sample=no_sample)
    assert never.tags(files) is None
    assert started == []


def _samples(idle: float, own: float, step: float = 0.5) -> Callable[[], cpuload.Sample]:
    """Samples `step` seconds apart in which `idle` cores sat idle and this process used
    `own` cores."""
    n = cpuload.cores()
    now = [0.0, 0.0, 0.0, 0.0]

    def sample() -> cpuload.Sample:
        now[0] += step
        now[1] += step * idle
        now[2] += step * n
        now[3] += step * own
        return cpuload.Sample(*now)

    return sample


def test_the_cores_recent_times_decide_before_the_load_average(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A minute's load average lags (it still counts a test suite that ended): what the
    cores did lately decides where their times say enough, and this process's own work
    (its last run and that run's worker) does not count against it."""
    files = _files(12, LIGHT)
    started = _watch_workers(monkeypatch)
    cores = float(cpuload.cores())
    busy = lambda: (2 * cores, 0.0, 0.0)  # noqa: E731

    def tagger(loadavg: Callable[[], tuple[float, float, float]],
               sample: Callable[[], cpuload.Sample | None]) -> Tagger:  # fmt: skip
        return Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=loadavg, sample=sample)

    assert list(tagger(busy, _samples(idle=cores - 1, own=1)).tags(files) or ()) == _expected(files)
    assert len(started) == 1  # a core sat idle: a worker, whatever the load average says
    tagging.stop_kept()  # each decision below starts its own worker, or none
    assert tagger(idle, _samples(idle=0, own=1)).tags(files) is None  # other work had it
    assert len(started) == 1
    ours = tagger(busy, _samples(idle=0, own=cores)).tags(files)  # our own work took them
    assert list(ours or ()) == _expected(files)
    assert len(started) == 2
    tagging.stop_kept()
    short = _samples(idle=cores, own=0, step=0.01)  # too short to tell: the load average
    assert tagger(busy, short).tags(files) is None and len(started) == 2
    stale = _samples(idle=cores, own=0, step=60.0)  # too old to tell
    assert tagger(busy, stale).tags(files) is None and len(started) == 2


def test_cpu_seconds_read_the_cores_asked_for(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text(
        "cpu  10 0 5 100 3 0 1 0 0 0\n"
        "cpu0 4 0 2 60 1 0 0 0 0 0\n"
        "cpu1 6 0 3 40 2 0 1 0 0 0\n"
        "intr 12345 1 2\n"
    )
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    assert cpuload.cpu_seconds(None, stat) == pytest.approx((103 * tick, 119 * tick))
    assert cpuload.cpu_seconds({1}, stat) == pytest.approx((42 * tick, 52 * tick))
    assert cpuload.cpu_seconds({0, 1}, stat) == pytest.approx((103 * tick, 119 * tick))
    assert cpuload.cpu_seconds({0}, tmp_path / "none") is None
    (tmp_path / "odd").write_text("cpu  ten 0 5\n")
    assert cpuload.cpu_seconds(None, tmp_path / "odd") is None
    first = cpuload.sample()  # this machine's own, where it has them
    if first is not None:
        later = cpuload.sample()
        assert later is not None and later.total >= first.total and later.own >= first.own


def test_a_cgroup_cpu_quota_bounds_the_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A container started with `--cpus 1.5` may see every core of its host: its quota says
    how many it may use (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`)."""
    proc, root = tmp_path / "cgroup", tmp_path / "fs"
    (root / "app").mkdir(parents=True)
    proc.write_text("0::/app\n")
    (root / "app" / "cpu.max").write_text("150000 100000\n")
    assert cpuload.cpu_quota(proc, root) == 1.5
    (root / "app" / "cpu.max").write_text("max 100000\n")
    assert cpuload.cpu_quota(proc, root) is None
    (root / "app" / "cpu.max").unlink()
    (root / "cpu.max").write_text("200000 100000\n")  # a container's view: its own root
    assert cpuload.cpu_quota(proc, root) == 2.0
    proc.write_text("12:memory:/x\n3:cpu,cpuacct:/job\n0::/\n")  # v1 beside v2
    (root / "cpu.max").unlink()
    (root / "cpu,cpuacct" / "job").mkdir(parents=True)
    (root / "cpu,cpuacct" / "job" / "cpu.cfs_quota_us").write_text("100000\n")
    (root / "cpu,cpuacct" / "job" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpuload.cpu_quota(proc, root) == 1.0
    (root / "cpu,cpuacct" / "job" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpuload.cpu_quota(proc, root) is None
    assert cpuload.cpu_quota(tmp_path / "none", root) is None
    monkeypatch.setattr(cpuload, "cpu_quota", lambda: 1.5)
    assert cpuload.cores() == 1  # one whole core: no room for a worker
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    assert tagger.tags(_files(12, LIGHT)) is None


def test_answers_are_read_as_they_come_not_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk's answers outgrow a pipe's buffer: unread, they would stop the worker until
    the run asks for them. Every answer arrives before the first is asked for."""
    files = _files()
    started = _watch_workers(monkeypatch)
    tags = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample).tags(
        files
    )
    worker = started[0]
    assert worker is not None
    worker.set_idle(False)  # on busy cores an idle-class worker waits: it is asked, here not
    messages = -(-sum(1 for f in files if f[2] in CODE_LANGUAGES) // tagging._CHUNK)
    deadline = time.monotonic() + 120  # a bound for a stuck worker, not a timing claim
    while worker.answers.qsize() < messages and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.answers.qsize() >= messages  # all read, none asked for yet
    assert list(tags) == _expected(files)


def _code_size(job: tuple[str, str, str]) -> int:  # what `tags` counts against min_chars
    return len(job[1]) if job[2] in CODE_LANGUAGES else 0


def test_a_worker_starts_only_once_the_run_has_found_enough_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = [f for f in _files(12, LIGHT) if f[2] in CODE_LANGUAGES]
    started = _watch_workers(monkeypatch)
    need = sum(_code_size(f) for f in files)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=need, loadavg=idle, sample=no_sample)
    tagger.begin()
    for f in files[:-1]:
        tagger.expect(_code_size(f))
    assert started == []  # not yet enough
    assert tagger.expect(_code_size(files[-1])) == need
    assert len(started) == 1  # now: it boots while the run goes on reading
    assert list(tagger.tags(files) or ()) == _expected(files)
    assert len(started) == 1  # the prepared one did the tagging
    tagger.begin()  # a new run
    assert tagger.expect(need - 1) == need - 1 and len(started) == 1


def test_an_index_run_with_little_code_starts_no_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memserver.engine import Engine

    root = _tree(tmp_path / "repo", _files(1))
    started = _watch_workers(monkeypatch)
    monkeypatch.setattr(os, "getloadavg", idle)
    report = Engine(root, tmp_path / "idx", embedder_flag="none", env={}).index()
    assert report.files_indexed == len(FIXTURES) and started == []


def test_a_worker_that_cannot_start_is_asked_for_once_a_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tries: list[int] = []

    def cannot() -> None:  # as `spawn` answers when the OS refuses a process
        tries.append(1)

    monkeypatch.setattr(tagging._Worker, "spawn", cannot)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=10, loadavg=idle, sample=no_sample)
    tagger.begin()
    for _ in range(50):
        tagger.expect(100)
    assert tries == [1]
    assert tagger.tags(_files(12, LIGHT)) is None and tries == [1]  # made with the chunks


def test_an_index_run_starts_its_worker_before_reading_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk's sizes say how much code a run will cut, so the worker boots beside the
    reading; a run whose files were only touched (same text) stops it unused."""
    from memserver.engine import Engine
    from memserver.ingest import pipeline

    root = _tree(tmp_path / "repo", _files(12, LIGHT))
    events: list[str] = []
    started = _watch_workers(monkeypatch)
    spawn, read = tagging._Worker.spawn, pipeline.read_source
    monkeypatch.setattr(tagging._Worker, "spawn", lambda: events.append("spawn") or spawn())
    monkeypatch.setattr(pipeline, "read_source", lambda *a: events.append("read") or read(*a))

    class Eager(tagging.Tagger):  # a worker for any code, whatever the machine's load
        def __init__(self, options: ChunkOptions, workers: int = 1) -> None:
            super().__init__(options, workers, min_chars=1, loadavg=idle, sample=no_sample)

    monkeypatch.setattr(tagging, "Tagger", Eager)
    engine = Engine(root, tmp_path / "idx", embedder_flag="none", env={})
    first = engine.index()
    assert first.files_indexed > 0 and events[0] == "spawn" and len(started) == 1
    events.clear()
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    again = engine.index()
    assert again.files_indexed == 0 and again.files_unchanged == first.files_indexed
    assert "spawn" not in events and len(started) == 1  # the first run's, kept, unused
    assert started[0] is not None and _kept() == [started[0]]


def test_a_worker_started_early_is_the_one_the_run_takes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker started early (`Engine.index` starts one before it opens the stores) is
    the one the run's tagger takes, told its languages first, instead of starting another;
    it is kept after the run, and no other starts early while it is."""
    files = _files(6, LIGHT)
    started = _watch_workers(monkeypatch)
    tagging.start_early(loadavg=idle)
    tagging.start_early(loadavg=idle)  # at most one
    assert len(started) == 1 and started[0] is not None
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle, sample=no_sample)
    tagger.begin()
    tagger.expect(sum(_code_size(f) for f in files), ["python", "not-a-language"])
    assert list(tagger.tags(files) or ()) == _expected(files)
    assert len(started) == 1  # no second worker
    tagger.close()
    assert _kept() == [started[0]]
    tagging.start_early(loadavg=idle)
    assert len(started) == 1 and not tagging._EARLY


@pytest.mark.parametrize("workers", [0, 1])
def test_an_early_worker_no_run_takes_is_stopped(
    monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A run that tags in-process (`graph_workers = 0`, or too little code) stops it."""
    files = _files(1, LIGHT)
    started = _watch_workers(monkeypatch)
    tagging.start_early(loadavg=idle)
    early = started[0]
    assert early is not None and early.proc.poll() is None
    tagger = Tagger(ChunkOptions(), workers=workers, min_chars=10**9, loadavg=idle,
                    sample=no_sample)  # fmt: skip
    tagger.begin()
    tagger.expect(sum(_code_size(f) for f in files), ["python"])
    assert tagger.tags(files) is None  # made with the chunks
    assert early.proc.returncode is not None and len(started) == 1


def test_a_run_stops_only_the_early_worker_started_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two engines in one process: a run that wants no worker stops the one started early
    in its own context, not the one another engine's run started for itself meanwhile (that
    run takes it)."""
    files = _files(1, LIGHT)
    started = _watch_workers(monkeypatch)
    other = contextvars.copy_context()
    other.run(tagging.start_early, idle)  # the other engine's, before its stores open
    theirs = started[0]
    assert theirs is not None
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=10**9, loadavg=idle, sample=no_sample)
    tagger.begin()
    assert tagger.tags(files) is None  # too little code: no worker for this run
    tagger.close()
    assert theirs.proc.poll() is None and len(tagging._EARLY) == 1 and tagging._EARLY[0] is theirs
    tagging.stop_early(mine=True)  # this context started none: nothing to stop
    assert theirs.proc.poll() is None
    other.run(tagging.stop_early, True)  # the other run's end
    assert theirs.proc.returncode is not None and not tagging._EARLY


def test_no_early_worker_on_busy_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _watch_workers(monkeypatch)
    busy = float(2 * cpuload.cores())
    tagging.start_early(loadavg=lambda: (busy, busy, busy))
    assert started == [] and not tagging._EARLY


def test_an_index_run_leaves_no_early_worker_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Engine.index` starts a worker before it opens the stores once the walk finds
    enough code; whether the run had too little changed code for it or failed, none is
    left running."""
    from memserver.engine import Engine

    started = _watch_workers(monkeypatch)
    monkeypatch.setattr(tagging, "_LOADAVG", idle)
    monkeypatch.setattr(tagging, "MIN_CHARS", 1)  # the walk's code is enough to start one
    root = _tree(tmp_path / "repo", _files(2, LIGHT))
    engine = Engine(root, tmp_path / "idx", embedder_flag="none", env={})
    assert engine.index().files_indexed > 0  # its tagger (300k characters) tagged here
    assert len(started) == 1 and not tagging._EARLY
    assert started[0] is not None and started[0].proc.returncode is not None

    def fails(rebuild: bool) -> None:
        raise OSError("the disk is gone")

    (root / "more.py").write_text("def more():\n    return 1\n")
    monkeypatch.setattr(engine, "writable_store", fails)
    with pytest.raises(OSError):
        engine.index()
    assert len(started) == 2 and not tagging._EARLY
    assert started[1] is not None and started[1].proc.returncode is not None


Serving = tuple[int, int, list[tuple[str, str]], Callable[[], None]]


def _serving(monkeypatch: pytest.MonkeyPatch) -> Serving:
    """The worker's loop (`tagworker._serve`) in a thread of this process, on two pipes:
    (its input's write end, its output's read end, the files it tagged as (path, text) in
    order, a function joining it once its input is closed)."""
    from memserver.ingest import tagworker

    tagged: list[tuple[str, str]] = []
    real = tagworker.rows

    def rows(job: tuple[str, str, str], max_parse_bytes: int) -> object:
        tagged.append((job[0], job[1]))
        return real(job, max_parse_bytes)

    monkeypatch.setattr(tagworker, "rows", rows)
    source, feed = os.pipe()
    answers, sink = os.pipe()
    serving = threading.Thread(target=tagworker._serve, args=(source, sink))
    serving.start()

    def join() -> None:
        serving.join()
        for fd in (source, sink):
            os.close(fd)

    return feed, answers, tagged, join


def _all_made_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, languages: tuple[str, ...]
) -> tuple[list[tuple[str, str, str]], int, list[tuple[str, str]], Callable[..., object]]:
    """A tree of these languages' fixtures, and the worker's loop (`_serving`) asked to tag
    it ahead, once it has: (the files as jobs, the parse limit, the files it tagged, a
    function sending messages and giving the answer to the last, its input then closed)."""
    from memserver.ingest.tagworker import AHEAD

    files = _files(1, languages)
    root = _tree(tmp_path / "repo", files)
    walked = [(name, str(root / name), language) for name, _, language in files]
    max_parse = ChunkOptions().max_parse_bytes
    feed, answers, tagged, join = _serving(monkeypatch)
    send(feed, (AHEAD, (str(root.resolve()), 1_000_000, max_parse, walked)))
    deadline = time.monotonic() + 60
    while len(tagged) < len(files) and time.monotonic() < deadline:
        time.sleep(0.01)  # its reading and tagging ahead, all of it
    assert [path for path, _ in tagged] == [name for name, _, _ in files]

    def then(*messages: object) -> object:
        for message in messages:
            send(feed, message)
        os.close(feed)
        got = _answer(answers)
        join()
        os.close(answers)
        return got

    return files, max_parse, tagged, then


def test_files_tagged_ahead_answer_their_jobs_unless_their_text_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index's files are tagged before their jobs come; a job of the same text is
    answered with those tags (not tagged again), one whose file changed in between is
    tagged from the run's text, and every answer is what tagging here gives."""
    files, max_parse, tagged, then = _all_made_ahead(tmp_path, monkeypatch,
                                                     ("python", "javascript"))  # fmt: skip
    changed = files[-1][1] + "\n\ndef added_later():\n    return 1\n"
    jobs = [*files[:-1], (files[-1][0], changed, files[-1][2])]
    assert then((max_parse, jobs)) == _expected(jobs)
    assert tagged[len(files) :] == [(files[-1][0], changed)]  # only the changed file again


def _answer(fd: int) -> object:
    """The next message on `fd`, failing (not hanging) when none comes within a minute."""
    from memserver.ingest.tagworker import messages

    assert select.select([fd], [], [], 60)[0], "no answer came"
    return next(iter(messages(fd)))


def test_what_was_tagged_ahead_is_dropped_once_the_run_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(AHEAD, None), which a run done with the worker sends before it is kept: a later
    job of the same text is tagged anew, nothing is held."""
    from memserver.ingest.tagworker import AHEAD

    files, max_parse, tagged, then = _all_made_ahead(tmp_path, monkeypatch, ("python",))
    assert then((AHEAD, None), (max_parse, files)) == _expected(files)
    assert tagged == 2 * [(name, text) for name, text, _ in files]  # ahead, then anew


def test_a_worker_kept_after_tagging_ahead_is_told_to_drop_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that took the early worker and never fed it (its code turned out small) keeps
    it without what it made ahead: the kept worker holds nothing, makes nothing more."""
    sent: list[object] = []
    monkeypatch.setattr(tagging, "send", lambda fd, value: sent.append(value))
    worker = tagging._Worker.spawn()
    assert worker is not None
    try:
        worker.ahead(("/nowhere", 1, 1, []))
        assert worker.tagging_ahead and worker.made_ahead
        worker.hint(["python"])  # not while it tags ahead
        worker.release()
        assert _kept() == [worker]
        assert not worker.tagging_ahead and not worker.made_ahead
        assert sent[0][0] == "ahead" and sent[1:] == [("ahead", None)]  # type: ignore[index]
    finally:
        tagging.stop_kept()
        worker.stop()


def test_the_files_tagged_ahead_fit_in_a_pipe_whatever_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message naming them is written before the worker reads anything: however many
    files a first index has, it fits in a pipe's smallest capacity, the walk's first ones."""
    from memserver.core.types import SourceFile

    if os.name != "posix":
        pytest.skip("nothing is tagged ahead where a worker cannot see its jobs waiting")
    sent: list[object] = []
    monkeypatch.setattr(tagging, "send", lambda fd, value: sent.append(value))
    monkeypatch.setattr(tagging, "_LOADAVG", idle)
    deep = "/".join(["dossier-\u00e9t\u00e9"] * 12)  # non-ASCII: more bytes than characters
    root = "/" + "r\udcff" * 1_300  # a root not UTF-8 (a surrogate), 4 KB
    files = [SourceFile(f"{deep}/m{n}.py", f"{root}/{deep}/m{n}.py", 10**6, 0, "python")
             for n in range(5_000)]  # fmt: skip
    with tagging.early_worker(files, 1, (root, 1, 1)):  # the real worker, started early
        pass
    asked = [m for m in sent if m[0] == "ahead"]  # type: ignore[index]
    [(_, (given, _, _, first))] = asked  # type: ignore[misc]
    assert given == root and 0 < len(first) < len(files)
    assert [f[0] for f in first] == [f.path for f in files[: len(first)]]
    assert len(pickle.dumps(asked[0], pickle.HIGHEST_PROTOCOL)) < 64 * 1024


def test_the_files_tagged_ahead_are_cut_to_what_the_worker_s_pipe_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pipe the system would not widen (a user past its pipe limits) holds less: the
    message is cut to fit it, the walk's first files, so writing it never waits."""
    sent: list[object] = []
    monkeypatch.setattr(tagging, "send", lambda fd, value: sent.append(value))
    monkeypatch.setattr(tagging, "room_in", lambda fd: 8 * 1024)
    worker = tagging._Worker.spawn()
    assert worker is not None
    try:
        files = [(f"pkg/m{n}.py", f"/root/pkg/m{n}.py", "python") for n in range(1_000)]
        worker.ahead(("/root", 1, 1, files))
    finally:
        worker.stop()
    [(_, (_, _, _, first))] = sent  # type: ignore[misc]
    assert 0 < len(first) < len(files) and first == files[: len(first)]
    assert len(pickle.dumps(sent[0], pickle.HIGHEST_PROTOCOL)) <= 8 * 1024 - 4096


def test_tagging_ahead_gives_way_to_what_comes(tmp_path: Path) -> None:
    """Jobs waiting stop the tagging ahead before its next file: the run's own come first."""
    from memserver.ingest.tagworker import Inbox, _tag_ahead

    files = _files(1, ("python",))
    root = _tree(tmp_path / "repo", files)
    walked = [(name, str(root / name), language) for name, _, language in files]
    read_end, write_end = os.pipe()
    made: dict[tuple[str, str, int], tuple[bytes, object]] = {}
    plan = (str(root.resolve()), 1_000_000, ChunkOptions().max_parse_bytes, walked)
    _tag_ahead(plan, made, Inbox(read_end), os.getppid())
    assert len(made) == len(files)  # nothing waiting: all of them
    made.clear()
    send(write_end, (ChunkOptions().max_parse_bytes, []))
    _tag_ahead(plan, made, Inbox(read_end), os.getppid())
    assert made == {}
    for fd in (read_end, write_end):
        os.close(fd)


def _graph_rows(index_dir: Path) -> tuple[object, object]:
    """The code graph's stored rows, in a fixed order, without the times they were written."""
    from memserver.store import lancedb as ldb

    db = ldb.connect(index_dir / "lance")
    out = []
    for name, keys in (("symbols", ["id"]), ("refs", ["version", "place"])):
        table = db.open_table(name).to_arrow().drop_columns(["valid_to"])
        out.append(table.sort_by([(k, "ascending") for k in keys]).to_pylist())
    return out[0], out[1]


def test_a_first_index_tags_ahead_and_stores_the_graph_tagging_here_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Engine.index` has the early worker tag a first index's code files while the stores
    open; the graph stored is the one an index tagged in-process stores (whichever answers
    came from what was made ahead: `_serve`'s tests above show that they do). A later run
    (the index is there) asks for nothing ahead."""
    from memserver.engine import Engine

    if cpuload.cores() < 2:
        pytest.skip("an early worker needs 2 cores")

    started = _watch_workers(monkeypatch)
    asked: list[int] = []
    ahead = tagging._Worker.ahead

    def asking(self: tagging._Worker, files: tuple[str, int, int, list[object]]) -> None:
        asked.append(len(files[3]))
        ahead(self, files)  # type: ignore[arg-type]

    monkeypatch.setattr(tagging._Worker, "ahead", asking)
    monkeypatch.setattr(tagging, "_LOADAVG", idle)
    monkeypatch.setattr(tagging, "MIN_CHARS", 1)
    root = _tree(tmp_path / "repo", _files(2, ("python", "javascript", "markdown")))
    code = sum(1 for p in root.rglob("*") if p.suffix in (".py", ".js"))
    engine = Engine(root, tmp_path / "idx", embedder_flag="none", env={})
    assert engine.index().files_indexed > 0
    assert asked == [code] and len(started) == 1
    here = Engine(root, tmp_path / "here", embedder_flag="none", env={},
                  overrides={"index": {"graph_workers": 0}})  # fmt: skip
    here.index()
    assert _graph_rows(tmp_path / "idx") == _graph_rows(tmp_path / "here")
    (root / "more.py").write_text("def more():\n    return 1\n")
    engine.index()
    assert asked == [code]


def test_a_live_child_counted_as_own_is_not_other_work() -> None:
    """A child doing this process's work (a tags worker tagging ahead) counts in a sample's
    own CPU while it lives, and once reaped only as a child: never twice, never as other
    work that leaves no core spare."""
    if cpuload.sample() is None:
        pytest.skip("the cores' times cannot be read here")
    busy = ("import sys, time\nwhile time.process_time() < 0.3:\n    pass\n"
            "print('done', flush=True)\ntime.sleep(60)\n")  # fmt: skip
    child = subprocess.Popen([sys.executable, "-c", busy], stdout=subprocess.PIPE, text=True)
    try:
        before = cpuload.sample()
        assert child.stdout is not None
        assert select.select([child.stdout], [], [], 120)[0], "the child never finished"
        assert child.stdout.readline() == "done\n"
        uncounted = cpuload.sample()
        cpuload.count_as_own(child.pid)
        counted = cpuload.sample()
        assert before is not None and uncounted is not None and counted is not None
        assert uncounted.own - before.own < 0.1  # alive and not counted: not this process's
        assert counted.own - uncounted.own >= 0.25  # its 0.3 s of CPU, in ticks
    finally:
        child.kill()
        with cpuload.reaping(child.pid):
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    reaped = cpuload.sample()
    assert reaped is not None and abs(reaped.own - counted.own) < 0.1  # a child's now
