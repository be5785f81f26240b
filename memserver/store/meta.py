"""Index metadata (`meta.json`): what built the index, checked on every open."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from memserver.core.errors import IndexMismatch, StoreError
from memserver.store.failures import write_error

META_FILE = "meta.json"
SCHEMA_VERSION = 3  # bump when a table's schema changes: old indexes must be rebuilt


@dataclass(frozen=True)
class IndexMeta:
    schema_version: int
    embedder: str
    dim: int
    tokenizer: str
    project: str
    root: str = ""
    created_at: str = ""
    indexed_at: str = ""
    git_commit: str = ""
    git_branch: str = ""
    chunker: str = ""  # chunker version + settings digest; a change re-chunks every file
    # what the model reads of a file chunk (text.passages.passages_id); a change embeds
    # every current file chunk again ("": an index from before it was recorded)
    passages: str = ""

    def with_run(self, *, indexed_at: str, git_commit: str, git_branch: str, chunker: str
                 ) -> IndexMeta:  # fmt: skip
        return replace(
            self, indexed_at=indexed_at, git_commit=git_commit, git_branch=git_branch,
            chunker=chunker,
        )  # fmt: skip


def read_meta(index_dir: Path) -> IndexMeta | None:
    path = index_dir / META_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return IndexMeta(**data)
    except (OSError, ValueError, TypeError) as exc:
        raise StoreError(
            f"index metadata {path} is unreadable or corrupt: {exc}",
            hint="run `memserver index --rebuild` to build the index again",
        ) from exc


def write_meta(index_dir: Path, meta: IndexMeta) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of one."""
    path = index_dir / META_FILE
    tmp = path.with_suffix(".json.tmp")
    try:
        tmp.write_text(json.dumps(asdict(meta), indent=2, sort_keys=True), encoding="utf-8")
        with tmp.open("rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise write_error(f"write index metadata {path}", exc) from exc


def check_compatible(meta: IndexMeta, embedder: str, dim: int) -> None:
    """Refuse to mix an index with another schema or embedder."""
    if meta.schema_version != SCHEMA_VERSION:
        raise IndexMismatch(
            f"the index has schema version {meta.schema_version}, "
            f"this memserver writes version {SCHEMA_VERSION}",
            hint="run `memserver index --rebuild` to rebuild it",
        )
    if (meta.embedder, meta.dim) != (embedder, dim):
        raise IndexMismatch(
            f"the index was built with embedder {meta.embedder} (dim {meta.dim}), "
            f"but {embedder} (dim {dim}) is configured",
            hint=f"run `memserver index --rebuild` to rebuild with {embedder}, "
            f"or pass --embedder {meta.embedder} to use the index as built",
        )
