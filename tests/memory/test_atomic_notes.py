"""A note and its memories commit together or not at all; a retry completes a cut-short one,
and `doctor` finds and repairs a note that lost its memories."""

from __future__ import annotations

import errno
import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from memserver.cli import main
from memserver.core.errors import StoreError
from memserver.core.ids import chunk_id
from memserver.core.requests import Note
from memserver.store import lancedb as lancedb_adapter

TEXT = "The frobnication queue drains every ten minutes. It retries twice before giving up."


def _disk_full(*_a: object, **_k: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_between_memories_and_note_leaves_nothing_half_done(
    sample_repo: Path, make_engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    service = engine.memory_service()
    real_upsert = lancedb_adapter.upsert

    def upsert(table, rows, *args, **kw):  # the note's chunk write hits a full disk
        if any(r.get("origin") == "note" for r in rows):
            _disk_full()
        return real_upsert(table, rows, *args, **kw)

    monkeypatch.setattr(lancedb_adapter, "upsert", upsert)
    with pytest.raises(StoreError, match="disk is full"):
        service.remember(Note(TEXT))
    monkeypatch.undo()

    found = engine.recaller(rerank=False).recall("frobnication queue drains").evidence
    assert not any("frobnication" in e.text for e in found)  # nothing half-written shows
    doctor = engine.doctor(repair=False)
    assert not doctor.healthy
    assert engine.doctor(repair=True).healthy
    again = engine.memory_service().remember(Note(TEXT))
    assert not again.duplicate and again.memory_ids  # the retry completes it
    found = engine.recaller(rerank=False).recall("frobnication queue drains").evidence
    assert found and found[0].id == again.note_id
    assert engine.doctor(repair=False).healthy


def test_a_note_that_lost_its_memories_is_found_repaired_and_completed(
    sample_repo: Path, make_engine
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    first = engine.memory_service().remember(Note(TEXT))
    engine.open_store().memories.delete(first.memory_ids)  # what a damaged write leaves
    report = engine.doctor(repair=False)
    notes = [c for c in report.checks if c.check == "notes"]
    assert notes and not notes[0].ok and "1 notes" in notes[0].detail
    assert engine.doctor(repair=True).healthy
    again = engine.memory_service().remember(Note(TEXT))
    assert not again.duplicate and sorted(again.memory_ids) == sorted(first.memory_ids)
    assert engine.memory_service().remember(Note(TEXT)).duplicate  # whole now: a no-op


def test_doctor_repair_json_reports_even_when_the_disk_is_full(
    sample_repo: Path, make_engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    _orphan(engine)  # what a run cut short before its manifest leaves, with the marker
    (engine.index_dir / "DIRTY").write_text("1")
    monkeypatch.setattr(lancedb_adapter, "update_ids", lambda *a, **k: _disk_full())
    out = CliRunner().invoke(main, ["doctor", "--root", str(sample_repo), "--repair", "--json"],
                             env={"MEMSERVER_EMBEDDING_MODEL": "hashing"})  # fmt: skip
    report = json.loads(out.stdout)
    assert out.exit_code == 6 and not report["healthy"]
    assert any("disk is full" in c["detail"] for c in report["checks"])


def test_status_counts_only_what_the_manifest_and_notes_hold(sample_repo, make_engine) -> None:
    engine = make_engine(sample_repo)
    engine.index()
    counted = engine.status().chunks
    _orphan(engine)
    assert engine.status().chunks == counted


def _orphan(engine) -> None:
    """A current code chunk no manifest entry lists."""
    store = engine.open_store()
    stray = store.chunks.find("valid_to IS NULL AND origin = 'file'")[0]
    store.chunks.insert([replace(stray, id=chunk_id("p", "x.py", "orphan"), path="x.py")])
