"""Moving a working tree between trees like a branch switch: only what differs is touched."""

from __future__ import annotations

import os
from pathlib import Path

from memserver.eval.treesync import sync_tree
from tests.conftest import write_tree

OLD = 1_000_000_000_000_000_000  # ns: a date long past, so any rewrite shows


def test_sync_rewrites_what_differs_deletes_what_went_keeps_mtimes(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {
        "same.py": "x = 1\n", "pkg/changed.py": "y = 2\n", "pkg/new.py": "z = 3\n",
    })  # fmt: skip
    dest = write_tree(tmp_path / "dest", {
        "same.py": "x = 1\n", "pkg/changed.py": "y = 9\n", "gone/old.py": "w = 0\n",
    })  # fmt: skip
    for p in dest.rglob("*.py"):
        os.utime(p, ns=(OLD, OLD))

    report = sync_tree(src, dest)

    assert (report.copied, report.deleted, report.unchanged) == (2, 1, 1)
    assert (dest / "same.py").stat().st_mtime_ns == OLD  # untouched
    assert (dest / "pkg/changed.py").read_text() == "y = 2\n"  # same size, other bytes
    assert (dest / "pkg/changed.py").stat().st_mtime_ns != OLD
    assert (dest / "pkg/new.py").read_text() == "z = 3\n"
    assert not (dest / "gone").exists()  # its only file went, so did the folder
    again = sync_tree(src, dest)
    assert (again.copied, again.deleted, again.unchanged) == (0, 0, 3)


def test_sync_into_a_missing_folder_copies_everything(tmp_path: Path) -> None:
    src = write_tree(tmp_path / "src", {"a.py": "a\n", "b/c.txt": "c\n"})
    report = sync_tree(src, tmp_path / "fresh")
    assert (report.copied, report.deleted, report.unchanged) == (2, 0, 0)
    assert (tmp_path / "fresh/b/c.txt").read_text() == "c\n"
