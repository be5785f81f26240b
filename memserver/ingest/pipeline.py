"""Index a tree: files → chunks → diff against the manifest → store → embed.

Two phases. The first stores chunks (LanceDB rows, tantivy documents, then the
manifest) so BM25 can answer as soon as it ends. The second embeds chunks that
lack a vector, in batches that each commit on their own: an interrupted or
backgrounded embedding phase resumes where it stopped on the next run.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from indexers.treesitter import LANGUAGES as CODE_LANGUAGES
from indexers.walk import read_source
from memserver.core.errors import ConfigError, ModelUnavailable
from memserver.core.graph import FileTags, file_version
from memserver.core.heap import frozen_heap
from memserver.core.ids import chunk_id, content_hash
from memserver.core.protocols import Chunker, Distiller, Embedder, NullProgress, Progress
from memserver.core.types import (
    Chunk,
    ChunkDraft,
    ChunkOptions,
    FileRecord,
    IndexReport,
    Memory,
    PathSet,
    SourceFile,
)
from memserver.core.writes import FileChanges, FileGraph, Place, file_documents
from memserver.ingest.distill import NAME as HEURISTIC
from memserver.ingest.memories import MemoryPlanner
from memserver.ingest.tagging import Tagger
from memserver.store.graphpart import graph_part
from memserver.store.index import IndexStore, memories_where
from memserver.text.passages import chunk_vector_key, embed_text, passages_id, vector_key
from memserver.text.secrets import mask_code, masked_counts

_STEP = 16  # chunks embedded between two looks at a stop condition
# Characters embedded between two looks at a stop condition: about a second of model work
# on one core (~3 characters a token, ~2,000 tokens/s).
_STEP_CHARS = 6_000
# Storing a batch's vectors (a merge on id) costs a scan of the whole table: 2.4-3 s at
# 350k chunks whether the batch holds 256 rows or 4,096. After a first full batch, the
# batch grows to the rows left / _STORES (up to _MAX_BATCH), so a large index is stored
# in a few dozen merges instead of thousands.
_STORES = 32
# memories derived from their chunk's own text, without a model: the ones that
# `memory_vectors` = "definitions", "chunk" or "none" leave without a vector of their own
# ("definitions": but for the definitions, one per chunk)
_DERIVED = (HEURISTIC,)
MEMORY_VECTORS = ("own", "definitions", "chunk", "none")
_MAX_BATCH = 32_768


@dataclass
class _FilePlan:
    source: SourceFile
    digest: str
    text: str  # with secret values masked: nothing past the read sees them
    old: FileRecord | None
    masked: tuple[tuple[str, int], ...] = ()


@dataclass
class _Plan:
    changed: list[_FilePlan] = field(default_factory=list)
    touched: list[FileRecord] = field(default_factory=list)  # same content, new mtime
    removed: list[FileRecord] = field(default_factory=list)
    unchanged: int = 0


def _grown(size: int, pending: Callable[[], int]) -> int:
    """The next embedding batch size, once a full batch showed that more are waiting."""
    return max(size, min(_MAX_BATCH, -(-pending() // _STORES)))


def to_chunks(project: str, drafts: Sequence[ChunkDraft]) -> list[Chunk]:
    """Give drafts their content ids; identical twins in one file get ordinals."""
    seen: dict[str, int] = {}
    out = []
    for d in drafts:
        digest = content_hash(d.text)
        ordinal = seen.get(digest, 0)
        seen[digest] = ordinal + 1
        out.append(
            Chunk(
                id=chunk_id(project, d.path, d.text, ordinal),
                project=project,
                origin="file",
                path=d.path,
                language=d.language,
                kind=d.kind,
                symbol=d.symbol,
                start_line=d.start_line,
                end_line=d.end_line,
                text=d.text,
                header=d.header,
                tokens=d.tokens,
                content_hash=digest,
            )
        )
    return out


class Indexer:
    def __init__(
        self,
        store: IndexStore,
        chunker: Chunker,
        embedder: Embedder | None,
        *,
        batch_files: int = 200,
        embed_batch: int = 256,
        progress: Progress | None = None,
        git: tuple[str, str] = ("", ""),
        chunker_id: str = "",
        distiller: Distiller | None = None,
        keep_versions: timedelta | None = None,
        root: Path | None = None,
        max_file_bytes: int = 1_000_000,
        memory_vectors: str = "own",
        tagger: Tagger | None = None,
        code_chars: int | None = None,
    ) -> None:
        self.store = store
        # the code graph's tags (in a worker process on a large run)
        self.tagger = tagger or Tagger(ChunkOptions(), workers=0)
        # how memories derived from a chunk's own text are embedded: "own" (their text),
        # "definitions" (only the definition of each chunk: the others by keyword only),
        # "chunk" (they share the chunk's vector), "none" (searched by keyword only)
        if memory_vectors not in MEMORY_VECTORS:
            raise ConfigError(
                f"setting index.memory_vectors = {memory_vectors!r} is not one of "
                + ", ".join(MEMORY_VECTORS),
                hint="fix the value in your config file or MEMSERVER_INDEX_MEMORY_VECTORS",
            )
        self.memory_vectors = memory_vectors
        self.code_chars = code_chars  # of a chunk's code, the model reads this much
        self.keyword_only = keyword_only(memory_vectors)
        # whether the memories embedded under another setting lost their vectors (checked
        # once a process, before the first embedding)
        self._kept_to_setting = False
        # what the read of each file is checked against (the walk's rules, again)
        self.root_real = os.path.realpath(root if root is not None else store.meta.root or ".")
        self.max_file_bytes = max_file_bytes
        # after a run that changed something, table versions older than this are dropped
        # (None: only compacted); a 100M-token build left 1,086 versions of the chunk table
        self.keep_versions = keep_versions
        self.chunker = chunker
        self.embedder = embedder
        self.batch_files = batch_files
        self.embed_batch = embed_batch
        self.progress = progress or NullProgress()
        self.counting = progress is not None
        self.git = git
        self.chunker_id = chunker_id
        self.distiller = distiller
        # chunks cut by another chunker version or settings: every file is cut again
        # (content ids keep the vectors of chunks that come out the same)
        self.rechunk = bool(store.meta.chunker) and store.meta.chunker != chunker_id

    # -- phase 0: what changed --------------------------------------------------

    def plan(
        self, files: Sequence[SourceFile], report: IndexReport, only: PathSet | None = None
    ) -> _Plan:
        """What to do for `files`; with `only`, manifest entries outside it are left alone
        (a partial walk did not look at them)."""
        manifest = self.store.files.read(None if only is None else only.paths)
        if only is not None:
            manifest = {p: rec for p, rec in manifest.items() if p in only}
        plan = _Plan()
        self.progress.start("scanning", len(files))
        same_chunker = not self.rechunk
        self.tagger.begin()
        # code the run will likely cut (its size, before reading it): with enough of it a
        # tags worker starts now, its start beside the reading
        code: Counter[str] = Counter()  # characters per code language
        for f in files:
            if f.language in CODE_LANGUAGES and not (
                same_chunker and _same_stat(manifest.get(f.path), f)
            ):
                code[f.language] += f.size
        self.tagger.expect(code.total(), [name for name, _ in code.most_common()])
        for f in files:
            self.progress.advance()
            old = manifest.pop(f.path, None)
            if same_chunker and _same_stat(old, f):
                plan.unchanged += 1
                continue
            found = read_source(self.root_real, f.path, f.abs_path, self.max_file_bytes)
            if isinstance(found, str):  # it changed since the walk looked at it
                report.skipped[f.path] = found
                if old:
                    plan.removed.append(old)
                continue
            data, text, _ = found
            digest = content_hash(data)
            if old and same_chunker and old.content_hash == digest:
                plan.unchanged += 1
                plan.touched.append(
                    FileRecord(
                        f.path, digest, f.size, f.mtime_ns, f.language, old.chunk_ids, *self.git,
                        masked=old.masked,
                    )
                )  # fmt: skip
                continue
            text, spans = mask_code(text, f.language, f.path)  # the hash stays the file's
            plan.changed.append(_FilePlan(f, digest, text, old, masked_counts(spans)))
        plan.removed.extend(manifest.values())  # in the manifest, gone from the tree
        self.progress.finish()
        return plan

    # -- phase 1: chunks into the stores ----------------------------------------

    def _chunk(self, fp: _FilePlan, report: IndexReport, tags: list[object] | None = None
               ) -> list[Chunk]:  # fmt: skip
        """The file's chunks; into `tags`, when given, its tags in row form, from the parse
        the chunks were cut from."""
        s = fp.source
        result = self.chunker.chunk(s.path, fp.text, s.language, tags=tags is not None)
        if result.fallback_reason:
            report.parse_fallbacks[s.path] = result.fallback_reason
        if tags is not None:
            tags.append(graph_part(result.tags or FileTags(s.path, s.language)))
        return to_chunks(self.store.meta.project, result.chunks)

    def _graphs(
        self, cut: Sequence[tuple[_FilePlan, list[Chunk]]], tags: Iterator[object]
    ) -> Callable[[], list[FileGraph]]:
        """What gives the batch's code graph when the store writes it (the tags of its
        files, next in `tags`, may still be in the making)."""
        keys = [
            (fp.source.path, file_version(fp.source.path, fp.digest, [c.id for c in chunks]),
             [(c.id, c.start_line, c.end_line) for c in chunks])
            for fp, chunks in cut
        ]  # fmt: skip
        return lambda: [FileGraph(path, v, spans, next(tags)) for path, v, spans in keys]

    def _apply(
        self,
        batch: Sequence[_FilePlan],
        states: dict[str, bool],
        memories: MemoryPlanner,
        report: IndexReport,
        tags: Iterator[object] | None,
        complete: bool = True,
    ) -> None:
        """Store one batch of changed files (`tags`: its files' code graphs, next in it;
        None: made with the chunks). `states` holds every chunk id when `complete`, else
        only some: the rest are read here, with where the cut chunks sit, in one go."""
        new: list[Chunk] = []
        existing: dict[str, Chunk] = {}
        records: list[FileRecord] = []
        made: list[object] = []  # tags is None: they come with the chunks
        cut = [(fp, self._chunk(fp, report, made if tags is None else None)) for fp in batch]
        given = tags if tags is not None else iter(made)
        ids = {c.id for _, chunks in cut for c in chunks}
        old_ids = {cid for fp, _ in cut if fp.old for cid in fp.old.chunk_ids}
        wanted = ids & states.keys() if complete else ids | (old_ids - states.keys())
        stored = self.store.chunks.places(sorted(wanted))
        if not complete:
            states.update({cid: current for cid, (current, _) in stored.items()})
        for fp, chunks in cut:
            self.progress.advance()
            for c in chunks:
                if c.id in states:
                    existing[c.id] = c
                else:
                    new.append(c)
            s = fp.source
            records.append(
                FileRecord(
                    s.path, fp.digest, s.size, s.mtime_ns, s.language,
                    tuple(c.id for c in chunks), *self.git, masked=fp.masked,
                )
            )  # fmt: skip
            if fp.masked:
                report.masked[s.path] = dict(fp.masked)
            report.tokens += sum(c.tokens for c in chunks)
        kept = set(existing)
        reopened = [cid for cid in kept if not states[cid]]
        moved = _moved(existing, stored)
        gone = sorted(cid for cid in old_ids - kept if states.get(cid))
        back = [existing[cid] for cid in reopened]
        # same text under another name or header (a renamed class): distilled again
        renamed = [existing[cid] for cid, place in moved.items()
                   if states[cid] and stored[cid][1][2:] != place[2:]]  # fmt: skip
        memories.load([*(c.id for c in new), *reopened, *gone, *(c.id for c in renamed)])
        distilled = memories.chunks_added([*new, *back, *renamed])
        hidden = memories.ids_of(gone)
        self.store.commit_files(FileChanges(
            added=new, reopened=back, moved=moved,
            moved_chunks=[existing[cid] for cid in moved], closed=gone,
            memories_added=distilled.fresh, memories_revived=distilled.revived,
            memories_searchable=distilled.live, memories_hidden=hidden,
            memories_outdated=distilled.outdated, follow_origin=self.distiller is not None,
            notes_stale=memories.chunks_closed(gone), graphs=self._graphs(cut, given),
            documents=file_documents([c for _, chunks in cut for c in chunks]), records=records,
        ))  # fmt: skip
        for c in new:
            states[c.id] = True
        for cid in reopened:
            states[cid] = True
        for cid in gone:
            states[cid] = False
        report.chunks_added += len(new) + len(reopened)
        report.chunks_removed += len(gone)
        report.files_indexed += len(batch)

    def _remove(
        self,
        removed: Sequence[FileRecord],
        states: dict[str, bool],
        memories: MemoryPlanner,
        report: IndexReport,
    ) -> None:
        gone = sorted({cid for r in removed for cid in r.chunk_ids if states.get(cid)})
        hidden = memories.ids_of(gone)
        self.store.commit_files(FileChanges(
            closed=gone, memories_hidden=hidden, follow_origin=self.distiller is not None,
            notes_stale=memories.chunks_closed(gone), removed_paths=[r.path for r in removed],
        ))  # fmt: skip
        report.chunks_removed += len(gone)
        report.files_removed += len(removed)

    def store_chunks(self, plan: _Plan, report: IndexReport, partial: bool = False) -> None:
        """`partial`: a run over a few paths reads the states of the chunks it touches, not
        of every chunk and memory in the index (what a whole run does, once)."""
        chunks = self.store.chunks
        states = {} if partial else chunks.states()
        memories = MemoryPlanner(self.store, self.distiller, partial=partial)
        self.progress.start("chunking", len(plan.changed))
        tags = self.tagger.tags(
            [(fp.source.path, fp.text, fp.source.language) for fp in plan.changed]
        )
        for batch in _batched(plan.changed, self.batch_files):
            self._apply(batch, states, memories, report, tags, complete=not partial)
        self.progress.finish()
        if plan.removed:
            if partial:
                states.update(chunks.states_of(
                    [c for r in plan.removed for c in r.chunk_ids if c not in states]
                ))  # fmt: skip
            self._remove(plan.removed, states, memories, report)
        report.memories_added += memories.added
        if plan.touched:
            self.store.commit_files(FileChanges(records=plan.touched))
        report.files_unchanged = plan.unchanged

    # -- phase 2: vectors --------------------------------------------------------

    def embed_pending(self, report: IndexReport, stop: Callable[[], bool] | None = None) -> bool:
        """Embed current chunks, then active memories, that lack a vector, batch by batch;
        True when none is left. `stop` is asked every `_STEP` chunks: when it says so, what
        is embedded is stored and the rest left for later (this phase resumes wherever it
        stopped)."""
        chunks, mem = self.store.chunks, self.store.memories
        if self.embedder is None:
            report.chunks_unembedded = 0
            return True
        started = time.monotonic()
        if self.keyword_only and not self._kept_to_setting:  # once a process: a scan
            self.store.drop_memory_vectors(self.keyword_only)
            self._kept_to_setting = True
        if self.store.meta.passages != passages_id(self.code_chars):
            report.chunks_embedded_again = self.store.embed_files_again(
                passages_id(self.code_chars)
            )
        try:  # a bar each: its total is what the summary counts as embedded
            self._phase("chunks", chunks.count_unembedded)
            chunks_done = self._embed_chunks(report, stop)
            done = chunks_done and not (stop and stop())
            if done:
                self._phase("memories", lambda: mem.count_unembedded(self.keyword_only))
                done = self._embed_memories(report, stop)
        except ModelUnavailable as exc:  # searchable by keyword; vectors wait for the model
            self.progress.finish()
            report.vectors_pending = f"{exc.message}; fix: {exc.hint}"
            report.seconds_embedding += time.monotonic() - started
            report.chunks_unembedded = chunks.count_unembedded()
            return False
        self.progress.finish()
        report.seconds_embedding += time.monotonic() - started
        report.chunks_unembedded = 0 if chunks_done else chunks.count_unembedded()
        return done

    def _phase(self, what: str, count: Callable[[], int]) -> None:
        if self.counting:  # only a progress bar needs the total
            self.progress.start(what, count())

    def _embed_chunks(self, report: IndexReport, stop: Callable[[], bool] | None) -> bool:
        chunks, size, model = self.store.chunks, self.embed_batch, self.store.meta.embedder
        while batch := chunks.unembedded(size):
            keys = {c.id: chunk_vector_key(model, c, self.code_chars) for c in batch}
            reused = self.store.reuse_vectors(chunks=keys)
            self.progress.advance(len(reused))
            todo = [c for c in batch if c.id not in reused]
            # one text a key: the same code at two paths takes one vector, as a moved
            # file's chunks do; embedded once each, the result would hang on which of
            # them a run cut short had stored (a resumed run reuses it for the rest)
            first: dict[str, Chunk] = {}
            for c in todo:
                first.setdefault(keys[c.id], c)
            texts = [embed_text(c, self.code_chars) for c in first.values()]
            got = self._embed_once(texts, stop)
            by_key = dict(zip(first, (got.get(i) for i in range(len(texts))), strict=True))
            done = {c.id: v for c in todo if (v := by_key[keys[c.id]]) is not None}
            self.progress.advance(len(done) - len(got))
            self.store.store_vectors(chunks=done, keys=keys)
            report.chunks_embedded += len(done) + len(reused)
            report.chunks_reused += len(reused)
            report.texts_embedded += len({texts[i] for i in got})
            if len(got) < len(texts):  # stopped midway
                return False
            if len(batch) < size:  # that was the last of them
                return True
            if stop is not None and stop():
                return False
            size = _grown(size, chunks.count_unembedded)
        return True

    def _memory_vectors(self, memos: Sequence[Memory]) -> dict[str, list[float]]:
        """Memories that share their chunk's vector (`memory_vectors = "chunk"`): those."""
        if self.memory_vectors != "chunk":
            return {}
        derived = {m.id: m.source_ids[0] for m in memos if m.distiller in _DERIVED}
        of_chunk = self.store.chunks.vectors_of(sorted(set(derived.values())))
        return {mid: of_chunk[c] for mid, c in derived.items() if c in of_chunk}

    def _embed_memories(self, report: IndexReport, stop: Callable[[], bool] | None) -> bool:
        mem, size, model = self.store.memories, self.embed_batch * 4, self.store.meta.embedder
        while memos := mem.unembedded(size, self.keyword_only):
            shared = self._memory_vectors(memos)
            self.store.store_vectors(memories=shared)
            keys = {m.id: vector_key(model, m.text) for m in memos if m.id not in shared}
            reused = self.store.reuse_vectors(memories=keys)
            self.progress.advance(len(shared) + len(reused))
            todo = [m for m in memos if m.id in keys and m.id not in reused]
            texts = [m.text for m in todo]
            got = self._embed_once(texts, stop, step=4 * _STEP)
            done = {todo[i].id: v for i, v in got.items()}
            self.store.store_vectors(memories=done, keys=keys)
            report.memories_embedded += len(done) + len(reused) + len(shared)
            report.memories_reused += len(reused) + len(shared)
            report.texts_embedded += len({texts[i] for i in got})
            if len(got) < len(todo):
                return False
            if len(memos) < size:
                return True
            if stop is not None and stop():
                return False
            size = _grown(size, lambda: mem.count_unembedded(self.keyword_only))
        return True

    def _embed_once(
        self, texts: list[str], stop: Callable[[], bool] | None, step: int = _STEP
    ) -> dict[int, list[float]]:
        """`_embed`, each distinct text once (a batch may hold the same text twice)."""
        first: dict[str, int] = {}
        for i, t in enumerate(texts):
            first.setdefault(t, i)
        if len(first) == len(texts):
            return self._embed(texts, stop, step)
        distinct = list(first)
        got = self._embed(distinct, stop, step)
        by_text = {distinct[i]: v for i, v in got.items()}
        out = {i: by_text[t] for i, t in enumerate(texts) if t in by_text}
        self.progress.advance(len(out) - len(got))
        return out

    def _embed(
        self, texts: list[str], stop: Callable[[], bool] | None, step: int = _STEP
    ) -> dict[int, list[float]]:
        """Position → vector of `texts` (progress moves as the embedder finishes each of its
        groups). With `stop`, asked after each step of at most `step` texts and about a
        second of model work, in order: only those embedded before it said stop (the caller
        stores what it got: the work is kept). Without, one call for all of them: steps
        there only left a session idle at the end of each (2 cores, cobra: 27.4 s of
        embedding in steps of 6,000 characters against 23.7 s in one call)."""
        assert self.embedder is not None
        advance = self.progress.advance
        if stop is None:  # one call: the embedder keeps its sessions busy to the end
            return dict(enumerate(self.embedder.embed_documents(texts, advance)))
        got: dict[int, list[float]] = {}
        for part in _steps(list(range(len(texts))), texts, step):
            vectors = self.embedder.embed_documents([texts[i] for i in part], advance)
            got.update(zip(part, vectors, strict=True))
            if len(got) < len(texts) and stop():
                break
        return got

    # -- the whole run ------------------------------------------------------------

    @frozen_heap()  # a fresh block per call (a context manager as a decorator)
    def run(
        self,
        files: Sequence[SourceFile],
        report: IndexReport,
        *,
        embed: bool = True,
        only: PathSet | None = None,
        optimize: bool = True,
        trust_marker: bool = False,
        stop_embedding: Callable[[], bool] | None = None,
    ) -> IndexReport:
        """Index `files` (a whole walk, or a partial one limited to `only`). `optimize`
        compacts the tables after a change; a long-lived caller does that on its own clock.
        `trust_marker`: repair only when a crash marker is left (a long-lived writer checked
        the stores thoroughly on its first run; every writer since leaves the marker if it
        dies midway), instead of counting every store on every run. `stop_embedding`: see
        `embed_pending`. The cycle collector leaves what the process held before the run
        alone until it ends (`frozen_heap`)."""
        started = time.monotonic()
        store = self.store
        try:
            # cutting every file again (another chunker or graph version): the run writes
            # every file's graph anew, and the graph's versions follow the manifest after it
            report.recut = self.rechunk and only is None
            if store.dirty if trust_marker else store.needs_reconcile(not report.recut):
                report.repaired = store.reconcile(not report.recut)
            with store.writing():
                plan = self.plan(files, report, only)
                self.store_chunks(plan, report, partial=only is not None)
                if report.recut:
                    report.repaired += store.reconcile_graph_states()
        finally:
            self.tagger.close()
        report.seconds_to_search = time.monotonic() - started
        if embed:
            self.embed_pending(report, stop_embedding)
        else:
            report.chunks_unembedded = store.chunks.count_unembedded() if self.embedder else 0
        report.chunks_total = store.chunks.count_current()
        if optimize and (report.chunks_added or report.chunks_removed or report.chunks_embedded):
            report.keyword_rewritten = store.maintain_after_run(self.keep_versions)
        elif optimize:  # an index from before the graph's lookup indexes gets them now
            store.graph.ensure_indexes()
        # a partial run cut only its files: the rest are still as the recorded chunker cut
        # them (a later whole run cuts them again), unless no chunker was recorded yet
        chunker = self.chunker_id if only is None or not store.meta.chunker else store.meta.chunker
        store.finish_run(*self.git, chunker)
        report.seconds = time.monotonic() - started
        return report


def _same_stat(old: FileRecord | None, f: SourceFile) -> bool:
    """Whether the manifest holds the file with the size and mtime the walk found."""
    return old is not None and old.size == f.size and old.mtime_ns == f.mtime_ns


def _place(c: Chunk) -> Place:
    return (c.start_line, c.end_line, c.symbol, c.header)


def _moved(existing: dict[str, Chunk], stored: dict[str, tuple[bool, Place]]) -> dict[str, Place]:
    """Unchanged chunks (same id) that now sit elsewhere in their file."""
    return {
        cid: _place(c)
        for cid, c in existing.items()
        if cid in stored and stored[cid][1] != _place(c)
    }


def keyword_only(memory_vectors: str) -> str | None:
    """A filter of the memories that get no vector under `memory_vectors` (None: all do)."""
    if memory_vectors == "none":
        return memories_where(_DERIVED)
    if memory_vectors == "definitions":
        return memories_where(_DERIVED, but_type="definition")
    return None


def _steps(order: list[int], texts: Sequence[str], most: int) -> Iterator[list[int]]:
    """`order` cut into steps of at most `most` texts and about `_STEP_CHARS` characters."""
    part: list[int] = []
    chars = 0
    for i in order:
        part.append(i)
        chars += len(texts[i])
        if len(part) >= most or chars >= _STEP_CHARS:
            yield part
            part, chars = [], 0
    if part:
        yield part


def _batched(items: Sequence[_FilePlan], size: int) -> Iterator[Sequence[_FilePlan]]:
    for i in range(0, len(items), max(1, size)):
        yield items[i : i + size]


__all__ = ["MEMORY_VECTORS", "Indexer", "keyword_only", "to_chunks"]
