"""Fault injection: kill -9 at random points, a full disk, a read-only index.

After each fault the next run must converge to the state of a clean index of the same
tree, and nothing indexed before the fault may be lost. Each test prints its numbers
(run with -s). The seed comes from MEMSERVER_FAULT_SEED (default fixed).
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.crashkit import (
    CliResult,
    Faults,
    ForkedCli,
    index_args,
    make_repo,
    mutate_tree,
    snapshot,
)

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("MEMSERVER_FAULT_SEED", "20240611"))
KILLS = 20  # the issue asks for at least 20 across the run
NOTE = "We pin the retry budget to 5 attempts because the proxy drops idle sockets."


def _args(cmd: str, root: Path, index_dir: Path, *extra: str) -> list[str]:
    return [cmd, *extra, "--root", str(root), "--index-dir", str(index_dir)]


def _index(cli: ForkedCli, root: Path, index_dir: Path, **kw: Any) -> CliResult:
    return cli.run(index_args(root, index_dir), **kw)


def _ok(result: CliResult) -> CliResult:
    assert result.code == 0, result.err
    return result


def _doctor(cli: ForkedCli, root: Path, index_dir: Path, *extra: str) -> dict[str, Any]:
    result = cli.run(_args("doctor", root, index_dir, "--json", *extra))
    report = json.loads(result.out)
    assert result.code == (0 if report["healthy"] else 6), result.err
    return report


def _clean(cli: ForkedCli, root: Path, index_dir: Path, note: bool = False) -> dict[str, Any]:
    """A snapshot of a fresh index of the tree as it is now (with the note, if asked)."""
    _ok(_index(cli, root, index_dir))
    if note:
        _ok(cli.run(_args("remember", root, index_dir, NOTE, "--json")))
    return snapshot(root, index_dir)


def _assert_kept(before: dict[str, Any], after: dict[str, Any], unchanged: set[str]) -> None:
    """Files not changed since `before`, and everything not from a file, are still whole."""
    for path in unchanged:
        assert after["manifest"].get(path) == before["manifest"][path], path
    kept = {c for p in unchanged for c in before["manifest"][p]}
    from_files = {c for ids in before["manifest"].values() for c in ids}
    kept |= set(before["current"]) - from_files  # notes
    assert kept <= set(after["current"]) and kept <= set(after["bm25"])


def _recall_finds(cli: ForkedCli, root: Path, index_dir: Path, symbol: str) -> None:
    result = _ok(cli.run(_args("recall", root, index_dir, symbol, "--json")))
    assert symbol in {e["symbol"] for e in json.loads(result.out)["evidence"]}


# -- kill -9 --------------------------------------------------------------------------


def test_kill_dash_nine_at_random_points_converges(tmp_path: Path) -> None:
    """The tree changes before every run, so every run has work to be killed in; the
    kill time is drawn from [0, a full run's time), so kills land anywhere in a run
    (some runs finish first)."""
    rng = random.Random(SEED)
    cli = ForkedCli(tmp_path / "runs")
    root = make_repo(tmp_path / "repo", 40)
    crashed = tmp_path / "crashed"
    cli.warm()
    started = time.monotonic()
    full = _ok(_index(cli, root, crashed)).seconds
    kills = finished = doctors = repairs = rounds = midway = 0
    while kills < KILLS:
        rounds += 1
        assert rounds <= 4 * KILLS, f"only {kills} kills in {rounds} runs: runs end too soon"
        mutate_tree(root, rng, files=rng.choice((3, 3, 12)))
        outcome = cli.run_and_kill(index_args(root, crashed), delay=rng.uniform(0, full))
        if not outcome.killed:
            assert outcome.returncode == 0, outcome.err
            finished += 1
            continue
        kills += 1
        midway += (crashed / "DIRTY").exists()  # killed while storing chunks
        if kills % 4 == 0 and (crashed / "meta.json").exists():
            report = _doctor(cli, root, crashed)  # what the kill left, as doctor sees it
            doctors += 1
            if (crashed / "DIRTY").exists():
                assert not report["healthy"]
            if kills % 8 == 0:
                assert _doctor(cli, root, crashed, "--repair")["healthy"]
                assert all(c["ok"] for c in _doctor(cli, root, crashed)["checks"])
                repairs += 1
    killing = time.monotonic() - started
    _ok(_index(cli, root, crashed))
    got = snapshot(root, crashed)
    expected = _clean(cli, root, tmp_path / "clean")
    assert got == expected
    assert all(c["ok"] for c in _doctor(cli, root, crashed)["checks"])
    print(f"\nkill -9: {kills} kills and {finished} completed runs in {rounds} runs "
          f"({killing:.1f}s; full run {full:.2f}s; {midway} kills left a crash marker); doctor on "
          f"{doctors} killed states, {repairs} repairs; the final run converged "
          f"({len(got['current'])} chunks, {len(got['manifest'])} files)")  # fmt: skip


WATCHER_KILLS = 8


def test_kill_dash_nine_the_watcher_mid_batch_converges(tmp_path: Path) -> None:
    """`memserver watch` is started, the tree changes under it, and it is killed at a random
    moment while it indexes the changes; the next run must still equal a clean index."""
    rng = random.Random(SEED + 1)
    cli = ForkedCli(tmp_path / "runs")
    root = make_repo(tmp_path / "repo", 40)
    crashed = tmp_path / "crashed"
    cli.warm()
    _ok(_index(cli, root, crashed))
    midway = batches = 0
    for _ in range(WATCHER_KILLS):
        proc, _out, err = cli.start(_args("watch", root, crashed))
        deadline = time.monotonic() + 60
        while "watching" not in (err.read_text() if err.exists() else ""):
            assert proc.exitcode is None and time.monotonic() < deadline, "watch did not start"
            time.sleep(0.02)
        mutate_tree(root, rng, files=rng.choice((3, 12)))
        time.sleep(rng.uniform(0.1, 3.0))  # before, during or after a batch
        assert proc.exitcode is None, err.read_text()
        proc.kill()
        proc.join()
        batches += err.read_text().count("changed path(s)")
        midway += (crashed / "DIRTY").exists()
    _ok(_index(cli, root, crashed))
    got = snapshot(root, crashed)
    assert got == _clean(cli, root, tmp_path / "clean")
    print(f"\nwatcher kill -9: {WATCHER_KILLS} kills, {batches} batches finished before them, "
          f"{midway} kills left a crash marker; the next run converged "
          f"({len(got['current'])} chunks)")  # fmt: skip


# -- a full disk ------------------------------------------------------------------------


def can_mount() -> bool:
    """Root with the right to mount (a tmpfs with a size quota, a read-only bind mount)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    probe = Path(f"/tmp/memserver-mount-probe-{os.getpid()}")
    probe.mkdir(exist_ok=True)
    try:
        mounted = _sh("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe))
        return mounted and _sh("umount", str(probe))
    finally:
        probe.rmdir()


def _sh(*cmd: str) -> bool:
    return subprocess.run(cmd, capture_output=True).returncode == 0


class Disk:
    """A tmpfs of a set size at `path` (real ENOSPC), or a plain folder (injected ENOSPC)."""

    def __init__(self, path: Path, real: bool) -> None:
        self.path, self.real = path, real

    def used_kb(self) -> int:
        st = os.statvfs(self.path)
        return (st.f_blocks - st.f_bfree) * st.f_frsize // 1024

    def resize(self, kb: int) -> None:
        assert _sh("mount", "-o", f"remount,size={kb}k", str(self.path)), "tmpfs resize failed"


@contextmanager
def disk(path: Path, real: bool) -> Iterator[Disk]:
    path.mkdir(parents=True)
    if real:
        assert _sh("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(path))
    try:
        yield Disk(path, real)
    finally:
        if real:
            _sh("umount", "-l", str(path))


@pytest.mark.parametrize("how", ["tmpfs", "injected"])
def test_disk_full_fails_clearly_then_converges(tmp_path: Path, how: str) -> None:
    if how == "tmpfs" and not can_mount():
        pytest.skip("no tmpfs quota here (needs root and mount); the injected variant runs")
    rng = random.Random(SEED)
    cli = ForkedCli(tmp_path / "runs")
    root = make_repo(tmp_path / "repo", 24)
    baseline_files = {p.relative_to(root).as_posix() for p in root.rglob("*.py")}
    failures, attempts = 0, []
    with disk(tmp_path / "disk", real=how == "tmpfs") as fs:
        index_dir = fs.path / "index"
        _ok(_index(cli, root, index_dir))
        _ok(cli.run(_args("remember", root, index_dir, NOTE, "--json")))
        before = snapshot(root, index_dir)
        make_repo(root / "more", 60, seed=8)  # the next run needs far more room
        edited = root / "pkg0" / "mod_0.py"
        edited.write_text("def replaced_handler():\n    return 0\n")
        unchanged = baseline_files - {"pkg0/mod_0.py"}
        for step in range(3):
            faults = None
            if fs.real:
                fs.resize(fs.used_kb() + (64, 320, 640)[step])
            else:
                faults = Faults(after=rng.randint(10 * step, 10 * step + 15))
            result = _index(cli, root, index_dir, faults=faults)
            attempts.append(result.code)
            if result.code == 0:
                break
            failures += 1
            assert result.code == 6 and "Traceback" not in result.err, result.err
            assert "disk is full" in result.err or "No space left" in result.err, result.err
            _assert_kept(before, snapshot(root, index_dir), unchanged)
            if failures == 1:  # a failed write leaves an index recall can read
                _recall_finds(cli, root, index_dir, "handler_3_1")
        assert failures >= 1, f"the disk never filled: {attempts}"
        if fs.real:
            fs.resize(64 * 1024)  # space freed
        _ok(_index(cli, root, index_dir))
        got = snapshot(root, index_dir)
        assert _doctor(cli, root, index_dir)["healthy"]
    assert got == _clean(cli, root, tmp_path / "clean", note=True)
    _assert_kept(before, got, unchanged)
    print(f"\ndisk full ({how}): exit codes {attempts}, then converged")


# -- a read-only index ------------------------------------------------------------------


@contextmanager
def read_only(path: Path) -> Iterator[str]:
    """Make `path` read-only for real if this user can; say how ('injected' when not)."""
    if can_mount():  # root ignores chmod: a read-only bind mount stops it
        assert _sh("mount", "--bind", str(path), str(path))
        try:
            assert _sh("mount", "-o", "remount,bind,ro", str(path))
            yield "read-only bind mount"
        finally:
            _sh("umount", "-l", str(path))
    elif os.geteuid() != 0:
        _sh("chmod", "-R", "a-w", str(path))
        try:
            yield "chmod -R a-w"
        finally:
            _sh("chmod", "-R", "u+w", str(path))
    else:
        yield "injected"


def test_read_only_index_fails_clearly_recall_still_works(tmp_path: Path) -> None:
    cli = ForkedCli(tmp_path / "runs")
    root = make_repo(tmp_path / "repo", 24)
    index_dir = tmp_path / "index"
    _ok(_index(cli, root, index_dir))
    _ok(cli.run(_args("remember", root, index_dir, NOTE, "--json")))
    before = snapshot(root, index_dir)
    mutate_tree(root, random.Random(SEED))  # the next run has work to do
    with read_only(index_dir) as how:
        faults = Faults(after=0, code=errno.EROFS) if how == "injected" else None
        result = _index(cli, root, index_dir, faults=faults)
        assert result.code == 6 and "Traceback" not in result.err, result.err
        assert "read-only" in result.err.lower(), result.err
        _recall_finds(cli, root, index_dir, "handler_3_1")
        recalled = _ok(cli.run(_args("recall", root, index_dir, "retry budget", "--json")))
        assert json.loads(recalled.out)["evidence"]
        if how != "injected":  # nothing could be written, so nothing is half done
            assert _doctor(cli, root, index_dir)["healthy"]
            assert snapshot(root, index_dir) == before
    _ok(_index(cli, root, index_dir))
    assert snapshot(root, index_dir) == _clean(cli, root, tmp_path / "clean", note=True)
    print(f"\nread-only ({how}): index exit 6, recall worked, then converged")
