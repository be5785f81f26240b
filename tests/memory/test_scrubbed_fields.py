"""A note's tags and a turn's speaker and id are stored and searched beside its text:
they are scrubbed like it."""

from __future__ import annotations

from pathlib import Path

from memserver.core.requests import Note

GHP = "ghp_" + "Q7dL2xVb9TmK4pWc8RnZ3fHs6YjA1gEu5iOk"


def test_tags_speaker_and_turn_id_are_scrubbed(sample_repo: Path, make_engine) -> None:
    engine = make_engine(sample_repo)
    svc = engine.memory_service()
    note = svc.remember(Note("Deploys go through the staging cluster first.",
                             tags=("ops", f"token={GHP}")))  # fmt: skip
    turn = svc.remember(Note("Use the staging cluster, please.", turn_id=f"D1:{GHP}:7",
                             speaker=f"ana {GHP}"))  # fmt: skip
    assert note.redactions == 1 and turn.redactions == 2
    store = engine.open_store()
    stored = {c.id: c for c, _ in store.chunks.get([note.note_id, turn.note_id]).values()}
    assert stored[note.note_id].tags == ("ops", "token=[REDACTED:token]")
    t = stored[turn.note_id]
    assert GHP not in t.speaker and GHP not in t.path and GHP not in t.symbol
    assert t.turn == 7  # the turn number still comes from the id's last digits
    for m in store.memories.get(turn.memory_ids).values():
        assert all(GHP not in e for e in m.entities)
    assert Note("x", tags=("ops",)).tags == ("ops",)  # the caller's note is left as it was
