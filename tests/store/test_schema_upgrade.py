"""A table made before a column was added opens: readers read it as it is, a writer adds the
column (empty); a table that differs otherwise is refused with the fix."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from memserver.core.errors import StoreError
from memserver.store import lancedb as ldb
from memserver.store.schema import files_schema


def _older(db, schema: pa.Schema, drop: str):
    old = pa.schema([f for f in schema if f.name != drop])
    table = db.create_table("files", schema=old)
    table.add([{f.name: ("x.py" if f.name == "path" else None) for f in old}])
    return old


def test_a_writer_adds_the_new_column_and_a_reader_reads_the_old_table(tmp_path: Path) -> None:
    db = ldb.connect(tmp_path / "lance")
    wanted = files_schema()
    old = _older(db, wanted, "masked")
    reader = ldb.open_table(db, "files", wanted, create=False)
    assert reader is not None and reader.schema == old  # read as it is, nothing written
    writer = ldb.open_table(db, "files", wanted, create=True)
    assert writer is not None and set(writer.schema.names) == set(wanted.names)
    assert writer.to_arrow().column("masked").to_pylist() == [None]
    assert writer.to_arrow().column("path").to_pylist() == ["x.py"]


def test_a_table_of_another_shape_is_refused(tmp_path: Path) -> None:
    db = ldb.connect(tmp_path / "lance")
    db.create_table("files", schema=pa.schema([pa.field("path", pa.int64())]))
    with pytest.raises(StoreError, match="unexpected schema") as err:
        ldb.open_table(db, "files", files_schema(), create=True)
    assert "--rebuild" in err.value.hint
