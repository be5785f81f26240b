"""A chunk that keeps its text under another name (a renamed class's method) is distilled
again: the memories that named it the old way are superseded, not left active, and never
revived by a repair.

Real stores, the default (deterministic) distiller, the hashing embedder.
"""

from __future__ import annotations

from pathlib import Path

from memserver.core.types import ACTIVE, STALE, SUPERSEDED

METHOD = '''    def settle_invoice(self, ledger):
        """Book the invoice's tax into the ledger."""
        return ledger.book(self.amount * 0.2)
'''
CHANGED = '''    def settle_invoice(self, ledger):
        """Book the invoice's tax into the ledger, rounded."""
        return round(ledger.book(self.amount * 0.2), 2)
'''


OTHER = '''    def refund_invoice(self, ledger, reason):
        """Reverse the invoice in the ledger and note why."""
        ledger.reverse(self.amount, note=reason)
        return ledger.balance()
'''
SMALL = {"chunking": {"max_tokens": 40, "min_tokens": 8}}  # a class is cut into its methods


def _module(cls: str, method: str) -> str:
    return f'"""Invoices."""\n\n\nclass {cls}:\n    amount = 10\n\n{method}\n{OTHER}'


def _method_memories(engine) -> tuple[str, dict[str, tuple[str, str | None, str]]]:
    """The method's chunk id → its memories: id → (status, superseded_by, text)."""
    store = engine.open_store()
    current = [c for c, cur in store.chunks.states().items() if cur]
    chunks = store.chunks.get(current)
    [cid] = [c for c, (chunk, _) in chunks.items() if chunk.symbol.endswith("settle_invoice")]
    ids = set(store.memories.states(origins=[cid]))
    rows = store.table("memories").to_arrow().select(["id", "status", "superseded_by", "text"])
    return cid, {r["id"]: (r["status"], r["superseded_by"], r["text"])
                 for r in rows.to_pylist() if r["id"] in ids}  # fmt: skip


def _indexed(tmp_path: Path, make_engine):
    """(the module, its engine) after a first index run of Invoice.settle_invoice."""
    root = tmp_path / "repo"
    (root / "billing").mkdir(parents=True)
    module = root / "billing" / "invoice.py"
    module.write_text(_module("Invoice", METHOD))
    engine = make_engine(root, overrides=SMALL)
    engine.index()
    return module, engine


def _problems(engine) -> dict[str, int]:
    return {k: v for k, v in engine.open_store().desync().items() if v}


def test_a_renamed_class_supersedes_the_memories_naming_it_the_old_way(
    tmp_path: Path, make_engine
) -> None:
    module, engine = _indexed(tmp_path, make_engine)
    cid, before = _method_memories(engine)
    assert before and all(s == ACTIVE for s, _, _ in before.values())
    assert any("Invoice.settle_invoice" in t for _, _, t in before.values())

    module.write_text(_module("SalesInvoice", METHOD))  # the method's text is unchanged
    engine.index()
    same, after = _method_memories(engine)
    assert same == cid  # same text, same chunk: only its name moved
    live = {m: t for m, (s, _, t) in after.items() if s == ACTIVE}
    assert any("SalesInvoice.settle_invoice" in t for t in live.values())
    assert not any("sales" in t.lower() for _, _, t in before.values())
    assert all("sales" in t.lower() for t in live.values())  # none names it the old way
    for m in before:  # each superseded by one the chunk gives now
        assert after[m][0] == SUPERSEDED and after[m][1] in live
    assert not _problems(engine)
    searchable = engine.open_store().keyword.all_ids("memory")
    assert set(live) <= searchable and not set(before) & searchable


def test_a_chunk_back_under_another_name_leaves_nothing_for_a_repair_to_revive(
    tmp_path: Path, make_engine
) -> None:
    """v1 Invoice.settle_invoice; v2 changes the method (its memories go stale); v3 has
    v1's method text in a renamed class: the chunk comes back and is distilled anew."""
    module, engine = _indexed(tmp_path, make_engine)
    cid, first = _method_memories(engine)
    module.write_text(_module("Invoice", CHANGED))
    engine.index()
    module.write_text(_module("SalesInvoice", METHOD))
    engine.index()
    same, now = _method_memories(engine)
    assert same == cid
    live = {m for m, (s, _, _) in now.items() if s == ACTIVE}
    assert live and not any(s == STALE for s, _, _ in now.values())
    assert all(now[m][0] == SUPERSEDED for m in first if m not in live)
    assert not _problems(engine)
    assert engine.doctor(repair=True).healthy
    _, repaired = _method_memories(engine)
    assert repaired == now  # nothing revived


def test_a_repair_supersedes_what_an_older_release_left_stale(tmp_path: Path, make_engine) -> None:
    """An index written before chunks were distilled again kept the old generation stale
    beside the new one: doctor counts it, and a repair supersedes it instead of reviving."""
    module, engine = _indexed(tmp_path, make_engine)
    _, first = _method_memories(engine)
    module.write_text(_module("SalesInvoice", METHOD))
    engine.index()
    _, now = _method_memories(engine)
    old = sorted(m for m in first if now[m][0] == SUPERSEDED)
    assert old
    store = engine.open_store()
    store.memories.restore(dict.fromkeys(old, STALE))  # as an older release left them
    assert _problems(engine) == {"memory statuses to correct": len(old)}
    report = engine.doctor(repair=True)
    assert report.healthy
    _, repaired = _method_memories(engine)
    assert all(repaired[m][0] == SUPERSEDED for m in old)
    assert {m for m, (s, _, _) in repaired.items() if s == ACTIVE} == {
        m for m, (s, _, _) in now.items() if s == ACTIVE
    }
    assert not _problems(engine)
