"""Checks on tool arguments, before any engine work: each failure says what to send instead.

Pure functions over plain values that raise `ConfigError`, so the server layer only
maps errors to results and the rules are testable without MCP.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memserver.core.errors import ConfigError

MIN_BUDGET, MAX_BUDGET = 256, 32_768
MAX_TEXT_BYTES = 256 * 1024
CHUNK_ID = re.compile(r"^c_[0-9a-f]{32}$")
MEMORY_ID = re.compile(r"^m_[0-9a-f]{32}$")
_DRIVE = re.compile(r"^[A-Za-z]:")


def check_size(name: str, value: str) -> None:
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise ConfigError(
            f"{name} is {size:,} bytes; the limit is {MAX_TEXT_BYTES:,} bytes (256 KB)",
            hint=f"send a shorter {name}: a question or a few identifiers are enough",
        )


def check_query(query: str) -> str:
    check_size("query", query)
    if not query.strip():
        raise ConfigError(
            "the query is empty",
            hint="ask in words (e.g. 'where are failed requests retried?') "
            "or name an identifier or file (e.g. 'RetryPolicy', 'config.py')",
        )
    return query


def check_budget(budget_tokens: int) -> int:
    if not MIN_BUDGET <= budget_tokens <= MAX_BUDGET:
        raise ConfigError(
            f"budget_tokens must be between {MIN_BUDGET} and {MAX_BUDGET}, got {budget_tokens}",
            hint="use 4096 (the default) for a focused answer; up to 32768 for a wide survey",
        )
    return budget_tokens


def check_path_filter(pattern: str) -> str:
    """A gitignore-style glob relative to the project root: never absolute, never `..`."""
    body = pattern.strip().removeprefix("!")
    if not body:
        raise ConfigError(
            "a path filter is empty", hint="drop it, or give a glob such as 'src/**/*.py'"
        )
    if body.startswith(("/", "\\", "~")) or _DRIVE.match(body):
        raise ConfigError(
            f"path filter {pattern!r} is absolute; filters are relative to the project root",
            hint="write it relative to the root, e.g. 'src/**/*.py' instead of '/repo/src/**/*.py'",
        )
    if ".." in re.split(r"[/\\]", body):
        raise ConfigError(
            f"path filter {pattern!r} leaves the project root ('..')",
            hint="only files inside the indexed project can be searched; "
            "use a glob below the root, e.g. 'lib/**'",
        )
    return pattern


def check_list(name: str, values: Sequence[str] | None) -> tuple[str, ...]:
    items = tuple(values or ())
    check_size(name, "\n".join(items))
    return items


def check_paths(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(check_path_filter(p) for p in check_list("paths", values))


def recall_filters(
    paths: Sequence[str] | None, languages: Sequence[str] | None, kinds: Sequence[str] | None
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(paths, languages, kinds) checked; blank languages and kinds are dropped."""
    checked = check_paths(paths)
    langs = tuple(x.strip() for x in check_list("languages", languages) if x.strip())
    kinds_ = tuple(x.strip() for x in check_list("kinds", kinds) if x.strip())
    return checked, langs, kinds_


def check_text(name: str, value: str) -> str:
    check_size(name, value)
    if not value.strip():
        raise ConfigError(f"the {name} is empty", hint=f"pass the {name} as text")
    return value


def check_ids(values: Sequence[str] | None, *, limit: int = 100) -> tuple[str, ...]:
    """Chunk or memory ids exactly as recall / remember returned them."""
    items = tuple(v.strip() for v in check_list("ids", values) if v.strip())
    if len(items) > limit:
        raise ConfigError(f"{len(items)} ids; at most {limit} per call",
                          hint="split the call, or pass only the ids you used")  # fmt: skip
    bad = [v for v in items if not (CHUNK_ID.match(v) or MEMORY_ID.match(v))]
    if bad:
        raise ConfigError(
            f"not a chunk or memory id: {', '.join(repr(b[:40]) for b in bad[:3])}",
            hint="use ids exactly as recall returned them: c_ + 32 hex (chunks, notes) or "
            "m_ + 32 hex (memories)",
        )
    return items


def check_id(value: str, pattern: re.Pattern[str], what: str, example: str) -> str:
    if not pattern.match(value):
        raise ConfigError(
            f"{value[:80]!r} is not a {what} id",
            hint=f"use an id exactly as recall returned it, e.g. {example!r}",
        )
    return value
