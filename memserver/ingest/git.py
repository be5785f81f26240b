"""The git commit and branch of a working tree, read from `.git` without running git."""

from __future__ import annotations

from pathlib import Path


def git_dir(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():  # a worktree or submodule: "gitdir: <path>"
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text[len("gitdir:") :].strip())
            return target if target.is_absolute() else (root / target).resolve()
    return None


def head(root: Path) -> tuple[str, str]:
    """(commit, branch) of the tree at `root`; ("", "") when it is not a git repository."""
    gd = git_dir(root)
    if gd is None:
        return "", ""
    try:
        text = (gd / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return "", ""
    if not text.startswith("ref:"):
        return text, ""  # detached HEAD
    ref = text[4:].strip()
    branch = ref.removeprefix("refs/heads/")
    common = gd
    if (gd / "commondir").is_file():
        common = (gd / (gd / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for base in (gd, common):
        try:
            return (base / ref).read_text(encoding="utf-8").strip(), branch
        except OSError:
            pass
        packed = base / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                if line.endswith(" " + ref):
                    return line.split(" ", 1)[0], branch
    return "", branch  # a branch with no commits yet


def exclude_from_git(root: Path, index_dir: Path) -> None:
    """Add the index folder to `.git/info/exclude` so it never shows as untracked."""
    gd = git_dir(root)
    if gd is None:
        return
    try:
        rel = index_dir.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return  # the index lives outside the tree
    pattern = f"/{rel}/"
    exclude = gd / "info" / "exclude"
    try:
        current = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if pattern in current.split("\n"):
            return
        exclude.parent.mkdir(parents=True, exist_ok=True)
        sep = "" if not current or current.endswith("\n") else "\n"
        exclude.write_text(f"{current}{sep}{pattern}\n", encoding="utf-8")
    except OSError:
        pass  # best effort: a read-only .git must not stop indexing
