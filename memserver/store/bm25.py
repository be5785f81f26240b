"""tantivy adapter (the sole tantivy importer): BM25 over chunks.

Neither tantivy's analysers nor LanceDB's split identifiers, so we do it
ourselves (`memserver.core.text.analysed`) and hand tantivy text that already
holds `parse http response` beside `parsehttpresponse`; tantivy then lowercases
and stems it. Queries are built from our own word list, so user text never
reaches tantivy's query parser unescaped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memserver.core.errors import StoreError
from memserver.core.text import analysed, words
from memserver.core.types import Chunk, Memory
from memserver.store.failures import READ_ONLY, failure_hint

_HEAP = 64_000_000
# fields searched, with boosts: the name (path + symbol) counts more than the body
_FIELDS = {"body": 1.0, "name": 2.0}
STOP_WORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or that the this to "
    "was were what when where which who why will with does do we our you your can".split()
)
# a query also drops the rest of the function words a question is framed in (pronouns,
# auxiliaries, modals): "What would Caroline's political leaning likely be?" asks about
# "political leaning"; on the DEV LoCoMo set R@10 0.793 -> 0.798, false abstention
# 0.091 -> 0.075. Indexed text and salience keep the shorter list.
QUERY_STOP_WORDS = STOP_WORDS | frozenset(
    "he she her his him they them their me my did been being had would could should might "
    "likely probably perhaps maybe".split()
)


def _error(action: str, exc: BaseException) -> StoreError:
    return StoreError(
        f"tantivy failed to {action}: {type(exc).__name__}: {str(exc)[:300]}",
        hint=failure_hint(
            exc, "run `memserver doctor --repair` (it rebuilds the keyword index from LanceDB)"
        ),
    )


def _read_only(path: Path) -> bool:
    """tantivy opens a lock file for writing even to read; it cannot here."""
    locks = [path / n for n in (".tantivy-meta.lock", ".tantivy-writer.lock")]
    return not os.access(path, os.W_OK) or any(
        p.exists() and not os.access(p, os.W_OK) for p in locks
    )


def query_terms(text: str) -> list[str]:
    """Content words of a query, identifiers split, stop words dropped, order kept."""
    seen: dict[str, None] = {}
    for word in analysed(text).split():
        if word not in QUERY_STOP_WORDS and len(word) > 1:
            seen.setdefault(word, None)
    if not seen:  # a query of only stop words still searches for them
        seen = dict.fromkeys(w for w in words(text) if len(w) > 1)
    return list(seen)


class Bm25Index:
    def __init__(self, path: Path) -> None:
        import tantivy

        self._tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("view", tokenizer_name="raw")
        builder.add_text_field("path", tokenizer_name="raw")
        builder.add_text_field("name", tokenizer_name="en_stem")
        builder.add_text_field("body", tokenizer_name="en_stem")
        schema = builder.build()
        self._scratch: Path | None = None
        try:
            path.mkdir(parents=True, exist_ok=True)
            if not (_read_only(path) and (path / "meta.json").exists()):
                self._index = tantivy.Index(schema, path=str(path), reuse=True)
            else:
                self._index = self._open_read_only(schema, path)
        except Exception as exc:
            raise _error(f"open the keyword index in {path}", exc) from exc
        self._writer: Any = None

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
            try:
                self._writer = self._index.writer(heap_size=_HEAP, num_threads=1)
                # a writer killed mid-commit leaves files the next commit may create again
                # under the same name (`<segment>.<opstamp>.del`): tantivy then fails with
                # FileAlreadyExists. Its own clean-up runs only after a commit; run it now.
                self._writer.garbage_collect_files()
            except Exception as exc:
                raise _error("open a writer", exc) from exc
        return self._writer

    def add(self, chunks: Iterable[Chunk]) -> None:
        writer = self._w()
        try:
            for c in chunks:
                writer.delete_documents_by_term("id", c.id)  # upsert
                writer.add_document(
                    self._tantivy.Document(
                        id=c.id,
                        view="chunk",
                        path=c.path,
                        name=analysed(f"{c.path} {c.symbol}"),
                        body=analysed(c.text),
                    )
                )
        except Exception as exc:
            raise _error("add documents", exc) from exc

    def add_memories(self, memories: Iterable[Memory]) -> None:
        writer = self._w()
        try:
            for m in memories:
                writer.delete_documents_by_term("id", m.id)
                writer.add_document(
                    self._tantivy.Document(
                        id=m.id, view="memory", path="", name=analysed(m.key),
                        body=analysed(m.text),
                    )
                )  # fmt: skip
        except Exception as exc:
            raise _error("add memory documents", exc) from exc

    def delete(self, ids: Iterable[str]) -> None:
        writer = self._w()
        try:
            for chunk_id in ids:
                writer.delete_documents_by_term("id", chunk_id)
        except Exception as exc:
            raise _error("delete documents", exc) from exc

    def commit(self) -> None:
        if self._writer is None:
            return
        try:
            self._writer.commit()
            self._writer.wait_merging_threads()
        except Exception as exc:
            raise _error("commit", exc) from exc
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
        return int(searcher.search(only, limit=1, count=True).count)  # type: ignore[attr-defined]

    def search(self, terms: Sequence[str], k: int, view: str = "chunk") -> list[tuple[str, float]]:
        """BM25 over name and body for any of the terms in one view: (id, score), best first."""
        if not terms:
            return []
        tv = self._tantivy
        try:
            text = self._index.parse_query(" ".join(terms), list(_FIELDS), field_boosts=_FIELDS)
            only = tv.Query.term_query(self._index.schema, "view", view)
            query = tv.Query.boolean_query([(tv.Occur.Must, only), (tv.Occur.Must, text)])
            searcher = self._index.searcher()
            hits = searcher.search(query, limit=k).hits
            return [(searcher.doc(addr)["id"][0], float(score)) for score, addr in hits]
        except ValueError as exc:
            raise _error("run a keyword search", exc) from exc
