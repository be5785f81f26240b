"""A stat cache that lets a no-op `memserver index` finish without opening the stores.

After a successful run we record each file's (size, mtime_ns) and a fingerprint
of the stores (the latest LanceDB manifest of each table and tantivy's meta
file). The next run walks the tree; when the files, the settings key and the
fingerprint are all the same, nothing can have changed, and the run ends before
importing LanceDB (whose import alone takes seconds). Any doubt means the full
path: a missing or unreadable cache, a crash marker, pending embeddings, or a
store written by anyone since. Standard library only, on purpose.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memserver.core.types import SourceFile

DIRTY = "DIRTY"
STATE_FILE = "state.json"
_TABLES = ("chunks", "files")


def fingerprint(index_dir: Path, tables: Sequence[str] = _TABLES) -> list[Any] | None:
    """The latest manifest of each of `tables` and tantivy's meta file (None: unreadable)."""
    parts: list[Any] = []
    try:
        for table in tables:
            versions = index_dir / "lance" / f"{table}.lance" / "_versions"
            manifests = sorted(n for n in os.listdir(versions) if n.endswith(".manifest"))
            if not manifests:
                return None
            parts.append([table, manifests[0], manifests[-1], len(manifests)])
        st = (index_dir / "bm25" / "meta.json").stat()
        parts.append(["bm25", st.st_size, st.st_mtime_ns])
    except OSError:
        return None
    return parts


def _files(files: Sequence[SourceFile]) -> dict[str, list[int]]:
    return {f.path: [f.size, f.mtime_ns] for f in files}


def save(index_dir: Path, key: str, files: Sequence[SourceFile], summary: dict[str, Any]) -> None:
    """Record the state a finished run left; best effort (the cache is only a shortcut)."""
    stores = fingerprint(index_dir)
    if stores is None:
        return
    state = {"key": key, "fingerprint": stores, "files": _files(files), "summary": summary}
    tmp = index_dir / (STATE_FILE + ".tmp")
    try:
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, index_dir / STATE_FILE)
    except OSError:
        forget(index_dir)


def forget(index_dir: Path) -> None:
    with contextlib.suppress(OSError):
        (index_dir / STATE_FILE).unlink(missing_ok=True)


def unchanged(index_dir: Path, key: str, files: Sequence[SourceFile]) -> dict[str, Any] | None:
    """The saved summary when nothing changed since the last run; None otherwise."""
    if (index_dir / DIRTY).exists():
        return None
    try:
        state = json.loads((index_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or state.get("key") != key:
        return None
    if state.get("fingerprint") != fingerprint(index_dir) or state.get("files") != _files(files):
        return None
    summary = state.get("summary")
    return summary if isinstance(summary, dict) else None
