"""What the dense model sees of a chunk (indexing, notes and consolidation embed the same)."""

from __future__ import annotations

import hashlib

from memserver.core.types import Chunk
from memserver.text.terms import split_identifier, words

__all__ = [
    "chunk_vector_key", "embed_text", "name_line", "passages_id", "path_words", "phrase",
    "vector_key",
]  # fmt: skip

# bump when `embed_text` changes what the model reads of a file chunk: indexes embedded
# from the older text embed their file chunks again (store.meta `passages`)
PASSAGES_VERSION = 2


def passages_id(code_chars: int | None) -> str:
    """What the model reads of a file chunk, as an index records it."""
    return f"v{PASSAGES_VERSION}-code-{code_chars if code_chars is not None else 'all'}"


def phrase(identifier: str) -> str:
    """`HttpClient.send_all` → `http client send all`."""
    return " ".join(p for part in identifier.split(".") for p in split_identifier(part))


def path_words(path: str) -> str:
    """`src/http_client.py` → `src http client`."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    return " ".join(words(stem.replace("/", " ")))


def name_line(kind: str, symbol: str, path: str) -> str:
    """What a unit is, in code and in words: `function parse_config (parse config) defined
    in app/config.py (app config)`; without a path, the same up to `defined`."""
    named = f"{kind} {symbol} ({', '.join(phrase(s) for s in symbol.split(', '))})"
    if not path:
        return named if symbol else kind
    where = f"defined in {path} ({path_words(path)})"
    return f"{named} {where}" if symbol else f"{kind} {where}"


def _file_text(chunk: Chunk, path: str, code_chars: int | None) -> str:
    head = name_line(chunk.kind, chunk.symbol, path)
    return "\n".join(p for p in (head, chunk.header, chunk.text[:code_chars]) if p)


def embed_text(chunk: Chunk, code_chars: int | None = None) -> str:
    """What the chunk is and where, in words as well as names, then its first `code_chars`
    characters (`embedding.max_chars`): a question in prose meets `parseHTTPResponse` in
    `net/http_util.py` on `parse http response` and `net http util`, however long the code.

    A note or a conversation turn has no meaningful path: its words are what a
    question matches."""
    if chunk.origin != "file":
        return chunk.text
    return _file_text(chunk, chunk.path, code_chars)


def vector_key(model: str, text: str) -> str:
    """What a stored vector is reused under: the model and the text it embedded. Two rows
    with the same key have the same vector, whatever their ids."""
    h = hashlib.sha256()
    for part in (model, text):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:32]


def chunk_vector_key(model: str, chunk: Chunk, code_chars: int | None = None) -> str:
    """The key of a chunk's vector: its embedded text less the path, so a file that
    moves (or a tree that moves it between versions) keeps its chunks' vectors. The
    vector then names the old path; the keyword index has the new one."""
    if chunk.origin != "file":
        return vector_key(model, chunk.text)
    return vector_key(model, _file_text(chunk, "", code_chars))
