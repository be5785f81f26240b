"""The code graph's tags made in a worker process: the same rows as made in-process, in
the files' order, whatever happens to the worker; and nothing of the indexed folder is
imported by it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from indexers.chunking import tag_file
from indexers.treesitter import LANGUAGES as CODE_LANGUAGES
from memserver.core.types import ChunkOptions
from memserver.ingest import tagging
from memserver.ingest.tagging import Tagger
from memserver.store.graphpart import graph_part
from tests.indexers.test_chunking import FIXTURES, POLYGLOT

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a worker needs 2 cores")


def idle() -> tuple[float, float, float]:  # the machine's other work: none
    return (0.0, 0.0, 0.0)


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


LIGHT = ("python", "markdown", "yaml")  # one tags query to compile: the cheaper runs
_TAGGED: dict[tuple[str, str, str], object] = {}  # a job -> its tags made here (once)


def _expected(files: list[tuple[str, str, str]]) -> list[object]:
    for job in files:
        if job not in _TAGGED:
            _TAGGED[job] = graph_part(tag_file(*job, ChunkOptions()))
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


def test_the_worker_gives_what_tagging_here_gives_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _files()
    started = _watch_workers(monkeypatch)
    got = list(Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle).tags(files))
    assert len(started) == 1 and started[0] is not None  # the worker did the tagging
    assert started[0].proc.wait(timeout=60) is not None  # and is gone after the run
    assert got == _expected(files)
    assert any(p.counts[1] for p in got)  # references crossed the pipe


def test_a_small_run_is_tagged_here_and_stops_the_prepared_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _files(2, LIGHT)
    started = _watch_workers(monkeypatch)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=10**9, loadavg=idle)
    tagger.prepare()
    assert tagger.tags(files) is None  # made with the chunks
    assert len(started) == 1 and started[0] is not None
    assert started[0].proc.returncode is not None  # stopped, not left behind


def test_a_prepared_run_uses_its_worker_and_a_failed_one_leaves_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _files(12, LIGHT)
    started = _watch_workers(monkeypatch)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle)
    tagger.prepare()
    assert list(tagger.tags(files)) == _expected(files)
    assert len(started) == 1  # the prepared one answered
    tagger.prepare()
    tags = tagger.tags(files)  # a run that fails before reading its tags
    tagger.close()
    assert tags is not None
    assert len(started) == 2 and all(w is not None and w.proc.returncode is not None
                                     for w in started)  # fmt: skip
    assert list(tags) == _expected(files)  # what is read anyway is made here


def test_a_killed_worker_leaves_the_rest_to_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = _files(12, LIGHT)
    started = _watch_workers(monkeypatch)
    tags = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle).tags(files)
    assert tags is not None
    first = [next(tags) for _ in range(3)]
    worker = started[0]
    assert worker is not None and worker.proc.poll() is None  # running
    os.kill(worker.proc.pid, signal.SIGKILL)
    assert first + list(tags) == _expected(files)
    assert worker.proc.returncode == -signal.SIGKILL


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
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle)
    assert list(tagger.tags(files)) == _expected(files)
    assert not marker.exists()


def test_a_busy_machine_tags_here(monkeypatch: pytest.MonkeyPatch) -> None:
    files = _files(12, LIGHT)
    started = _watch_workers(monkeypatch)
    cores = float(os.cpu_count() or 1)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=lambda: (cores, 0.0, 0.0))
    tagger.prepare()
    assert tagger.tags(files) is None  # made with the chunks
    assert started == []
    assert Tagger(ChunkOptions(), workers=0, min_chars=1, loadavg=idle).tags(files) is None
    assert started == []


def test_answers_are_read_as_they_come_not_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk's answers outgrow a pipe's buffer: unread, they would stop the worker until
    the run asks for them. Every answer arrives before the first is asked for."""
    files = _files()
    started = _watch_workers(monkeypatch)
    tags = Tagger(ChunkOptions(), workers=1, min_chars=1, loadavg=idle).tags(files)
    worker = started[0]
    assert worker is not None
    messages = -(-sum(1 for f in files if f[2] in CODE_LANGUAGES) // tagging._CHUNK)
    deadline = time.monotonic() + 120  # a bound for a stuck worker, not a timing claim
    while worker.answers.qsize() < messages and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker.answers.qsize() >= messages  # all read (then the end), none asked for yet
    assert list(tags) == _expected(files)


def _code_size(job: tuple[str, str, str]) -> int:  # what `tags` counts against min_chars
    return len(job[1]) if job[2] in CODE_LANGUAGES else 0


def test_a_worker_starts_only_once_the_run_has_found_enough_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = [f for f in _files(12, LIGHT) if f[2] in CODE_LANGUAGES]
    started = _watch_workers(monkeypatch)
    need = sum(_code_size(f) for f in files)
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=need, loadavg=idle)
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

    root = tmp_path / "repo"
    for name, _, _ in _files(1):
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((POLYGLOT / name.split("/", 1)[1]).read_text(encoding="utf-8"))
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
    tagger = Tagger(ChunkOptions(), workers=1, min_chars=10, loadavg=idle)
    tagger.begin()
    for _ in range(50):
        tagger.expect(100)
    assert tries == [1]
    assert tagger.tags(_files(12, LIGHT)) is None and tries == [1]  # made with the chunks
