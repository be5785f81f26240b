"""What the review page holds for its whole life: where its engine, store and recaller
come from, and the views over them.

Two sources. `memserver ui` owns one engine and its store (`OwnIndex`); the recaller (the
query model and the recall snapshot) loads in a background thread at start, so the first
page answers at once and the first search waits only for what is left. Under `memserver
serve --transport http` the page is a route of the MCP server and borrows the server's
loaded engine, store and recaller (`Shared`, over anything with the server backend's
`ready()`), so there is one set of them in the process, reloaded together when the index
is rebuilt. Either way every write goes through the services the MCP tools use, as actor
`ui`.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memserver.engine import Engine
    from memserver.memory.consolidate import Consolidator
    from memserver.memory.service import MemoryService
    from memserver.retrieve.recall import Recaller
    from memserver.store.browse import Browser
    from memserver.store.index import IndexStore

__all__ = ["ACTOR", "OwnIndex", "Ready", "Shared", "Source", "UiState"]

ACTOR = "ui"
WARM_UP_QUERY = "where is the main entry point"
logger = logging.getLogger("memserver.ui")


class Source(Protocol):
    """Where the page's engine, store and recaller come from."""

    def parts(self) -> tuple[Engine, IndexStore]: ...

    def recaller(self) -> Recaller: ...

    def warm_up(self) -> None: ...


class OwnIndex:
    """One engine and its store, opened now (no index: the error says how to make one)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store: IndexStore = engine.open_store()
        self._recaller: Recaller | None = None
        self._lock = threading.Lock()

    def parts(self) -> tuple[Engine, IndexStore]:
        return self.engine, self.store

    def recaller(self) -> Recaller:
        with self._lock:
            if self._recaller is None:
                recaller = self.engine.recaller(store=self.store)
                recaller.snapshots()  # read the snapshot now, not during the first search
                self._recaller = recaller
            return self._recaller

    def warm_up(self) -> None:
        """Load the recaller and the query model in the background (one real query)."""

        def warm() -> None:
            try:
                self.recaller().recall(WARM_UP_QUERY, k=1)
            except Exception:  # the first search reports whatever failed
                logger.exception("memserver ui: loading the recall pipeline failed")

        threading.Thread(target=warm, name="memserver-ui-warm-up", daemon=True).start()


class Ready(Protocol):
    """The MCP server's backend, as far as the page needs it (`server.backend.Backend`)."""

    def ready(self) -> tuple[Engine, Recaller, IndexStore]: ...


class Shared:
    """The MCP server's engine, store and recaller: loaded (and reloaded) by the server."""

    def __init__(self, backend: Ready) -> None:
        self.backend = backend

    def parts(self) -> tuple[Engine, IndexStore]:
        engine, _, store = self.backend.ready()
        return engine, store

    def recaller(self) -> Recaller:
        return self.backend.ready()[1]

    def warm_up(self) -> None:
        """Nothing to do: the server starts loading when it starts."""


class UiState:
    def __init__(self, source: Engine | Source) -> None:
        from memserver.engine import Engine

        self.source: Source = OwnIndex(source) if isinstance(source, Engine) else source
        self._browser: tuple[IndexStore, Browser] | None = None

    @property
    def engine(self) -> Engine:
        return self.source.parts()[0]

    @property
    def store(self) -> IndexStore:
        return self.source.parts()[1]

    @property
    def browser(self) -> Browser:
        """The read views over the current store (a new one after the index was rebuilt)."""
        engine, store = self.source.parts()
        held = self._browser
        if held is None or held[0] is not store:
            held = self._browser = (store, engine.browser(store))
        return held[1]

    def warm_up(self) -> None:
        self.source.warm_up()

    def recaller(self) -> Recaller:
        return self.source.recaller()

    def memory_service(self) -> MemoryService:
        engine, store = self.source.parts()
        return engine.memory_service(embedder=self.recaller().embedder, store=store, actor=ACTOR)

    def consolidator(self) -> Consolidator:
        return self.engine.consolidator()
