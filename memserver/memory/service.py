"""The memory write path: `remember` a note, `forget` what should not be recalled.

Remember (DESIGN.md): scrub → split code out (stored raw) → resolve relative time →
atomic statements with entities → the note becomes a chunk (origin `note`), each
code block a chunk (origin `code_block`), each statement a memory citing the note
and the code the note is about → embedded, keyword-indexed, logged. Ids come from
content and scope, so remembering the same text twice is a no-op that says so.

Forget: by memory id, note / code-block / turn chunk id, or file path pattern.
Forgotten rows leave the vector view and the keyword index; memories citing them
turn stale; one event is logged (without the text when erasing).

Both run under the index's writer lock with the crash marker set, so an indexing
run and a remember never interleave, and a crash midway is repaired on next open
(for notes, LanceDB is the commit point; see `IndexStore.reconcile`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memserver.config import MemorySettings
from memserver.core.errors import BadRequest, ModelUnavailable
from memserver.core.ids import chunk_id, content_hash, memory_id, normalise
from memserver.core.protocols import Embedder, TokenCounter
from memserver.core.requests import (
    Note,
    Scope,
    check_forget_path,
    forget_matcher,
    is_glob,
    visible,
)  # fmt: skip
from memserver.core.types import ACTIVE, FORGOTTEN, MEMORY_TYPES, STALE, Chunk, ForgetRule, Memory
from memserver.core.writes import ForgetPlan, NoteWrite
from memserver.memory.atomic import atomise
from memserver.memory.codeblocks import split_code
from memserver.memory.review import ForgetPreview, Reviewer, ReviewResult
from memserver.store.index import IndexStore
from memserver.text.passages import embed_text
from memserver.text.secrets import Scrubber
from memserver.text.sentences import entities
from memserver.text.timeexpr import resolve_relative

if TYPE_CHECKING:
    from memserver.store.events import Event

__all__ = ["ConversationSummary", "ForgetResult", "MemoryService", "RememberResult"]

DISTILLER = "atomic-v1"
NOTE_KINDS = frozenset(MEMORY_TYPES) | {"note"}


@dataclass
class RememberResult:
    note_id: str
    memory_ids: list[str]
    duplicate: bool
    redactions: int
    redacted: dict[str, int] = field(default_factory=dict)
    code_blocks: list[str] = field(default_factory=list)
    times: list[dict[str, str]] = field(default_factory=list)
    cites: list[str] = field(default_factory=list)
    unknown_paths: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """What the caller reads back: the cited chunks as a count (a large file is dozens
        of ids nobody asked to see)."""
        out = asdict(self)
        out["cites"] = len(self.cites)
        return out


@dataclass
class ConversationSummary:
    """What ingesting one conversation kept and dropped."""

    turns: int
    stored: int
    duplicates: int
    discarded: int
    discard_rate: float
    warning: str
    redactions: int
    turn_ids: list[str]
    discarded_turns: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ForgetResult:
    forgotten: list[str] = field(default_factory=list)
    stale_marked: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    erased: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_TRAILING_DIGITS = re.compile(r"(\d+)$")


def turn_number(turn_id: str) -> int:
    """A turn's number in its conversation: the digits its id ends in (`D3:12` → 12)."""
    m = _TRAILING_DIGITS.search(turn_id)
    return int(m.group(1)) if m else -1


# a name that can be a code symbol: dotted, snake_case or camelCase (not "Caroline")
_CODE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+(?:\(\))?|[A-Za-z]*_\w+|[a-z]+[A-Z]\w*")


class MemoryService:
    def __init__(
        self,
        store: IndexStore,
        embedder: Embedder | None,
        tokens: TokenCounter,
        settings: MemorySettings,
        *,
        lock_timeout: float = 10.0,
        actor: str = "memserver",
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.tokens = tokens
        self.settings = settings
        self.lock_timeout = lock_timeout
        self.actor = actor
        self.scrubber = Scrubber(
            emails=settings.redact_emails, phones=settings.redact_phones,
            region=settings.phone_region,
        )  # fmt: skip

    # -- remember ------------------------------------------------------------------

    def remember(self, note: Note) -> RememberResult:
        return self.remember_many([note])[0]

    def remember_many(self, notes: Sequence[Note]) -> list[RememberResult]:
        """Remember each note exactly as `remember` would, storing them in one commit.

        Every note goes through the same steps on its own; only the writes are shared
        (one lock, one LanceDB merge per table, one keyword-index commit), which is what
        makes ingesting a long conversation turn by turn affordable.
        """
        for note in notes:
            self._check(note)
        results: list[RememberResult] = []
        chunks: list[Chunk] = []
        memories: list[Memory] = []
        events: list[tuple[list[str], str]] = []
        with self.store.lock(self.lock_timeout):
            prepared = [self._scrubbed(n) for n in notes]
            ids = [r.note_id for r, *_ in prepared]
            current = {i for i, cur in self.store.chunks.states_of(ids).items() if cur}
            seen: dict[str, RememberResult] = {}
            for (result, note, clean, prose, blocks, when, path), nid in zip(
                prepared, ids, strict=True
            ):
                if nid in seen:
                    results.append(self._duplicate(result, nid, seen[nid]))
                    continue
                made, mems = self._build(result, note, prose, blocks, when, path)
                if nid in current and (not mems or self._has_memories(nid)):
                    results.append(self._duplicate(result, nid))
                    continue  # a note stored without its memories is written again
                chunks += made
                memories += mems
                events.append(([nid, *result.code_blocks, *result.memory_ids], clean))
                seen[nid] = result
                results.append(result)
            if chunks:
                unique = list({m.id: m for m in memories}.values())
                self.store.add_notes(NoteWrite(
                    chunks, unique, self._vectors(chunks, unique),
                    [("add", targets, "", clean) for targets, clean in events], self.actor,
                ))  # fmt: skip
        return results

    def remember_conversation(self, notes: Sequence[Note]) -> ConversationSummary:
        """Score the turns of one conversation (in order), drop the low-information ones,
        remember the rest session by session; returns counts and the discard rate."""
        from memserver.memory.salience import turn_scores

        vectors = None
        if self.embedder is not None and notes:
            try:
                vectors = np.asarray(self.embedder.embed_documents([n.text for n in notes]),
                                     dtype=np.float32)  # fmt: skip
            except ModelUnavailable:  # novelty by words alone (salience handles None)
                vectors = None
        scores = turn_scores([n.text for n in notes], vectors)
        threshold = self.settings.turn_min_score
        kept = [n for n, s in zip(notes, scores, strict=True) if s >= threshold]
        results: list[RememberResult] = []
        batch: list[Note] = []
        for note in kept:  # one commit per session (notes of one event time)
            if batch and batch[-1].event_time != note.event_time:
                results += self.remember_many(batch)
                batch = []
            batch.append(note)
        if batch:
            results += self.remember_many(batch)
        rate = 1 - len(kept) / len(notes) if notes else 0.0
        warning = ""
        if notes and not 0.05 <= rate <= 0.60:
            warning = (
                f"{rate:.1%} of the turns scored below [memory] turn_min_score = {threshold}: "
                + ("most of the conversation was dropped; lower the threshold"
                   if rate > 0.60 else "almost nothing was dropped; raise it to keep less "
                   "small talk")
            )  # fmt: skip
        return ConversationSummary(
            turns=len(notes), stored=sum(not r.duplicate for r in results),
            duplicates=sum(r.duplicate for r in results), discarded=len(notes) - len(kept),
            discard_rate=rate, warning=warning, redactions=sum(r.redactions for r in results),
            turn_ids=[r.note_id for r in results],
            discarded_turns=[n.turn_id for n, s in zip(notes, scores, strict=True)
                             if s < threshold],
        )  # fmt: skip

    def _scrubbed(self, note: Note) -> tuple[Any, ...]:
        project = self.store.meta.project
        when = (note.event_time or datetime.now(UTC)).astimezone(UTC)
        clean, redactions = self.scrubber.scrub(note.text)
        note, more = self._scrubbed_fields(note)
        redactions += more
        prose, blocks = split_code(clean)
        scope_key = ",".join(f"{k}={v}" for k, v in note.scope)
        origin = "turn" if note.turn_id else "note"
        # a turn is its words at its place in the conversation ("Yes!" twice is two turns)
        note_id = chunk_id(project, f"{origin}:{scope_key}:{note.turn_id}", clean)
        session = dict(note.scope).get("session", "default")
        path = (
            f"conversations/{session}/{note.turn_id}" if note.turn_id
            else f"notes/{when.date().isoformat()}-{note_id[2:10]}.md"
        )  # fmt: skip
        result = RememberResult(
            note_id=note_id, memory_ids=[], duplicate=False, redactions=len(redactions),
            redacted=dict(Counter(r.kind for r in redactions)),
        )  # fmt: skip
        return result, note, clean, prose, blocks, when, path

    def _scrubbed_fields(self, note: Note) -> tuple[Note, list[Any]]:
        """Tags, speaker and turn id are stored (and searched) too: scrub them like the text."""
        found: list[Any] = []
        cleaned = []
        for value in (*note.tags, note.speaker, note.turn_id):
            clean, spans = self.scrubber.scrub(value) if value else (value, [])
            cleaned.append(clean)
            found += spans
        if not found:
            return note, []
        *tags, speaker, turn_id = cleaned
        return replace(note, tags=tuple(tags), speaker=speaker, turn_id=turn_id), found

    def _build(
        self, result: RememberResult, note: Note, prose: str, blocks: Sequence[Any],
        when: datetime, path: str,
    ) -> tuple[list[Chunk], list[Memory]]:  # fmt: skip
        project = self.store.meta.project
        origin = "turn" if note.turn_id else "note"
        dated, resolved = resolve_relative(prose, when)
        result.times = [{"phrase": r.phrase, "date": r.date} for r in resolved]
        note_chunk = self._chunk(result.note_id, origin, path, "markdown", origin,
                                 normalise(prose), when, note, symbol=note.turn_id)  # fmt: skip
        code = [
            self._chunk(chunk_id(project, path, b.text, i), "code_block", path,
                        b.language or "text", "code_block", b.text, when, note,
                        symbol=f"code block {i + 1}")
            for i, b in enumerate(blocks)
        ]  # fmt: skip
        result.code_blocks = [c.id for c in code]
        result.cites, result.unknown_paths = self._cited(note.paths, entities(prose))
        sources = (result.note_id, *result.code_blocks, *result.cites)
        memories = [
            Memory(
                memory_id(sources, d.type, d.text), d.type, d.key, d.text, sources,
                tuple(dict.fromkeys(e for e in (note.speaker, *d.entities) if e)),
                DISTILLER, ACTIVE, when, note.scope,
            )
            for d in atomise(dated, note.kind if note.kind != "note" else None)
        ]  # fmt: skip
        memories = list({m.id: m for m in memories}.values())
        result.memory_ids = sorted(m.id for m in memories)
        return [note_chunk, *code], memories

    def _check(self, note: Note) -> None:
        if not note.text.strip():
            raise BadRequest("the note is empty", hint="pass the text to remember")
        size = len(note.text.encode("utf-8"))
        if size > self.settings.max_text_bytes:
            raise BadRequest(
                f"the note is {size:,} bytes, over the {self.settings.max_text_bytes:,} limit",
                hint="split it into several notes, or raise [memory] max_text_bytes",
            )
        if note.turn_id and not note.turn_id.strip():
            raise BadRequest("the turn id is blank", hint="give each turn a stable id")
        if note.kind is not None and note.kind not in NOTE_KINDS:
            raise BadRequest(
                f"unknown kind {note.kind!r}", hint=f"use one of {', '.join(sorted(NOTE_KINDS))}"
            )

    def _has_memories(self, note_id: str) -> bool:
        return any(m.status in (ACTIVE, STALE) for m in self.store.memories.of_origin([note_id]))

    def _duplicate(
        self, result: RememberResult, note_id: str, earlier: RememberResult | None = None
    ) -> RememberResult:
        result.duplicate = True
        if earlier is not None:  # the same note twice in one batch
            result.memory_ids, result.code_blocks = earlier.memory_ids, earlier.code_blocks
            return result
        note, _ = self.store.chunks.get([note_id])[note_id]
        mems = self.store.memories.of_origin([note.id])
        result.memory_ids = sorted(m.id for m in mems if m.status in (ACTIVE, STALE))
        blocks = self.store.chunks.code_blocks_of(note.path, current_only=True)
        result.code_blocks = [b.id for b in blocks]
        return result

    def _chunk(
        self, cid: str, origin: str, path: str, language: str, kind: str, text: str,
        when: datetime, note: Note, symbol: str = "",
    ) -> Chunk:  # fmt: skip
        turn = origin == "turn"
        return Chunk(
            id=cid, project=self.store.meta.project, origin=origin, path=path,
            language=language, kind=kind, symbol=symbol, start_line=1,
            end_line=text.count("\n") + 1, text=text,
            header=f"{when.day} {when:%B %Y}",  # when it was said: questions ask by date
            tokens=self.tokens.count(text), content_hash=content_hash(text),
            event_time=when, scope=note.scope, tags=note.tags,
            speaker=note.speaker if turn else "", turn=turn_number(note.turn_id) if turn else -1,
        )  # fmt: skip

    def _cited(self, paths: Sequence[str], named: Sequence[str]) -> tuple[list[str], list[str]]:
        """Current code chunks of the note's files and of the symbols it names."""
        limit = self.settings.max_cited_chunks
        manifest = self.store.files.read() if paths else {}
        cites: list[str] = []
        unknown = []
        for p in paths:
            rec = manifest.get(p.strip("/"))
            if rec is None:
                unknown.append(p)
                continue
            cites.extend(rec.chunk_ids)
        symbols = [e.removesuffix("()") for e in named if _CODE_NAME.fullmatch(e)]
        cites.extend(c.id for c in self.store.chunks.current_with_symbols(symbols[:20]))
        return list(dict.fromkeys(cites))[:limit], unknown

    def _vectors(self, chunks: Sequence[Chunk], memories: Sequence[Memory]) -> dict[str, Any]:
        """Embedded before anything is written, so rows go in complete. Without the model
        they go in without vectors (searchable by keyword; the next index run embeds them)."""
        if self.embedder is None or not self.store.meta.dim:
            return {}
        texts = [embed_text(c) for c in chunks] + [m.text for m in memories]
        ids = [c.id for c in chunks] + [m.id for m in memories]
        try:
            return dict(zip(ids, self.embedder.embed_documents(texts), strict=True))
        except ModelUnavailable:
            return {}

    # -- forget --------------------------------------------------------------------

    def forget(
        self, ids: Sequence[str] = (), paths: Sequence[str] = (), *, reason: str = "",
        erase: bool = False, scope: Scope = (),
    ) -> ForgetResult:  # fmt: skip
        """Make notes, memories or indexed files unrecallable (`erase`: gone from every byte
        of the index too). Only what the caller's `scope` may see can be forgotten; an id
        outside it is unknown. Consolidated memories built from what goes go with it, and
        their other members are active again."""
        if not ids and not paths:
            raise BadRequest("nothing to forget", hint="pass memory or chunk ids, or a path")
        checked = [check_forget_path(p) for p in paths]
        result = ForgetResult(erased=erase)
        with self.store.lock(self.lock_timeout):
            chunk_ids, memory_ids = self._resolve(ids, scope, erase)
            rules: list[ForgetRule] = []
            if checked:
                file_chunks, result.paths, rules = self._files(checked, reason)
                chunk_ids += file_chunks
            memory_ids += [m.id for m in self.store.memories.of_origin(chunk_ids)
                           if erase or m.status != FORGOTTEN]  # fmt: skip
            memory_ids = list(dict.fromkeys(memory_ids))
            chunk_ids = list(dict.fromkeys(chunk_ids))
            abstractions, members = self._derived(memory_ids, erase)
            before = self._texts(chunk_ids, memory_ids) if not erase else ""
            going = set(memory_ids) | set(abstractions)
            stale = sorted(set(self.store.memories.citing(chunk_ids)) - going)
            stale = [m for m, mem in self.store.memories.get(stale).items()
                     if mem.status == ACTIVE]  # fmt: skip
            self.store.forget(ForgetPlan(
                chunks=chunk_ids, memories=memory_ids, stale=stale, paths=result.paths,
                rules=rules, abstractions=abstractions,
                reactivate=[m for m in members if m not in going], erase=erase, before=before,
                actor=self.actor, reason=reason or "forget",
            ))  # fmt: skip
            result.forgotten = [*chunk_ids, *memory_ids, *abstractions]
            result.stale_marked = stale
        return result

    def _resolve(self, ids: Sequence[str], scope: Scope, erase: bool
                 ) -> tuple[list[str], list[str]]:  # fmt: skip
        chunk_ids: list[str] = []
        memory_ids: list[str] = []
        wanted_chunks = [i for i in ids if i.startswith("c_")]
        wanted_memories = [i for i in ids if i.startswith("m_")]
        bad = [i for i in ids if not i.startswith(("c_", "m_"))]
        if bad:
            raise BadRequest(
                f"not a chunk or memory id: {', '.join(bad[:5])}",
                hint="ids look like c_… (chunks, notes) or m_… (memories), as recall returns",
            )
        found = {cid: c for cid, (c, _) in self.store.chunks.get(wanted_chunks).items()
                 if visible(c.scope, scope)}  # fmt: skip
        memories = {mid: m for mid, m in self.store.memories.get(wanted_memories).items()
                    if visible(m.scope, scope)}  # fmt: skip
        missing = [i for i in wanted_chunks if i not in found]
        missing += [i for i in wanted_memories if i not in memories]
        if missing:
            raise BadRequest(
                f"unknown id: {', '.join(missing[:5])}",
                hint="ids change when code changes; recall again for current ids (an id of "
                "another user's, session's or agent's notes is unknown to you)",
            )
        for cid, chunk in found.items():
            if chunk.origin == "file":
                raise BadRequest(
                    f"{cid} is code from {chunk.path}: indexed files are forgotten by path",
                    hint=f"forget path {chunk.path!r} (it is then left out of indexing), or "
                    "exclude it in .memserverignore",
                )
            chunk_ids.append(cid)
            if chunk.origin in ("note", "turn"):  # its code blocks go with it
                blocks = self.store.chunks.code_blocks_of(chunk.path, current_only=False)
                chunk_ids.extend(b.id for b in blocks)
        memory_ids.extend(m for m, mem in memories.items() if erase or mem.status != FORGOTTEN)
        return chunk_ids, memory_ids

    def _derived(self, memory_ids: Sequence[str], erase: bool) -> tuple[list[str], list[str]]:
        """(consolidated memories built from any of `memory_ids`, all their members): an
        abstraction keeps its members' words, so it goes with them."""
        found = [m for m in self.store.memories.derived_from(memory_ids)
                 if erase or m.status != FORGOTTEN]  # fmt: skip
        members = [x for m in found for x in m.derived_from]
        return [m.id for m in found], list(dict.fromkeys(members))

    def _files(self, patterns: Sequence[str], reason: str
               ) -> tuple[list[str], list[str], list[ForgetRule]]:  # fmt: skip
        """Current chunk ids and manifest paths the checked patterns match, and the rules
        that keep those files out of later runs. A pattern that is an indexed path is that
        path exactly (glob characters and all); one that matches nothing is refused."""
        manifest = self.store.files.read()
        rules = [ForgetRule(p, p not in manifest and is_glob(p), reason=reason) for p in patterns]
        matched: set[str] = set()
        for rule in rules:
            match = forget_matcher([rule])
            hits = {p for p in manifest if match(p)}
            if not hits:
                raise BadRequest(
                    f"path {rule.pattern!r} matches no indexed file: nothing was forgotten",
                    hint="check the path (relative to the project root) with `memserver "
                    "status` or `memserver index --dry-run`",
                )
            matched |= hits
        states = self.store.chunks.states_of(
            [cid for p in sorted(matched) for cid in manifest[p].chunk_ids]
        )
        return [cid for cid, cur in states.items() if cur], sorted(matched), rules

    def _texts(self, chunk_ids: Sequence[str], memory_ids: Sequence[str]) -> str:
        chunks = self.store.chunks.get(chunk_ids)
        mems = self.store.memories.get(memory_ids)
        parts = [f"[{cid}] {c.text}" for cid, (c, _) in chunks.items()]
        parts += [f"[{mid}] {m.text}" for mid, m in mems.items()]
        return "\n".join(parts)[:100_000]

    # -- review (the review page; see memory.review) ---------------------------------------

    def owner_scope(self, ids: Sequence[str]) -> Scope:
        """The scope of the stored notes and memories `ids` (one owner): what a person on the
        review page acts in when forgetting them, since the page shows every scope."""
        chunks, memories = self.store.sources(list(ids))
        found: dict[str, str] = {}
        for key, value in (*(p for c in chunks.values() for p in c.scope),
                           *(p for m in memories.values() for p in m.scope)):  # fmt: skip
            if found.setdefault(key, value) != value:
                raise BadRequest(
                    f"these ids belong to different {key}s ({found[key]}, {value})",
                    hint="forget the notes of one user, session or agent at a time",
                )
        return tuple(sorted(found.items()))

    def preview_forget(
        self, ids: Sequence[str] = (), paths: Sequence[str] = (), *, erase: bool = False,
        scope: Scope = (),
    ) -> ForgetPreview:  # fmt: skip
        """What `forget(ids, paths)` would reach, cascade included; changes nothing."""
        if not ids and not paths:
            raise BadRequest("nothing to forget", hint="pass memory or chunk ids, or a path")
        checked = [check_forget_path(p) for p in paths]
        chunk_ids, memory_ids = self._resolve(ids, scope, erase)
        out = ForgetPreview()
        if checked:
            file_chunks, out.paths, _ = self._files(checked, "")
            chunk_ids += file_chunks
        memory_ids += [m.id for m in self.store.memories.of_origin(chunk_ids)
                       if erase or m.status != FORGOTTEN]  # fmt: skip
        out.memories = list(dict.fromkeys(memory_ids))
        out.chunks = list(dict.fromkeys(chunk_ids))
        abstractions, _ = self._derived(out.memories, erase)
        going = set(out.memories) | set(abstractions)
        stale = sorted(set(self.store.memories.citing(out.chunks)) - going)
        out.stale = [m for m, mem in self.store.memories.get(stale).items() if mem.status == ACTIVE]
        out.derived = sorted(abstractions)
        return out

    def keep(self, memory_id: str, *, reason: str = "") -> ReviewResult:
        """A stale note's memory still holds: a copy citing the code as it is now
        supersedes it."""
        return Reviewer(self).keep(memory_id, reason=reason)

    def rewrite(self, memory_id: str, note: Note, *, reason: str = "") -> ReviewResult:
        """Edit a memory into a new note, whose first memory supersedes it."""
        return Reviewer(self).rewrite(memory_id, note, reason=reason)

    def mark_checked(self, note_id: str, *, reason: str = "") -> ReviewResult:
        """A person looked at a note's redactions (it leaves the redaction queue)."""
        return Reviewer(self).mark_checked(note_id, reason=reason)

    def undo(self, event: Event, *, reason: str = "") -> ReviewResult:
        """Undo a keep, rewrite, checked, or a forget of memories that did not erase."""
        return Reviewer(self).undo(event, reason=reason)
