"""memserver: a local MCP memory of whole codebases and of what agents learned in them.

The public Python surface (pinned by a test): an `Engine` over one project root and index,
the request values it takes, the results it gives, and the error tree.

    from memserver import Engine
    engine = Engine("path/to/repo")
    engine.index()
    result = engine.recaller().recall("where are failed requests retried?")

The names are imported when first used: a process that needs only a part of the package
(the tags worker, a CLI command) does not pay for the engine's imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memserver.core.errors import MemserverError
    from memserver.core.requests import Filters, Note
    from memserver.core.types import Evidence, IndexReport, RecallResult
    from memserver.engine import Engine

__version__ = "0.1.0"
__all__ = [
    "Engine",
    "Evidence",
    "Filters",
    "IndexReport",
    "MemserverError",
    "Note",
    "RecallResult",
    "__version__",
]
_HOMES = {
    "Engine": "memserver.engine",
    "Evidence": "memserver.core.types",
    "Filters": "memserver.core.requests",
    "IndexReport": "memserver.core.types",
    "MemserverError": "memserver.core.errors",
    "Note": "memserver.core.requests",
    "RecallResult": "memserver.core.types",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memserver' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: later lookups find it here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
