"""Whole-table health of the LanceDB tables, and the repairs LanceDB allows.

A table whose current version names a data file that is gone fails every scan
with `lance error: Not found: …/data/<file>.lance` (lancedb 0.40; opening it
and counting its rows still work, as they read only the manifest). Each commit
is a version that keeps its own files until old versions are cleaned up, so
the first repair is to make the newest version that still reads in full the
current one (`restore`: a new version, no data copied). When no version reads,
or the table does not open at all (a damaged manifest), the table folder is
moved aside (kept for inspection, never deleted) and the table starts empty.
Either way the rows written after that version are gone: the caller makes the
files manifest agree, so that the next `memserver index` re-indexes those files.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memserver.store.index import CHUNKS, EVENTS, FILES, MEMORIES, REFS, SYMBOLS

TABLES = (CHUNKS, FILES, MEMORIES, EVENTS, SYMBOLS, REFS)
_SCAN_BATCH = 4096


@dataclass(frozen=True)
class TableHealth:
    name: str
    problem: str = ""  # empty when every row of the current version reads
    rows: int = 0
    opens: bool = True

    @property
    def ok(self) -> bool:
        return not self.problem


_RUST_SOURCE = re.compile(r", \S+\.rs:\d+:\d+")


def _short(exc: BaseException) -> str:
    text = _RUST_SOURCE.sub("", str(exc))  # drop the ", <path>/src/x.rs:12:34" Lance appends
    return f"{type(exc).__name__}: {text[:300]}"


def _scan(table: Any) -> int:
    """Read every column of every row (every data file of the current version)."""
    reader = table.search().limit(None).to_batches(_SCAN_BATCH)
    return sum(batch.num_rows for batch in reader)


def _scan_problem(table: Any) -> str:
    try:
        rows, expected = _scan(table), int(table.count_rows())
    except Exception as exc:
        return _short(exc)
    return "" if rows == expected else f"a scan read {rows} rows, the manifest says {expected}"


def check(db: Any, name: str) -> TableHealth:
    if name not in db.list_tables().tables:
        return TableHealth(name, "the table is missing", opens=False)
    try:
        table = db.open_table(name)
    except Exception as exc:
        return TableHealth(name, f"does not open: {_short(exc)}", opens=False)
    problem = _scan_problem(table)
    return TableHealth(name, problem, 0 if problem else int(table.count_rows()))


def restore_readable(table: Any) -> int | None:
    """Make the newest version that reads in full the current one; its number, or None."""
    latest = int(table.version)
    older = sorted((int(v["version"]) for v in table.list_versions()), reverse=True)
    for version in (v for v in older if v < latest):
        try:
            table.checkout(version)
            readable = not _scan_problem(table)
        except Exception:
            readable = False
        if readable:
            table.checkout_latest()
            table.restore(version)
            return version
    table.checkout_latest()
    return None


def move_aside(lance_dir: Path, name: str) -> Path:
    """Move a table's folder out of the way (LanceDB then creates the table empty)."""
    folder = lance_dir / f"{name}.lance"
    kept = lance_dir.parent / f"broken-{name}-{time.strftime('%Y%m%dT%H%M%S')}.lance"
    folder.rename(kept)
    return kept


def repair(db: Any, lance_dir: Path, health: TableHealth) -> str:
    """Repair one damaged table; say what was done. The rows lost are re-done by the caller."""
    if health.opens:
        table = db.open_table(health.name)
        before = int(table.count_rows())
        version = restore_readable(table)
        if version is not None:
            after = int(table.count_rows())
            return (
                f"restored version {version}, the newest that reads in full "
                f"({after} rows; {before} before the damage)"
            )
    if not (lance_dir / f"{health.name}.lance").exists():
        return "created empty"
    kept = move_aside(lance_dir, health.name)
    return f"no version reads: started empty; the damaged table is kept in {kept}"
