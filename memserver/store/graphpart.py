"""A file's tags in the row form of the code graph's tables (`GraphPart`): made where the
tags are made, in the indexing process or a worker process beside it, which imports this
module and not the store.

Standard library only: the columns are Arrow's own buffers (a string column's offsets and
bytes, a number column's values) built with `array`, which the store wraps without a copy
(`store.graph`). A tags worker that imported Arrow (and numpy with it) for them would take
0.12 s instead of 0.05 s to import, and 0.17 s of CPU instead of 0.05 s, on the core the
indexing shares with it.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter
from typing import Any

from memserver.core.graph import FileTags

__all__ = ["DEF_OWN", "REF_OWN", "Columns", "GraphPart", "graph_part"]

# a definition's and a reference's own columns, with their kinds: "str", "int32", "bool"
# (the rest the insert adds: id or place, path, version, language, chunk_id, and on file
# rows package, imports and the counts)
DEF_OWN = (
    ("kind", "str"), ("name", "str"), ("qualified", "str"), ("parent", "str"),
    ("signature", "str"), ("doc", "str"), ("start_line", "int32"), ("end_line", "int32"),
    ("name_line", "int32"), ("declared_type", "str"), ("declaration", "bool"),
)  # fmt: skip
REF_OWN = (
    ("name", "str"), ("kind", "str"), ("line", "int32"), ("column", "int32"),
    ("enclosing", "str"), ("qualifier", "str"), ("receiver_type", "str"),
)  # fmt: skip

_INT32 = next(c for c in "il" if array(c).itemsize == 4)  # a C int, or a Windows long


@dataclass(frozen=True, slots=True)
class Columns:
    """Rows as Arrow buffers, a column each in its spec's order (`DEF_OWN`, `REF_OWN`): a
    "str" column is (int32 offsets, UTF-8 bytes), an "int32" one its values, a "bool" one a
    byte per value."""

    rows: int
    values: tuple[bytes | tuple[bytes, bytes], ...]


@dataclass(frozen=True, slots=True)
class GraphPart:
    """A file's tags in the tables' row form, made where the tags are made: a worker
    process hands the indexing a few byte strings, not a hundred thousand objects."""

    path: str
    language: str
    package: str
    imports: tuple[dict[str, Any], ...]  # the file row's imports
    definitions: Columns | None  # their own columns, in file order (None: none)
    references: Columns | None

    @property
    def counts(self) -> tuple[int, int]:
        return tuple(  # type: ignore[return-value]
            0 if c is None else c.rows for c in (self.definitions, self.references)
        )


def _strings(values: list[str]) -> tuple[bytes, bytes]:
    """A string column's offsets and bytes."""
    joined = "".join(values)
    if joined.isascii():  # a character is a byte: the lengths are the strings'
        data, lengths = joined.encode("ascii"), map(len, values)
    else:
        encoded = [v.encode("utf-8", "replace") for v in values]
        data, lengths = b"".join(encoded), map(len, encoded)
    offsets = array(_INT32, (0,))
    offsets.extend(accumulate(lengths))
    return offsets.tobytes(), data


def _columns(items: Sequence[Any], spec: tuple[tuple[str, str], ...]) -> Columns | None:
    """The `spec` columns of these objects (attributes of the same names), or None."""
    if not items:
        return None
    values: list[bytes | tuple[bytes, bytes]] = []
    for name, kind in spec:
        column = list(map(attrgetter(name), items))
        if kind == "str":
            values.append(_strings(column))
        else:
            values.append(array(_INT32 if kind == "int32" else "B", column).tobytes())
    return Columns(len(items), tuple(values))


def graph_part(tags: FileTags) -> GraphPart:
    """`tags` in row form (see `GraphPart`)."""
    defs = _columns(tags.definitions, DEF_OWN)
    refs = _columns(tags.references, REF_OWN)
    imports = tuple(
        {"module": i.module, "name": i.name, "alias": i.alias, "line": i.line, "star": i.star,
         "enclosing": i.enclosing}
        for i in tags.imports
    )  # fmt: skip
    return GraphPart(tags.path, tags.language, tags.package, imports, defs, refs)
