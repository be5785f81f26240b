"""Arrow schemas of the LanceDB tables and the schema version they belong to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from memserver.core.requests import SCOPE_KEYS, Scope
from memserver.store.meta import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION", "chunk_schema", "events_schema", "files_schema", "memory_schema",
    "refs_schema", "scope_pairs", "scope_row", "symbols_schema",
]  # fmt: skip

_SCOPE = pa.struct(
    [
        pa.field("project", pa.string()),
        pa.field("user", pa.string()),
        pa.field("session", pa.string()),
        pa.field("agent", pa.string()),
    ]
)
_TS = pa.timestamp("us", tz="UTC")
# secret values masked in a file's stored text: kinds and counts, never the values
_MASKED = pa.list_(pa.struct([pa.field("kind", pa.string()), pa.field("count", pa.int32())]))


VECTOR_KEY = "vector_key"


def chunk_schema(dim: int) -> pa.Schema:
    """`chunks`: the detailed view. Without an embedder (dim 0) there is no vector column."""
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("project", pa.string()),
        pa.field("origin", pa.string()),
        pa.field("path", pa.string()),
        pa.field("language", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("symbol", pa.string()),
        pa.field("start_line", pa.int32()),
        pa.field("end_line", pa.int32()),
        pa.field("text", pa.string()),
        pa.field("header", pa.string()),
        pa.field("tokens", pa.int32()),
        pa.field("content_hash", pa.string()),
        pa.field("embedded", pa.bool_()),
        pa.field("observed_at", _TS),
        pa.field("event_time", _TS),
        pa.field("valid_from", _TS),
        pa.field("valid_to", _TS),
        pa.field("superseded_by", pa.string()),
        pa.field("scope", _SCOPE),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("speaker", pa.string()),  # who said a conversation turn ("" otherwise)
        pa.field("turn", pa.int32()),  # a turn's number in its conversation (-1 otherwise)
        # the model and text its vector came from (text.passages.vector_key), set with it
        pa.field(VECTOR_KEY, pa.string()),
    ]
    if dim:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


def memory_schema(dim: int) -> pa.Schema:
    """`memories`: the distilled view; every memory cites at least one chunk."""
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("type", pa.string()),
        pa.field("key", pa.string()),
        pa.field("text", pa.string()),
        pa.field("entities", pa.list_(pa.string())),
        pa.field("source_ids", pa.list_(pa.string())),
        pa.field("origin_chunk", pa.string()),  # the chunk it was distilled from, "" for notes
        pa.field("status", pa.string()),
        pa.field("superseded_by", pa.string()),
        pa.field("derived_from", pa.list_(pa.string())),
        pa.field("distiller", pa.string()),
        pa.field("embedded", pa.bool_()),
        pa.field("event_time", _TS),
        pa.field("valid_from", _TS),
        pa.field("valid_to", _TS),
        pa.field("scope", _SCOPE),
        pa.field(VECTOR_KEY, pa.string()),  # as in `chunks`
    ]
    if dim:
        fields.append(pa.field("vector", pa.list_(pa.float32(), dim)))
    return pa.schema(fields)


def files_schema() -> pa.Schema:
    """`files`: the manifest, one row per indexed file; written last (the commit point)."""
    return pa.schema(
        [
            pa.field("path", pa.string(), nullable=False),
            pa.field("content_hash", pa.string()),
            pa.field("size", pa.int64()),
            pa.field("mtime_ns", pa.int64()),
            pa.field("language", pa.string()),
            pa.field("chunk_ids", pa.list_(pa.string())),
            pa.field("indexed_at", _TS),
            pa.field("git_commit", pa.string()),
            pa.field("git_branch", pa.string()),
            pa.field("masked", _MASKED),
        ]
    )


def events_schema() -> pa.Schema:
    """`events`: the append-only audit log of what changed memories and notes, and why."""
    return pa.schema(
        [
            pa.field("time", _TS),
            pa.field("op", pa.string()),  # add, forget, stale, supersede, consolidate, reindex
            pa.field("targets", pa.list_(pa.string())),
            pa.field("before", pa.string()),
            pa.field("after", pa.string()),
            pa.field("actor", pa.string()),
            pa.field("reason", pa.string()),
        ]
    )


_IMPORT = pa.struct(
    [
        pa.field("module", pa.string()),
        pa.field("name", pa.string()),
        pa.field("alias", pa.string()),
        pa.field("line", pa.int32()),
        pa.field("star", pa.bool_()),
        pa.field("enclosing", pa.string()),
    ]
)


# The code graph's strings compressed with zstd instead of Lance's default choice (field
# metadata, read when a table is created; a table made before keeps its encoding). One
# batch of mongoose's rows (4k definitions, 37k references): `symbols` written in 8.8 ms
# of CPU instead of 17.0 and in 304 KB instead of 432, `refs` in 10.2 ms instead of 9.4
# and 280 KB instead of 396; the graph's share of a keyword-only index 23 % instead of 31.
# Reads are as fast (benchmarks/graph_latency.py).
_PACKED = {"lance-encoding:compression": "zstd"}


def _packed(fields: list[pa.Field]) -> pa.Schema:
    """A schema of these fields, its string columns `_PACKED`."""
    return pa.schema([f.with_metadata(_PACKED) if f.type == pa.string() else f for f in fields])


def symbols_schema() -> pa.Schema:
    """`symbols`: the code graph's definitions, and one `file` row per version of a file
    (its language, package, imports and row counts: what resolution needs of the file, and
    the proof that the version's rows are all there). Rows of one version share `version`
    (`core.graph.file_version`); ids are that version and the row's place in it."""
    return _packed(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("path", pa.string()),
            pa.field("version", pa.string()),
            pa.field("language", pa.string()),
            pa.field("kind", pa.string()),  # a definition kind, or "file"
            pa.field("name", pa.string()),
            pa.field("qualified", pa.string()),
            pa.field("parent", pa.string()),
            pa.field("signature", pa.string()),
            pa.field("doc", pa.string()),
            pa.field("start_line", pa.int32()),
            pa.field("end_line", pa.int32()),
            pa.field("name_line", pa.int32()),
            pa.field("declared_type", pa.string()),
            pa.field("declaration", pa.bool_()),
            pa.field("chunk_id", pa.string()),  # the chunk its first line sits in
            pa.field("package", pa.string()),  # file rows: the declared package
            pa.field("imports", pa.list_(_IMPORT)),  # file rows: every imported binding
            pa.field("definitions", pa.int32()),  # file rows: rows of this version here
            pa.field("references", pa.int32()),  # file rows: rows of this version in refs
            pa.field("valid_to", _TS),
        ]
    )


def refs_schema() -> pa.Schema:
    """`refs`: the code graph's references (calls, imports, bases, types, other uses), each
    with its enclosing definition and the chunk it sits in. Resolved when asked. A row is
    known by its version and its place in the file's references: no id of its own (an id
    column of hex strings, which do not compress, was half the table)."""
    return _packed(
        [
            pa.field("place", pa.int32(), nullable=False),
            pa.field("path", pa.string()),
            pa.field("version", pa.string()),
            pa.field("name", pa.string()),
            pa.field("kind", pa.string()),  # call, import, inherit, type, other
            pa.field("line", pa.int32()),
            pa.field("column", pa.int32()),
            pa.field("enclosing", pa.string()),
            pa.field("qualifier", pa.string()),
            pa.field("receiver_type", pa.string()),
            pa.field("chunk_id", pa.string()),
            pa.field("valid_to", _TS),
        ]
    )


def scope_row(project: str, scope: Sequence[tuple[str, str]]) -> dict[str, str | None]:
    """The `scope` struct: the project plus the optional user / session / agent keys."""
    row: dict[str, str | None] = {"project": project, "user": None, "session": None,
                                  "agent": None}  # fmt: skip
    row.update(dict(scope))
    return row


def scope_pairs(row: Mapping[str, Any] | None) -> Scope:
    row = row or {}
    return tuple((k, row[k]) for k in SCOPE_KEYS if row.get(k))
