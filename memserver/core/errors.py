"""Errors that say what failed and what to do about it.

MemserverError                 every error we raise; `hint` says what to do
├── ConfigError                a setting in a config file or MEMSERVER_* variable is invalid
├── BadRequest                 an argument of a call (tool, command, API) is invalid
├── PathError                  a root or path does not exist / is not usable
├── IndexMissing               no index at the index dir yet
├── IndexMismatch              index built by another embedder or schema
├── IndexLocked                another process holds the writer lock
├── StoreError                 LanceDB / tantivy / disk failure (read-only, full, corrupt)
├── ModelUnavailable           the embedding model cannot be loaded
└── LlmError                   an optional model call failed; its caller falls back
"""

from __future__ import annotations

__all__ = [
    "BadRequest",
    "ConfigError",
    "IndexLocked",
    "IndexMismatch",
    "IndexMissing",
    "LlmError",
    "MemserverError",
    "ModelUnavailable",
    "PathError",
    "StoreError",
]


class MemserverError(Exception):
    """Base error. `str(err)` is the message; `hint` tells the user the fix."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(MemserverError):
    exit_code = 2


class BadRequest(MemserverError):
    exit_code = 2


class PathError(MemserverError):
    exit_code = 2


class IndexMissing(MemserverError):
    exit_code = 3


class IndexMismatch(MemserverError):
    exit_code = 4


class IndexLocked(MemserverError):
    exit_code = 5


class StoreError(MemserverError):
    exit_code = 6


class ModelUnavailable(MemserverError):
    exit_code = 7


class LlmError(MemserverError):
    """A model call failed; callers fall back to their deterministic step."""
