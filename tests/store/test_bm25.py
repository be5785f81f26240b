"""The keyword index after a writer died mid-commit, and on a read-only index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memserver.core.errors import StoreError
from memserver.core.types import Chunk
from memserver.store.bm25 import Bm25Index, tantivy_errors


def _chunk(i: int) -> Chunk:
    return Chunk(
        id=f"c_{i:032x}", project="p", origin="file", path=f"f{i}.py", language="python",
        kind="function", symbol=f"handler_{i}", start_line=1, end_line=2,
        text=f"def handler_{i}():\n    return {i}\n", header="", tokens=8, content_hash=f"h{i}",
    )  # fmt: skip


def test_a_commit_killed_before_its_meta_swap_does_not_block_the_next(tmp_path: Path) -> None:
    path = tmp_path / "bm25"
    index = Bm25Index(path)
    index.add(_chunk(i) for i in range(5))
    index.commit()
    committed = (path / "meta.json").read_bytes()
    index.delete([_chunk(1).id])
    index.commit()
    # as if killed after writing `<segment>.<opstamp>.del` but before swapping meta.json
    (path / "meta.json").write_bytes(committed)
    assert list(path.glob("*.del"))

    again = Bm25Index(path)
    assert again.count() == 5
    again.delete([_chunk(1).id])  # the same delete gets the same opstamp and file name
    again.commit()
    assert again.all_ids() == {_chunk(i).id for i in (0, 2, 3, 4)}


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permission bits")
def test_a_read_only_keyword_index_still_answers(tmp_path: Path) -> None:
    path = tmp_path / "bm25"
    index = Bm25Index(path)
    index.add(_chunk(i) for i in range(3))
    index.commit()
    for p in [path, *path.iterdir()]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        ro = Bm25Index(path)
        assert ro.read_only and ro.search(["handler"], 5)
        with pytest.raises(StoreError, match="read-only"):
            ro.add([_chunk(9)])
    finally:
        path.chmod(0o755)


def test_doc_frequencies_count_the_documents_of_a_view_that_hold_each_word(
    tmp_path: Path,
) -> None:
    index = Bm25Index(tmp_path / "bm25")
    index.add(_chunk(i) for i in range(4))
    index.commit()
    # "handlers" stems like the indexed "handler"; split identifiers count by their parts
    total, counts = index.doc_frequencies(["handler", "handlers", "return", "zeppelin"])
    assert (total, counts) == (4, [4, 4, 4, 0])
    assert index.doc_frequencies(["handler"], view="memory") == (0, [0])


def test_a_writer_that_died_without_saying_why_is_sent_to_repair_when_the_disk_has_room(
    tmp_path: Path,
) -> None:
    """tantivy's writer thread reports a failed segment write only as "killed" (the OS
    error stays in its thread): with room on the disk the fix is a repair; a full disk is
    told apart by its free space (the real full tmpfs: tests/e2e/test_fault_injection.py)."""
    killed = ValueError(
        "An error occurred in a thread: 'An index writer was killed.. "
        "A worker thread encountered an error (io::Error most likely)'"
    )
    with pytest.raises(StoreError) as caught, tantivy_errors("add documents", tmp_path):
        raise killed
    assert "doctor --repair" in caught.value.hint and "disk is full" not in caught.value.hint
    with pytest.raises(StoreError) as caught, tantivy_errors("add documents", tmp_path):
        raise OSError(28, "No space left on device")
    assert "disk is full" in caught.value.hint
