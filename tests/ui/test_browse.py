"""`store.browse`: the read-only views behind the review page, on a real index."""

from __future__ import annotations

from datetime import UTC, datetime

from memserver.store.browse import EventQuery, MemoryQuery
from tests.ui.reviewkit import DAY, STALE_TEXT


def test_memories_filter_by_status_type_scope_distiller_and_time(review_template) -> None:
    from memserver.engine import Engine

    b = Engine(review_template.root, review_template.index_dir, env={}).browser()
    everything = b.memories(MemoryQuery(limit=1000))
    assert everything.total == sum(b.counts().values())
    stale = b.memories(MemoryQuery(statuses=("stale",), distillers=("atomic-v1",)))
    assert [r.memory.text for r in stale.items] == [STALE_TEXT]
    dana = b.memories(MemoryQuery(scope=(("user", "dana"),)))
    assert [r.memory.id for r in dana.items] == [review_template.scoped_memory]
    wide = b.memories(MemoryQuery(project_wide=True, limit=1000))
    assert review_template.scoped_memory not in {r.memory.id for r in wide.items}
    march = b.memories(MemoryQuery(since=DAY[2], until=datetime(2025, 3, 31, tzinfo=UTC)))
    assert [r.memory.text for r in march.items] == ["`STAGING_DB` listens on port 6543."]
    facts = b.memories(MemoryQuery(types=("fact",), limit=1000))
    assert facts.total and all(r.memory.type == "fact" for r in facts.items)
    first = b.memories(MemoryQuery(limit=2))
    assert len(first.items) == 2 and first.next_offset == 2 and first.previous_offset is None
    times = [r.time for r in everything.items]
    assert times == sorted(times, reverse=True)  # newest first


def test_a_stale_memory_shows_its_sources_current_or_not(review_template) -> None:
    from memserver.engine import Engine

    b = Engine(review_template.root, review_template.index_dir, env={}).browser()
    detail = b.memory(review_template.stale_memory)
    assert detail is not None and detail.record.memory.status == "stale"
    roles = [(s.role, s.current) for s in detail.sources]
    assert roles[0] == ("origin", True)  # the note
    assert ("cited code", False) in roles  # the edited function, closed
    assert any(e.event.op == "add" for e in detail.events)
    note = b.chunk(review_template.stale_note)
    assert note is not None and [r.memory.id for r in note.made] == [review_template.stale_memory]
    assert b.memory("m_" + "0" * 32) is None and b.chunk("c_" + "0" * 32) is None


def test_events_filter_by_op_actor_target_and_time(review_template) -> None:
    from memserver.engine import Engine

    b = Engine(review_template.root, review_template.index_dir, env={}).browser()
    adds = b.events(EventQuery(ops=("add",), actors=("test",)))
    assert adds.total == 8 and all(r.event.op == "add" for r in adds.items)
    about = b.events(EventQuery(target=review_template.erase_note)).items
    assert [r.event.op for r in about] == ["add"]
    assert b.events(EventQuery(actors=("nobody",))).total == 0
    assert b.events(EventQuery(since=datetime(2999, 1, 1, tzinfo=UTC))).total == 0
    record = about[0]
    assert b.event(record.key, review_template.erase_note) == record
    assert record.key.startswith("e_") and not record.undone_by
    ops, actors = b.event_facets()
    assert "add" in ops and "test" in actors


def test_filters_are_quoted_not_pasted(review_template) -> None:
    from memserver.engine import Engine

    b = Engine(review_template.root, review_template.index_dir, env={}).browser()
    hostile = "x') OR 1=1 OR ('"
    assert b.memories(MemoryQuery(scope=(("user", hostile),))).total == 0
    assert b.events(EventQuery(target=hostile, ops=(hostile,))).total == 0
    assert b.memory(hostile) is None
