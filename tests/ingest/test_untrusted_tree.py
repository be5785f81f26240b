"""A project tree is untrusted: what the walk checked, the read checks again, and git
metadata is read (and written) only where it belongs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memserver.core.types import IndexReport
from memserver.ingest.git import exclude_from_git, head, valid_ref

SECRET_LINE = "secret-hostname-content-7781"


def _git_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.py").write_text("def main():\n    return 1\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    git = ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    return root


def test_a_head_ref_that_leaves_the_repository_is_not_followed(tmp_path: Path, make_engine) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET_LINE + "\n")
    root = _git_repo(tmp_path / "repo")
    rel = os.path.relpath(outside, root / ".git")
    (root / ".git" / "HEAD").write_text(f"ref: {rel}\n")
    assert head(root) == ("", "")
    engine = make_engine(root)
    engine.index()
    status = engine.status().to_dict()
    meta = (engine.index_dir / "meta.json").read_text()
    assert SECRET_LINE not in json.dumps(status) and SECRET_LINE not in meta


def test_a_head_naming_a_device_or_a_link_to_one_is_refused_at_once(tmp_path: Path) -> None:
    root = _git_repo(tmp_path / "repo")
    (root / ".git" / "HEAD").write_text("ref: ../../../../../../../../dev/zero\n")
    assert head(root) == ("", "")
    (root / ".git" / "HEAD").unlink()
    (root / ".git" / "HEAD").symlink_to("/dev/zero")
    assert head(root) == ("", "")  # returns: a device is not a regular file


def test_only_commit_ids_read_from_git_are_reported(tmp_path: Path) -> None:
    root = _git_repo(tmp_path / "repo")
    commit, branch = head(root)
    assert len(commit) == 40 and branch == "main"
    (root / ".git" / "refs" / "heads" / "main").write_text(SECRET_LINE + "\n")
    assert head(root) == ("", "main")
    assert valid_ref("refs/heads/feature/x") and not valid_ref("refs/heads/../../x")
    assert not valid_ref("../../etc/passwd") and not valid_ref("refs/heads/a\nb")


def test_exclude_is_written_only_inside_the_repositorys_own_git_folder(tmp_path: Path) -> None:
    root = _git_repo(tmp_path / "repo")
    target = tmp_path / "victim.txt"
    target.write_text("keep me\n")
    exclude = root / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.unlink(missing_ok=True)
    exclude.symlink_to(target)
    exclude_from_git(root, root / ".memserver")
    assert target.read_text() == "keep me\n"  # the link's target is never written

    other = tmp_path / "elsewhere"
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".git").write_text(f"gitdir: {other}\n")
    exclude_from_git(plain, plain / ".memserver")
    assert not other.exists()  # a .git file: nothing is created where it points

    exclude.unlink()
    exclude_from_git(root, root / ".memserver")
    exclude_from_git(root, root / ".memserver")
    assert exclude.read_text().count("/.memserver/") == 1


def _swap_after_walk(tmp_path: Path, make_engine, swap) -> tuple[IndexReport, object]:
    """Walk the tree, change it as `swap` says, then index what the walk listed."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "keep.py").write_text("def kept():\n    return 'kept'\n")
    (root / "target.py").write_text("def target():\n    return 'target'\n")
    engine = make_engine(root)
    walked = engine.walk()
    assert "target.py" in {f.path for f in walked.files}
    swap(root / "target.py", tmp_path)
    store = engine.writable_store()
    report = IndexReport(root=str(root), index_dir=str(engine.index_dir))
    engine.run_index(store, walked, report, git=("", ""))
    return report, store


def test_a_file_swapped_for_a_fifo_after_the_walk_does_not_hang(tmp_path, make_engine) -> None:
    def swap(path: Path, _: Path) -> None:
        path.unlink()
        os.mkfifo(path)

    report, store = _swap_after_walk(tmp_path, make_engine, swap)
    assert report.skipped["target.py"] == "not a regular file"
    assert set(store.files.read()) == {"keep.py"}


@pytest.mark.parametrize("where", ["outside", "device"])
def test_a_link_retargeted_after_the_walk_is_not_read(tmp_path, make_engine, where) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text(f"TOKEN = '{SECRET_LINE}'\n")

    def swap(path: Path, _: Path) -> None:
        path.unlink()
        path.symlink_to(secret if where == "outside" else Path("/dev/zero"))

    report, store = _swap_after_walk(tmp_path, make_engine, swap)
    assert report.skipped["target.py"] in ("points outside the root", "not a regular file")
    texts = [c.text for c, _ in store.chunks.get(list(store.chunks.states())).values()]
    assert not any(SECRET_LINE in t for t in texts)


def test_a_file_that_gained_nul_bytes_after_the_walk_is_skipped(tmp_path, make_engine) -> None:
    def swap(path: Path, _: Path) -> None:
        path.write_bytes(b"def target():\n    return b'\x00\x01\x02'\x00\n")

    report, store = _swap_after_walk(tmp_path, make_engine, swap)
    assert report.skipped["target.py"].startswith("binary")
    assert "target.py" not in store.files.read()


def test_status_does_not_hang_on_a_fifo(tmp_path: Path, make_engine) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n")
    engine = make_engine(root)
    engine.index()
    (root / "a.py").unlink()
    os.mkfifo(root / "a.py")
    status = engine.status()
    assert "a.py" in status.removed_files and not status.up_to_date


def test_status_says_an_index_cut_by_other_chunking_is_not_up_to_date(
    tmp_path: Path, make_engine
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def a():\n    return 1\n")
    make_engine(root).index()
    assert make_engine(root).status().up_to_date
    other = make_engine(root, overrides={"chunking": {"max_tokens": 500}})
    status = other.status()
    assert status.rechunk and not status.up_to_date and status.to_dict()["rechunk"]
    other.index()
    assert other.status().up_to_date
