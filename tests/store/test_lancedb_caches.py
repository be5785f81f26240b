"""A connection's LanceDB caches stay within their bounds however many versions its reads
see: a long-lived reader meets a new version of its table with every commit (a watched
save), and LanceDB's default caches (1 GB of metadata) kept them all."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from memserver.store import lancedb as ldb

BOUND = 256 << 10


def _commits_and_reads(db: Any, commits: int) -> None:
    """A writer's commits, each read by the same connection at its new version."""
    table = db.create_table("t", schema=pa.schema([("id", pa.string()), ("n", pa.int32())]))
    for i in range(commits):
        table.add(pa.table({"id": [f"r{i}"], "n": pa.array([i], pa.int32())}))
        assert table.count_rows(f"n = {i}") == 1


def test_a_connections_caches_stay_within_their_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lancedb

    real = lancedb.Session
    made: list[Any] = []

    def recorded(**bounds: int) -> Any:
        made.append(real(**bounds))
        return made[-1]

    monkeypatch.setattr(lancedb, "Session", recorded)
    monkeypatch.setattr(ldb, "METADATA_CACHE_BYTES", BOUND)
    monkeypatch.setattr(ldb, "INDEX_CACHE_BYTES", BOUND)
    _commits_and_reads(ldb.connect(tmp_path / "bounded"), 120)
    (caches,) = made
    assert 0 < caches.size_bytes <= 2 * BOUND  # both caches, each within its bound

    # the same work on a connection with LanceDB's default caches holds more than that
    unbounded = real()
    _commits_and_reads(lancedb.connect(str(tmp_path / "default"), session=unbounded,
                                       read_consistency_interval=timedelta(0)), 120)  # fmt: skip
    assert unbounded.size_bytes > 2 * BOUND
