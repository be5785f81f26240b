"""The `files` table: one row per indexed file, written last in a run (its commit point)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memserver.core.types import FileRecord
from memserver.store import lancedb as ldb
from memserver.store.lancedb import Table, lance_errors, sql_quote

__all__ = ["FileManifest"]


class FileManifest:
    def __init__(self, table: Table) -> None:
        self.table = table

    def read(self, under: Iterable[str] | None = None) -> dict[str, FileRecord]:
        """path → record; with `under`, only those paths and the paths below them."""
        with lance_errors("read the files manifest"):
            if under is None or "" in (under := sorted(set(under))):
                found = ldb.arrow_all(self.table).to_pylist()
            else:
                found = []
                for batch in ldb.batches(under, 200):
                    where = " OR ".join(
                        f"path = {sql_quote(p)} OR starts_with(path, {sql_quote(p + '/')})"
                        for p in batch
                    )
                    found += ldb.scan(self.table, where, self.table.schema.names).to_pylist()
        return {
            r["path"]: FileRecord(
                path=r["path"], content_hash=r["content_hash"], size=r["size"],
                mtime_ns=r["mtime_ns"], language=r["language"],
                chunk_ids=tuple(r["chunk_ids"] or ()), git_commit=r["git_commit"] or "",
                git_branch=r["git_branch"] or "",
                masked=tuple((m["kind"], m["count"]) for m in r.get("masked") or ()),
            )
            for r in found
        }  # fmt: skip

    def count(self) -> int:
        with lance_errors("count the files"):
            return ldb.count(self.table)

    def write(self, records: Iterable[FileRecord], removed: Sequence[str]) -> None:
        now = ldb.now()
        rows = [
            {
                "path": r.path, "content_hash": r.content_hash, "size": r.size,
                "mtime_ns": r.mtime_ns, "language": r.language, "chunk_ids": list(r.chunk_ids),
                "indexed_at": now, "git_commit": r.git_commit, "git_branch": r.git_branch,
                "masked": [{"kind": k, "count": n} for k, n in r.masked],
            }
            for r in records
        ]  # fmt: skip
        with lance_errors("write the files manifest"):
            if rows:
                ldb.merge_on(self.table, "path", rows)
            ldb.delete_ids(self.table, "path", removed)
