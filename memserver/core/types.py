"""Our own frozen types: the only values that cross module boundaries.

Nothing here imports beyond the standard library, so `indexers` (which may
only import `memserver.core`) and every service can share them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memserver.core.graph import FileTags


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A file discovery decided to index."""

    path: str  # POSIX, relative to the project root
    abs_path: str
    size: int
    mtime_ns: int
    language: str  # a name from indexers.languages, "text" when unknown


@dataclass(frozen=True, slots=True)
class Skip:
    """A file (or folder) discovery left out, and why."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class WalkResult:
    files: tuple[SourceFile, ...]
    skipped: tuple[Skip, ...]


@dataclass(frozen=True, slots=True)
class WalkOptions:
    """Discovery settings (the `[index]` section that discovery needs)."""

    max_file_bytes: int = 1_000_000
    exclude: tuple[str, ...] = ()  # extra gitignore-style patterns
    include_hidden: bool = True  # dot-files other than the default excludes
    follow_symlinks: bool = True


class PathSet:
    """Root-relative paths (files or folders) that a partial run looks at: each path and
    everything under it. The watcher turns file events into one of these."""

    __slots__ = ("_ancestors", "paths")

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = frozenset(p.strip("/") for p in paths)
        ancestors: set[str] = set()
        for p in self.paths:
            parts = p.split("/")
            ancestors.update("/".join(parts[:i]) for i in range(1, len(parts)))
        self._ancestors = frozenset(ancestors)

    def __contains__(self, rel: object) -> bool:
        """Is the file or folder `rel` one of the paths or under one of them?"""
        if not isinstance(rel, str):
            return False
        rel = rel.rstrip("/")
        if "" in self.paths or rel in self.paths:
            return True
        i = rel.find("/")
        while i != -1:
            if rel[:i] in self.paths:
                return True
            i = rel.find("/", i + 1)
        return False

    def leads_to(self, folder: str) -> bool:
        """Is the folder `folder` above one of the paths (so a walk must pass through it)?"""
        return folder.rstrip("/") in self._ancestors

    def __len__(self) -> int:
        return len(self.paths)

    def __repr__(self) -> str:
        return f"PathSet({sorted(self.paths)!r})"


@dataclass(frozen=True, slots=True)
class ChunkOptions:
    """Chunking settings (the `[chunking]` section)."""

    max_tokens: int = 1000  # a unit above this is split at child boundaries
    min_tokens: int = 24  # siblings below this are merged with neighbours...
    merge_target_tokens: int = 200  # ...while the merged chunk stays below this
    window_lines: int = 60  # line windows for text, data files and fallbacks
    max_parse_bytes: int = 1_000_000


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk as a chunker cuts it: raw text and where it sits, no id yet."""

    path: str
    language: str
    kind: str  # function, method, class, module, section, text, ...
    symbol: str  # qualified name ("Client.send"), heading path, or ""
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    text: str  # the exact source lines start_line..end_line joined by "\n"
    header: str = ""  # enclosing class/namespace signature, for context
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class ChunkResult:
    chunks: tuple[ChunkDraft, ...]
    fallback_reason: str | None = None  # set when the parser failed and line windows were used
    tags: FileTags | None = None  # asked for: the code graph's tags, from the same parse


@dataclass(frozen=True, slots=True)
class Chunk:
    """A stored chunk of the detailed view (content-addressed id)."""

    id: str
    project: str
    origin: str  # file | note | turn | code_block
    path: str
    language: str
    kind: str
    symbol: str
    start_line: int
    end_line: int
    text: str
    header: str
    tokens: int
    content_hash: str
    event_time: datetime | None = None  # notes and turns: when it happened
    scope: tuple[tuple[str, str], ...] = ()  # (key, value) beyond the project: user, session, agent
    tags: tuple[str, ...] = ()
    speaker: str = ""  # who said a conversation turn
    turn: int = -1  # a turn's number in its conversation (the digits ending its turn id)


@dataclass(frozen=True, slots=True)
class Hit:
    """One candidate from one retrieval arm."""

    id: str
    score: float
    arm: str


@dataclass(frozen=True, slots=True)
class Evidence:
    id: str
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    language: str
    text: str
    score: float
    tokens: int
    routes: tuple[str, ...] = ()
    embedded: bool = True
    memory_ids: tuple[str, ...] = ()
    stale: bool = False  # its file changed since indexing, or a note whose cited code did
    speaker: str = ""  # who said a conversation turn (not shown: the text starts with it)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "kind": self.kind,
            "language": self.language,
            "score": round(self.score, 6),
            "tokens": self.tokens,
            "routes": list(self.routes),
            "embedded": self.embedded,
            "memory_ids": list(self.memory_ids),
            "stale": self.stale,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class MapSymbol:
    """One place in a map answer's file: a chunk's symbol, span and first code line."""

    id: str
    name: str
    start_line: int
    end_line: int
    signature: str


@dataclass(frozen=True, slots=True)
class MapFile:
    """One file of a map answer: where to look, and its most relevant places."""

    path: str
    score: float
    role: str
    symbols: tuple[MapSymbol, ...]


@dataclass(frozen=True, slots=True)
class RecallResult:
    query: str
    found: bool | None
    confidence: float | None
    tokens: int
    truncated: bool
    evidence: tuple[Evidence, ...]
    unembedded: int = 0  # current chunks still waiting for a vector
    signals: dict[str, float] = field(default_factory=dict)  # the gate's inputs, for calibration
    degraded: str = ""  # why recall ran without a part (the model), and the fix
    files: tuple[MapFile, ...] = ()  # a map answer's files (format "map"), best first
    format: str = "chunks"  # "chunks" (evidence with code) or "map" (files and places)
    # a task's answer: the next likely files the evidence does not reach, a place apiece
    also: tuple[MapFile, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "found": self.found,
            "confidence": self.confidence,
            "tokens": self.tokens,
            "truncated": self.truncated,
            "unembedded_chunks": self.unembedded,
            "degraded": self.degraded,
            "evidence": [e.to_dict() for e in self.evidence],
            **({"files": [_map_file_dict(f) for f in self.files]} if self.format == "map" else {}),
            **({"also": [_map_file_dict(f) for f in self.also]} if self.also else {}),
        }


def _map_file_dict(f: MapFile) -> dict[str, Any]:
    return {"path": f.path, "score": round(f.score, 6), "role": f.role,
            "symbols": [{"id": m.id, "name": m.name, "start_line": m.start_line,
                         "end_line": m.end_line, "signature": m.signature}
                        for m in f.symbols]}  # fmt: skip


@dataclass(slots=True)
class IndexReport:
    """What one `memserver index` run did (mutable while the run fills it)."""

    root: str
    index_dir: str
    files_indexed: int = 0
    files_unchanged: int = 0
    files_removed: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    parse_fallbacks: dict[str, str] = field(default_factory=dict)
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_unembedded: int = 0
    memories_added: int = 0
    memories_embedded: int = 0
    # of those embedded: vectors copied from a row with the same text (or the chunk's own,
    # for memories that share it), and the distinct texts the model actually embedded
    chunks_reused: int = 0
    memories_reused: int = 0
    # file chunks whose vectors were dropped at the start of the run: what the model reads
    # of a chunk changed since they were embedded (a release, `[embedding] max_chars`)
    chunks_embedded_again: int = 0
    texts_embedded: int = 0
    tokens: int = 0
    seconds: float = 0.0
    seconds_to_search: float = 0.0  # until BM25 could answer
    seconds_embedding: float = 0.0
    embedder: str = ""
    repaired: int = 0  # rows fixed by reconciliation after an interrupted run
    # every file cut (and tagged) again: the chunker, its settings or the code graph's
    # extraction changed since the index was built
    recut: bool = False
    # keyword indexes written again at the end, half of their documents being deleted ones
    keyword_rewritten: list[str] = field(default_factory=list)
    vectors_pending: str = ""  # why embedding stopped (the model cannot be loaded), and the fix
    # secret values masked in the files this run indexed: path → kind → count (never values)
    masked: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def files_skipped(self) -> int:
        return len(self.skipped)

    @property
    def masked_total(self) -> int:
        return sum(sum(kinds.values()) for kinds in self.masked.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "index_dir": self.index_dir,
            "files_indexed": self.files_indexed,
            "files_unchanged": self.files_unchanged,
            "files_removed": self.files_removed,
            "files_skipped": self.files_skipped,
            "skipped": dict(sorted(self.skipped.items())),
            "parse_fallbacks": dict(sorted(self.parse_fallbacks.items())),
            "chunks_added": self.chunks_added,
            "chunks_removed": self.chunks_removed,
            "chunks_total": self.chunks_total,
            "chunks_embedded": self.chunks_embedded,
            "chunks_unembedded": self.chunks_unembedded,
            "memories_added": self.memories_added,
            "memories_embedded": self.memories_embedded,
            "chunks_reused": self.chunks_reused,
            "memories_reused": self.memories_reused,
            "chunks_embedded_again": self.chunks_embedded_again,
            "texts_embedded": self.texts_embedded,
            "tokens": self.tokens,
            "seconds": round(self.seconds, 3),
            "seconds_to_search": round(self.seconds_to_search, 3),
            "seconds_embedding": round(self.seconds_embedding, 3),
            "embedder": self.embedder,
            "repaired": self.repaired,
            "recut": self.recut,
            "keyword_rewritten": list(self.keyword_rewritten),
            "vectors_pending": self.vectors_pending,
            "masked_total": self.masked_total,
            "masked": {p: dict(sorted(k.items())) for p, k in sorted(self.masked.items())},
        }


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One row of the files manifest: what a file held when it was last indexed."""

    path: str
    content_hash: str
    size: int
    mtime_ns: int
    language: str
    chunk_ids: tuple[str, ...]
    git_commit: str = ""
    git_branch: str = ""
    masked: tuple[tuple[str, int], ...] = ()  # (kind, count) of secret values masked in it


# memory statuses: active and stale ones are recalled (stale marked); superseded ones stay
# attributable; forgotten ones are never shown again
ACTIVE, STALE, SUPERSEDED, ARCHIVED, FORGOTTEN = (
    "active",
    "stale",
    "superseded",
    "archived",
    "forgotten",
)

MEMORY_TYPES = (
    "fact",
    "procedure",
    "definition",
    "requirement",
    "decision",
    "convention",
    "dependency",
    "bugfix",
)


@dataclass(frozen=True, slots=True)
class MemoryDraft:
    """A distilled statement about one or more chunks, before it gets its id."""

    type: str  # one of MEMORY_TYPES
    key: str  # a short retrieval key ("open_file: open a file lazily")
    text: str  # the statement, in words
    entities: tuple[str, ...] = ()  # identifiers, paths, names it mentions


@dataclass(frozen=True, slots=True)
class Memory:
    """A stored memory of the distilled view; `source_ids` is never empty."""

    id: str
    type: str
    key: str
    text: str
    source_ids: tuple[str, ...]
    entities: tuple[str, ...] = ()
    distiller: str = ""
    status: str = "active"  # active | stale | superseded | archived | forgotten
    event_time: datetime | None = None
    scope: tuple[tuple[str, str], ...] = ()
    derived_from: tuple[str, ...] = ()  # the memories a consolidated abstraction replaces


@dataclass(frozen=True, slots=True)
class GitState:
    indexed_commit: str
    indexed_branch: str
    head_commit: str
    head_branch: str

    @property
    def matches(self) -> bool:
        return (self.indexed_commit, self.indexed_branch) == (self.head_commit, self.head_branch)


@dataclass(frozen=True)
class Status:
    """What an index holds, what built it, and whether it matches the working tree."""

    root: str
    index_dir: str
    project: str
    files: int
    chunks: int
    memories: int
    notes: int
    turns: int
    stale_memories: int
    forgotten_memories: int
    reranker: str
    unembedded_chunks: int
    embedder: str
    dim: int
    tokenizer: str
    schema_version: int
    created_at: str
    indexed_at: str
    interrupted: bool
    git: GitState
    stale_files: tuple[str, ...]
    new_files: tuple[str, ...]
    removed_files: tuple[str, ...]
    watcher: dict[str, Any] = field(default_factory=lambda: {"state": "off"})
    server: dict[str, Any] = field(default_factory=dict)  # set by a running server
    masked: dict[str, dict[str, int]] = field(default_factory=dict)  # path → kind → count
    rechunk: bool = False  # cut by another chunker version or settings: the next run re-cuts

    @property
    def up_to_date(self) -> bool:
        return not (self.stale_files or self.new_files or self.removed_files or self.interrupted
                    or self.rechunk)  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {f: getattr(self, f) for f in self.__dataclass_fields__}
        out["git"] = {**{f: getattr(self.git, f) for f in self.git.__dataclass_fields__},
                      "matches": self.git.matches}  # fmt: skip
        for name in ("stale_files", "new_files", "removed_files"):
            out[name] = list(out[name])
        out["up_to_date"] = self.up_to_date
        by_kind: dict[str, int] = {}
        for kinds in self.masked.values():
            for kind, n in kinds.items():
                by_kind[kind] = by_kind.get(kind, 0) + n
        out["masked_total"] = sum(by_kind.values())
        out["masked_by_kind"] = dict(sorted(by_kind.items()))
        if not self.server:
            del out["server"]
        return out


@dataclass(frozen=True, slots=True)
class ForgetRule:
    """A path `forget` removed, kept out of later indexing runs (a record, never a line of
    an ignore file)."""

    pattern: str  # a root-relative path, or a glob
    glob: bool  # a glob (`*`, `?`, `[…]`, `**`), else an exact path (a file or a folder)
    added_at: str = ""
    reason: str = ""
