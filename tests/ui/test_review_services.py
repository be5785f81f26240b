"""The review decisions the page makes, through the services (real LanceDB and tantivy):
each is an event, each is undoable where nothing was erased, recall follows."""

from __future__ import annotations

import pytest

from memserver.core.errors import BadRequest
from memserver.core.requests import Note
from memserver.store.browse import EventQuery, MemoryQuery
from memserver.text.terms import query_terms
from tests.ui.reviewkit import ERASE_TEXT, STALE_TEXT


def _status(engine, mid: str) -> str:
    return engine.open_store().memories.get([mid])[mid].status


def _searchable(engine, mid: str) -> bool:
    store = engine.open_store()
    text = store.memories.get([mid])[mid].text
    return mid in {i for i, _ in store.keyword.search(query_terms(text), 50, "memory")}


def _last(engine, op: str):
    [record, *_] = engine.browser().events(EventQuery(ops=(op,))).items
    return record


def test_keep_reanchors_a_stale_note_to_the_current_code_and_undo_puts_it_back(
    engine, scenario
) -> None:
    svc = engine.memory_service(actor="ui")
    store = engine.open_store()
    old = store.memories.get([scenario.stale_memory])[scenario.stale_memory]
    closed = [s for s, cur in store.chunks.states_of(list(old.source_ids)).items() if not cur]
    assert closed  # the edited function
    result = svc.keep(scenario.stale_memory)
    [new_id] = result.memory_ids
    new = engine.open_store().memories.get([new_id])[new_id]
    assert new.text == old.text and new.source_ids[0] == old.source_ids[0]
    assert set(new.source_ids).isdisjoint(closed)
    current = engine.open_store().current_chunks(list(new.source_ids))
    assert set(current) == set(new.source_ids)  # it cites the code as it is now
    assert any("min(rate, 0.4)" in c.text for c in current.values())
    assert (_status(engine, new_id), _status(engine, old.id)) == ("active", "superseded")
    assert _searchable(engine, new_id) and not _searchable(engine, old.id)
    keep = _last(engine, "keep")
    assert keep.event.actor == "ui" and keep.event.targets == (old.id, new_id)

    svc.undo(keep.event)
    assert (_status(engine, old.id), _status(engine, new_id)) == ("stale", "superseded")
    assert _searchable(engine, old.id)  # a stale note about code is recalled, marked stale
    assert engine.browser().events(EventQuery(ops=("keep",))).items[0].undone_by
    with pytest.raises(BadRequest, match="undone already"):
        svc.undo(keep.event)
    with pytest.raises(BadRequest, match="not stale"):
        svc.keep(new_id)
    code = engine.browser().memories(MemoryQuery(statuses=("stale",), distillers=("heuristic-v1",)))
    with pytest.raises(BadRequest, match="follows its code"):
        svc.keep(code.items[0].memory.id)


def test_rewrite_remembers_a_new_note_that_supersedes_the_old_and_undo_forgets_it(
    engine, scenario
) -> None:
    svc = engine.memory_service(actor="ui")
    note = Note("`apply_discount` caps the discount rate at 0.4 of the price.",
                paths=("src/billing.py",))  # fmt: skip
    result = svc.rewrite(scenario.stale_memory, note)
    assert _status(engine, scenario.stale_memory) == "superseded"
    assert all(_status(engine, m) == "active" for m in result.memory_ids)
    evidence = engine.recaller().recall("apply_discount caps the discount rate", k=10).evidence
    assert any(e.id == result.note_id for e in evidence)
    rewrite = _last(engine, "rewrite")
    assert rewrite.event.before == STALE_TEXT and "0.4" in rewrite.event.after

    svc.undo(rewrite.event)
    assert _status(engine, scenario.stale_memory) == "stale"
    assert all(_status(engine, m) == "forgotten" for m in result.memory_ids)
    evidence = engine.recaller().recall("apply_discount caps the discount rate", k=10).evidence
    assert not any(e.id == result.note_id for e in evidence)


def test_forget_preview_is_what_forget_does_and_a_forgotten_memory_comes_back(
    engine, scenario
) -> None:
    svc = engine.memory_service(actor="ui")
    preview = svc.preview_forget([scenario.stale_note])
    assert scenario.stale_note in preview.chunks and scenario.stale_memory in preview.memories
    before = engine.open_store().events.count()
    assert engine.open_store().events.count() == before  # a preview writes nothing
    owner = svc.owner_scope([scenario.scoped_memory])  # the page acts as the note's owner
    assert owner  # a scoped note: without its scope it could not be forgotten
    mem_preview = svc.preview_forget([scenario.scoped_memory], scope=owner)
    done = svc.forget([scenario.scoped_memory], reason="wrong", scope=owner)
    assert done.forgotten == [*mem_preview.chunks, *mem_preview.memories, *mem_preview.derived]
    assert done.stale_marked == mem_preview.stale
    assert _status(engine, scenario.scoped_memory) == "forgotten"

    svc.undo(_last(engine, "forget").event)
    assert _status(engine, scenario.scoped_memory) == "active"
    assert _searchable(engine, scenario.scoped_memory)


def test_an_erased_note_cannot_be_undone(engine, scenario) -> None:
    svc = engine.memory_service(actor="ui")
    preview = svc.preview_forget([scenario.erase_note], erase=True)
    result = svc.forget([scenario.erase_note], reason="obsolete", erase=True)
    assert result.forgotten == [*preview.chunks, *preview.memories, *preview.derived]
    store = engine.open_store()
    assert store.chunks.get([scenario.erase_note])[scenario.erase_note][0].text == ""
    assert all(not e.before and not e.after for e in store.events.of(scenario.erase_note))
    evidence = engine.recaller().recall("nightly billing export cron", k=10).evidence
    assert not any(ERASE_TEXT[:20] in e.text for e in evidence)
    with pytest.raises(BadRequest):
        svc.undo(_last(engine, "forget").event)


def test_accepting_one_merge_applies_only_it_and_undo_archives_the_abstraction(
    engine, scenario
) -> None:
    consolidator = engine.consolidator()
    dry = consolidator.run(dry_run=True)
    [merge] = dry.abstractions
    assert sorted(merge["members"]) == list(scenario.merge_members)
    assert len(dry.contradictions) == 1
    consolidator.accept([merge["id"]], actor="ui")
    assert {_status(engine, m) for m in scenario.merge_members} == {"superseded"}
    assert _status(engine, merge["id"]) == "active"
    assert all(_status(engine, m) == "active" for m in scenario.contradiction)  # not chosen
    again = engine.consolidator().run(dry_run=True)
    assert again.abstractions == [] and len(again.contradictions) == 1
    event = _last(engine, "consolidate").event
    assert event.actor == "ui" and event.targets[0] == merge["id"]

    engine.consolidator().undo(event, actor="ui")
    assert {_status(engine, m) for m in scenario.merge_members} == {"active"}
    assert _status(engine, merge["id"]) == "archived"
    assert not _searchable(engine, merge["id"])
    assert engine.consolidator().run(dry_run=True).abstractions == []  # not proposed again


def test_a_rejected_proposal_is_not_made_again_until_the_rejection_is_undone(engine) -> None:
    consolidator = engine.consolidator()
    dry = consolidator.run(dry_run=True)
    [c] = dry.contradictions
    pair = (c["older"], c["newer"])
    consolidator.reject([dry.abstractions[0]["id"]], [pair], actor="ui")
    later = engine.consolidator().run(dry_run=True)
    assert later.abstractions == [] and later.contradictions == []
    assert engine.consolidator().run().superseded == 0  # a CLI run honours it too
    with pytest.raises(BadRequest, match="no longer proposed"):
        engine.consolidator().accept([], [pair], actor="ui")
    rejection = _last(engine, "reject-contradiction").event
    engine.consolidator().undo(rejection, actor="ui")
    assert len(engine.consolidator().run(dry_run=True).contradictions) == 1


def test_accepting_a_contradiction_closes_the_older_and_undo_reopens_it(engine, scenario) -> None:
    older, newer = scenario.contradiction
    engine.consolidator().accept([], [(older, newer)], actor="ui")
    assert (_status(engine, older), _status(engine, newer)) == ("superseded", "active")
    engine.consolidator().undo(_last(engine, "supersede").event, actor="ui")
    assert _status(engine, older) == "active" and _searchable(engine, older)
    assert engine.consolidator().run(dry_run=True).contradictions == []  # rejected by the undo


def test_checked_redactions_leave_the_queue_until_undone(engine, scenario) -> None:
    browser = engine.browser()
    [note] = browser.redacted_notes()
    assert note.chunk.id == scenario.redacted_note and note.kinds == {"email": 1}
    assert "[REDACTED:email]" in note.chunk.text and not note.checked
    svc = engine.memory_service(actor="ui")
    svc.mark_checked(scenario.redacted_note)
    assert browser.redacted_notes()[0].checked
    svc.undo(_last(engine, "checked").event)
    assert not browser.redacted_notes()[0].checked
