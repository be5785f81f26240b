"""Sleep-time consolidation over a real index (LanceDB, tantivy, hashing embedder)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memserver.core.requests import Note
from memserver.memory.consolidate import Consolidator
from memserver.text.terms import query_terms

DAY = [datetime(2024, m, 1, tzinfo=UTC) for m in (1, 2, 3)]


@pytest.fixture
def engine(tmp_path: Path, make_engine):
    root = tmp_path / "proj"
    root.mkdir()
    engine = make_engine(root)
    svc = engine.memory_service()
    svc.remember(Note("The deploy script lives in ops/deploy.sh. We run it weekly.",
                      event_time=DAY[0]))  # fmt: skip
    svc.remember(Note("The deploy script lives in ops/deploy.sh. Ask Dana before a release.",
                      event_time=DAY[1]))  # fmt: skip
    svc.remember(Note("`STAGING_DB` listens on port 5433.", event_time=DAY[0]))
    svc.remember(Note("`STAGING_DB` listens on port 6543.", event_time=DAY[2]))
    svc.remember(Note("Dana owns the billing service.", event_time=DAY[0],
                      scope=(("user", "dana"),)))  # fmt: skip
    svc.remember(Note("The deploy script lives in ops/deploy.sh.", event_time=DAY[2],
                      scope=(("user", "dana"),)))  # fmt: skip
    return engine


def _active_texts(store) -> dict[str, str]:
    states = store.memories.states()
    mems = store.memories.get([m for m, (s, _) in states.items() if s == "active"])
    return {m.id: m.text for m in mems.values()}


def test_duplicates_merge_contradictions_close_and_nothing_crosses_scopes(engine) -> None:
    store = engine.open_store()
    before = _active_texts(store)
    dry = Consolidator(store).run(dry_run=True)
    assert _active_texts(engine.open_store()) == before  # a dry run changes nothing
    report = Consolidator(store).run()
    assert report.abstractions == dry.abstractions
    [merged] = report.abstractions
    assert merged["text"] == "The deploy script lives in ops/deploy.sh."
    assert len(merged["members"]) == 2  # dana's copy is in another scope
    [closed] = report.contradictions
    assert "5433" in closed["older_text"] and "6543" in closed["newer_text"]
    assert report.active_after == report.active_before - 2 + 1 - 1  # merged; closed
    fresh = engine.open_store()
    members = fresh.memories.get(merged["members"])
    assert {m.status for m in members.values()} == {"superseded"}
    abstraction = fresh.memories.get([merged["id"]])[merged["id"]]
    assert set(abstraction.derived_from) == set(merged["members"])
    assert set(abstraction.source_ids) >= {s for m in members.values() for s in m.source_ids}
    older = fresh.memories.get([closed["older"]])[closed["older"]]
    assert older.status == "superseded"
    ids = {i for i, _ in fresh.keyword.search(query_terms("deploy script"), 20, "memory")}
    assert merged["id"] in ids and not ids & set(merged["members"])

    ops = [e.op for e in fresh.events.of(merged["id"])]
    assert ops == ["consolidate"]
    again = Consolidator(fresh).run()  # idempotent
    assert (again.abstractions, again.contradictions) == ([], [])
    recall = engine.recaller().recall("where is the deploy script", k=10)
    assert any(merged["id"] in e.memory_ids for e in recall.evidence)


def test_an_interrupted_run_is_finished_by_the_next(engine, monkeypatch) -> None:
    store = engine.open_store()
    consolidator = Consolidator(store)

    def power_cut(*_a, **_k):
        raise RuntimeError("power cut")

    monkeypatch.setattr(store.memories, "supersede", power_cut)
    with pytest.raises(RuntimeError):
        consolidator.run()
    monkeypatch.undo()
    fresh = engine.open_store()
    assert fresh.dirty  # the marker stays for the next run
    [(abstraction, _, _)], _ = fresh.memories.for_consolidation("consolidate-v1")
    members = list(abstraction.derived_from)
    assert {m.status for m in fresh.memories.get(members).values()} == {"active"}
    report = Consolidator(fresh).run()
    assert report.repaired == 2 and report.abstractions == []
    assert {m.status for m in fresh.memories.get(members).values()} == {"superseded"}
    assert not fresh.needs_reconcile()
    found = {i for i, _ in fresh.keyword.search(query_terms("deploy script"), 20, "memory")}
    assert abstraction.id in found and not found & set(members)
