"""A file's tags in the row form of the code graph's tables (`GraphPart`): made where the
tags are made, in the indexing process or a worker process beside it, which imports this
module (Arrow only) and not the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from memserver.core.graph import FileTags

__all__ = ["DEF_OWN_SCHEMA", "REF_OWN_SCHEMA", "GraphPart", "graph_part"]

# a definition's and a reference's own columns (the rest the insert adds: id or place, path,
# version, language, chunk_id, and on file rows package, imports and the counts)
_DEF_OWN = [
    ("kind", pa.string()), ("name", pa.string()), ("qualified", pa.string()),
    ("parent", pa.string()), ("signature", pa.string()), ("doc", pa.string()),
    ("start_line", pa.int32()), ("end_line", pa.int32()), ("name_line", pa.int32()),
    ("declared_type", pa.string()), ("declaration", pa.bool_()),
]  # fmt: skip
_REF_OWN = [
    ("name", pa.string()), ("kind", pa.string()), ("line", pa.int32()),
    ("column", pa.int32()), ("enclosing", pa.string()), ("qualifier", pa.string()),
    ("receiver_type", pa.string()),
]  # fmt: skip
DEF_OWN_SCHEMA = pa.schema(_DEF_OWN)
REF_OWN_SCHEMA = pa.schema(_REF_OWN)


@dataclass(frozen=True, slots=True)
class GraphPart:
    """A file's tags in the tables' row form, made where the tags are made: a worker
    process hands the indexing one Arrow buffers, not a hundred thousand objects."""

    path: str
    language: str
    package: str
    imports: tuple[dict[str, Any], ...]  # the file row's imports
    definitions: pa.RecordBatch | None  # their own columns, in file order (None: none)
    references: pa.RecordBatch | None

    @property
    def counts(self) -> tuple[int, int]:
        return tuple(  # type: ignore[return-value]
            0 if b is None else b.num_rows for b in (self.definitions, self.references)
        )


def _batch(items: Sequence[Any], schema: pa.Schema) -> pa.RecordBatch | None:
    """The `schema` columns of these objects (attributes of the same names), or None."""
    if not items:
        return None
    return pa.RecordBatch.from_arrays(
        [pa.array([getattr(x, f.name) for x in items], f.type) for f in schema], schema=schema
    )


def graph_part(tags: FileTags) -> GraphPart:
    """`tags` in row form (see `GraphPart`)."""
    defs = _batch(tags.definitions, DEF_OWN_SCHEMA)
    refs = _batch(tags.references, REF_OWN_SCHEMA)
    imports = tuple(
        {"module": i.module, "name": i.name, "alias": i.alias, "line": i.line, "star": i.star,
         "enclosing": i.enclosing}
        for i in tags.imports
    )  # fmt: skip
    return GraphPart(tags.path, tags.language, tags.package, imports, defs, refs)
