"""What the store's rows hold and how they are read back: rows with no vector hold none
(null), not a row of zeros (chunks until they are embedded, memories searched by keyword
alone, erased rows), and readers see a zero row for them; the one chunk reader reads
chunks back as they were written."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memserver.core.requests import Note
from memserver.store.lancedb import vector_matrix


def _held(table) -> tuple[list[bool], list[bool]]:  # type: ignore[no-untyped-def]
    """(embedded, holds a vector) per row."""
    data = table.to_arrow()
    embedded = data.column("embedded").to_pylist()
    return embedded, [v is not None for v in data.column("vector").to_pylist()]


def test_rows_hold_a_vector_exactly_when_embedded(sample_repo: Path, make_engine) -> None:
    engine = make_engine(sample_repo)
    engine.index(embed=False)  # the keyword phase: nothing embedded yet
    store = engine.open_store()
    embedded, held = _held(store.chunks.table)
    assert held == embedded == [False] * len(held) and held
    engine.index()
    note = engine.memory_service().remember(Note("The deploy script lives in ops/deploy.sh."))
    store = engine.open_store()
    embedded, held = _held(store.chunks.table)
    assert all(held) and all(embedded)
    embedded, held = _held(store.memories.table)
    assert held == embedded and any(held) and not all(held)  # the note's, not the distilled

    data = store.memories.table.to_arrow()
    matrix = vector_matrix(data, store.meta.dim)
    assert matrix is not None and matrix.shape == (data.num_rows, store.meta.dim)
    mask = np.array(embedded)
    assert not matrix[~mask].any()
    assert np.allclose(np.linalg.norm(matrix[mask], axis=1), 1.0, atol=1e-3)
    hits = engine.recaller(rerank=False).recall("where does the deploy script live")
    assert any(e.id == note.note_id for e in hits.evidence)

    engine.memory_service().forget([note.note_id], reason="test", erase=True)
    embedded, held = _held(engine.open_store().memories.table)
    assert not any(held) and not any(embedded)


def test_chunks_read_back_as_written(sample_repo: Path, make_engine) -> None:
    """`chunks_from_table`, every read of chunks: code chunks hold their file's lines, a
    scoped and tagged note and a conversation turn hold what was remembered, and the view,
    `get` and `find` read the same chunks."""
    from datetime import UTC, datetime

    from memserver.store.chunks import chunks_from_table

    engine = make_engine(sample_repo)
    engine.index()
    service = engine.memory_service()
    service.remember(Note("Deploys go through ops/deploy.sh.", tags=("ops", "deploy"),
                          scope=(("user", "ana"),)))  # fmt: skip
    when = datetime(2026, 3, 1, tzinfo=UTC)
    service.remember(Note("Friday is release day.", turn_id="chat-1:3", speaker="Ana",
                          event_time=when))  # fmt: skip
    store = engine.open_store()
    made = chunks_from_table(store.chunks.table.to_arrow())
    code = [c for c in made if c.origin == "file"]
    assert code
    for c in code:
        lines = (sample_repo / c.path).read_text().split("\n")
        assert c.text == "\n".join(lines[c.start_line - 1 : c.end_line])
        assert c.project == store.meta.project and c.tokens > 0 and c.content_hash
    note = next(c for c in made if c.origin == "note")
    assert "ops/deploy.sh" in note.text
    assert note.tags == ("ops", "deploy") and note.scope == (("user", "ana"),)
    turn = next(c for c in made if c.origin == "turn")
    assert "release day" in turn.text
    assert (turn.speaker, turn.turn, turn.event_time) == ("Ana", 3, when)
    assert {c.id: c for c in made} == {
        c.id: c for c, _ in store.chunks.get([c.id for c in made]).values()
    }
    assert sorted(store.chunks.find("origin = 'note'"), key=lambda c: c.id) == [note]
