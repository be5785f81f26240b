"""tantivy adapter (the sole tantivy importer): BM25 over chunks and memories (`KeywordIndex`),
and, in an index of its own, over whole files (`FileDocument`s: the file-level arm).

Neither tantivy's analysers nor LanceDB's split identifiers, so we do it
ourselves (`memserver.text.terms.analysed`) and hand tantivy text that already
holds `parse http response` beside `parsehttpresponse`; tantivy then lowercases
and stems it. Queries are built from our own word list, so user text never
reaches tantivy's query parser unescaped. Every failure comes out of
`tantivy_errors` as a StoreError with the fix.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memserver.core.errors import StoreError
from memserver.core.types import Chunk, Memory
from memserver.core.writes import FileDocument
from memserver.store.failures import DISK_FULL, READ_ONLY, failure_hint
from memserver.text.terms import analysed

__all__ = ["Bm25Index", "tantivy_errors"]

_HEAP = 64_000_000
# fields searched, with boosts: the name (path + symbol) counts more than the body
_FIELDS = {"body": 1.0, "name": 2.0}
_LOCKS = (".tantivy-meta.lock", ".tantivy-writer.lock")
_VIEWS = ("chunk", "memory", "file")


_REPAIR = "run `memserver doctor --repair` (it rebuilds the keyword index from LanceDB)"


@contextmanager
def tantivy_errors(action: str, where: Path | None = None) -> Iterator[None]:
    """Map any tantivy (or OS) failure inside the block to a StoreError with the fix.
    `where`: the index folder, whose disk is looked at when tantivy does not say why."""
    try:
        yield
    except StoreError:
        raise
    except BaseException as exc:
        # a damaged segment makes tantivy panic: pyo3 raises PanicException, which derives
        # from BaseException; interrupts and exits pass through
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise
        hint = failure_hint(exc, _REPAIR)
        if hint == _REPAIR and where is not None and _short_of_room(where):
            hint = f"{DISK_FULL} (if it has room: {_REPAIR})"
        raise StoreError(
            f"tantivy failed to {action}: {type(exc).__name__}: {str(exc)[:300]}", hint=hint
        ) from exc


def _short_of_room(path: Path) -> bool:
    """Whether the disk holding `path` has less room than a writer's segment may take.
    tantivy's writer writes segments from a thread of its own: when that write fails for
    want of space, what reaches us is only "An index writer was killed ... (io::Error
    most likely)", without the OS error."""
    for folder in (path, *path.parents):
        try:
            st = os.statvfs(folder)
        except (OSError, AttributeError):  # not there yet; or no statvfs (Windows)
            continue
        return st.f_bavail * st.f_frsize < _HEAP
    return False


def _read_only(path: Path) -> bool:
    """tantivy opens a lock file for writing even to read; it cannot here."""
    locks = [path / n for n in _LOCKS]
    return not os.access(path, os.W_OK) or any(
        p.exists() and not os.access(p, os.W_OK) for p in locks
    )


class Bm25Index:
    def __init__(self, path: Path, *, optional: bool = False) -> None:
        """`optional`: an index that may not exist yet (the file index of an index made
        before it existed): a reader that cannot create it searches an empty one."""
        import tantivy

        self._tantivy = tantivy
        self.path = path
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("view", tokenizer_name="raw")
        builder.add_text_field("path", tokenizer_name="raw")
        builder.add_text_field("name", tokenizer_name="en_stem")
        builder.add_text_field("body", tokenizer_name="en_stem")
        schema = builder.build()
        self._scratch: Path | None = None
        if optional and not path.exists() and not os.access(path.parent, os.W_OK):
            self._index = tantivy.Index(schema)  # in memory, empty: nothing to find yet
            self._writer: Any = None
            return
        with tantivy_errors(f"open the keyword index in {path}", path):
            path.mkdir(parents=True, exist_ok=True)
            if not (_read_only(path) and (path / "meta.json").exists()):
                self._index = tantivy.Index(schema, path=str(path), reuse=True)
            else:
                self._index = self._open_read_only(schema, path)
        self._writer = None

    @property
    def read_only(self) -> bool:
        return self._scratch is not None

    def _open_read_only(self, schema: Any, path: Path) -> Any:
        """Read a read-only index through a scratch folder of links to its files, where
        tantivy can put its lock files. It sees the index as it was when opened."""
        scratch = self._scratch = Path(tempfile.mkdtemp(prefix="memserver-bm25-"))
        weakref.finalize(self, shutil.rmtree, scratch, ignore_errors=True)
        for entry in path.iterdir():
            if not entry.name.startswith(".tantivy-"):
                (scratch / entry.name).symlink_to(entry)
        return self._tantivy.Index(schema, path=str(scratch), reuse=True)

    def _w(self) -> Any:
        if self.read_only:
            raise StoreError("the keyword index is read-only: cannot change it", hint=READ_ONLY)
        if self._writer is None:
            with tantivy_errors("open a writer", self.path):
                self._writer = self._index.writer(heap_size=_HEAP, num_threads=1)
                # a writer killed mid-commit leaves files the next commit may create again
                # under the same name (`<segment>.<opstamp>.del`): tantivy then fails with
                # FileAlreadyExists. Its own clean-up runs only after a commit; run it now.
                self._writer.garbage_collect_files()
        return self._writer

    def _document(self, view: str, id_: str, path: str, name: str, body: str) -> Any:
        return self._tantivy.Document(
            id=id_, view=view, path=path, name=analysed(name), body=analysed(body)
        )

    def add(self, chunks: Iterable[Chunk]) -> None:
        writer = self._w()
        with tantivy_errors("add documents", self.path):
            for c in chunks:
                writer.delete_documents_by_term("id", c.id)  # upsert
                writer.add_document(
                    self._document("chunk", c.id, c.path, f"{c.path} {c.symbol}", c.text)
                )

    def add_memories(self, memories: Iterable[Memory]) -> None:
        writer = self._w()
        with tantivy_errors("add memory documents", self.path):
            for m in memories:
                writer.delete_documents_by_term("id", m.id)
                writer.add_document(self._document("memory", m.id, "", m.key, m.text))

    def add_files(self, documents: Iterable[FileDocument]) -> None:
        """Whole files (their path is their id), replacing what the index held for them."""
        writer = self._w()
        with tantivy_errors("add file documents", self.path):
            for d in documents:
                writer.delete_documents_by_term("id", d.path)
                writer.add_document(self._document("file", d.path, d.path, d.path, d.text))

    def delete(self, ids: Iterable[str]) -> None:
        writer = self._w()
        with tantivy_errors("delete documents", self.path):
            for doc_id in ids:
                writer.delete_documents_by_term("id", doc_id)

    def replace_all(self, chunks: Iterable[Chunk], memories: Iterable[Memory],
                    files: Iterable[FileDocument] = ()) -> None:  # fmt: skip
        """Drop every document and add these, in one commit: the old segments, with every
        term of deleted documents, are gone from disk once it commits (erasure)."""
        writer = self._w()
        with tantivy_errors("rebuild the keyword index", self.path):
            writer.delete_all_documents()
        self.add(chunks)
        self.add_memories(memories)
        self.add_files(files)
        self.commit()
        with tantivy_errors("drop the old keyword segments", self.path):
            writer = self._w()
            writer.garbage_collect_files()
        self.rollback()

    def dead_share(self) -> float:
        """The share of the documents in the index's segments that are deleted. tantivy
        drops a deleted document only when a merge rewrites its segment, and it does not
        merge for deletes alone, so they pile up as files change (a Django tree moved
        through nine releases: 53 % of 224k). They still count in BM25's document
        frequencies and lengths, so scores depend on the index's history and not only on
        what it holds, and every search reads them."""
        with tantivy_errors("count the deleted keyword documents"):
            searcher = self._index.searcher()
            stored = sum(searcher.doc_freq("view", view) for view in _VIEWS)  # deleted too
            alive = int(searcher.num_docs)
        return 1.0 - alive / stored if stored > alive else 0.0

    def commit(self) -> None:
        if self._writer is None:
            return
        try:
            with tantivy_errors("commit", self.path):
                self._writer.commit()
                self._writer.wait_merging_threads()
        finally:
            self._writer = None
        self._index.reload()

    def rollback(self) -> None:
        if self._writer is not None:
            try:
                self._writer.rollback()
            finally:
                self._writer = None

    def refresh(self) -> None:
        """See commits made since (by this or another process)."""
        self._index.reload()

    def all_ids(self, view: str = "chunk") -> set[str]:
        self._index.reload()
        searcher = self._index.searcher()
        n = searcher.num_docs
        if not n:
            return set()
        only = self._tantivy.Query.term_query(self._index.schema, "view", view)
        hits = searcher.search(only, limit=n).hits
        return {searcher.doc(addr)["id"][0] for _, addr in hits}

    def count(self, view: str | None = None) -> int:
        self._index.reload()
        searcher = self._index.searcher()
        if view is None:
            return int(searcher.num_docs)
        only = self._tantivy.Query.term_query(self._index.schema, "view", view)
        found: Any = searcher.search(only, limit=1, count=True)  # its stubs lack `count`
        return int(found.count)

    def search(self, terms: Sequence[str], k: int, view: str = "chunk") -> list[tuple[str, float]]:
        """BM25 over name and body for any of the terms in one view: (id, score), best first."""
        if not terms:
            return []
        tv = self._tantivy
        with tantivy_errors("run a keyword search"):
            text = self._index.parse_query(" ".join(terms), list(_FIELDS), field_boosts=_FIELDS)
            only = tv.Query.term_query(self._index.schema, "view", view)
            query = tv.Query.boolean_query([(tv.Occur.Must, only), (tv.Occur.Must, text)])
            return self._run(query, k)

    def search_weighted(self, terms: Sequence[tuple[str, float]], k: int, view: str = "chunk",
                        path: str | None = None) -> list[tuple[str, float]]:  # fmt: skip
        """BM25 as `search`, each term's score times its weight (how often a long query
        says it): terms of one weight are parsed together, boosted by it. `path`: only the
        documents of that file."""
        groups: dict[float, list[str]] = {}
        for term, weight in terms:
            if weight > 0:
                groups.setdefault(float(weight), []).append(term)
        if not groups:
            return []
        tv = self._tantivy
        with tantivy_errors("run a keyword search"):
            parts = []
            for weight, words in sorted(groups.items()):
                parsed = self._index.parse_query(" ".join(words), list(_FIELDS),
                                                 field_boosts=_FIELDS)  # fmt: skip
                q = parsed if weight == 1.0 else tv.Query.boost_query(parsed, weight)
                parts.append((tv.Occur.Should, q))
            schema = self._index.schema
            must = [(tv.Occur.Must, tv.Query.term_query(schema, "view", view)),
                    (tv.Occur.Must, tv.Query.boolean_query(parts))]  # fmt: skip
            if path is not None:
                must.append((tv.Occur.Must, tv.Query.term_query(schema, "path", path)))
            return self._run(tv.Query.boolean_query(must), k)

    def doc_frequencies(self, terms: Sequence[str], view: str = "chunk") -> tuple[int, list[int]]:
        """How many documents `view` holds, and how many of them have each term (in the
        name or the body, stemmed as they are indexed): a term's rarity in this index."""
        tv = self._tantivy
        with tantivy_errors("count keyword matches"):
            searcher = self._index.searcher()
            only = tv.Query.term_query(self._index.schema, "view", view)
            everything: Any = searcher.search(only, limit=1, count=True)  # stubs lack `count`
            total = int(everything.count)
            counts = []
            for term in terms:
                text = self._index.parse_query(term, list(_FIELDS))
                both = tv.Query.boolean_query([(tv.Occur.Must, only), (tv.Occur.Must, text)])
                found: Any = searcher.search(both, limit=1, count=True)
                counts.append(int(found.count))
            return total, counts

    def _run(self, query: Any, k: int) -> list[tuple[str, float]]:
        searcher = self._index.searcher()
        hits = searcher.search(query, limit=k).hits
        return [(searcher.doc(addr)["id"][0], float(score)) for score, addr in hits]
