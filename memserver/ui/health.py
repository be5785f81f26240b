"""Index health for a person: what `status` and `doctor` found, each problem with its fix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memserver.core.types import Status
    from memserver.store.doctor import DoctorReport

__all__ = ["Problem", "problems"]

_DOCTOR_FIX = {
    "meta": "`memserver index --rebuild` (the index was built by another schema or embedder)",
    "writer-lock": "wait for the writer to finish; a holder that is gone left nothing to fix",
    "tables": "`memserver doctor --repair` (rows it cannot read are indexed again)",
    "keyword-index": "`memserver doctor --repair` (it is rebuilt from the tables)",
    "tantivy-locks": "`memserver doctor --repair`",
    "unique-ids": "`memserver index --rebuild`",
    "sync": "`memserver doctor --repair`",
    "crash-marker": "`memserver doctor --repair` (a write died midway)",
    "pending": "`memserver index` (it embeds what is pending)",
}


@dataclass(frozen=True, slots=True)
class Problem:
    what: str
    fix: str
    source: str  # status | doctor


def _listed(paths: tuple[str, ...], n: int = 5) -> str:
    shown = ", ".join(paths[:n])
    return shown + (f" and {len(paths) - n} more" if len(paths) > n else "")


def problems(status: Status, doctor: DoctorReport) -> list[Problem]:
    out: list[Problem] = []
    if status.stale_files:
        out.append(Problem(f"{len(status.stale_files)} files changed since indexing: "
                           f"{_listed(status.stale_files)}", "`memserver index`",
                           "status"))  # fmt: skip
    if status.new_files:
        out.append(Problem(f"{len(status.new_files)} files are not indexed yet: "
                           f"{_listed(status.new_files)}", "`memserver index`",
                           "status"))  # fmt: skip
    if status.removed_files:
        out.append(Problem(f"{len(status.removed_files)} indexed files are gone: "
                           f"{_listed(status.removed_files)}", "`memserver index`",
                           "status"))  # fmt: skip
    if status.unembedded_chunks:
        out.append(Problem(f"{status.unembedded_chunks} chunks wait for a vector (found by "
                           "keyword only)", "`memserver index`", "status"))  # fmt: skip
    if status.git.head_commit and not status.git.matches:
        out.append(Problem(
            f"indexed at {status.git.indexed_commit[:12] or 'no commit'} "
            f"({status.git.indexed_branch or '?'}), the tree is at "
            f"{status.git.head_commit[:12]} ({status.git.head_branch or '?'})",
            "`memserver index` (only the files that differ are read again)", "status",
        ))  # fmt: skip
    if status.interrupted:
        out.append(Problem("a write was interrupted", "`memserver doctor --repair`", "status"))
    if status.stale_memories:
        out.append(Problem(f"{status.stale_memories} memories are stale (their code changed)",
                           "review them on the Review page: keep, edit or forget",
                           "status"))  # fmt: skip
    for c in doctor.checks:
        if not (c.ok or c.fixed):
            out.append(Problem(f"{c.check}: {c.detail}",
                               _DOCTOR_FIX.get(c.check, "`memserver doctor --repair`"),
                               "doctor"))  # fmt: skip
    return out
