"""Scopes are an access boundary: the whole matrix of callers × every way to reach a note.

The note is stored with {user: alice, session: s1}. A caller sees it only when its scope
carries both values: the same scope or a superset. No scope, another value, another key
or a subset sees nothing of it, through any arm, resource, attribution or forget.
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from memserver.core.errors import BadRequest
from memserver.core.requests import Filters, Note
from memserver.retrieve import arms
from memserver.retrieve.plan import plan_query
from memserver.server.backend import Backend

ITEM = (("session", "s1"), ("user", "alice"))
CALLERS = {
    "none": ((), False),
    "same": (ITEM, True),
    "other value": ((("session", "s1"), ("user", "bob")), False),
    "other key": ((("agent", "x"),), False),
    "superset": ((("agent", "a1"), ("session", "s1"), ("user", "alice")), True),
    "subset": ((("user", "alice"),), False),
}
WORD = "zebrafrobnicator"
TURN = "zebraTurn42"
WHEN = datetime(2024, 3, 5, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def scoped(tmp_path_factory):
    from memserver.engine import Engine
    from tests.conftest import SAMPLE, write_tree

    root = write_tree(tmp_path_factory.mktemp("scoped") / "repo", SAMPLE)
    engine = Engine(root, None, embedder_flag="hashing", env={})
    engine.index()
    service = engine.memory_service()
    note = service.remember(Note(f"The {WORD} cache lives behind the loader.", scope=ITEM,
                                 event_time=WHEN))  # fmt: skip
    turn = service.remember(Note(f"Ana: the {WORD} turn said so", scope=ITEM, turn_id=TURN,
                                 speaker="Ana", event_time=WHEN))  # fmt: skip
    ids = {note.note_id, turn.note_id, *note.memory_ids, *turn.memory_ids}
    return engine, note, turn, ids


QUERIES = {
    "keyword and dense": f"where does the {WORD} cache live",
    "exact name": TURN,
    "date arm": f"what was said about the {WORD} on 5 March, 2024",
}


@pytest.mark.parametrize("caller", list(CALLERS))
@pytest.mark.parametrize("query", list(QUERIES))
def test_recall_shows_the_note_only_inside_its_scope(scoped, caller, query) -> None:
    engine, _note, _turn, ids = scoped
    scope, sees = CALLERS[caller]
    result = engine.recaller(rerank=False).recall(QUERIES[query], filters=Filters(scope=scope))
    shown = {e.id for e in result.evidence} | {m for e in result.evidence for m in e.memory_ids}
    assert bool(shown & ids) == sees, (caller, query, shown & ids)


ARM_NAMES = ("original/bm25", "original/bm25-memory", "original/dense",
             "original/dense-memory", "exact", "date/bm25", "date/dense")  # fmt: skip


@pytest.mark.parametrize("caller", list(CALLERS))
def test_every_arm_keeps_to_the_callers_scope(scoped, caller) -> None:
    """Each arm on its own, with the masks recall gives it: none returns the note's chunks
    (or resolves a memory to them) for a caller outside its scope."""
    engine, _note, _turn, ids = scoped
    scope, sees = CALLERS[caller]
    recaller = engine.recaller(rerank=False)
    snap = recaller.snapshots()
    filters = Filters(scope=scope)
    masks = (arms.filter_mask(snap, filters), arms.memory_mask(snap, filters))
    reached: dict[str, set[str]] = {}
    for query in QUERIES.values():
        plan = plan_query(query)
        qvs = [np.asarray(recaller.embedder.embed_documents([plan.routes[0].text])[0],
                          dtype=np.float32)]  # fmt: skip
        specs = arms.plan_arms(plan, recaller.settings, dense_count=1, include_memories=True,
                               large=snap.large)  # fmt: skip
        ranked, _, via = arms.run_arms(specs, snap, recaller.keyword, plan, qvs, masks)
        for name, hits in ranked.items():
            got = {cid for cid, _ in hits} | {m for cid, _ in hits for m in via.get(cid, ())}
            reached.setdefault(name, set()).update(got & ids)
    for name in ARM_NAMES:
        if not sees:
            assert not reached.get(name), (caller, name)
    if sees:  # the matrix is not vacuous: every arm, the memory arms too, reaches the note
        assert {n for n in ARM_NAMES if reached.get(n)} == set(ARM_NAMES), reached


@pytest.mark.parametrize("caller", list(CALLERS))
def test_resources_attribute_and_forget_keep_to_the_scope(scoped, caller, tmp_path) -> None:
    engine, note, _turn, _ids = scoped
    scope, sees = CALLERS[caller]
    backend = Backend(engine.root, engine.index_dir, embedder_flag="hashing", env={},
                      pinned_scope=scope)  # fmt: skip
    assert (backend.chunk(note.note_id) is not None) == sees
    assert all((backend.memory(m) is not None) == sees for m in note.memory_ids)
    answer = f"The {WORD} cache lives behind the loader."
    attributed = backend.attribute(answer, (note.note_id,))
    assert (note.note_id in attributed["rejected"]) == (not sees)
    if not sees:  # an id outside the scope is unknown: it cannot be forgotten
        with pytest.raises(BadRequest, match="unknown id"):
            backend.forget((note.note_id,), (), "test", False)


def test_a_pinned_scope_cannot_be_changed_by_the_caller(scoped) -> None:
    engine, note, _, _ = scoped
    backend = Backend(engine.root, engine.index_dir, embedder_flag="hashing", env={},
                      pinned_scope=(("user", "bob"),))  # fmt: skip
    with pytest.raises(BadRequest, match="pins user=bob"):
        backend.recall(f"the {WORD} cache", budget_tokens=None, scope=ITEM)
    _, found = backend.recall(f"the {WORD} cache", budget_tokens=None)  # the pin holds
    assert note.note_id not in {e["id"] for e in found["evidence"]}
    remembered = backend.remember(Note(f"bob's {WORD} note", scope=(("session", "s9"),)))
    store = engine.open_store()
    chunk, _ = store.chunks.get([remembered["note_id"]])[remembered["note_id"]]
    assert dict(chunk.scope) == {"session": "s9", "user": "bob"}  # the pin is always added


def test_scope_keys_are_checked() -> None:
    from memserver.core.requests import check_scope

    with pytest.raises(BadRequest):
        check_scope({"team": "x"})
    assert check_scope({"user": " alice "}) == (("user", "alice"),)
