"""The git commit and branch of a working tree, read from `.git` without running git.

A project tree is untrusted input: its `.git` may point anywhere (`gitdir: /x`), and its
`HEAD` may say `ref: ../../../etc/hostname` or name `/dev/zero`. So every git file is read
through `indexers.read.read_regular_file` (regular files only, size-capped, never
blocking); a ref must be a valid ref name under `refs/`, and only a commit id (40 or 64 hex
digits) read from git is ever reported. Nothing is written outside the tree: the index
folder goes into `info/exclude` only of a `.git` folder inside the root, when `info/exclude`
is a regular file (or absent) in a real `info/` folder.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from indexers.read import Refused, read_regular_file

__all__ = ["exclude_from_git", "git_dir", "head", "valid_ref"]

_SMALL = 4096  # HEAD, a ref, commondir, a .git file
_PACKED = 16 << 20  # packed-refs of a large repository
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|//|@\{|/\.|\.lock(?:/|$)|/$|\.$")


def valid_ref(ref: str) -> bool:
    """A branch or tag ref git itself would accept (`git check-ref-format`), under refs/."""
    return ref.startswith("refs/") and not _BAD_REF.search(ref) and len(ref) < 1024


def _read(path: Path, cap: int = _SMALL) -> str | None:
    data = read_regular_file(str(path), cap)
    if isinstance(data, Refused):
        return None
    return data.decode("utf-8", errors="replace").strip()


def git_dir(root: Path) -> Path | None:
    dot = root / ".git"
    try:
        mode = os.lstat(dot).st_mode
    except OSError:
        return None
    if stat.S_ISDIR(mode):
        return dot
    if stat.S_ISREG(mode):  # a worktree or submodule: "gitdir: <path>"
        text = _read(dot)
        if text and text.startswith("gitdir:"):
            target = Path(text[len("gitdir:") :].strip())
            return target if target.is_absolute() else (root / target).resolve()
    return None


def _commit(text: str | None) -> str:
    return text if text is not None and _COMMIT.fullmatch(text) else ""


def head(root: Path) -> tuple[str, str]:
    """(commit, branch) of the tree at `root`; ("", "") when it is not a git repository or
    its HEAD is not something git would write."""
    gd = git_dir(root)
    if gd is None:
        return "", ""
    text = _read(gd / "HEAD")
    if text is None:
        return "", ""
    if not text.startswith("ref:"):
        return _commit(text), ""  # detached HEAD
    ref = text[4:].strip()
    if not valid_ref(ref):
        return "", ""
    branch = ref.removeprefix("refs/heads/")
    bases = [gd]
    common = _read(gd / "commondir")
    if common:
        bases.append((gd / common).resolve())
    for base in bases:
        found = _commit(_read(base / ref))
        if found:
            return found, branch
        packed = _read(base / "packed-refs", _PACKED)
        for line in (packed or "").splitlines():
            sha, _, name = line.partition(" ")
            if name == ref and _COMMIT.fullmatch(sha):
                return sha, branch
    return "", branch  # a branch with no commits yet


def exclude_from_git(root: Path, index_dir: Path) -> None:
    """Add the index folder to `.git/info/exclude` so it never shows as untracked."""
    dot = root / ".git"
    try:
        if not stat.S_ISDIR(os.lstat(dot).st_mode):
            return  # a .git file points elsewhere: never write there
        rel = index_dir.resolve().relative_to(root.resolve()).as_posix()
    except (OSError, ValueError):
        return  # no repository, or the index lives outside the tree
    pattern = f"/{rel}/"
    info, exclude = dot / "info", dot / "info" / "exclude"
    try:
        if os.path.lexists(info) and not stat.S_ISDIR(os.lstat(info).st_mode):
            return
        if os.path.lexists(exclude) and not stat.S_ISREG(os.lstat(exclude).st_mode):
            return  # a link or anything else: leave it alone
        current = ""
        if os.path.lexists(exclude):
            data = read_regular_file(str(exclude), 1 << 20)
            if isinstance(data, Refused):
                return
            current = data.decode("utf-8", errors="replace")
        if pattern in current.split("\n"):
            return
        info.mkdir(exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(exclude, flags, 0o644)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            sep = "" if not current or current.endswith("\n") else "\n"
            fh.write(f"{sep}{pattern}\n")
    except OSError:
        pass  # best effort: a read-only .git must not stop indexing
