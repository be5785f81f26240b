"""Bring one working tree to another tree's contents the way a branch switch does.

Files whose bytes differ are rewritten (so they get a new mtime, as git checkout gives
them), files the target lacks are deleted (and folders left empty), and unchanged files are
not touched at all: their mtimes stay, so an incremental index skips them by their stat.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class SyncReport:
    copied: int
    deleted: int
    unchanged: int
    seconds: float

    def to_dict(self) -> dict[str, float]:
        return {"copied": self.copied, "deleted": self.deleted, "unchanged": self.unchanged,
                "seconds": round(self.seconds, 3)}  # fmt: skip


def files_under(root: Path) -> set[str]:
    """Every regular file under `root`, as POSIX paths relative to it (symlinks left out)."""
    out = set()
    for dirpath, _, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        for name in filenames:
            if not (Path(dirpath) / name).is_symlink():
                out.add((rel_dir / name).as_posix())
    return out


def _same(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    return a.read_bytes() == b.read_bytes()


def sync_tree(source: Path, dest: Path) -> SyncReport:
    """Make `dest` hold exactly the files of `source`, rewriting only what differs."""
    started = time.perf_counter()
    dest.mkdir(parents=True, exist_ok=True)
    want, have = files_under(source), files_under(dest)
    copied = unchanged = 0
    for rel in sorted(want):
        src, dst = source / rel, dest / rel
        if rel in have and dst.is_file() and _same(src, dst):
            unchanged += 1
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)  # content only: the mtime is now's, as after a checkout
        copied += 1
    gone = sorted(have - want)
    for rel in gone:
        (dest / rel).unlink()
    for dirpath, _, _ in sorted(os.walk(dest), key=lambda w: -len(w[0])):
        if Path(dirpath) != dest and not any(Path(dirpath).iterdir()):
            Path(dirpath).rmdir()
    return SyncReport(copied, len(gone), unchanged, time.perf_counter() - started)
