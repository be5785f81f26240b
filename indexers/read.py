"""The one way memserver reads a file of the tree: what the walk checked, the read checks again.

A file can change between the walk that listed it and the read that indexes it: swapped for
a FIFO (an open would block forever), a symlink retargeted outside the root or at a device
(`/dev/zero` reads without end), grown past the size cap, or turned binary. So every read:

- resolves the path and refuses one that leaves the root;
- opens it component by component from the root with `O_NOFOLLOW` (a link swapped in after
  the check fails the open instead of being followed), the last one also `O_NONBLOCK`;
- refuses anything but a regular file (`fstat` of what was opened);
- reads at most `cap` + 1 bytes, and applies the binary check to what was read.

Standard library only; used by the walk, indexing, the watcher, `status` and recall.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Refused", "changed_on_disk", "read_bytes", "read_regular_file", "unreadable"]

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
_FILE_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOCTTY", 0)
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a file was not read (a skip reason users see)."""

    reason: str


OUTSIDE = "points outside the root"
NOT_REGULAR = "not a regular file"
CHANGED = "changed while it was read (a link or folder was swapped in)"


def _inside(root_real: str, path: str) -> str | None:
    """`path`'s real location relative to the root, or None when it leaves the root."""
    real = os.path.realpath(path)
    prefix = root_real.rstrip(os.sep) + os.sep
    if not real.startswith(prefix):
        return None
    return real[len(prefix) :]


def _open_beneath(root_real: str, rel_real: str) -> int:
    """An fd of `root/rel_real` opened one component at a time without following links."""
    parts = [p for p in rel_real.split(os.sep) if p]
    fd = os.open(root_real, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def read_bytes(root_real: str, path: str, cap: int) -> bytes | Refused:
    """At most `cap` + 1 bytes of the regular file at `path` (absolute, or relative to the
    root), which must resolve inside `root_real` (a real path); a `Refused` otherwise."""
    full = path if os.path.isabs(path) else os.path.join(root_real, path)
    rel_real = _inside(root_real, full)
    if rel_real is None:
        return Refused(OUTSIDE)
    try:
        fd = _open_beneath(root_real, rel_real)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            return Refused(CHANGED)
        if exc.errno == errno.ENXIO:  # a FIFO without a writer, opened non-blocking
            return Refused(NOT_REGULAR)
        return Refused(unreadable(exc))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Refused(NOT_REGULAR)
        parts, left = [], cap + 1
        while left > 0:
            part = os.read(fd, min(left, 1 << 20))
            if not part:
                break
            parts.append(part)
            left -= len(part)
        return b"".join(parts)
    except OSError as exc:
        return Refused(unreadable(exc))
    finally:
        os.close(fd)


def changed_on_disk(root: str | os.PathLike[str], path: str, size: int, mtime_ns: int,
                    digest: Callable[[bytes], str], indexed: str) -> bool:  # fmt: skip
    """Whether the file at `path` (relative to `root`) differs from what was indexed: one
    stat, and its content hashed (`digest`) only when size or mtime moved, so a touched but
    unchanged file is not reported; read as every read is (a file turned into a link to a
    device must not make a recall read without end). The path is joined as a string: a
    `pathlib` path interns its parts, and a long-lived server's interned-string table only
    grows (recall's stale check once made it resize by 1.8 MB)."""
    try:
        st = os.stat(os.path.join(root, path))
    except OSError:  # deleted or unreadable since indexing
        return True
    if (st.st_size, st.st_mtime_ns) == (size, mtime_ns):
        return False
    found = read_bytes(os.path.realpath(root), path, max(size, st.st_size))
    return isinstance(found, Refused) or digest(found) != indexed


def read_regular_file(path: str, cap: int) -> bytes | Refused:
    """At most `cap` bytes of a regular file anywhere (git metadata): not a link, not a
    device or FIFO, never blocking; `Refused` otherwise, or when it is larger than `cap`."""
    try:
        fd = os.open(path, _FILE_FLAGS)
    except OSError as exc:
        return Refused(unreadable(exc))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Refused(NOT_REGULAR)
        data = os.read(fd, cap + 1)
    except OSError as exc:
        return Refused(unreadable(exc))
    finally:
        os.close(fd)
    if len(data) > cap:
        return Refused(f"larger than {cap} bytes")
    return data


def unreadable(exc: OSError) -> str:
    """The skip reason for a file or folder that could not be opened or read."""
    if isinstance(exc, PermissionError):
        return "unreadable: permission denied"
    if isinstance(exc, FileNotFoundError):
        return "unreadable: no longer exists"
    return f"unreadable: {(exc.strerror or type(exc).__name__).lower()}"
