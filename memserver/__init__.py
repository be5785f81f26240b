"""memserver: a local MCP memory of whole codebases and of what agents learned in them.

The public Python surface (pinned by a test): an `Engine` over one project root and index,
the request values it takes, the results it gives, and the error tree.

    from memserver import Engine
    engine = Engine("path/to/repo")
    engine.index()
    result = engine.recaller().recall("where are failed requests retried?")
"""

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
