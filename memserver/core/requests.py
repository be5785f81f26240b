"""What callers ask for, and the checks every edge applies before any work is done.

The CLI, the MCP tools and the Python API build the same request values and run the same
checks, so a limit holds the same everywhere (`LIMITS`, the one table of them). Every check
raises `BadRequest` with a hint that says what to send instead. Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memserver.core.errors import BadRequest
from memserver.core.types import ForgetRule

__all__ = [
    "LIMITS",
    "SCOPE_KEYS",
    "Filters",
    "Limits",
    "Note",
    "RecallRequest",
    "Scope",
    "caller_scope",
    "check_budget",
    "check_forget_path",
    "check_id",
    "check_ids",
    "check_list",
    "check_path_filter",
    "check_paths",
    "check_query",
    "check_scope",
    "check_size",
    "check_text",
    "forget_matcher",
    "is_glob",
    "parse_event_time",
    "read_conversation",
    "visible",
]

SCOPE_KEYS = ("user", "session", "agent")
Scope = tuple[tuple[str, str], ...]  # sorted (key, value) pairs beyond the project


@dataclass(frozen=True, slots=True)
class Limits:
    """Every bound a request is checked against (one table, for every edge)."""

    budget_min: int = 256  # tokens of a recall result
    budget_max: int = 32_768
    text_bytes: int = 256 * 1024  # any one text argument (query, note, answer, list)
    ids_per_call: int = 100
    k_max: int = 200  # evidence items
    files_max: int = 1000  # distinct files in one answer


LIMITS = Limits()
CHUNK_ID = re.compile(r"^c_[0-9a-f]{32}$")
MEMORY_ID = re.compile(r"^m_[0-9a-f]{32}$")
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True, slots=True)
class Filters:
    """Hard constraints on what recall may return (fail closed)."""

    paths: tuple[str, ...] = ()  # gitignore-style globs relative to the root
    languages: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    scope: Scope = ()  # (user|session|agent, value)

    def __bool__(self) -> bool:
        return bool(self.paths or self.languages or self.kinds or self.scope)


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """One recall: the question and what shapes its answer (None: the configured default)."""

    query: str
    k: int | None = None
    budget_tokens: int | None = None
    max_files: int | None = None
    filters: Filters = field(default_factory=Filters)
    include_memories: bool = True
    rerank: bool = True


@dataclass(frozen=True, slots=True)
class Note:
    """A note to remember (or one turn of a conversation)."""

    text: str
    kind: str | None = None  # a memory type that every statement takes, or None to infer
    tags: tuple[str, ...] = ()
    event_time: datetime | None = None
    paths: tuple[str, ...] = ()  # files the note is about: it cites their current chunks
    scope: Scope = ()  # user / session / agent
    turn_id: str = ""  # set for a conversation turn: stored as a `turn` chunk with this id
    speaker: str = ""  # who said a turn: an entity of every statement made from it


def visible(item: Scope, caller: Scope) -> bool:
    """Scopes are an access boundary: an item stored with scope keys is visible only to a
    caller whose scope carries the same value for every one of them; a caller without a
    scope sees only project-wide items (code, and notes stored without a scope)."""
    have = dict(caller)
    return all(have.get(key) == value for key, value in item)


def caller_scope(pinned: Scope, requested: Scope) -> Scope:
    """The scope a call acts in: what the server pinned for this caller, narrowed by what
    the call asks (more keys); a call cannot change a pinned key, and omitting `scope`
    leaves the pin in force."""
    base = dict(pinned)
    for key, value in requested:
        if key in base and base[key] != value:
            raise BadRequest(
                f"scope {key}={value} is not yours: this server pins {key}={base[key]}",
                hint=f"leave {key} out of `scope` (the server fills it in), or use "
                f"{key}={base[key]}",
            )
        base[key] = value
    return tuple(sorted(base.items()))


def check_size(name: str, value: str) -> None:
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size > LIMITS.text_bytes:
        raise BadRequest(
            f"{name} is {size:,} bytes; the limit is {LIMITS.text_bytes:,} bytes (256 KB)",
            hint=f"send a shorter {name}: a question or a few identifiers are enough",
        )


def check_query(query: str) -> str:
    check_size("query", query)
    if not query.strip():
        raise BadRequest(
            "the query is empty",
            hint="ask in words (e.g. 'where are failed requests retried?') "
            "or name an identifier or file (e.g. 'RetryPolicy', 'config.py')",
        )
    return query


FORMATS = ("chunks", "map")


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise BadRequest(
            f"format must be one of {', '.join(FORMATS)}, got {fmt!r}",
            hint="'chunks' returns code; 'map' returns ranked files with their places "
            "(symbols and line spans) in about 1,000 tokens",
        )
    return fmt


def check_budget(budget_tokens: int) -> int:
    low, high = LIMITS.budget_min, LIMITS.budget_max
    if isinstance(budget_tokens, bool) or not low <= budget_tokens <= high:
        raise BadRequest(
            f"budget_tokens must be between {low} and {high}, got {budget_tokens}",
            hint=f"use 4096 (the default) for a focused answer; up to {high} for a wide survey",
        )
    return budget_tokens


def check_path_filter(pattern: str) -> str:
    """A gitignore-style glob relative to the project root: never absolute, never `..`."""
    body = pattern.strip().removeprefix("!")
    if not body:
        raise BadRequest(
            "a path filter is empty", hint="drop it, or give a glob such as 'src/**/*.py'"
        )
    _inside_root(
        pattern, body, "path filter", "filters",
        absolute="write it relative to the root, e.g. 'src/**/*.py' instead of "
        "'/repo/src/**/*.py'",
        outside="only files inside the indexed project can be searched; use a glob below "
        "the root, e.g. 'lib/**'",
    )  # fmt: skip
    return pattern


def _inside_root(pattern: str, body: str, noun: str, plural: str, *, absolute: str,
                 outside: str) -> None:  # fmt: skip
    """Refuse an absolute pattern or one that climbs out with `..` (hints: the fixes)."""
    if body.startswith(("/", "\\", "~")) or _DRIVE.match(body):
        raise BadRequest(
            f"{noun} {pattern!r} is absolute; {plural} are relative to the project root",
            hint=absolute,
        )
    if ".." in re.split(r"[/\\]", body):
        raise BadRequest(f"{noun} {pattern!r} leaves the project root ('..')", hint=outside)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def check_forget_path(pattern: str) -> str:
    """One root-relative path or glob to forget: never absolute, never `..`, never a
    negation or a comment, no line breaks or other control characters. The memory service
    then refuses one that matches no indexed file."""
    if _CONTROL.search(pattern):
        raise BadRequest(
            f"path {pattern!r} holds a line break or another control character",
            hint="give one path or glob per argument, e.g. 'vendor/**' or 'src/old.py'",
        )
    body = pattern.strip()
    if not body or body.strip("/") == "":
        raise BadRequest("a path to forget is empty", hint="give a path relative to the root")
    if body.startswith(("!", "#")):
        raise BadRequest(
            f"path {pattern!r} starts with {body[0]!r}: a negation or a comment, not a path",
            hint="name the files to forget, e.g. 'private/' or 'src/**/*.pem'; to index a "
            "gitignored folder, change the ignore file instead",
        )
    _inside_root(pattern, body, "path", "paths",
                 absolute="write it relative to the root, e.g. 'src/secret.py'",
                 outside="only files inside the indexed project can be forgotten")  # fmt: skip
    return body.strip("/")


def check_list(name: str, values: Sequence[str] | None) -> tuple[str, ...]:
    items = tuple(values or ())
    check_size(name, "\n".join(items))
    return items


def check_paths(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(check_path_filter(p) for p in check_list("paths", values))


def check_text(name: str, value: str) -> str:
    check_size(name, value)
    if not value.strip():
        raise BadRequest(f"the {name} is empty", hint=f"pass the {name} as text")
    return value


def check_ids(values: Sequence[str] | None) -> tuple[str, ...]:
    """Chunk or memory ids exactly as recall / remember returned them."""
    items = tuple(v.strip() for v in check_list("ids", values) if v.strip())
    if len(items) > LIMITS.ids_per_call:
        raise BadRequest(f"{len(items)} ids; at most {LIMITS.ids_per_call} per call",
                         hint="split the call, or pass only the ids you used")  # fmt: skip
    bad = [v for v in items if not (CHUNK_ID.match(v) or MEMORY_ID.match(v))]
    if bad:
        raise BadRequest(
            f"not a chunk or memory id: {', '.join(repr(b[:40]) for b in bad[:3])}",
            hint="use ids exactly as recall returned them: c_ + 32 hex (chunks, notes) or "
            "m_ + 32 hex (memories)",
        )
    return items


def check_id(value: str, pattern: re.Pattern[str], what: str, example: str) -> str:
    if not pattern.match(value):
        raise BadRequest(
            f"{value[:80]!r} is not a {what} id",
            hint=f"use an id exactly as recall returned it, e.g. {example!r}",
        )
    return value


def check_scope(scope: Mapping[str, str] | Sequence[tuple[str, str]]) -> Scope:
    pairs = list(scope.items()) if isinstance(scope, Mapping) else list(scope)
    out = []
    keys = [key for key, _ in pairs]
    for key, value in pairs:
        if keys.count(key) > 1:
            raise BadRequest(f"scope key {key!r} is given twice", hint="give each key once")
        if key not in SCOPE_KEYS:
            raise BadRequest(
                f"unknown scope key {key!r}",
                hint=f"scope keys are {', '.join(SCOPE_KEYS)} (the project is implied)",
            )
        if not str(value).strip():
            raise BadRequest(f"scope {key} is empty", hint=f"give a value, e.g. {key}=alice")
        out.append((key, str(value).strip()))
    return tuple(sorted(out))


def parse_event_time(value: str | None) -> datetime | None:
    """An ISO-8601 time (a date alone means midnight UTC; no zone means UTC)."""
    if value is None or not value.strip():
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise BadRequest(
            f"event time {value!r} is not an ISO-8601 date or time",
            hint="e.g. 2025-03-14 or 2025-03-14T09:30:00+01:00",
        ) from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def read_conversation(
    lines: Iterable[str], scope: Scope, source: str = "conversation"
) -> list[Note]:
    """JSONL turns ({speaker, text, time?, turn_id?} per line) → one Note per turn."""
    notes = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            turn = json.loads(line)
            speaker, text = str(turn.get("speaker") or "").strip(), str(turn["text"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BadRequest(
                f"{source} line {n} is not a turn object: {exc}",
                hint='write one {"speaker": …, "text": …, "time": ISO-8601, "turn_id": …} '
                "object per line",
            ) from exc
        content = f"{speaker}: {text}" if speaker else text
        notes.append(Note(
            content, event_time=parse_event_time(turn.get("time")), scope=scope,
            turn_id=str(turn.get("turn_id") or f"T{n}"), speaker=speaker,
        ))  # fmt: skip
    return notes


_GLOB = re.compile(r"[*?\[]")


def is_glob(pattern: str) -> bool:
    return _GLOB.search(pattern) is not None


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob over root-relative paths: `*` and `?` stay within a folder, `**` crosses
    folders, `[…]` is a set; a glob matching a folder takes in what is under it."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out) + "(?:/.*)?", re.S)


def forget_matcher(rules: Sequence[ForgetRule]) -> Callable[[str], bool]:
    """Whether a root-relative file path is forgotten: an exact path names the file or the
    folder it is under; a glob matches the whole path (or a folder above it)."""
    exact = {r.pattern.strip("/") for r in rules if not r.glob}
    globs = [_glob_regex(r.pattern.strip("/")) for r in rules if r.glob]

    def forgotten(path: str) -> bool:
        if path in exact or any(path.startswith(p + "/") for p in exact):
            return True
        return any(g.fullmatch(path) for g in globs)

    return forgotten
