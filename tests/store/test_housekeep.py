"""Compaction and version cleanup of several tables at once: each table ends compacted
with its old versions gone, and one that fails does not leave the others half done."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from memserver.store import lancedb as ldb

_SCHEMA = pa.schema([("id", pa.string()), ("n", pa.int32())])


def _tables(root: Path, count: int, appends: int) -> list[ldb.Table]:
    db = ldb.connect(root)
    tables = []
    for t in range(count):
        table = ldb.open_table(db, f"t{t}", _SCHEMA, create=True)
        assert table is not None
        for a in range(appends):  # a fragment and a version each
            ldb.add(table, [{"id": f"{t}-{a}-{r}", "n": r} for r in range(50)])
        tables.append(table)
    return tables


def _fragments(table: ldb.Table) -> int:
    return int(table.stats()["fragment_stats"]["num_fragments"])


def test_tables_housekept_at_once_are_each_compacted_and_rid_of_old_versions(
    tmp_path: Path,
) -> None:
    tables = _tables(tmp_path, 4, 3)
    assert all(_fragments(t) == 3 and len(ldb.versions(t)) == 4 for t in tables)
    ldb.housekeep(tables, timedelta(0))
    for t, table in enumerate(tables):
        assert _fragments(table) == 1
        assert len(ldb.versions(table)) == 1
        assert sorted(ldb.arrow_all(table).column("id").to_pylist()) == sorted(
            f"{t}-{a}-{r}" for a in range(3) for r in range(50)
        )


class _Broken(Exception):
    pass


def test_tables_that_fail_their_compaction_fail_the_call_once_the_others_are_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first failure is raised, naming its table and the other failing one; every
    table that could be compacted was."""
    tables = _tables(tmp_path, 4, 2)

    def broken(**_: object) -> None:
        raise _Broken("disk gone")

    for t in (1, 3):
        monkeypatch.setattr(tables[t], "optimize", broken)
    with pytest.raises(_Broken) as failed:
        ldb.compact(tables)
    notes = failed.value.__notes__
    assert notes[0] == "(table 't1')" and notes[1].startswith("(and table 't3': _Broken(")
    assert _fragments(tables[0]) == 1 and _fragments(tables[2]) == 1


def test_a_table_is_worth_compacting_once_it_has_many_small_fragments_or_deleted_rows(
    tmp_path: Path,
) -> None:
    """A few fragments and no deletions: compacting would rewrite the table for nothing."""
    few, many = _tables(tmp_path, 2, 1)[0], _tables(tmp_path / "b", 1, ldb._SMALL_FRAGMENTS)[0]
    assert not ldb.worth_compacting(few)
    assert ldb.worth_compacting(many)
    ldb.add(few, [{"id": "more", "n": 1}])
    assert _fragments(few) == 2 and not ldb.worth_compacting(few)
    few.delete("n < 10")  # 11 of 51 rows: over LanceDB's share for rewriting deletions
    assert ldb.worth_compacting(few)
    ldb.compact([few, many])
    assert not ldb.worth_compacting(few) and not ldb.worth_compacting(many)


def test_an_index_run_compacts_only_the_tables_worth_it(tmp_path: Path) -> None:
    """A run leaves its few fragments be, and compacts once the fragments are many."""
    from memserver.engine import Engine

    tree = tmp_path / "tree"
    tree.mkdir()
    for n in range(3):
        (tree / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n")
    engine = Engine(tree, tmp_path / "index", embedder_flag="none", env={},
                    overrides={"index": {"batch_files": 1}})  # fmt: skip
    engine.index()  # a batch, and a fragment of each table, a file
    assert _fragments(engine.open_store().table("chunks")) == 3
    for n in range(3, 3 + ldb._SMALL_FRAGMENTS):
        (tree / f"m{n}.py").write_text(f"def f{n}():\n    return {n}\n")
    engine.index()
    store = engine.open_store()
    assert _fragments(store.table("chunks")) == 1
    assert store.chunks.count_rows() == 3 + ldb._SMALL_FRAGMENTS


def test_a_table_with_many_versions_older_than_the_margin_is_worth_compacting(
    tmp_path: Path,
) -> None:
    """Deletes add versions, not fragments: once twenty are older than the margin,
    compacting (which drops them) is worth it; younger ones it could not drop."""
    table = ldb.open_table(ldb.connect(tmp_path), "t", _SCHEMA, create=True)
    assert table is not None
    ldb.add(table, [{"id": str(r), "n": r} for r in range(1_000)])
    for n in range(ldb._VERSIONS):
        table.delete(f"n = {n}")  # a row of a thousand each: a version, no fragment
    assert _fragments(table) == 1
    assert not ldb.worth_compacting(table, timedelta(minutes=10))
    assert not ldb.worth_compacting(table)  # compacting alone drops no version
    assert ldb.worth_compacting(table, timedelta(0))
    ldb.housekeep([table], timedelta(0))
    assert len(ldb.versions(table)) == 1 and not ldb.worth_compacting(table, timedelta(0))
