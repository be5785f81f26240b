"""What a storage failure means for the user: a full disk, a read-only index, or damage.

LanceDB and tantivy report OS errors as text inside their own exceptions
("No space left on device (os error 28)", "ReadOnlyFilesystem"), so both the
errno and the message are looked at.
"""

from __future__ import annotations

import errno

from memserver.core.errors import StoreError

DISK_FULL = "the disk is full: free space (or move the index with --index-dir) and re-run"
READ_ONLY = "the index directory is read-only: fix its permissions or use --index-dir"

_FULL_TEXT = ("No space left", "os error 28", "StorageFull", "QuotaExceeded")
_READ_ONLY_TEXT = ("Read-only", "ReadOnlyFilesystem", "ermission denied", "PermissionDenied",
                   "os error 30", "os error 13")  # fmt: skip


def failure_kind(exc: BaseException) -> str | None:
    """'disk full', 'read-only', or None when the failure is neither."""
    code = getattr(exc, "errno", None)
    text = str(exc)
    if code in (errno.ENOSPC, errno.EDQUOT) or any(t in text for t in _FULL_TEXT):
        return "disk full"
    if code in (errno.EROFS, errno.EACCES, errno.EPERM) or any(t in text for t in _READ_ONLY_TEXT):
        return "read-only"
    return None


def failure_hint(exc: BaseException, otherwise: str) -> str:
    """The hint for a failed write: free space, make it writable, or `otherwise`."""
    kind = failure_kind(exc)
    if kind == "disk full":
        return DISK_FULL
    if kind == "read-only":
        return READ_ONLY
    return otherwise


def write_error(what: str, exc: OSError) -> StoreError:
    """A failed write to the index folder (`what`: "write index metadata …"), with the hint
    its cause calls for."""
    return StoreError(
        f"cannot {what}: {exc.strerror or exc}",
        hint=failure_hint(exc, "check that the index directory is writable"),
    )
