"""The server's one handle on the engine: loaded in the background, retried after a failure.

Importing the stores and loading the models takes seconds, while a client expects
`initialize` and `tools/list` to answer at once. So the server calls `warm_up()` when
it starts, and every call waits on the same lock until the engine is ready. A failed
load is not remembered: the next call tries again, so an index created (or a model
cached) after the server started is picked up without a restart. Snapshots of the
index reload by themselves when the stores change (see `store.snapshot`).

All methods block; the server runs them in worker threads. No MCP types in here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memserver.core import render
from memserver.core.errors import IndexMissing, MemserverError
from memserver.core.requests import Filters, Note, Scope, caller_scope, visible

if TYPE_CHECKING:
    from indexers.watcher import Watcher
    from memserver.engine import Engine
    from memserver.navigate.service import Navigator
    from memserver.retrieve.attribute import Attributor
    from memserver.retrieve.recall import Recaller
    from memserver.store.index import IndexStore

logger = logging.getLogger("memserver.server")

WARM_UP_QUERY = "where is the main entry point"


class Backend:
    def __init__(
        self,
        root: str | Path | None,
        index_dir: str | Path | None = None,
        *,
        embedder_flag: str | None = None,
        env: Mapping[str, str] | None = None,
        pinned_scope: Scope = (),
        token_scope: Callable[[], Scope | None] | None = None,
    ) -> None:
        self.root = root
        # who the caller is: a scope pinned for every caller (`serve --scope`), or the one
        # of the bearer token that authenticated this request; a call may only narrow it
        self.pinned_scope = pinned_scope
        self.token_scope = token_scope
        self.index_dir = index_dir
        self.embedder_flag = embedder_flag
        self.env = env
        self.lock = threading.Lock()  # held while loading; every call waits on it
        self._engine: Engine | None = None
        self._recaller: Recaller | None = None
        self._store: IndexStore | None = None
        self._attributor: Attributor | None = None
        self._attr_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.last_error: str | None = None
        self._watcher: Watcher | None = None
        self._navigation: tuple[IndexStore, Navigator] | None = None  # code graph tools
        self._nav_lock = threading.Lock()

    # -- loading -------------------------------------------------------------------

    def warm_up(self) -> None:
        """Start loading in a daemon thread (once); calls made meanwhile wait for it."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._warm, name="memserver-warm-up", daemon=True
            )
            self._thread.start()

    def _warm(self) -> None:
        try:
            with self.lock:
                recaller = self._load()
                # one real query loads the query model (and reranker) before a client waits on it
                recaller.recall(WARM_UP_QUERY, k=1)
            logger.info("memserver: index loaded from %s", self.index_dir or self.root or ".")
        except MemserverError as err:
            logger.warning("memserver: not ready yet: %s", err)
            return
        except Exception:  # a thread must not die silently; the next call reports it
            logger.exception("memserver: loading the index failed")
            return
        # then the code graph's reading, which recall does not need, under its view's lock,
        # not the engine's: calls go on meanwhile, and a navigation call waits for this
        # reading instead of making its own. Django 3.2's takes 1.8 s, which the first
        # `symbol` or `outline` would otherwise wait for.
        try:
            self._navigator().graph()
        except Exception as err:  # the navigation call that needs it reports the failure
            logger.warning("memserver: reading the code graph failed: %s", err)

    def _load(self) -> Recaller:
        """The recaller, building engine and recaller on first use (caller holds the lock)."""
        if self._recaller is not None:
            return self._recaller
        from memserver.engine import Engine

        try:
            engine = Engine(
                self.root, self.index_dir, embedder_flag=self.embedder_flag, env=self.env
            )
            store = engine.open_store()
            recaller = engine.recaller(store=store)
            recaller.snapshots()  # read the snapshot now, not during the first query
        except IndexMissing as exc:
            if self._watcher is None:
                self.last_error = str(exc)
                raise
            self.last_error = "the first index is being built"
            raise IndexMissing(
                f"the index of {self.root or '.'} is being built (serve --watch started its first "
                "run)",
                hint="ask again in a few seconds: keyword search is ready first",
            ) from exc
        except Exception as exc:
            self.last_error = str(exc)
            raise
        self._engine, self._recaller, self._store, self.last_error = engine, recaller, store, None
        return recaller

    def ready(self) -> tuple[Engine, Recaller, IndexStore]:
        """(engine, recaller, store), waiting for a load in progress or loading now."""
        with self.lock:
            if self._recaller is not None and self._replaced():
                logger.info("memserver: the index was rebuilt or removed; reloading")
                self._engine = self._recaller = self._store = self._attributor = None
            recaller = self._load()
            assert self._engine is not None and self._store is not None
            return self._engine, recaller, self._store

    def _replaced(self) -> bool:
        """Whether the loaded index was rebuilt (maybe with another embedder) or removed.

        Edits are followed by the recall view itself; a rebuild changes what the engine
        was built for, so it needs a fresh one. One small JSON read per call.
        """
        from memserver.store.meta import read_meta

        assert self._engine is not None and self._store is not None
        try:
            meta = read_meta(self._engine.index_dir)
        except MemserverError:
            return True
        loaded = self._store.meta
        key = ("created_at", "embedder", "dim", "schema_version")
        return meta is None or any(getattr(meta, k) != getattr(loaded, k) for k in key)

    @property
    def state(self) -> str:
        if self._recaller is not None:
            return "ready"
        if self.last_error is not None:
            return "not ready: " + self.last_error.splitlines()[0]
        return "loading"

    def scope_for(self, requested: Scope = ()) -> Scope:
        """The scope one call acts in (see `core.requests.caller_scope`)."""
        token = self.token_scope() if self.token_scope is not None else None
        return caller_scope(token if token is not None else self.pinned_scope, requested)

    # -- operations ----------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        budget_tokens: int | None,
        paths: tuple[str, ...] = (),
        languages: tuple[str, ...] = (),
        kinds: tuple[str, ...] = (),
        include_memories: bool = True,
        scope: Scope = (),
        explain: bool = False,
        format: str = "chunks",
    ) -> tuple[str, dict[str, Any]]:
        """(the answer as text, the same as data), each within the budget."""
        scope = self.scope_for(scope)
        engine, recaller, store = self.ready()
        result = recaller.recall(
            query,
            budget_tokens=budget_tokens,
            filters=Filters(paths, languages, kinds, scope),
            include_memories=include_memories,
            explain=explain,
            format=format,
        )
        self._attribution(engine, recaller, store).note_evidence(result.evidence)  # loaded
        return render.recall_text(result, explain), render.recall_dict(result, explain)

    def _attribution(self, engine: Engine, recaller: Recaller, store: IndexStore) -> Attributor:
        """The attributor, sharing the recaller's store and query model (built once)."""
        with self._attr_lock:
            if self._attributor is None or self._attributor.store is not store:
                self._attributor = engine.attributor(store=store, embedder=recaller.embedder)
            return self._attributor

    def remember(self, note: Note) -> dict[str, Any]:
        note = replace(note, scope=self.scope_for(note.scope))
        engine, recaller, _ = self.ready()
        service = engine.memory_service(embedder=recaller.embedder)
        return dict(service.remember(note).to_dict())

    def forget(
        self, ids: tuple[str, ...], paths: tuple[str, ...], reason: str, erase: bool,
        scope: Scope = (),
    ) -> dict[str, Any]:  # fmt: skip
        scope = self.scope_for(scope)
        engine, recaller, _ = self.ready()
        service = engine.memory_service(embedder=recaller.embedder)
        found = service.forget(ids, paths, reason=reason, erase=erase, scope=scope)
        return dict(found.to_dict())

    def attribute(self, answer: str, evidence_ids: tuple[str, ...], scope: Scope = ()
                  ) -> dict[str, Any]:  # fmt: skip
        scope = self.scope_for(scope)
        attributor = self._attribution(*self.ready())
        return dict(attributor.attribute(answer, evidence_ids, scope).to_dict())

    def watch(self) -> None:
        """Keep the index fresh from file events, in background threads, with a writer engine
        of its own (it builds the index first when there is none)."""
        from memserver.engine import Engine

        engine = Engine(self.root, self.index_dir, embedder_flag=self.embedder_flag, env=self.env)
        self._watcher, _ = engine.watch()

    def stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    def status(self) -> dict[str, Any]:
        engine, _, store = self.ready()
        status = replace(engine.status(store), server={"engine": self.state})
        w = self._watcher
        if w is not None:
            status = replace(status, watcher={
                "state": "on", "batches": w.batches, "pending_changes": w.queue.pending(),
                "errors": w.errors, "last_error": w.last_error,
            })  # fmt: skip
        return status.to_dict()

    def chunk(self, chunk_id: str) -> dict[str, Any] | None:
        """A current chunk the caller may see (a forgotten note's is gone)."""
        scope = self.scope_for()
        _, _, store = self.ready()
        found = store.chunks.get([chunk_id]).get(chunk_id)
        current = store.chunks.states_of([chunk_id]).get(chunk_id, False)
        if found is None or not current or not visible(found[0].scope, scope):
            return None
        c, embedded = found
        return {
            "id": c.id, "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
            "symbol": c.symbol, "kind": c.kind, "language": c.language, "origin": c.origin,
            "header": c.header, "tokens": c.tokens, "embedded": embedded, "text": c.text,
        }  # fmt: skip

    def memory(self, memory_id: str) -> dict[str, Any] | None:
        """A memory the caller may see that is not forgotten."""
        scope = self.scope_for()
        _, _, store = self.ready()
        m = store.memories.get([memory_id]).get(memory_id)
        if m is None or m.status == "forgotten" or not visible(m.scope, scope):
            return None
        return {
            "id": m.id, "type": m.type, "key": m.key, "text": m.text, "status": m.status,
            "source_ids": list(m.source_ids), "entities": list(m.entities),
            "distiller": m.distiller,
        }  # fmt: skip

    # -- the code graph: outline, symbol, references, neighbors -----------------------

    def _navigator(self) -> Navigator:
        """The navigator over the loaded store (built once per store)."""
        engine, _, store = self.ready()
        with self._nav_lock:
            if self._navigation is None or self._navigation[0] is not store:
                self._navigation = (store, engine.navigator(store))
            return self._navigation[1]

    def outline(self, path: str | None, budget_tokens: int | None) -> tuple[str, dict[str, Any]]:
        found = self._navigator().outline(path, budget_tokens)
        return found.text, found.data

    def symbol(self, name: str, budget_tokens: int | None) -> tuple[str, dict[str, Any]]:
        found = self._navigator().symbol(name, budget_tokens)
        return found.text, found.data

    def references(self, name_or_id: str, kinds: tuple[str, ...], budget_tokens: int | None
                   ) -> tuple[str, dict[str, Any]]:  # fmt: skip
        found = self._navigator().references(name_or_id, kinds, budget_tokens)
        return found.text, found.data

    def neighbors(self, item_id: str, depth: int, budget_tokens: int | None
                  ) -> tuple[str, dict[str, Any]]:  # fmt: skip
        found = self._navigator().neighbors(item_id, depth, budget_tokens)
        return found.text, found.data
