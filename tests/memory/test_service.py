"""remember / forget over a real index (LanceDB, tantivy, hashing embedder)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memserver.core.errors import BadRequest
from memserver.core.requests import Filters, Note, check_scope, parse_event_time
from memserver.text.terms import query_terms

SECRET = "ghp_" + "Q7dL2xVb9TmK4pWc8RnZ3fHs6YjA1gEu5iOk"


@pytest.fixture
def repo(sample_repo: Path, make_engine) -> tuple[Path, object]:
    engine = make_engine(sample_repo)
    engine.index()
    return sample_repo, engine


def _recall_ids(engine, query: str, **filters) -> list[str]:
    result = engine.recaller().recall(query, k=20, filters=Filters(**filters))
    return [e.id for e in result.evidence]


def test_a_note_is_stored_searchable_and_idempotent(repo) -> None:
    _root, engine = repo
    svc = engine.memory_service()
    text = (
        f"We decided that `send_with_retry` must give up after 3 attempts. The CI token is "
        f"{SECRET}.\n```python\nsend_with_retry(s, r, RetryPolicy(attempts=3))\n```"
    )
    first = svc.remember(Note(text, event_time=datetime(2024, 2, 1, tzinfo=UTC)))
    again = svc.remember(Note(text))
    assert not first.duplicate and again.duplicate
    assert (again.note_id, again.memory_ids, again.code_blocks) == (
        first.note_id, first.memory_ids, first.code_blocks,
    )  # fmt: skip
    assert first.redactions == 1 and first.memory_ids and len(first.code_blocks) == 1
    store = engine.open_store()
    note, _ = store.chunks.get([first.note_id])[first.note_id]
    block, _ = store.chunks.get(first.code_blocks)[first.code_blocks[0]]
    assert note.origin == "note" and block.origin == "code_block"
    assert block.text == "send_with_retry(s, r, RetryPolicy(attempts=3))"  # raw
    assert SECRET not in note.text and "[REDACTED:token]" in note.text
    memories = store.memories.get(first.memory_ids)
    for m in memories.values():
        assert m.source_ids[0] == first.note_id and SECRET not in m.text
    # the memory cites the code it names
    sender = [c for c, _ in store.chunks.get(first.cites).values()]
    assert any(c.symbol == "send_with_retry" for c in sender)
    events = store.events.of(first.note_id)
    assert [e.op for e in events] == ["add"] and SECRET not in events[0].after
    assert first.note_id in _recall_ids(engine, "how many attempts before send_with_retry gives up")
    assert not store.keyword.search(query_terms(SECRET)[:1], 10, "chunk")  # the whole token


def test_a_note_about_code_goes_stale_when_that_code_changes(repo) -> None:
    root, engine = repo
    svc = engine.memory_service()
    r = svc.remember(Note("load_settings fills in a 30 second timeout.", paths=("src/config.py",)))
    assert r.cites
    assert r.to_dict()["cites"] == len(r.cites)  # the caller reads a count, not every chunk id
    recaller = engine.recaller()
    hit = [e for e in recaller.recall("default timeout of load_settings").evidence
           if e.id == r.note_id]  # fmt: skip
    assert hit and not hit[0].stale
    cfg = root / "src/config.py"
    cfg.write_text(cfg.read_text().replace("30)", "60)"))
    engine.index()
    hit = [e for e in recaller.recall("default timeout of load_settings").evidence
           if e.id == r.note_id]  # fmt: skip
    assert hit and hit[0].stale
    status = engine.open_store().memories.get(r.memory_ids)
    assert {m.status for m in status.values()} == {"stale"}


def test_forget_removes_a_note_from_every_arm_and_erases_its_text(repo) -> None:
    _root, engine = repo
    svc = engine.memory_service()
    r = svc.remember(Note("The zebracorn cache lives in `ZebracornCache.flush`; flush it nightly."))
    assert r.note_id in _recall_ids(engine, "zebracorn cache flush")
    out = svc.forget([r.note_id], reason="wrong", erase=True)
    assert set(out.forgotten) >= {r.note_id, *r.memory_ids}
    store = engine.open_store()
    assert not store.keyword.search(query_terms("zebracorn"), 10, "chunk")
    assert not store.keyword.search(query_terms("zebracorn"), 10, "memory")
    recaller = engine.recaller()
    for query in ("zebracorn cache flush", "ZebracornCache.flush", "flush it nightly"):
        result = recaller.recall(query, k=50)
        assert all("ebracorn" not in e.text for e in result.evidence)
    note, _ = store.chunks.get([r.note_id])[r.note_id]
    assert note.text == ""
    assert all(m.text == "" and m.status == "forgotten"
               for m in store.memories.get(r.memory_ids).values())  # fmt: skip
    events = store.events.of(r.note_id)
    assert [e.op for e in events] == ["add", "forget"]
    assert all("ebracorn" not in (e.before + e.after) for e in events)
    again = svc.remember(
        Note("The zebracorn cache lives in `ZebracornCache.flush`; flush it nightly.")
    )
    assert not again.duplicate and again.note_id in _recall_ids(engine, "zebracorn cache flush")


def test_forget_a_path_keeps_it_out_and_marks_citing_notes_stale(repo) -> None:
    _root, engine = repo
    svc = engine.memory_service()
    note = svc.remember(Note("registerRoutes wires /health and /users.", paths=("web/app.js",)))
    out = svc.forget(paths=["web/"], reason="vendored demo")
    assert out.paths == ["web/app.js"] and set(note.memory_ids) <= set(out.stale_marked)
    assert all(not i.startswith("c_") or i not in _recall_ids(engine, "registerRoutes health")
               for i in out.forgotten)  # fmt: skip
    report = engine.index()
    assert "web/app.js" not in engine.open_store().files.read()
    assert report.files_indexed == 0
    hits = engine.recaller().recall("registerRoutes health users", k=20).evidence
    assert all(e.path != "web/app.js" for e in hits)
    stale = [e for e in hits if e.id == note.note_id]
    assert stale and stale[0].stale


def test_forget_rejects_unknown_ids_and_code_chunks(repo) -> None:
    _root, engine = repo
    svc = engine.memory_service()
    with pytest.raises(BadRequest, match="unknown id"):
        svc.forget(["m_" + "0" * 32])
    code = next(
        c
        for c, _ in engine.open_store()
        .chunks.get(list(engine.open_store().files.read()["src/config.py"].chunk_ids))
        .values()
    )
    with pytest.raises(BadRequest) as err:
        svc.forget([code.id])
    assert "src/config.py" in err.value.hint
    with pytest.raises(BadRequest):
        svc.forget()


def test_scopes_fail_closed(repo) -> None:
    _root, engine = repo
    svc = engine.memory_service()
    alice = svc.remember(
        Note("Alice prefers tabs in the quokka module.", scope=(("user", "alice"),))
    )
    bob = svc.remember(Note("Alice prefers tabs in the quokka module.", scope=(("user", "bob"),)))
    shared = svc.remember(Note("The quokka module is deprecated."))
    assert alice.note_id != bob.note_id  # same text, another scope: another note
    as_alice = _recall_ids(engine, "quokka module tabs", scope=(("user", "alice"),))
    assert alice.note_id in as_alice and bob.note_id not in as_alice
    assert shared.note_id in as_alice
    result = engine.recaller().recall("quokka module tabs", k=20,
                                      filters=Filters(scope=(("user", "carol"),)))  # fmt: skip
    mids = {m for e in result.evidence for m in e.memory_ids}
    assert not mids & {*alice.memory_ids, *bob.memory_ids}
    assert {alice.note_id, bob.note_id}.isdisjoint(e.id for e in result.evidence)


def test_inputs_are_checked(repo) -> None:
    _root, engine = repo
    svc = engine.memory_service()
    with pytest.raises(BadRequest, match="empty"):
        svc.remember(Note("   "))
    with pytest.raises(BadRequest, match="over the"):
        svc.remember(Note("x" * 300_000))
    with pytest.raises(BadRequest, match="unknown kind"):
        svc.remember(Note("hello there", kind="gossip"))
    with pytest.raises(BadRequest, match="scope key"):
        check_scope({"team": "a"})
    with pytest.raises(BadRequest, match="ISO-8601"):
        parse_event_time("last tuesday-ish")
    assert parse_event_time("2024-03-01").tzinfo is not None


def test_an_interrupted_remember_is_repaired_on_the_next_run(repo, monkeypatch) -> None:
    _root, engine = repo
    svc = engine.memory_service()
    store = svc.store

    def boom(*_a, **_k):
        raise RuntimeError("power cut")

    monkeypatch.setattr(store.keyword, "add", boom)
    with pytest.raises(RuntimeError):
        svc.remember(Note("The wombat queue drains every 5 minutes."))
    monkeypatch.undo()
    assert store.dirty
    report = engine.index()
    assert report.repaired >= 1
    fresh = engine.open_store()
    assert not fresh.needs_reconcile()
    assert fresh.keyword.search(query_terms("wombat queue"), 5, "chunk")


def test_a_forgotten_code_memory_stays_forgotten_when_its_chunk_comes_back(repo) -> None:
    """An edit closes a chunk and a revert brings it back: the memories distilled from it
    return to search, except one that was forgotten."""
    root, engine = repo
    store = engine.open_store()
    chunk_ids = store.files.read()["src/config.py"].chunk_ids
    by_chunk = store.memories.about(list(chunk_ids))[0]
    (mid, (_, origin)), *_ = sorted(by_chunk.items())
    siblings = sorted(m for m, (_, o) in by_chunk.items() if m != mid)
    engine.memory_service().forget([mid], reason="wrong")
    path = root / "src" / "config.py"
    original = path.read_text()
    path.write_text("# emptied for a moment\n")
    engine.index()
    path.write_text(original)
    engine.index()
    store = engine.open_store()
    got = store.memories.get([mid, *siblings])
    assert got[mid].status == "forgotten"
    assert all(got[m].status == "active" for m in siblings)
    in_search = store.keyword.all_ids("memory")
    assert mid not in in_search and set(siblings) <= in_search
    assert origin in store.files.read()["src/config.py"].chunk_ids
