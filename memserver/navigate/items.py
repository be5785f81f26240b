"""What navigation answers are made of: definitions, references and neighbours, each with
its path, lines and the id of the chunk it sits in (so recall, attribute and
`memserver://chunk/{id}` compose with it), and `stale` when its file changed on disk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["FileOutline", "Neighbour", "OutlineEntry", "RefItem", "SymbolItem"]


@dataclass(frozen=True, slots=True)
class SymbolItem:
    """A definition."""

    id: str  # s_… (its row in `symbols`)
    path: str
    start_line: int
    end_line: int
    symbol: str  # qualified: "Client.send"
    kind: str
    signature: str
    chunk_id: str
    language: str = ""
    doc: str = ""
    stale: bool = False


@dataclass(frozen=True, slots=True)
class RefItem:
    """A reference, with the definition it is written in (None at a file's top level)."""

    path: str
    line: int
    column: int
    name: str
    kind: str  # call, import, inherit, type, other
    qualifier: str  # the receiver or module as written: "self.client", ""
    chunk_id: str
    enclosing: SymbolItem | None = None
    target: str = ""  # the id of the definition it resolves to (when several were asked)
    stale: bool = False


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A caller or callee of what was asked about (`depth` 1: directly)."""

    item: SymbolItem
    direction: Literal["caller", "callee"]
    depth: int
    lines: tuple[int, ...]  # the lines of the references (in the caller's file)
    kinds: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    item: SymbolItem
    children: tuple[OutlineEntry, ...] = ()
    score: float = 0.0  # the repository map's rank


@dataclass(frozen=True, slots=True)
class FileOutline:
    path: str
    language: str
    entries: tuple[OutlineEntry, ...] = field(default_factory=tuple)
    stale: bool = False
    score: float = 0.0
