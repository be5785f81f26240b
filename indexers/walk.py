"""File discovery: which files under a root to index, and a short reason for what is left out.

`walk` lists the tree once with `os.scandir`, compiling each folder's ignore files once and never
descending into a folder it leaves out (the rules live in `indexers.ignore`). Files that ignore
files or `index.exclude` leave out are dropped silently; a left-out folder is reported once, as
"name/". Then every remaining file is read once, whole (it is under the size cap), to check its
contents. The result is sorted by path, so the same tree always gives the same answer.

Symlinks (when `follow_symlinks`): a link is followed only when it resolves inside the root.
Folder links are walked after the real folders, so a folder reached both ways keeps its real path
and the link is reported as "duplicate of <path>/"; a link back to a folder being walked is a
"symlink loop". A file reached under several paths (links, hard links) is indexed once, under its
real path if that is reached, else under the first path in sorted order.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from indexers.ignore import (
    IgnoreLayer,
    binary_reason,
    config_layer,
    dir_reason,
    file_reason,
    first_decision,
    load_layer,
    marker_reason,
    relative_dirs,
    target_reason,
    text_reason,
    utf8_name,
)
from indexers.languages import detect_language, shebang_language
from indexers.read import Refused, read_bytes, unreadable
from memserver.core.errors import PathError
from memserver.core.types import PathSet, Skip, SourceFile, WalkOptions, WalkResult

__all__ = ["read_source", "walk"]

_Identity = tuple[int, int]  # (st_dev, st_ino)

BROKEN_SYMLINK = "broken symlink"
SYMLINK_LOOP = "symlink loop"
OUTSIDE_ROOT = "symlink points outside the root"
NOT_FOLLOWED = "symlink (index.follow_symlinks is off)"
NOT_REGULAR = "not a regular file"
HIDDEN = "hidden (index.include_hidden is off)"
IGNORE_DIRS = "excluded folder (index dir)"
NOT_UTF8 = "not valid UTF-8 text"
EMPTY = "empty"
BAD_NAME = "name is not valid UTF-8"

_DEFAULTS = WalkOptions()


def walk(
    root: Path | str,
    options: WalkOptions = _DEFAULTS,
    *,
    ignore_dirs: Sequence[str] = (),
    only: PathSet | None = None,
) -> WalkResult:
    """The files to index under `root`, and the ones left out with a reason, sorted by path.

    `ignore_dirs` are folders to leave out (absolute, or relative to the root), such as an index
    directory placed inside the project. `only` limits the walk to some files and folders (the
    watcher's changed paths): folders above them are listed for their ignore files, and nothing
    else is looked at, so the answer for those paths is the one a whole walk would give.
    """
    root_abs = os.path.abspath(os.fspath(root))
    if not os.path.exists(root_abs):
        raise PathError(f"project root does not exist: {root}", hint="check the path and try again")
    if not os.path.isdir(root_abs):
        raise PathError(
            f"project root is not a directory: {root}",
            hint="pass the project folder, not a file inside it",
        )
    walker = _Walker(root_abs, options, ignore_dirs, only)
    walker.run()
    return walker.result()


@dataclass(frozen=True, slots=True)
class _Folder:
    """A folder waiting to be listed."""

    abs: str
    rel: str  # "" for the root, else "src/pkg/" (always with the trailing slash)
    layers: tuple[IgnoreLayer, ...]  # deepest first
    ancestors: tuple[_Identity, ...]  # the folders above it on this path, itself included


@dataclass(frozen=True, slots=True)
class _Link:
    """A folder symlink, walked after the real folders."""

    rel: str
    target: _Identity
    parent: _Folder
    abs: str


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A file that passed every check that needs no reading."""

    rel: str
    abs: str
    identity: _Identity
    is_link: bool
    mtime_ns: int


class _Walker:
    def __init__(
        self,
        root_abs: str,
        options: WalkOptions,
        ignore_dirs: Sequence[str],
        only: PathSet | None = None,
    ) -> None:
        self.root_abs = root_abs
        self.only = only
        self.root_real = os.path.realpath(root_abs)
        self.options = options
        self.config = config_layer(options.exclude)
        self.ignore_dirs = relative_dirs(self.root_real, ignore_dirs)
        self.skipped: dict[str, str] = {}
        self.candidates: list[_Candidate] = []
        self.visited: dict[_Identity, str] = {}  # folder identity -> the path it was walked under
        self.links: list[_Link] = []

    # ----------------------------------------------------------------- listing

    def run(self) -> None:
        try:
            root_id = _identity(os.stat(self.root_abs))
        except OSError as exc:
            raise _unreadable_root(self.root_abs, exc) from exc
        self.visited[root_id] = ""
        stack = [_Folder(self.root_abs, "", (), (root_id,))]
        while stack or self.links:
            if not stack:
                stack = self._take_links()
                continue
            stack.extend(self._list(stack.pop()))

    def _take_links(self) -> list[_Folder]:
        """Folder links found so far, in path order; each target folder is walked once."""
        links, self.links = sorted(self.links, key=lambda link: link.rel), []
        folders = []
        for link in links:
            first = self.visited.get(link.target)
            if first is not None:
                self.skipped[link.rel + "/"] = f"duplicate of {first}/" if first else SYMLINK_LOOP
                continue
            self.visited[link.target] = link.rel
            parent = link.parent
            ancestors = (*parent.ancestors, link.target)
            folders.append(_Folder(link.abs, link.rel + "/", parent.layers, ancestors))
        return folders

    def _list(self, folder: _Folder) -> list[_Folder]:
        """Check every entry of one folder; return the sub-folders to walk."""
        try:
            with os.scandir(folder.abs) as listing:
                entries = list(listing)
        except OSError as exc:
            if not folder.rel:
                raise _unreadable_root(self.root_abs, exc) from exc
            self.skipped[folder.rel] = unreadable(exc)
            return []
        names = {entry.name for entry in entries}
        if folder.rel:
            reason = marker_reason(folder.rel[:-1].rsplit("/", 1)[-1], names, folder.abs)
            if reason is not None:
                self.skipped[folder.rel] = reason
                return []
        layer = load_layer(folder.abs, folder.rel, names)
        if layer is not None:
            folder = _Folder(folder.abs, folder.rel, (layer, *folder.layers), folder.ancestors)
        if self.only is not None and folder.rel[:-1] not in self.only:
            entries = [e for e in entries if self._on_the_way(folder.rel + e.name)]
        subfolders = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows links
            except OSError:
                is_dir = False
            if not utf8_name(entry.name):  # such a path could not be stored or shown
                shown = entry.name.encode("utf-8", "backslashreplace").decode("utf-8")
                self.skipped[folder.rel + shown + ("/" if is_dir else "")] = BAD_NAME
            elif is_dir:
                sub = self._folder_entry(entry, folder)
                if sub is not None:
                    subfolders.append(sub)
            else:
                self._file_entry(entry, folder)
        return subfolders

    def _on_the_way(self, rel: str) -> bool:
        """With `only`: is the entry `rel` one of its paths, under one, or above one?"""
        assert self.only is not None
        return rel in self.only or self.only.leads_to(rel)

    def _ignored(self, rel: str, is_dir: bool, folder: _Folder) -> str | None:
        if self.config is not None:
            decision = self.config.decide(rel, is_dir)
            if decision is not None:
                return decision[1] if decision[0] else None
        return first_decision(folder.layers, rel, is_dir)

    def _folder_entry(self, entry: os.DirEntry[str], folder: _Folder) -> _Folder | None:
        rel = folder.rel + entry.name
        reason = (
            dir_reason(rel)
            or (IGNORE_DIRS if rel in self.ignore_dirs else None)
            or (HIDDEN if not self.options.include_hidden and entry.name[0] == "." else None)
            or self._ignored(rel, True, folder)
        )
        if reason is None:
            if not entry.is_symlink():
                return self._descend(entry, rel, folder)
            reason = self._folder_link(entry, rel, folder)
        if reason:
            self.skipped[rel + "/"] = reason
        return None

    def _descend(self, entry: os.DirEntry[str], rel: str, folder: _Folder) -> _Folder | None:
        try:
            identity = _identity(entry.stat(follow_symlinks=False))
        except OSError as exc:
            self.skipped[rel + "/"] = unreadable(exc)
            return None
        if identity in folder.ancestors:  # a bind mount of a folder above: never loop
            self.skipped[rel + "/"] = SYMLINK_LOOP
            return None
        self.visited.setdefault(identity, rel)
        return _Folder(entry.path, rel + "/", folder.layers, (*folder.ancestors, identity))

    def _folder_link(self, entry: os.DirEntry[str], rel: str, folder: _Folder) -> str:
        """A reason to skip a folder link now, or "" when it was queued to walk later."""
        if not self.options.follow_symlinks:
            return NOT_FOLLOWED
        try:
            identity = _identity(entry.stat())
        except OSError as exc:
            return _link_error(exc)
        target = self._inside(entry.path)
        if target is None:
            return OUTSIDE_ROOT
        if identity in folder.ancestors:
            return SYMLINK_LOOP
        reason = target_reason(target, is_dir=True)
        if reason is not None:
            return reason
        self.links.append(_Link(rel, identity, folder, entry.path))
        return ""

    def _file_entry(self, entry: os.DirEntry[str], folder: _Folder) -> None:
        rel = folder.rel + entry.name
        if not self.options.include_hidden and entry.name[0] == ".":
            return
        if self._ignored(rel, False, folder) is not None:
            return  # ignored files are not listed: there are too many of them
        reason = file_reason(rel)
        if reason is None:
            reason = self._file_checks(entry, rel)
        if reason is not None:
            self.skipped[rel] = reason

    def _file_checks(self, entry: os.DirEntry[str], rel: str) -> str | None:
        """Checks that need a stat (and, for links, the target): a reason, or None when queued."""
        is_link = entry.is_symlink()
        if is_link and not self.options.follow_symlinks:
            return NOT_FOLLOWED
        try:
            info = entry.stat()
        except OSError as exc:
            return _link_error(exc) if is_link else unreadable(exc)
        if is_link:
            target = self._inside(entry.path)
            if target is None:
                return OUTSIDE_ROOT
            reason = target_reason(target, is_dir=False)
            if reason is not None:
                return reason
        if not stat.S_ISREG(info.st_mode):
            return NOT_REGULAR
        if info.st_size > self.options.max_file_bytes:
            return _too_large(self.options.max_file_bytes)
        if info.st_size == 0:
            return EMPTY
        self.candidates.append(
            _Candidate(rel, entry.path, _identity(info), is_link, info.st_mtime_ns)
        )
        return None

    def _inside(self, path: str) -> str | None:
        """The root-relative POSIX path a link resolves to, or None when it leaves the root."""
        real = os.path.realpath(path)
        if real == self.root_real:
            return ""
        prefix = self.root_real.rstrip(os.sep) + os.sep
        if not real.startswith(prefix):
            return None
        return real[len(prefix) :].replace(os.sep, "/")

    # ----------------------------------------------------------------- reading

    def result(self) -> WalkResult:
        """Read each distinct file once; everything sorted by path."""
        first: dict[_Identity, _Candidate] = {}
        # Real paths before link paths, then path order: the first one kept for a file wins.
        for candidate in sorted(self.candidates, key=lambda c: (c.is_link, c.rel)):
            kept = first.setdefault(candidate.identity, candidate)
            if kept is not candidate:
                self.skipped[candidate.rel] = f"duplicate of {kept.rel}"
        files = []
        for candidate in first.values():
            source = self._read(candidate)
            if isinstance(source, SourceFile):
                files.append(source)
            else:
                self.skipped[candidate.rel] = source
        files.sort(key=lambda f: f.path)
        skipped = tuple(Skip(path, reason) for path, reason in sorted(self.skipped.items()))
        return WalkResult(files=tuple(files), skipped=skipped)

    def _read(self, candidate: _Candidate) -> SourceFile | str:
        """The file to index, or the reason its contents rule it out."""
        found = read_source(self.root_real, candidate.rel, candidate.abs,
                            self.options.max_file_bytes)  # fmt: skip
        if isinstance(found, str):
            return found
        data, _, language = found
        return SourceFile(
            path=candidate.rel,
            abs_path=candidate.abs,
            size=len(data),
            mtime_ns=candidate.mtime_ns,
            language=language,
        )


def read_source(root_real: str, rel: str, abs_path: str, cap: int) -> tuple[bytes, str, str] | str:
    """(bytes, text, language) of a file to index, read safely (`indexers.read`), or the
    reason its contents rule it out: the same checks for the walk and for the read that
    indexes it later, so a file that changed in between is judged by what is read."""
    data = read_bytes(root_real, abs_path, cap)
    if isinstance(data, Refused):
        return data.reason
    if len(data) > cap:
        return _too_large(cap)
    reason = binary_reason(data)
    if reason is not None:
        return reason
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return NOT_UTF8
    language = _language(rel, text)
    reason = text_reason(text, language)
    if reason is not None:
        return reason
    return data, text, language


def _language(rel: str, text: str) -> str:
    language = detect_language(rel)
    name = rel.rsplit("/", 1)[-1]
    if language == "text" and "." not in name.lstrip("."):  # no extension: maybe a script
        return shebang_language(text[:200].split("\n", 1)[0]) or "text"
    return language


def _identity(info: os.stat_result) -> _Identity:
    return (info.st_dev, info.st_ino)


def _too_large(cap: int) -> str:
    return f"larger than {cap} bytes (raise index.max_file_bytes)"


def _link_error(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return BROKEN_SYMLINK
    if exc.errno == errno.ELOOP:
        return SYMLINK_LOOP
    return unreadable(exc)


def _unreadable_root(root: str, exc: OSError) -> PathError:
    return PathError(
        f"cannot read project root {root}: {exc.strerror or exc}",
        hint="check that the folder exists and that you may read it",
    )
