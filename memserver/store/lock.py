"""The index-wide writer lock: one writer per index directory, others wait then fail.

An advisory `flock` on `writer.lock`; the kernel drops it when the holder dies,
so a killed process never leaves a stale lock behind. The file records who
holds it, so the error can name the holder.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from memserver.core.errors import IndexLocked
from memserver.store.failures import write_error

LOCK_FILE = "writer.lock"


class WriterLock:
    def __init__(self, index_dir: Path, timeout: float = 10.0, purpose: str = "") -> None:
        self.path = index_dir / LOCK_FILE
        self.timeout = timeout
        self.purpose = purpose or " ".join(sys.argv[:3])
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise write_error(f"open the writer lock {self.path}", exc) from exc
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = self._holder(fd)
                    os.close(fd)
                    raise IndexLocked(
                        f"another process is writing this index ({holder})",
                        hint="wait for it to finish, or stop it; the lock is released "
                        "automatically when that process exits",
                    ) from None
                time.sleep(0.1)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "purpose": self.purpose,
            "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        try:  # who holds it is for messages only: a full disk must not fail the lock
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except OSError:
            pass
        self._fd = fd

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            info = json.loads(os.pread(fd, 4096, 0) or b"{}")
            return f"pid {info.get('pid')} '{info.get('purpose', '')}' since {info.get('since')}"
        except (OSError, ValueError):
            return "holder unknown"

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def flock_held(path: Path) -> bool:
    """Whether a live process holds a flock on `path` (tantivy's lock files are flocks
    too). Takes the lock for an instant at most, through a read-only descriptor."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def probe(index_dir: Path) -> tuple[bool, dict[str, Any]]:
    """(whether a live process holds the writer lock, what the lock file says of its
    last holder: pid, host, purpose, since)."""
    path = index_dir / LOCK_FILE
    try:
        info = json.loads(path.read_bytes() or b"{}")
    except (OSError, ValueError):
        info = {}
    return flock_held(path), info if isinstance(info, dict) else {}
