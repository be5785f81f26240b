"""Sleep-time consolidation of remembered notes and turns (`memserver consolidate`).

Never on the request path. Within one scope, each active memory is compared with its
nearest earlier neighbours (at most `neighbours`); affinity is their cosine damped by
the time between them (halved every `half_life_days`). Pairs at or above `affinity`
join one cluster, and a cluster becomes one abstraction memory: the members' distinct
statements, newest first (a deterministic merge that loses no wording; its vector is
the members' mean direction), the union of the members' sources and entities,
`derived_from` the members. Members become `superseded`: kept, still attributable,
out of recall. A contradiction (a close pair about the same entities whose numbers,
dates, weekdays or negation differ) is not merged: the older memory is closed
(`valid_to`, `superseded_by` the newer). Every change is an event with the text
before and after. Ids come from content, so a second run changes nothing, and a run
cut short is finished by the next (an abstraction whose members are still active).

Memories distilled from code are left alone: they follow their chunks.

A person may take the proposals of a dry run one at a time (the review page): `accept`
applies the chosen merges and contradictions exactly as a run would, `reject` records an
event so the proposal is not made again, `undo` takes an accepted one back (the members
are active again, the abstraction `archived`: kept, never proposed or recalled again).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memserver.core.errors import BadRequest
from memserver.core.ids import memory_id
from memserver.core.types import ACTIVE, ARCHIVED, SUPERSEDED, Memory
from memserver.core.writes import ConsolidationWrite, Revision
from memserver.memory.review import restored_statuses
from memserver.store.index import IndexStore
from memserver.text.terms import words

if TYPE_CHECKING:
    from memserver.store.events import Event

__all__ = ["ConsolidationPlan", "ConsolidationReport", "Consolidator"]

DISTILLER = "consolidate-v1"
SOURCES = ("atomic-v1", DISTILLER)  # remembered notes and turns, and earlier abstractions
CONTRADICTION_COSINE = 0.75
SAME_FRAME = 0.8  # Jaccard of the words around the values
REJECT_MERGE, REJECT_CONTRADICTION = "reject-merge", "reject-contradiction"
UNDOABLE = ("consolidate", "supersede", REJECT_MERGE, REJECT_CONTRADICTION)
_VALUE = re.compile(
    r"\b(?:\d+(?:[.:/-]\d+)*|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"january|february|march|april|may|june|july|august|september|october|november|"
    r"december|true|false|yes|no|on|off|enabled|disabled)\b",
    re.I,
)
_NEGATION = re.compile(r"\b(?:not|never|no longer|n't|cannot|without)\b", re.I)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class _Row:
    id: str
    type: str
    text: str
    entities: tuple[str, ...]
    sources: tuple[str, ...]
    origin: str
    when: datetime
    scope: tuple[tuple[str, str], ...]
    derived_from: tuple[str, ...]
    vector: np.ndarray


@dataclass
class ConsolidationPlan:
    abstractions: list[tuple[Memory, list[str], str]] = field(default_factory=list)
    contradictions: list[tuple[str, str]] = field(default_factory=list)  # (older, newer)
    repairs: dict[str, str] = field(default_factory=dict)  # member → its abstraction
    texts: dict[str, str] = field(default_factory=dict)  # id → text, for events and display
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # abstraction id → vector
    considered: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "considered": self.considered,
            "abstractions": [
                {"id": m.id, "text": m.text, "members": members,
                 "member_texts": [self.texts[x] for x in members]}
                for m, members, _ in self.abstractions
            ],
            "superseded": sum(len(members) for _, members, _ in self.abstractions),
            "contradictions": [
                {"older": o, "newer": n, "older_text": self.texts[o], "newer_text": self.texts[n]}
                for o, n in self.contradictions
            ],
            "repaired": len(self.repairs),
        }  # fmt: skip


@dataclass
class ConsolidationReport:
    """What one consolidation run found (and, unless a dry run, did)."""

    considered: int
    abstractions: list[dict[str, Any]]  # id, text, members, member_texts
    superseded: int
    contradictions: list[dict[str, Any]]  # older, newer, older_text, newer_text
    repaired: int
    dry_run: bool
    active_before: int
    active_after: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _values(text: str) -> Counter[str]:
    return Counter(v.lower() for v in _VALUE.findall(text))


def _frame(text: str) -> set[str]:
    """The statement's words with its values and negations taken out."""
    return {w for w in words(_NEGATION.sub(" ", _VALUE.sub(" ", text))) if len(w) > 1}


def contradicts(older: _Row, newer: _Row) -> bool:
    """Same subject, different value: the same entities and nearly the same words once
    values are masked ("port 5433" / "port 6543"), with differing values or negation."""
    if not older.entities or set(older.entities) != set(newer.entities):
        return False
    a_frame, b_frame = _frame(older.text), _frame(newer.text)
    if not a_frame or len(a_frame & b_frame) / len(a_frame | b_frame) < SAME_FRAME:
        return False
    if bool(_NEGATION.search(older.text)) != bool(_NEGATION.search(newer.text)):
        return True
    a, b = _values(older.text), _values(newer.text)
    return bool(a or b) and a != b


class _Clusters:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


class Consolidator:
    def __init__(
        self, store: IndexStore, *, affinity: float = 0.85, neighbours: int = 20,
        half_life_days: float = 180.0, lock_timeout: float = 10.0,
    ) -> None:  # fmt: skip
        self.store = store
        self.affinity = affinity
        self.neighbours = neighbours
        self.half_life_days = half_life_days
        self.lock_timeout = lock_timeout

    # -- planning ------------------------------------------------------------------

    def _rows(self) -> list[_Row]:
        rows: list[_Row] = []
        for distiller in SOURCES:
            found, vecs = self.store.memories.for_consolidation(distiller)
            if vecs is None:
                continue
            for i, (m, origin, embedded) in enumerate(found):
                if not embedded:
                    continue
                v = vecs[i]
                norm = float(np.linalg.norm(v)) or 1.0
                rows.append(_Row(
                    m.id, m.type, m.text, m.entities, m.source_ids, origin,
                    m.event_time or _EPOCH, m.scope, m.derived_from, v / norm,
                ))  # fmt: skip
        return rows

    def _rejected(self) -> tuple[set[str], set[tuple[str, str]]]:
        """(abstraction ids, (older, newer) pairs) a person rejected and did not undo."""
        events = self.store.events.with_ops([REJECT_MERGE, REJECT_CONTRADICTION, "undo"])
        undone = {t for e in events if e.op == "undo" for t in e.targets}
        merges, pairs = set(), set()
        for e in events:
            if e.key in undone or e.op == "undo" or not e.targets:
                continue
            if e.op == REJECT_MERGE:
                merges.add(e.targets[0])
            elif len(e.targets) >= 2:
                pairs.add((e.targets[0], e.targets[1]))
        return merges, pairs

    def plan(self) -> ConsolidationPlan:
        merges, pairs = self._rejected()
        rows = self._rows()
        out = ConsolidationPlan(considered=len(rows))
        out.texts = {r.id: r.text for r in rows}
        active = {r.id for r in rows}
        for r in rows:  # an abstraction whose members are still active: a run cut short
            for member in r.derived_from:
                if member in active:
                    out.repairs[member] = r.id
        rows = [r for r in rows if r.id not in out.repairs]
        by_scope: dict[tuple[tuple[str, str], ...], list[_Row]] = {}
        for r in rows:
            by_scope.setdefault(r.scope, []).append(r)
        for group in by_scope.values():
            self._plan_group(sorted(group, key=lambda r: (r.when, r.id)), out, pairs)
        # a rejected merge, or one taken back (its abstraction stored, archived), stays undone
        stored = self.store.memories.get([m.id for m, _, _ in out.abstractions])
        out.abstractions = [
            a for a in out.abstractions
            if a[0].id not in merges and stored.get(a[0].id, a[0]).status == ACTIVE
        ]  # fmt: skip
        return out

    def _plan_group(self, rows: list[_Row], out: ConsolidationPlan,
                    rejected: set[tuple[str, str]]) -> None:  # fmt: skip
        if len(rows) < 2:
            return
        vectors = np.stack([r.vector for r in rows])
        clusters = _Clusters(len(rows))
        closed: set[int] = set()
        for i in range(1, len(rows)):
            sims = vectors[:i] @ vectors[i]
            nearest = np.argsort(-sims)[: self.neighbours]
            for j in (int(x) for x in nearest):
                days = abs((rows[i].when - rows[j].when).total_seconds()) / 86400
                affinity = float(sims[j]) * math.pow(0.5, days / self.half_life_days)
                if (sims[j] >= CONTRADICTION_COSINE and contradicts(rows[j], rows[i])
                        and (rows[j].id, rows[i].id) not in rejected):  # fmt: skip
                    if j not in closed:
                        out.contradictions.append((rows[j].id, rows[i].id))
                        closed.add(j)
                elif affinity >= self.affinity and j not in closed:
                    clusters.union(j, i)
        members: dict[int, list[int]] = {}
        for i in range(len(rows)):
            if i not in closed:
                members.setdefault(clusters.find(i), []).append(i)
        for idx in members.values():
            if len(idx) < 2:
                continue
            group = sorted((rows[i] for i in idx), key=lambda r: (r.when, r.id), reverse=True)
            newest = group[0]
            sources = tuple(dict.fromkeys(s for r in group for s in r.sources))
            entities = tuple(dict.fromkeys(e for r in group for e in r.entities))
            # every distinct wording is kept, newest first: nothing a member said is lost
            text = " / ".join(dict.fromkeys(r.text for r in group))
            mid = memory_id(sources, newest.type, text)
            memory = Memory(
                mid, newest.type, ", ".join(entities[:4]) or text[:80], text, sources, entities,
                DISTILLER, "active", newest.when, newest.scope,
                derived_from=tuple(r.id for r in group),
            )  # fmt: skip
            out.abstractions.append((memory, [r.id for r in group], newest.origin))
            out.texts[mid] = text
            mean = np.mean([r.vector for r in group], axis=0)
            out.vectors[mid] = mean / (float(np.linalg.norm(mean)) or 1.0)

    # -- applying ------------------------------------------------------------------

    def run(self, *, dry_run: bool = False, actor: str = "memserver") -> ConsolidationReport:
        """Plan, and unless `dry_run` apply; returns the plan and the active counts."""
        store = self.store
        before = store.memories.count_active()
        with store.lock(self.lock_timeout):
            if store.dirty:  # a write died midway: make the stores agree first
                store.reconcile()
                store.mark_clean()
            plan = self.plan()
            if not dry_run and (plan.abstractions or plan.contradictions or plan.repairs):
                self._apply(plan, actor)
        return self._report(plan, dry_run, before)

    def _report(self, plan: ConsolidationPlan, dry_run: bool, before: int) -> ConsolidationReport:
        store = self.store
        planned = plan.to_dict()
        return ConsolidationReport(
            considered=planned["considered"], abstractions=planned["abstractions"],
            superseded=planned["superseded"], contradictions=planned["contradictions"],
            repaired=planned["repaired"], dry_run=dry_run, active_before=before,
            active_after=before if dry_run else store.memories.count_active(),
        )  # fmt: skip

    def _apply(self, plan: ConsolidationPlan, actor: str) -> None:
        superseded = dict(plan.repairs)
        for m, members, _ in plan.abstractions:
            superseded.update(dict.fromkeys(members, m.id))
        log: list[tuple[str, Sequence[str], str, str]] = [
            ("consolidate", [m.id, *members], "\n".join(plan.texts[x] for x in members), m.text)
            for m, members, _ in plan.abstractions
        ]
        log += [("supersede", [o, n], plan.texts[o], plan.texts[n])
                for o, n in plan.contradictions]  # fmt: skip
        if plan.repairs:
            log.append(("consolidate", sorted(plan.repairs), "", "finished an interrupted run"))
        self.store.consolidate(ConsolidationWrite(
            abstractions=[(m, origin) for m, _, origin in plan.abstractions],
            vectors={m.id: plan.vectors[m.id].tolist() for m, _, _ in plan.abstractions},
            superseded=superseded, contradicted=dict(plan.contradictions), events=log,
            actor=actor,
        ))  # fmt: skip

    # -- one proposal at a time (the review page) ---------------------------------------

    def _chosen(self, plan: ConsolidationPlan, merges: Sequence[str],
                contradictions: Sequence[tuple[str, str]]) -> ConsolidationPlan:  # fmt: skip
        """The part of `plan` a person chose; every choice must still be proposed."""
        proposed = {m.id for m, _, _ in plan.abstractions}
        gone = [m for m in merges if m not in proposed]
        gone += [f"{o} → {n}" for o, n in contradictions if (o, n) not in plan.contradictions]
        if gone:
            raise BadRequest(
                f"no longer proposed: {', '.join(gone[:3])}",
                hint="the memories changed since the dry run: reload the proposals",
            )
        return ConsolidationPlan(
            abstractions=[a for a in plan.abstractions if a[0].id in set(merges)],
            contradictions=[c for c in plan.contradictions if c in set(contradictions)],
            texts=plan.texts, vectors=plan.vectors, considered=plan.considered,
        )  # fmt: skip

    def accept(self, merges: Sequence[str] = (), contradictions: Sequence[tuple[str, str]] = (),
               *, actor: str = "memserver") -> ConsolidationReport:  # fmt: skip
        """Apply only the chosen merges (abstraction ids) and contradictions (older, newer)
        of a fresh plan, exactly as a run applies them."""
        before = self.store.memories.count_active()
        with self.store.lock(self.lock_timeout):
            chosen = self._chosen(self.plan(), merges, contradictions)
            if chosen.abstractions or chosen.contradictions:
                self._apply(chosen, actor)
        return self._report(chosen, False, before)

    def reject(self, merges: Sequence[str] = (), contradictions: Sequence[tuple[str, str]] = (),
               *, actor: str = "memserver", reason: str = "") -> ConsolidationReport:  # fmt: skip
        """Record that the chosen proposals are wrong: later plans leave them out."""
        before = self.store.memories.count_active()
        with self.store.lock(self.lock_timeout):
            chosen = self._chosen(self.plan(), merges, contradictions)
            log: list[tuple[str, Sequence[str], str, str]] = [
                (REJECT_MERGE, [m.id, *members], "\n".join(chosen.texts[x] for x in members),
                 m.text) for m, members, _ in chosen.abstractions
            ]  # fmt: skip
            log += [(REJECT_CONTRADICTION, [o, n], chosen.texts[o], chosen.texts[n])
                    for o, n in chosen.contradictions]  # fmt: skip
            self.store.revise(Revision(events=log, actor=actor,
                                       reason=reason or "not the same memory"))  # fmt: skip
        return self._report(ConsolidationPlan(considered=chosen.considered), True, before)

    def undo(self, event: Event, *, actor: str = "memserver", reason: str = "") -> list[str]:
        """Take back an accepted merge or contradiction, or a rejection; returns the
        memories whose status changed."""
        if event.op not in UNDOABLE:
            raise BadRequest(f"a {event.op} is not undone by consolidation",
                             hint=f"undo one of {', '.join(UNDOABLE)}")  # fmt: skip
        targets = list(event.targets)
        log: list[tuple[str, Sequence[str], str, str]] = [("undo", [event.key, *targets], "", "")]
        restored: dict[str, str] = {}
        with self.store.lock(self.lock_timeout):
            if any(e.op == "undo" for e in self.store.events.of(event.key)):
                raise BadRequest("this was undone already", hint="reload the audit log")
            if event.op == "consolidate":
                restored = self._split(targets[0])
            elif event.op == "supersede":
                older = self.store.memories.get(targets[:1])
                restored = restored_statuses(
                    self.store, [m for m in older.values() if m.status == SUPERSEDED]
                )
                log.append((REJECT_CONTRADICTION, targets[:2], "", ""))  # not proposed again
            self.store.revise(Revision(restored=restored, events=log, actor=actor,
                                       reason=reason or f"undo of {event.op}"))  # fmt: skip
        return sorted(restored)

    def _split(self, abstraction_id: str) -> dict[str, str]:
        """An abstraction taken back: its superseded members active again, it archived."""
        found = self.store.memories.get([abstraction_id]).get(abstraction_id)
        if found is None or not found.derived_from or found.status != ACTIVE:
            raise BadRequest(f"{abstraction_id} is not an active abstraction",
                             hint="only a merge that still stands can be taken back")  # fmt: skip
        members = self.store.memories.get(list(found.derived_from)).values()
        restored = restored_statuses(self.store, [m for m in members if m.status == SUPERSEDED])
        restored[abstraction_id] = ARCHIVED
        return restored
