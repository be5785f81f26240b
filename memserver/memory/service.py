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

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memserver.config import MemorySettings
from memserver.core.errors import ConfigError
from memserver.core.ids import chunk_id, content_hash, memory_id, normalise
from memserver.core.protocols import Embedder, TokenCounter
from memserver.core.types import MEMORY_TYPES, Chunk, Memory
from memserver.ingest.pipeline import embed_text
from memserver.memory.atomic import atomise, entities
from memserver.memory.codeblocks import split_code
from memserver.memory.forgotten import add_forgotten, literal_pattern
from memserver.memory.scrub import Scrubber
from memserver.memory.timeexpr import resolve_relative
from memserver.store.events import EventLog
from memserver.store.index import IndexStore
from memserver.store.lance import SCOPE_KEYS, sql_quote
from memserver.store.memories import ACTIVE, FORGOTTEN, STALE

__all__ = [
    "ForgetResult", "MemoryService", "Note", "RememberResult", "check_scope", "parse_event_time",
    "read_conversation",
]  # fmt: skip

DISTILLER = "atomic-v1"
NOTE_KINDS = frozenset(MEMORY_TYPES) | {"note"}


@dataclass(frozen=True)
class Note:
    text: str
    kind: str | None = None  # a memory type that every statement takes, or None to infer
    tags: tuple[str, ...] = ()
    event_time: datetime | None = None
    paths: tuple[str, ...] = ()  # files the note is about: it cites their current chunks
    scope: tuple[tuple[str, str], ...] = ()  # user / session / agent
    turn_id: str = ""  # set for a conversation turn: stored as a `turn` chunk with this id
    speaker: str = ""  # who said a turn: an entity of every statement made from it


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
        return asdict(self)


@dataclass
class ForgetResult:
    forgotten: list[str] = field(default_factory=list)
    stale_marked: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    erased: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_event_time(value: str | None) -> datetime | None:
    """An ISO-8601 time (a date alone means midnight UTC; no zone means UTC)."""
    if value is None or not value.strip():
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ConfigError(
            f"event time {value!r} is not an ISO-8601 date or time",
            hint="e.g. 2025-03-14 or 2025-03-14T09:30:00+01:00",
        ) from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def read_conversation(
    lines: Iterable[str], scope: tuple[tuple[str, str], ...], source: str = "conversation"
) -> list[Note]:
    """JSONL turns ({speaker, text, time?, turn_id?} per line) → one Note per turn."""
    notes = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            turn = json.loads(line)
            speaker, text = str(turn.get("speaker") or "").strip(), str(turn["text"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"{source} line {n} is not a turn object: {exc}",
                hint='write one {"speaker": …, "text": …, "time": ISO-8601, "turn_id": …} '
                "object per line",
            ) from exc
        content = f"{speaker}: {text}" if speaker else text
        notes.append(Note(
            content, event_time=parse_event_time(turn.get("time")), scope=scope,
            turn_id=str(turn.get("turn_id") or f"T{n}"), speaker=speaker,
        ))  # fmt: skip
    return notes


def check_scope(
    scope: Mapping[str, str] | Sequence[tuple[str, str]],
) -> tuple[tuple[str, str], ...]:
    pairs = list(scope.items()) if isinstance(scope, Mapping) else list(scope)
    out = []
    for key, value in pairs:
        if key not in SCOPE_KEYS:
            raise ConfigError(
                f"unknown scope key {key!r}",
                hint=f"scope keys are {', '.join(SCOPE_KEYS)} (the project is implied)",
            )
        if not str(value).strip():
            raise ConfigError(f"scope {key} is empty", hint=f"give a value, e.g. {key}=alice")
        out.append((key, str(value).strip()))
    return tuple(sorted(out))


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
        self.events = EventLog(store.lance.events)

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
            current = {i for i, cur in self.store.lance.chunk_states_of(ids).items() if cur}
            seen: dict[str, RememberResult] = {}
            for (result, note, clean, prose, blocks, when, path), nid in zip(
                prepared, ids, strict=True
            ):
                if nid in current or nid in seen:
                    results.append(self._duplicate(result, nid, seen.get(nid)))
                    continue
                made, mems = self._build(result, note, prose, blocks, when, path)
                chunks += made
                memories += mems
                events.append(([nid, *result.code_blocks, *result.memory_ids], clean))
                seen[nid] = result
                results.append(result)
            if chunks:
                self._write(chunks, list({m.id: m for m in memories}.values()))
                self.events.append_many(
                    [("add", targets, "", clean) for targets, clean in events],
                    actor=self.actor, reason="remember",
                )  # fmt: skip
        return results

    def remember_conversation(self, notes: Sequence[Note]) -> dict[str, Any]:
        """Score the turns of one conversation (in order), drop the low-information ones,
        remember the rest session by session; returns counts and the discard rate."""
        from memserver.memory.salience import turn_scores

        vectors = None
        if self.embedder is not None and notes:
            vectors = np.asarray(self.embedder.embed_documents([n.text for n in notes]),
                                 dtype=np.float32)  # fmt: skip
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
        return {
            "turns": len(notes), "stored": sum(not r.duplicate for r in results),
            "duplicates": sum(r.duplicate for r in results), "discarded": len(notes) - len(kept),
            "discard_rate": rate, "warning": warning,
            "redactions": sum(r.redactions for r in results),
            "turn_ids": [r.note_id for r in results],
            "discarded_turns": [n.turn_id for n, s in zip(notes, scores, strict=True)
                                if s < threshold],
        }  # fmt: skip

    def _scrubbed(self, note: Note) -> tuple[Any, ...]:
        project = self.store.meta.project
        when = (note.event_time or datetime.now(UTC)).astimezone(UTC)
        clean, redactions = self.scrubber.scrub(note.text)
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
            raise ConfigError("the note is empty", hint="pass the text to remember")
        size = len(note.text.encode("utf-8"))
        if size > self.settings.max_text_bytes:
            raise ConfigError(
                f"the note is {size:,} bytes, over the {self.settings.max_text_bytes:,} limit",
                hint="split it into several notes, or raise [memory] max_text_bytes",
            )
        if note.turn_id and not note.turn_id.strip():
            raise ConfigError("the turn id is blank", hint="give each turn a stable id")
        if note.kind is not None and note.kind not in NOTE_KINDS:
            raise ConfigError(
                f"unknown kind {note.kind!r}", hint=f"use one of {', '.join(sorted(NOTE_KINDS))}"
            )

    def _duplicate(
        self, result: RememberResult, note_id: str, earlier: RememberResult | None = None
    ) -> RememberResult:
        result.duplicate = True
        if earlier is not None:  # the same note twice in one batch
            result.memory_ids, result.code_blocks = earlier.memory_ids, earlier.code_blocks
            return result
        note, _ = self.store.lance.get_chunks([note_id])[note_id]
        mems = self.store.memories.of_origin([note.id])
        result.memory_ids = sorted(m.id for m in mems if m.status in (ACTIVE, STALE))
        blocks = self.store.lance.find_chunks(
            f"origin = 'code_block' AND path = {sql_quote(note.path)} AND valid_to IS NULL"
        )
        result.code_blocks = [b.id for b in blocks]
        return result

    def _chunk(
        self, cid: str, origin: str, path: str, language: str, kind: str, text: str,
        when: datetime, note: Note, symbol: str = "",
    ) -> Chunk:  # fmt: skip
        return Chunk(
            id=cid, project=self.store.meta.project, origin=origin, path=path,
            language=language, kind=kind, symbol=symbol, start_line=1,
            end_line=text.count("\n") + 1, text=text,
            header=f"{when.day} {when:%B %Y}",  # when it was said: questions ask by date
            tokens=self.tokens.count(text), content_hash=content_hash(text),
            event_time=when, scope=note.scope, tags=note.tags,
        )  # fmt: skip

    def _cited(self, paths: Sequence[str], named: Sequence[str]) -> tuple[list[str], list[str]]:
        """Current code chunks of the note's files and of the symbols it names."""
        limit = self.settings.max_cited_chunks
        manifest = self.store.lance.manifest() if paths else {}
        cites: list[str] = []
        unknown = []
        for p in paths:
            rec = manifest.get(p.strip("/"))
            if rec is None:
                unknown.append(p)
                continue
            cites.extend(rec.chunk_ids)
        symbols = [e for e in named if _CODE_NAME.fullmatch(e)]
        if symbols:
            names = ", ".join(sql_quote(s.removesuffix("()")) for s in symbols[:20])
            where = f"origin = 'file' AND valid_to IS NULL AND symbol IN ({names})"
            cites.extend(c.id for c in self.store.lance.find_chunks(where))
        return list(dict.fromkeys(cites))[:limit], unknown

    def _write(self, chunks: list[Chunk], memories: list[Memory]) -> None:
        store = self.store
        vectors: dict[str, Any] = {}
        if self.embedder is not None and store.meta.dim:  # embed first: rows go in complete
            texts = [embed_text(c) for c in chunks] + [m.text for m in memories]
            ids = [c.id for c in chunks] + [m.id for m in memories]
            vectors = dict(zip(ids, self.embedder.embed_documents(texts), strict=True))
        with store.writing():
            store.lance.insert_chunks(chunks, replace=True, vectors=vectors)
            store.memories.insert([(m, m.source_ids[0]) for m in memories],
                                  store.meta.project, replace=True, vectors=vectors)  # fmt: skip
            store.bm25.add(chunks)
            store.bm25.add_memories(memories)
            store.bm25.commit()

    # -- forget --------------------------------------------------------------------

    def forget(
        self, ids: Sequence[str] = (), paths: Sequence[str] = (), *, reason: str = "",
        erase: bool = False,
    ) -> ForgetResult:  # fmt: skip
        if not ids and not paths:
            raise ConfigError("nothing to forget", hint="pass memory or chunk ids, or a path")
        result = ForgetResult(erased=erase)
        with self.store.lock(self.lock_timeout):
            chunk_ids, memory_ids = self._resolve(ids)
            if paths:
                file_chunks, matched = self._files(paths)
                chunk_ids += file_chunks
                result.paths = matched
            memory_ids += [
                m.id for m in self.store.memories.of_origin(chunk_ids) if m.status != FORGOTTEN
            ]
            memory_ids = list(dict.fromkeys(memory_ids))
            chunk_ids = list(dict.fromkeys(chunk_ids))
            before = self._texts(chunk_ids, memory_ids) if not erase else ""
            stale = sorted(set(self.store.memories.citing(chunk_ids)) - set(memory_ids))
            stale = [m for m, mem in self.store.memories.get(stale).items()
                     if mem.status == ACTIVE]  # fmt: skip
            # commit points first (the manifest for files, LanceDB for the rest), the
            # keyword index last: a crash in between is finished by reconciliation
            with self.store.writing():
                if result.paths:
                    self.store.lance.write_manifest([], result.paths)
                self.store.lance.set_valid_to(chunk_ids, closed=True)
                self.store.memories.set_status(memory_ids, FORGOTTEN)
                self.store.memories.set_status(stale, STALE)
                if erase:
                    self.store.lance.erase_chunks(chunk_ids)
                    self.store.memories.erase(memory_ids)
                    self.events.erase([*chunk_ids, *memory_ids])
                self.store.bm25.delete([*chunk_ids, *memory_ids])
                self.store.bm25.commit()
                result.forgotten = [*chunk_ids, *memory_ids]
                result.stale_marked = stale
                log = []
                if result.forgotten:
                    log.append(("forget", result.forgotten, before, ""))
                if stale:
                    log.append(("stale", stale, "", "cites forgotten chunks"))
                self.events.append_many(
                    log, actor=self.actor,
                    reason=(reason or "forget") + (" (erased)" if erase else ""),
                )  # fmt: skip
        return result

    def _resolve(self, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        chunk_ids: list[str] = []
        memory_ids: list[str] = []
        wanted_chunks = [i for i in ids if i.startswith("c_")]
        wanted_memories = [i for i in ids if i.startswith("m_")]
        bad = [i for i in ids if not i.startswith(("c_", "m_"))]
        if bad:
            raise ConfigError(
                f"not a chunk or memory id: {', '.join(bad[:5])}",
                hint="ids look like c_… (chunks, notes) or m_… (memories), as recall returns",
            )
        found = self.store.lance.get_chunks(wanted_chunks)
        memories = self.store.memories.get(wanted_memories)
        missing = [i for i in wanted_chunks if i not in found]
        missing += [i for i in wanted_memories if i not in memories]
        if missing:
            raise ConfigError(
                f"unknown id: {', '.join(missing[:5])}",
                hint="ids change when code changes; recall again for current ids",
            )
        for cid, (chunk, _) in found.items():
            if chunk.origin == "file":
                raise ConfigError(
                    f"{cid} is code from {chunk.path}: indexed files are forgotten by path",
                    hint=f"forget path {chunk.path!r} (it is then left out of indexing), or "
                    "exclude it in .memserverignore",
                )
            chunk_ids.append(cid)
            if chunk.origin in ("note", "turn"):  # its code blocks go with it
                blocks = self.store.lance.find_chunks(
                    f"origin = 'code_block' AND path = {sql_quote(chunk.path)}"
                )
                chunk_ids.extend(b.id for b in blocks)
        memory_ids.extend(m for m, mem in memories.items() if mem.status != FORGOTTEN)
        return chunk_ids, memory_ids

    def _files(self, patterns: Sequence[str]) -> tuple[list[str], list[str]]:
        """Current chunk ids and manifest paths matching gitignore-style patterns; the
        patterns are recorded so the next indexing run leaves those files out."""
        import pathspec

        manifest = self.store.lance.manifest()
        # an indexed path is taken as written, even when it holds glob characters or `\`
        exact = {p.strip("/") for p in patterns} & set(manifest)
        globs = [p for p in patterns if p.strip("/") not in exact]
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(globs)
        except Exception as exc:
            raise ConfigError(
                f"invalid path {globs}: {exc}",
                hint="give a path relative to the project root, or a gitignore-style glob",
            ) from exc
        matched = sorted(p for p in manifest if p in exact or spec.match_file(p))
        add_forgotten(self.store.dir, [*map(literal_pattern, sorted(exact)), *globs])
        states = self.store.lance.chunk_states_of(
            [cid for p in matched for cid in manifest[p].chunk_ids]
        )
        return [cid for cid, cur in states.items() if cur], matched

    def _texts(self, chunk_ids: Sequence[str], memory_ids: Sequence[str]) -> str:
        chunks = self.store.lance.get_chunks(chunk_ids)
        mems = self.store.memories.get(memory_ids)
        parts = [f"[{cid}] {c.text}" for cid, (c, _) in chunks.items()]
        parts += [f"[{mid}] {m.text}" for mid, m in mems.items()]
        return "\n".join(parts)[:100_000]
