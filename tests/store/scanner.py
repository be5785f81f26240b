"""An independent look for text anywhere an index keeps bytes (for the erasure tests).

It does not trust the store's own reads: it opens every version of every LanceDB table
still on disk and reads every string column, asks tantivy for the terms, and searches the
raw bytes of every file under the index folder and inside an export artifact.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import lancedb
import pyarrow as pa
import tantivy
import zstandard


def _strings(table: pa.Table) -> Iterator[str]:
    for column in table.columns:
        kind = column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            yield from (v for v in column.to_pylist() if v)
        elif pa.types.is_list(kind) and pa.types.is_string(kind.value_type):
            yield from (x for v in column.to_pylist() if v for x in v if x)
        elif pa.types.is_struct(kind):
            yield from (str(v) for v in column.to_pylist() if v)


def in_table_versions(index_dir: Path, phrase: str) -> list[str]:
    """`table@version` for every version of every table whose rows hold `phrase`."""
    needle = phrase.lower()
    db = lancedb.connect(str(index_dir / "lance"))
    hits = []
    for name in db.list_tables().tables:
        table = db.open_table(name)
        for version in sorted(int(v["version"]) for v in table.list_versions()):
            table.checkout(version)
            if any(needle in s.lower() for s in _strings(table.to_arrow())):
                hits.append(f"{name}@{version}")
        table.checkout_latest()  # type: ignore[no-untyped-call]
    return hits


def in_keyword_index(index_dir: Path, terms: list[str]) -> list[str]:
    """The terms a tantivy search still finds documents for (name or body), in every
    keyword index under the folder (the chunks' and the whole files')."""
    found = []
    for meta in sorted(index_dir.glob("*/meta.json")):
        if meta.parent.name == "lance":
            continue
        index = tantivy.Index.open(str(meta.parent))
        index.reload()
        searcher = index.searcher()
        for term in terms:
            for field in ("body", "name"):
                query = tantivy.Query.term_query(index.schema, field, term.lower())
                if searcher.search(query, limit=1).hits:
                    found.append(f"{meta.parent.name}/{field}:{term}")
    assert found or (index_dir / "bm25" / "meta.json").exists(), "no keyword index found"
    return found


def in_files(folder: Path, phrase: str) -> list[str]:
    """Files under `folder` whose raw bytes hold `phrase` (any case)."""
    needle = phrase.lower().encode()
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and needle in p.read_bytes().lower()
    )


def in_artifact(archive: Path, phrase: str) -> list[str]:
    """Members of an export artifact whose bytes hold `phrase` (any case)."""
    needle = phrase.lower().encode()
    data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(archive.read_bytes())).read()
    hits = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        for member in tar:
            body = tar.extractfile(member) if member.isfile() else None
            if body is not None and needle in body.read().lower():
                hits.append(member.name)
    return hits
