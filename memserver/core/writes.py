"""What a service asks the store to write, as one value per intent.

A service decides *what* changes (which chunks a file now holds, which memories a forget
reaches); `IndexStore` decides *how*: the order of the LanceDB tables, the keyword index and
the manifest, the crash marker, and erasure. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from memserver.core.types import Chunk, FileRecord, ForgetRule, Memory

__all__ = [
    "ConsolidationWrite", "FileChanges", "FileDocument", "FileGraph", "ForgetPlan", "NoteWrite",
    "Place", "Revision", "Vectors", "file_documents",
]  # fmt: skip

Place = tuple[int, int, str, str]  # where a chunk sits in its file: start, end, symbol, header
Vectors = Mapping[str, Sequence[float]]  # row id → vector
EventRow = tuple[str, Sequence[str], str, str]  # (op, targets, before, after)


@dataclass(frozen=True, slots=True)
class FileDocument:
    """A whole file as the file-level keyword arm searches it: its path, and the text of its
    chunks in file order (what indexing kept of it, secrets masked as in its chunks)."""

    path: str
    text: str


def file_documents(chunks: Sequence[Chunk]) -> list[FileDocument]:
    """One document per file among `chunks` (file chunks only), its chunks in line order."""
    by_path: dict[str, list[Chunk]] = {}
    for c in chunks:
        if c.origin == "file":
            by_path.setdefault(c.path, []).append(c)
    return [
        FileDocument(path, "\n".join(c.text for c in sorted(cs, key=lambda c: c.start_line)))
        for path, cs in by_path.items()
    ]


@dataclass(frozen=True)
class FileGraph:
    """The code graph of one file as it is indexed now: the key of this version
    (`core.graph.file_version` of its manifest record), the chunks it was cut into, as (id,
    first line, last line) in file order, and its tags in the store's row form (what
    `store.graphpart.graph_part` makes of a `FileTags`; empty tags for a file not code)."""

    path: str
    version: str
    chunks: Sequence[tuple[str, int, int]]
    rows: object


@dataclass(frozen=True)
class FileChanges:
    """One batch of an index run: chunks cut from changed files, files gone, and the
    memories that follow them. Written in one order whatever the batch holds."""

    added: Sequence[Chunk] = ()  # chunk ids not stored before
    reopened: Sequence[Chunk] = ()  # stored, closed chunks that a file holds again
    moved: Mapping[str, Place] = field(default_factory=dict)  # unchanged ids, new places
    moved_chunks: Sequence[Chunk] = ()  # the moved chunks (their keyword documents)
    closed: Sequence[str] = ()  # chunks no file holds any more
    memories_added: Sequence[tuple[Memory, str]] = ()  # (memory, origin chunk), new ids
    memories_revived: Sequence[str] = ()  # stale memories whose chunk is back
    memories_searchable: Sequence[Memory] = ()  # keyword documents to (re)write
    memories_hidden: Sequence[str] = ()  # keyword documents to drop (their chunk closed)
    # live memories their chunk no longer gives (renamed) → the memory superseding each
    memories_outdated: Mapping[str, str | None] = field(default_factory=dict)
    follow_origin: bool = False  # code memories exist: those of closed chunks turn stale
    notes_stale: Sequence[str] = ()  # notes citing closed chunks: active → stale
    documents: Sequence[FileDocument] = ()  # whole-file keyword documents to (re)write
    records: Sequence[FileRecord] = ()  # manifest rows (written last: the commit point)
    removed_paths: Sequence[str] = ()  # manifest rows to drop (their graph rows and file
    # documents go too)
    # the code graph of every file in `records` that changed, or what gives it when the
    # store needs it (tags made in a worker process while the chunks are written)
    graphs: Sequence[FileGraph] | Callable[[], Sequence[FileGraph]] = ()


@dataclass(frozen=True)
class NoteWrite:
    """Remembered notes, their code blocks and statements: they commit together."""

    chunks: Sequence[Chunk]
    memories: Sequence[Memory]
    vectors: Vectors
    events: Sequence[EventRow]
    actor: str
    reason: str = "remember"


@dataclass(frozen=True)
class ForgetPlan:
    """What one forget reaches, resolved by the memory service."""

    chunks: Sequence[str] = ()  # note / turn / code-block / file chunks to close
    memories: Sequence[str] = ()  # memories to mark forgotten
    stale: Sequence[str] = ()  # memories citing what goes: active → stale
    paths: Sequence[str] = ()  # manifest entries to drop (forgotten files)
    rules: Sequence[ForgetRule] = ()  # what keeps those files out of later runs
    abstractions: Sequence[str] = ()  # consolidated memories built from what goes
    reactivate: Sequence[str] = ()  # their other members, active again
    erase: bool = False  # blank the text everywhere and purge every old copy
    before: str = ""  # the text for the audit log (empty when erasing)
    actor: str = "memserver"
    reason: str = "forget"


@dataclass(frozen=True)
class ConsolidationWrite:
    """A consolidation plan to apply: new abstractions and what they supersede."""

    abstractions: Sequence[tuple[Memory, str]]  # (abstraction, origin chunk)
    vectors: Vectors
    superseded: Mapping[str, str]  # member → abstraction (kept, attributable)
    contradicted: Mapping[str, str]  # older → newer (closed)
    events: Sequence[EventRow]
    actor: str


@dataclass(frozen=True)
class Revision:
    """A person's review decision on memories (the review page): new memories that replace
    stale ones, statuses put back by an undo, and the events that say so. Nothing is
    deleted: a replaced memory is superseded (kept, attributable), an undone one restored."""

    added: Sequence[tuple[Memory, str]] = ()  # (memory, origin chunk), stored or rewritten
    vectors: Vectors = field(default_factory=dict)
    superseded: Mapping[str, str] = field(default_factory=dict)  # memory → its replacement
    restored: Mapping[str, str] = field(default_factory=dict)  # memory → status it returns to
    events: Sequence[EventRow] = ()
    actor: str = "memserver"
    reason: str = "review"
