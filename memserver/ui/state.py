"""What the review page holds for its whole life: one engine, one store, its views.

The recaller (the query model and the recall snapshot) loads in a background thread at
start, so the first page answers at once and the first search waits only for what is
left. Every write goes through the services the MCP tools use, as actor `ui`.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memserver.engine import Engine
    from memserver.memory.consolidate import Consolidator
    from memserver.memory.service import MemoryService
    from memserver.retrieve.recall import Recaller
    from memserver.store.browse import Browser
    from memserver.store.index import IndexStore

__all__ = ["ACTOR", "UiState"]

ACTOR = "ui"
WARM_UP_QUERY = "where is the main entry point"
logger = logging.getLogger("memserver.ui")


class UiState:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.store: IndexStore = engine.open_store()  # fails early: no index, no page
        self.browser: Browser = engine.browser(self.store)
        self._recaller: Recaller | None = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the recaller and the query model in the background (one real query)."""

        def warm() -> None:
            try:
                self.recaller().recall(WARM_UP_QUERY, k=1)
            except Exception:  # the first search reports whatever failed
                logger.exception("memserver ui: loading the recall pipeline failed")

        threading.Thread(target=warm, name="memserver-ui-warm-up", daemon=True).start()

    def recaller(self) -> Recaller:
        with self._lock:
            if self._recaller is None:
                recaller = self.engine.recaller(store=self.store)
                recaller.snapshots()  # read the snapshot now, not during the first search
                self._recaller = recaller
            return self._recaller

    def memory_service(self) -> MemoryService:
        return self.engine.memory_service(
            embedder=self.recaller().embedder, store=self.store, actor=ACTOR
        )

    def consolidator(self) -> Consolidator:
        return self.engine.consolidator()
