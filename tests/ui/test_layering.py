"""The review page is an edge like the server and the CLI: it reads through the browse
read model and the engine, writes through the engine's services, and imports nothing
else of ours (type-only imports aside; see tests/test_architecture.py)."""

from __future__ import annotations

from tests.test_architecture import _edges, _layer

# the read model it renders, and the HTTP transport's checks it shares (Host/Origin, tokens)
ALLOWED_MODULES = {"memserver.store.browse", "memserver.server.transports",
                   "memserver.server.guard", "memserver.server.bearer"}  # fmt: skip


def test_the_review_page_imports_only_the_engine_core_and_its_read_model() -> None:
    wrong = [
        (module, target)
        for module, targets in _edges().items()
        if _layer(module) == "ui"
        for target in targets
        if _layer(target) not in ("ui", "core", "engine") and target not in ALLOWED_MODULES
    ]
    assert wrong == []


def test_nothing_but_the_cli_imports_the_review_page() -> None:
    wrong = [
        (module, target)
        for module, targets in _edges().items()
        if _layer(module) not in ("ui", "cli")
        for target in targets
        if _layer(target) == "ui"
    ]
    assert wrong == []
