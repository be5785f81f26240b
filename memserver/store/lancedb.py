"""LanceDB adapter (the sole lancedb importer): connections, tables and the operations on them.

Everything the other store modules do to a table goes through these functions, and every
failure comes out of `lance_errors` as a `StoreError` saying whether the disk is full, the
index read-only or a table damaged. Filters are built with `sql_quote`/`in_list`, never by
pasting raw paths or ids. No LanceDB or Arrow object leaves `memserver.store`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memserver.core import heap
from memserver.core.errors import StoreError
from memserver.store.failures import failure_hint

__all__ = [
    "ADDRESS",
    "Db",
    "Table",
    "batches",
    "connect",
    "in_list",
    "lance_errors",
    "sql_quote",
    "store_error",
]

Db = Any  # a lancedb DBConnection (kept loose: lancedb ships no complete stubs)
Table = Any  # a lancedb Table
# a row's place in its table: Lance writes a row anew on every update, so the address moves
ADDRESS = "_rowaddr"
IN_BATCH = 500
# a row with no vector holds a null one; LanceDB's writes refuse nulls unless told so
NO_VECTOR = "null"
_SQ_MIN_ROWS = 4096


def store_error(action: str, exc: BaseException) -> StoreError:
    hint = failure_hint(
        exc, "run `memserver doctor --repair`; if that cannot fix it, `memserver index --rebuild`"
    )
    return StoreError(f"LanceDB failed to {action}: {type(exc).__name__}: {str(exc)[:400]}", hint)


@contextmanager
def lance_errors(action: str) -> Iterator[None]:
    """Map any LanceDB (or Arrow, or OS) failure inside the block to a StoreError."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        raise store_error(action, exc) from exc


def sql_quote(value: str) -> str:
    """A SQL string literal for a LanceDB filter."""
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(sql_quote(v) for v in values)})"


def batches(values: Sequence[str], size: int = IN_BATCH) -> Iterator[Sequence[str]]:
    for i in range(0, len(values), size):
        yield values[i : i + size]


def now() -> datetime:
    return datetime.now(UTC)


# LanceDB imports the REST namespace client's models at import time, and the client's
# package runs all of its API modules first (pydantic validators on hundreds of methods):
# 0.7 of the 1.5 s `import lancedb` took, in every `index` and `serve`, for a client only a
# remote namespace uses. Its package is stood in for by a shell that finds the same
# submodules and runs the real package body on first use of one of its names.
_REST_CLIENT = "lance_namespace_urllib3_client"
# Likewise `lancedb.embeddings`: its package imports every embedding provider (OpenAI,
# Cohere, open_clip with tqdm… 16 pydantic models) to register them, for tables that embed
# through LanceDB; memserver stores vectors it made. What LanceDB itself takes from the
# package (the config and registry classes) comes from those two modules: 1.1 MB of a
# server's memory and 16 ms of every start.
_EMBEDDINGS = ("lancedb.embeddings", ("base", "registry"))


def _defer_unused_packages() -> None:
    _defer_package(_REST_CLIENT)
    _defer_package(*_EMBEDDINGS)


def _defer_package(name: str, serves: Sequence[str] = ()) -> None:
    """Stand a shell in for package `name` until its body is needed: its submodules import
    as usual; a name asked of the package comes from the submodules `serves` when one has
    it, else the real body runs (once) and answers."""
    import importlib
    import importlib.util
    import sys
    import types

    if name in sys.modules:
        return
    top, _, rest = name.partition(".")
    spec = importlib.util.find_spec(top)  # a subpackage's own spec would import its parent
    if spec is not None and rest and spec.submodule_search_locations:
        folder = os.path.join(spec.submodule_search_locations[0], *rest.split("."))
        init = os.path.join(folder, "__init__.py")
        found = os.path.isfile(init)
        spec = importlib.util.spec_from_file_location(
            name, init, submodule_search_locations=[folder]) if found else None  # fmt: skip
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    shell = types.ModuleType(name)
    shell.__spec__, shell.__loader__ = spec, spec.loader
    shell.__file__, shell.__path__ = spec.origin, list(spec.submodule_search_locations)
    loaded: list[bool] = []

    def load(attribute: str) -> Any:
        if not loaded:
            for sub in serves:
                value = getattr(importlib.import_module(f"{name}.{sub}"), attribute, shell)
                if value is not shell:
                    setattr(shell, attribute, value)  # asked once
                    return value
        if loaded:  # the real body ran: the name is not there
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        loaded.append(True)
        spec.loader.exec_module(shell)  # type: ignore[union-attr]
        return getattr(shell, attribute)

    shell.__getattr__ = load  # type: ignore[method-assign]
    sys.modules[name] = shell


# LanceDB's own log (Rust's, on stderr) says only errors unless the user's environment asks
# for more. At its default it printed a warning per k-means iteration when a vector index
# was trained on many equal vectors (a repository's copied files, an index folding several
# releases of Django): over 100 lines for an index of 700 equal vectors, none of them
# anything the user could act on.
_LOG_ENV, _LOG_LEVEL = "LANCEDB_LOG", "error"


# What a connection's caches may hold (LanceDB's defaults: 1 GB of metadata, 6 GB of
# indexes). Each commit a reader sees is a new version of its table, and the caches kept
# what they read of every version: a server watching click grew by 2.1 MB of memory a save
# (232 MB to 851 MB over 300 saves), with these bounds by 0.7 MB (to 438 MB) while they
# fill, then not at all (this project's own package: 460 MB from save 250 to save 600);
# the same saves in one process grew the caches by 1.6 MB each. Recall and navigation on
# Django 3.2's index use 6.3 MB of them. Each connection has caches of its own: caches
# shared by connections would outlive a table dropped and made again under the same path
# (LanceDB keys their entries by the path).
METADATA_CACHE_BYTES = 32 << 20
INDEX_CACHE_BYTES = 32 << 20


def connect(path: Path) -> Db:
    """A connection whose reads see every commit, also by another handle or process (the
    server's long-lived reader vs. `memserver index`), with bounded caches."""
    _defer_unused_packages()
    os.environ.setdefault(_LOG_ENV, _LOG_LEVEL)  # read when lancedb is first imported
    import lancedb

    caches = lancedb.Session(index_cache_size_bytes=INDEX_CACHE_BYTES,
                             metadata_cache_size_bytes=METADATA_CACHE_BYTES)  # fmt: skip
    return lancedb.connect(str(path), read_consistency_interval=timedelta(0), session=caches)


def table_names(db: Db) -> list[str]:
    return list(db.list_tables().tables)


def open_table(db: Db, name: str, schema: pa.Schema, *, create: bool,
               fix: str = "run `memserver index --rebuild` to rebuild the index",
               ) -> Table | None:  # fmt: skip
    """The table `name` (None when missing, unless `create`: then created empty); refuses
    one of another schema (`fix`: the hint)."""
    if name in table_names(db):
        table = db.open_table(name)
        if table.schema != schema:
            missing = _columns_added_since(table.schema, schema)
            if missing is None:
                raise StoreError(f"table {name!r} has an unexpected schema", hint=fix)
            if missing and create:  # a writer brings it up to date: the new columns, empty
                table.add_columns(missing)
        return table
    if not create:
        return None
    return db.create_table(name, schema=schema, exist_ok=True)


def reshaped(db: Db, schemas: Mapping[str, pa.Schema]) -> list[str]:
    """Those of these tables that exist in a shape `open_table` refuses."""
    names = table_names(db)
    return [n for n, schema in schemas.items() if n in names
            and _columns_added_since(db.open_table(n).schema, schema) is None]  # fmt: skip


def drop_if_reshaped(db: Db, schemas: Mapping[str, pa.Schema]) -> bool:
    """Drop these tables, all of them, when one is `reshaped` (for tables made again from
    other data: a writer then creates them empty, and refills them)."""
    if not reshaped(db, schemas):
        return False
    names = table_names(db)
    for name in schemas:
        if name in names:
            db.drop_table(name)
    return True


def _columns_added_since(found: pa.Schema, wanted: pa.Schema) -> list[pa.Field] | None:
    """The nullable columns `wanted` adds to an older table that has every other column as
    it was (a reader reads such a table as it is; a writer adds them). None when the table
    differs otherwise."""
    have = {f.name: f for f in found}
    if any(n not in wanted.names or wanted.field(n).type != f.type for n, f in have.items()):
        return None
    missing = [f for f in wanted if f.name not in have]
    return missing if all(f.nullable for f in missing) else None


# -- reads ----------------------------------------------------------------------------


def take(table: Table, ids: Sequence[str], columns: Sequence[str] | None = None) -> pa.Table:
    """Rows whose id is in `ids` (all columns unless `columns`)."""
    parts = []
    for batch in batches(list(ids)):
        query = table.search().where(in_list("id", batch))
        if columns:
            query = query.select(list(columns))
        parts.append(query.limit(None).to_arrow())
    if parts:
        return pa.concat_tables(parts)
    schema = table.schema
    return (schema if not columns else pa.schema([schema.field(c) for c in columns])).empty_table()


def scan(table: Table, where: str | None, columns: Sequence[str],
         ids: Sequence[str] | None = None, limit: int | None = None) -> pa.Table:  # fmt: skip
    """Rows matching `where` (None: all) as Arrow; with `ids` (not empty), only those;
    with `limit`, at most that many (of each batch of ids)."""
    if ids is None:
        wheres: list[str | None] = [where]
    else:
        wheres = [f"({where}) AND {in_list('id', b)}" if where else in_list("id", b)
                  for b in batches(list(ids))]  # fmt: skip
    parts = []
    for w in wheres:
        query = table.search()
        if w:
            query = query.where(w)
        parts.append(query.select(list(columns)).limit(limit).to_arrow())
    return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def rows(
    table: Table, where: str, columns: Sequence[str], limit: int | None
) -> list[dict[str, Any]]:
    """Rows matching `where` as dicts."""
    return list(table.search().where(where).select(list(columns)).limit(limit).to_list())


def with_row_ids(table: Table, where: str, columns: Sequence[str]) -> pa.Table:
    """Some columns of the rows matching `where`, with each row's `_rowid`."""
    return (
        table.search().where(where).select(list(columns)).with_row_id(True).limit(None).to_arrow()
    )


def take_row_ids(table: Table, row_ids: Sequence[int], columns: Sequence[str]) -> pa.Table:
    return table.take_row_ids(list(row_ids)).select(list(columns)).to_arrow()


def give_back_memory() -> None:
    """Return the memory a large read freed to the system: Arrow's pool keeps what its
    compute functions freed, glibc's heap what LanceDB's scans freed (in the arena of each
    thread that read), and a server holds on to both for the rest of its life. On Django
    3.2's code graph (320k references) the read left 346 MB resident, 131 MB after this."""
    pa.default_memory_pool().release_unused()
    heap.trim()


def sorted_table(parts: Sequence[pa.Table], keys: Sequence[str]) -> pa.Table:
    """Scanned parts joined and sorted by `keys`."""
    merged = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    return merged.sort_by([(k, "ascending") for k in keys])


def sorted_columns(parts: Sequence[pa.Table], keys: Sequence[str]) -> dict[str, list[Any]]:
    """Scanned parts joined and sorted by `keys`, as Python lists per column."""
    merged = sorted_table(parts, keys)
    return {name: merged.column(name).to_pylist() for name in merged.column_names}


def count(table: Table, where: str | None = None) -> int:
    return int(table.count_rows(where) if where else table.count_rows())


def arrow_all(table: Table) -> pa.Table:
    return table.to_arrow()


def vector_matrix(data: pa.Table, dim: int) -> np.ndarray | None:
    """The `vector` column of an Arrow table as a writable (rows, dim) float32 matrix, a
    zero row where a row has no vector (null: see `upsert`)."""
    if not dim or "vector" not in data.column_names or data.num_rows == 0:
        return None
    column = data.column("vector").combine_chunks()
    if column.null_count:
        column = pc.fill_null(column, pa.scalar([0.0] * dim, type=column.type))
    flat = column.flatten().to_numpy(zero_copy_only=False)
    return np.array(flat.reshape(data.num_rows, dim), dtype=np.float32)


# -- writes ---------------------------------------------------------------------------


def add(table: Table, rows_: list[dict[str, Any]]) -> None:
    table.add(pa.Table.from_pylist(rows_, schema=table.schema))


def add_columns(table: Table, columns: Mapping[str, Sequence[Any]]) -> None:
    """Append rows given column by column (cheaper than row dicts for many small rows)."""
    table.add(pa.Table.from_pydict(dict(columns), schema=table.schema))


def upsert(
    table: Table, rows_: list[dict[str, Any]], dim: int,
    vectors: Mapping[str, Sequence[float]] | None, *, replace: bool,
) -> None:  # fmt: skip
    """Merge rows by id: new ids inserted, stored ones rewritten only when `replace`.
    A row with an entry in `vectors` goes in embedded; the others have no vector (null),
    not a row of zeros: distilled memories are searched by keyword alone, and on Django
    3.2 their zero rows were 97 of the index's 490 MB, written in its keyword phase."""
    for row in rows_:
        if dim:
            vector = (vectors or {}).get(row["id"])
            row["vector"] = list(vector) if vector is not None else None
            row["embedded"] = vector is not None
    data = pa.Table.from_pylist(rows_, schema=table.schema)
    merge = table.merge_insert("id").when_not_matched_insert_all()
    if replace:
        merge = merge.when_matched_update_all()
    merge.execute(data, on_bad_vectors=NO_VECTOR)


def vector_columns(
    vectors: Mapping[str, Sequence[float]], keys: Mapping[str, str] | None
) -> dict[str, list[Any]]:
    """The columns `update_columns` sets to store vectors: embedded, and their keys."""
    columns: dict[str, list[Any]] = {"id": list(vectors), "vector": list(vectors.values()),
                                     "embedded": [True] * len(vectors)}  # fmt: skip
    if keys is not None:
        columns["vector_key"] = [keys.get(i) for i in vectors]
    return columns


def vectors_by_key(table: Table, keys: Sequence[str]) -> dict[str, list[float]]:
    """Key → vector of embedded rows whose `vector_key` is one of `keys` (a table written
    before that column existed has none to give)."""
    if not keys or "vector_key" not in table.schema.names:
        return {}
    found: dict[str, list[float]] = {}
    for batch in batches(sorted(set(keys))):
        t = (table.search().where(f"embedded = true AND {in_list('vector_key', batch)}")
             .select(["vector_key", "vector"]).limit(None).to_arrow())  # fmt: skip
        for key, vector in zip(t.column("vector_key").to_pylist(),
                               t.column("vector").to_pylist(), strict=True):  # fmt: skip
            found.setdefault(key, vector)
    return found


def merge_on(table: Table, key: str, rows_: list[dict[str, Any]]) -> None:
    """Insert or wholly replace rows by `key`."""
    data = pa.Table.from_pylist(rows_, schema=table.schema)
    table.merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(data)


def update_columns(table: Table, columns: dict[str, list[Any]]) -> None:
    """Set some columns of the rows whose `id` is listed (the others keep theirs; ids not
    stored are ignored), without reading the rows first."""
    schema = pa.schema([table.schema.field(name) for name in columns])
    data = pa.Table.from_pydict(columns, schema=schema)
    table.merge_insert("id").when_matched_update_all().execute(data)


def replace_rows(table: Table, rows_: list[dict[str, Any]]) -> None:
    """Rewrite whole rows by id (ids not stored are ignored)."""
    data = pa.Table.from_pylist(rows_, schema=table.schema)
    table.merge_insert("id").when_matched_update_all().execute(data, on_bad_vectors=NO_VECTOR)


def update_ids(
    table: Table, column: str, ids: Sequence[str], values: dict[str, Any], also: str = ""
) -> None:
    """Set `values` on the rows whose `column` is in `ids` (and that match `also`)."""
    for batch in batches(list(ids)):
        table.update(where=in_list(column, batch) + also, values=values)


def update_where(table: Table, where: str, values: dict[str, Any]) -> None:
    table.update(where=where, values=values)


def delete_where(table: Table, where: str) -> None:
    table.delete(where)


def delete_ids(table: Table, column: str, ids: Sequence[str]) -> None:
    for batch in batches(list(ids)):
        table.delete(in_list(column, batch))


# -- maintenance ----------------------------------------------------------------------


# Tables compacted at once. After an index run of mongoose its six took a median 0.146 s one
# at a time, 0.107 s two at a time and 0.094 s all at once (0.084 / 0.068 / 0.069 s with the
# code graph's tables empty); two hold at most two tables' rewrites in memory.
_AT_ONCE = 2


# A table is worth compacting once it holds this many fragments of LanceDB's "small" (an add
# or an update makes one), once more than this share of its rows is deleted (LanceDB's own
# threshold for rewriting a fragment's deletions, here over the whole table), or, where
# compacting also drops versions older than a margin, once this many versions are older
# than it (deletes and index rebuilds add versions, not fragments, and the files only old
# versions hold stay until then). Compaction merges every fragment below its target, so a
# table of one large fragment and a new small one is rewritten whole, each run that changed
# anything; reads of a few fragments cost no more than of one, and rows written since an
# index was built are searched beside it until then.
_SMALL_FRAGMENTS = 8
_DELETED_SHARE = 0.1
_VERSIONS = 20


def worth_compacting(table: Table, older_than: timedelta | None = None) -> bool:
    """Whether compacting `table` (and dropping its versions older than `older_than`, when
    given) would rewrite or drop enough to matter (see `_SMALL_FRAGMENTS`): read from the
    manifests' statistics, without a scan."""
    if int(table.stats()["fragment_stats"]["num_small_fragments"]) >= _SMALL_FRAGMENTS:
        return True
    listed = table.list_versions()
    latest = max(listed, key=lambda v: int(v["version"]))["metadata"]
    held = int(latest.get("total_data_file_rows", 0))
    if held > 0 and int(latest.get("total_deletion_file_rows", 0)) > _DELETED_SHARE * held:
        return True
    if older_than is None:
        return False
    before = datetime.now() - older_than  # LanceDB gives a version's time naive, local
    return sum(1 for v in listed if v["timestamp"] < before) >= _VERSIONS


def compact(tables: Sequence[Table]) -> None:
    _each(tables, lambda table: table.optimize())


def housekeep(tables: Sequence[Table], older_than: timedelta, *, delete_unverified: bool = False
              ) -> None:  # fmt: skip
    """Compact and delete versions older than `older_than`. A reader still on a version that
    old would lose its files: keep a margin longer than any read."""
    with warnings.catch_warnings():  # lancedb warns about a zero margin; callers mean it
        warnings.filterwarnings("ignore", "optimize.cleanup_older_than=0", UserWarning)
        _each(tables, lambda table: table.optimize(
            cleanup_older_than=older_than, delete_unverified=delete_unverified))  # fmt: skip


def _each(tables: Sequence[Table], do: Callable[[Table], object]) -> None:
    """`do` to every table, two at a time (each is a dataset of its own, and LanceDB's work
    is off the interpreter's lock), in their order: the first (the chunks, the largest)
    beside the others in turn, so that two large tables are seldom rewritten at once. The
    first failure is raised once all are done, naming its table, the others' as notes."""
    if len(tables) < 2:
        for table in tables:
            do(table)
        return
    with ThreadPoolExecutor(_AT_ONCE, thread_name_prefix="memserver-optimize") as pool:
        running = [(table, pool.submit(do, table)) for table in tables]
    failures = [(t.name, error) for t, done in running if (error := done.exception()) is not None]
    if failures:
        (name, first), others = failures[0], failures[1:]
        first.add_note(f"(table {name!r})")
        for other, error in others:
            first.add_note(f"(and table {other!r}: {error!r})")
        raise first


def purge(tables: Sequence[Table]) -> None:
    """Compact every table and delete every older version and unreferenced file at once, so no
    byte of a rewritten or deleted row stays on disk (erasure): compaction rewrites a fragment
    holding such a row together with the fragment its update added. Only for a writer that
    holds the index's writer lock."""
    housekeep(tables, timedelta(0), delete_unverified=True)


def versions(table: Table) -> list[int]:
    return sorted(int(v["version"]) for v in table.list_versions())


# -- large indexes: an ANN index on the vectors, a B-tree on the ids ------------------------


def vector_index(table: Table) -> tuple[int, str]:
    """(rows covered, LanceDB index type) of the table's vector index; (0, "") without one."""
    for ix in table.list_indices():
        if "vector" in ix.columns:
            stats = table.index_stats(ix.name)
            if stats is None:
                return 0, ""
            return int(stats.num_indexed_rows), str(stats.index_type)
    return 0, ""


def vector_index_id(table: Table) -> str | None:
    """The id of the table's vector index (compaction writes it anew under another id)."""
    for ix in table.list_indices():
        if "vector" in ix.columns:
            return str(ix.index_uuid)
    return None


def vector_index_kind(rows_: int) -> str:
    """The vector index a table of `rows_` rows gets (LanceDB's `index_type` names)."""
    return "IVF_SQ" if rows_ >= _SQ_MIN_ROWS else "IVF_FLAT"


_EMBEDDED = "embedded = true"  # rows without a vector (null, or zeros in an older index)


def needs_vector_index(table: Table, min_rows: int, retrain: bool) -> bool:
    """Whether the table's embedded rows (not its rows: memories searched by keyword alone
    have no vector, and 68k of them made k-means fail) call for a vector index now."""
    rows_ = count(table, _EMBEDDED)
    if min_rows <= 0 or rows_ < min_rows:
        return False
    indexed, kind = vector_index(table)
    return not (2 * indexed > rows_ and kind == vector_index_kind(indexed) and not retrain)


def create_vector_index(table: Table) -> None:
    """IVF with 8-bit scalar quantisation, ~sqrt(rows) partitions. On the 10M-token scale
    corpus (47k chunks, hashing embedder) it matched IVF-PQ's recall@10 (0.96) with a
    quarter of the re-scoring and half the search time, and trained in 3 s instead of
    35 s. Below _SQ_MIN_ROWS rows IVF-FLAT: too few rows to train the quantiser on.
    A B-tree on `id` comes with it (evidence is read by id)."""
    from lancedb.index import BTree, IvfFlat, IvfSq

    rows_ = count(table, _EMBEDDED)
    partitions = max(1, min(4096, round(rows_**0.5)))
    config: Any = IvfFlat(distance_type="dot", num_partitions=partitions, max_iterations=10)
    if vector_index_kind(rows_) == "IVF_SQ":
        config = IvfSq(distance_type="dot", num_partitions=partitions, max_iterations=10)
    table.create_index("vector", replace=True, config=config)
    table.create_index("id", replace=True, config=BTree())


def ensure_lookup_indexes(table: Table, columns: Sequence[str], min_rows: int = 1) -> list[str]:
    """A B-tree on each of `columns` that has none yet, once the table holds `min_rows`
    rows; return the columns indexed now. A filter on an indexed column reads only its
    matching rows, and rows added later are scanned beside the index until `optimize`
    folds them in, so results never change, only their cost."""
    from lancedb.index import BTree

    if count(table) < max(1, min_rows):
        return []
    have = {c for ix in table.list_indices() for c in ix.columns}
    done = []
    for column in columns:
        if column not in have:
            table.create_index(column, replace=True, config=BTree())
            done.append(column)
    return done


def ann_search(
    table: Table, qv: np.ndarray, k: int, *, where: str | None, nprobes: int, refine: int
) -> list[tuple[str, float]]:
    """(id, dot product) of the k nearest rows (matching `where`, when given); with
    `refine` > 1 the k × refine best by the index are re-scored on the full vectors.
    `where` is applied to the hits first (prefiltering scans the filter columns of every
    row, +35 ms at 100k rows), and before the search only when that left fewer than k;
    even as a post-filter it costs a quarter of a search (13 ms of 52 at 348k chunks)."""
    result = None
    for prefilter in (False, True) if where else (False,):
        query = (
            table.search(np.asarray(qv, dtype=np.float32), vector_column_name="vector")
            .distance_type("dot").nprobes(nprobes).select(["id", "_distance"]).limit(k)
        )  # fmt: skip
        if where:
            query = query.where(where, prefilter=prefilter)
        if refine > 1:
            query = query.refine_factor(refine)
        result = query.to_arrow()
        if result.num_rows >= k:
            break
    assert result is not None
    ids = result.column("id").to_pylist()
    # LanceDB's dot distance is 1 - q·v; recall scores are q·v as in the in-memory path
    dist = result.column("_distance").to_pylist()
    return [(i, 1.0 - float(d)) for i, d in zip(ids, dist, strict=True)]


def indexed_tables(tables: Mapping[str, Table]) -> dict[str, str]:
    """Table name → its vector index id, for the tables that have one."""
    out = {}
    for name, table in tables.items():
        found = vector_index_id(table)
        if found is not None:
            out[name] = found
    return out


def ensure_vector_indexes(
    tables: Mapping[str, Table], dim: int, min_rows: int, retrain: Collection[str] = ()
) -> list[str]:
    """Give each vector table holding `min_rows` rows or more a vector index (retrained once
    the table has doubled since training, when an older release built another kind, or when
    named in `retrain`); return the tables indexed now. Rows written later are searched
    exactly beside the index (and folded into it by `optimize`), so results stay complete."""
    done = []
    for name, table in tables.items():
        if dim and needs_vector_index(table, min_rows, name in retrain):
            with lance_errors(f"create the vector index of {name}"):
                create_vector_index(table)
            done.append(name)
    return done
