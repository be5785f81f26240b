"""The watcher: real watchdog events on a real tree, compared with a clean index of the tree."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from indexers.watcher import Batch, ChangeQueue
from memserver.engine import Engine
from memserver.ingest.live import start_watching
from tests.e2e.crashkit import snapshot

pytestmark = pytest.mark.slow

ENV: dict[str, str] = {}


def write_module(path: Path, n: int, salt: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "\n\n".join(
        f"def step_{n}_{j}{salt}(value):\n    return value * {j + 2} + {n}\n" for j in range(3)
    )
    path.write_text(f'"""Module {n}{salt}."""\n\n{body}')


def clean_state(root: Path, work: Path) -> dict[str, object]:
    """A fresh `memserver index` of the tree as it is now."""
    index_dir = work / f"clean-{time.monotonic_ns()}"
    Engine(root, index_dir, env=ENV, embedder_flag="hashing").index()
    state = snapshot(root, index_dir)
    shutil.rmtree(index_dir)
    return state


@pytest.fixture
def watched(tmp_path: Path):
    root = tmp_path / "repo"
    for i in range(12):
        write_module(root / f"pkg{i % 3}" / f"mod_{i}.py", i)
    (root / "README.md").write_text("# Demo\n\nA tree the watcher keeps indexed.\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    git = ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    engine = Engine(root, env=ENV, embedder_flag="hashing")
    engine.index()
    watcher, live = start_watching(engine)
    assert watcher.wait_idle(60)
    yield root, engine, watcher, live, git
    watcher.stop()


@contextmanager
def settling(watcher) -> Iterator[None]:
    """Make changes inside; on leaving, wait for their first file event (bounded), then for
    the watcher to go idle: no clock decides when the changes arrived."""
    seen = watcher.events
    yield
    assert watcher.wait_for_events(seen, 30), "no file event arrived"
    assert watcher.wait_idle(60), "the watcher did not settle"


def same_as_clean(root: Path, engine: Engine, work: Path) -> None:
    assert snapshot(root, engine.index_dir) == clean_state(root, work)


def test_edits_renames_deletes_and_moves_end_like_a_clean_index(watched, tmp_path: Path) -> None:
    root, engine, watcher, _, _ = watched
    mod = root / "pkg0" / "mod_0.py"

    with settling(watcher):
        mod.write_text(mod.read_text() + "\n\ndef added_later():\n    return 'fresh'\n")
    same_as_clean(root, engine, tmp_path)
    hits = engine.recaller(rerank=False).recall("added_later", k=3).evidence
    assert hits and hits[0].path == "pkg0/mod_0.py"

    # save-by-rename, the way many editors write, with their temporary and backup files
    with settling(watcher):
        tmp = root / "pkg1" / "mod_1.py.tmp"
        write_module(tmp, 1, salt="_saved")
        os.replace(tmp, root / "pkg1" / "mod_1.py")
        (root / "pkg1" / "mod_1.py~").write_text("old contents\n")
        (root / "pkg1" / ".mod_1.py.swp").write_bytes(b"b0VIM 9.0\x00\x00swap")
        (root / "pkg1" / "#mod_1.py#").write_text("auto-save\n")
    state = snapshot(root, engine.index_dir)
    assert not any("~" in p or "#" in p or p.endswith(".swp") for p in state["manifest"])
    same_as_clean(root, engine, tmp_path)

    with settling(watcher):
        (root / "pkg2" / "mod_2.py").unlink()
        shutil.move(root / "pkg1", root / "renamed")  # a folder move: one event for many files
        shutil.rmtree(root / "pkg0")
        write_module(root / "new" / "deep" / "fresh.py", 99)
    same_as_clean(root, engine, tmp_path)
    manifest = snapshot(root, engine.index_dir)["manifest"]
    assert "renamed/mod_1.py" in manifest and not any(p.startswith("pkg0/") for p in manifest)


def test_a_branch_switch_and_ignore_rules(watched, tmp_path: Path) -> None:
    root, engine, watcher, _, git = watched
    with settling(watcher):
        subprocess.run([*git, "checkout", "-qb", "feature"], check=True)
        for i in range(300):  # hundreds of files at once
            write_module(root / f"feat{i % 10}" / f"f_{i}.py", 1000 + i)
        for i in range(0, 12, 2):
            write_module(root / f"pkg{i % 3}" / f"mod_{i}.py", i, salt="_feature")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "feature"], check=True)
    same_as_clean(root, engine, tmp_path)
    meta = Engine(root, env=ENV).open_store().meta
    assert meta.git_branch == "feature"

    with settling(watcher):  # back: the feature files go
        subprocess.run([*git, "checkout", "-q", "main"], check=True)
    same_as_clean(root, engine, tmp_path)
    assert Engine(root, env=ENV).open_store().meta.git_branch == "main"

    with settling(watcher):  # rules change: the whole tree is looked at
        (root / ".gitignore").write_text("pkg2/\n")
    manifest = snapshot(root, engine.index_dir)["manifest"]
    assert not any(p.startswith("pkg2/") for p in manifest)
    same_as_clean(root, engine, tmp_path)
    with settling(watcher):  # an ignored file changes: nothing to do
        write_module(root / "pkg2" / "ignored.py", 5)
    assert "pkg2/ignored.py" not in snapshot(root, engine.index_dir)["manifest"]


def test_the_index_folder_is_never_watched(watched) -> None:
    """Writing to the index folder (as every batch does) queues nothing: after a write there
    and a write to a watched file, the next batch holds the watched file alone. Events of one
    inotify descriptor arrive in order, so one from the index folder would have come first."""
    root, engine, watcher, live, _ = watched
    assert engine.index_dir.name not in watcher._watches and ".git" not in watcher._watches
    with settling(watcher):
        write_module(root / "pkg0" / "mod_0.py", 0, salt="_once")
    batches = watcher.batches
    with settling(watcher):
        (engine.index_dir / "scratch.txt").write_text("the index is written to\n")
        write_module(root / "pkg1" / "sentinel.py", 7)
    assert watcher.batches == batches + 1 == live.batches
    assert watcher.last_batch is not None and watcher.last_batch.paths == {"pkg1/sentinel.py"}


def test_changes_made_during_a_batch_are_not_lost(watched, tmp_path: Path) -> None:
    root, engine, watcher, _, _ = watched
    rng = random.Random(3)
    stop = threading.Event()
    written: list[str] = []
    batches = watcher.batches

    def storm() -> None:  # keep writing while batches run, until told to stop
        n = 0
        while not stop.is_set():
            i = rng.randrange(40)
            write_module(root / "storm" / f"s_{i}.py", i, salt=f"_{n}")
            if rng.random() < 0.2:
                (root / "storm" / f"s_{rng.randrange(40)}.py").unlink(missing_ok=True)
            written.append(str(i))
            n += 1
            stop.wait(0.005)  # a writer, not a clock: how fast it writes does not matter

    with settling(watcher):
        thread = threading.Thread(target=storm)
        thread.start()
        deadline = time.monotonic() + 60
        while watcher.batches < batches + 3 or len(written) < 100:  # writes span batches
            assert time.monotonic() < deadline, "the watcher did not take batches"
            watcher.wait_for_events(watcher.events, 1)
        stop.set()
        thread.join()
    assert len(written) >= 100 and watcher.batches >= batches + 3
    same_as_clean(root, engine, tmp_path)


def test_change_queue_coalesces_and_keeps_what_comes_during_a_batch() -> None:
    q = ChangeQueue(debounce=0.05, max_delay=0.5, max_paths=3)
    stop = threading.Event()
    q.add("a.py")
    q.add("a.py")
    q.add("b.py")
    batch = q.take(stop)
    assert batch == Batch(frozenset({"a.py", "b.py"}), False, False, 3, batch.oldest)
    q.add("c.py")  # arrives "while the batch runs"
    q.requeue(batch)  # the batch failed: it is merged back, nothing lost
    again = q.take(stop)
    assert again.paths == {"a.py", "b.py", "c.py"} and again.events == 4
    for name in "wxyz":
        q.add(f"{name}.py")
    assert q.take(stop).full  # too many paths: walk the whole tree instead
    q.add_git()
    git_only = q.take(stop)
    assert git_only.git_moved and not git_only.paths
    assert q.take(stop, idle=0.05) is None


def test_a_steady_stream_still_gets_indexed_within_max_delay() -> None:
    """A path changing again and again is never quiet for the debounce: the batch comes
    after max_delay all the same, while the stream goes on (it stops only once the batch is
    taken, so only max_delay can have let it out)."""
    q = ChangeQueue(debounce=0.2, max_delay=0.3)
    stop, taken = threading.Event(), threading.Event()

    def keep_writing() -> None:
        while not taken.is_set():
            q.add("busy.py")
            taken.wait(0.05)  # more often than the debounce

    thread = threading.Thread(target=keep_writing)
    thread.start()
    batch = q.take(stop)
    taken.set()
    thread.join()
    assert batch is not None and batch.paths == {"busy.py"} and batch.events >= 2
