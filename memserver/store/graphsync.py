"""How the code graph's tables must change to agree with the files manifest (for
`IndexStore.reconcile`, `desync` and `needs_reconcile`).

The manifest is the truth: a file's graph version is current exactly while the manifest's
record of the file names it (`core.graph.file_version`). A version whose rows are not all
there (a write cut short before its file row, or rows a damaged table lost) is dropped, and
a manifest entry whose version has no complete graph is dropped too, so that its file is
indexed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memserver.core.graph import file_version
from memserver.core.types import FileRecord
from memserver.store.graph import FileRow, GraphRows

__all__ = ["GraphPlan", "agrees", "plan", "versions_of"]


@dataclass(frozen=True)
class GraphPlan:
    broken: frozenset[str] = frozenset()  # versions to delete: not all their rows are there
    redo: tuple[str, ...] = ()  # manifest paths without a complete graph: index them again
    reopen: tuple[str, ...] = ()  # versions the manifest names with closed rows
    close: tuple[str, ...] = ()  # versions it does not name with current rows

    def counts(self) -> dict[str, int]:
        return {
            "code graph versions of a write cut short": len(self.broken),
            "files whose code graph is gone": len(self.redo),
            "code graph versions to reopen": len(self.reopen),
            "code graph versions to close": len(self.close),
        }


def versions_of(manifest: Mapping[str, FileRecord]) -> dict[str, str]:
    """version → path, for every manifest entry."""
    return {file_version(p, r.content_hash, r.chunk_ids): p for p, r in manifest.items()}


def plan(manifest: Mapping[str, FileRecord], graph: GraphRows) -> GraphPlan:
    want = versions_of(manifest)
    files = graph.file_rows()
    defs, refs = graph.version_states()
    broken = {v for v in (defs.keys() | refs.keys()) if v not in files}
    broken |= {v for v, row in files.items() if not _complete(row, defs, refs)}
    redo = sorted(p for v, p in want.items() if v not in files or v in broken)
    reopen, close = [], []
    for v, row in files.items():
        if v in broken:
            continue
        closed = (not row.current) or defs.get(v, (0, 0))[1] or refs.get(v, (0, 0))[1]
        opened = row.current or defs.get(v, (0, 0))[0] or refs.get(v, (0, 0))[0]
        if v in want and closed:
            reopen.append(v)
        elif v not in want and opened:
            close.append(v)
    return GraphPlan(frozenset(broken), tuple(redo), tuple(sorted(reopen)), tuple(sorted(close)))


def _complete(row: FileRow, defs: Mapping[str, tuple[int, int]],
              refs: Mapping[str, tuple[int, int]]) -> bool:  # fmt: skip
    return (sum(defs.get(row.version, (0, 0))) == row.definitions
            and sum(refs.get(row.version, (0, 0))) == row.references)  # fmt: skip


def agrees(manifest: Mapping[str, FileRecord], graph: GraphRows) -> bool:
    """A cheap look (counts and file rows only): does the graph seem to agree?"""
    files, defs, refs = graph.count_current()
    current = [r for r in graph.file_rows().values() if r.current]
    return (
        files == len(current) == len(manifest)
        and {r.version for r in current} == set(versions_of(manifest))
        and defs == sum(r.definitions for r in current)
        and refs == sum(r.references for r in current)
    )
