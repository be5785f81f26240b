"""Content-derived ids: every write keyed by them is an idempotent upsert."""

from __future__ import annotations

import hashlib


def normalise(text: str) -> str:
    """Line endings and trailing blanks do not change what a chunk says."""
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip("\n")


def chunk_id(project: str, path: str, text: str, ordinal: int = 0) -> str:
    """`c_` + 32 hex of sha256(project, path, normalised text, ordinal of identical twins)."""
    h = hashlib.sha256()
    for part in (project, path, normalise(text), str(ordinal)):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return "c_" + h.hexdigest()[:32]


def content_hash(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def memory_id(source_ids: tuple[str, ...] | list[str], type_: str, text: str) -> str:
    """`m_` + 32 hex of sha256(sorted source ids, type, text)."""
    h = hashlib.sha256()
    for part in (*sorted(source_ids), type_, text):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return "m_" + h.hexdigest()[:32]
