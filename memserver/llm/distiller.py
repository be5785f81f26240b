"""Distil chunks into typed memories with an LLM; cached, validated, with a fallback.

The chunk reaches the model as data between <chunk_data> tags (any such tag
inside the chunk is defused), and the reply must echo the chunk id it was
given. A reply that is not JSON, breaks a limit, or echoes the wrong id is
rejected; so is a failed call. A rejected chunk is distilled by the fallback
instead and is not cached, so a later run asks the model again. Accepted
results are cached on disk by (model, prompt digest, chunk content hash): a
re-index or a second checkout of the same code makes no call.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from memserver.core.errors import LlmError
from memserver.core.protocols import LLM, Distiller
from memserver.core.types import MEMORY_TYPES, Chunk, MemoryDraft

MAX_MEMORIES = 3
MAX_TEXT_CHARS = 600
MAX_KEY_CHARS = 120
CACHE_FOLDER = "distill-v1"  # bump when the cached file format changes
DATA_TAG = "chunk_data"

# Only what the repository supplies goes inside the tags; the id outside is ours.
_USER_TEMPLATE = """Distil the chunk below. source_id: {source_id}

<{tag}>
path: {path}
language: {language}
kind: {kind}
symbol: {symbol}
lines: {start_line}-{end_line}
enclosing: {header}
---
{text}
</{tag}>"""

_TAG_IN_DATA = re.compile(rf"<(\s*/?\s*{DATA_TAG})", re.IGNORECASE)
_FENCED = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*)\n[ \t]*```$", re.DOTALL)


def load_prompt(name: str) -> str:
    """A prompt shipped as a data file in memserver/llm/prompts/."""
    path = resources.files("memserver.llm").joinpath("prompts", f"{name}.txt")
    return path.read_text(encoding="utf-8")


def _defuse(value: str) -> str:
    """Data cannot open or close the data block: `</chunk_data>` → `&lt;/chunk_data>`."""
    return _TAG_IN_DATA.sub(r"&lt;\1", value)


def user_message(chunk: Chunk) -> str:
    return _USER_TEMPLATE.format(
        source_id=chunk.id,
        tag=DATA_TAG,
        path=_defuse(chunk.path),
        language=_defuse(chunk.language),
        kind=_defuse(chunk.kind),
        symbol=_defuse(chunk.symbol),
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        header=_defuse(chunk.header),
        text=_defuse(chunk.text),
    )


class ReplyRejected(ValueError):
    """A model reply (or cache file) failed parsing or validation."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason  # "bad_json" | "invalid_reply"


def _invalid(message: str) -> ReplyRejected:
    return ReplyRejected("invalid_reply", message)


def _load_json(reply: str) -> Any:
    text = reply.strip()
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplyRejected("bad_json", f"reply is not JSON: {exc.msg} at {exc.pos}") from exc


def _string(item: dict[str, Any], name: str, limit: int, n: int) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not value.strip():
        raise _invalid(f"memory {n}: {name!r} must be a non-empty string")
    value = value.strip()
    if len(value) > limit:
        raise _invalid(f"memory {n}: {name!r} has {len(value)} characters (limit {limit})")
    return value


def _draft(item: Any, n: int) -> MemoryDraft:
    if not isinstance(item, dict):
        raise _invalid(f"memory {n} is not an object")
    kind = item.get("type")
    kind = kind.strip().lower() if isinstance(kind, str) else kind
    if kind not in MEMORY_TYPES:
        raise _invalid(f"memory {n}: unknown type {kind!r}")
    entities = item.get("entities")
    entities = [] if entities is None else entities
    if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
        raise _invalid(f"memory {n}: 'entities' must be a list of strings")
    return MemoryDraft(
        type=kind,
        key=_string(item, "key", MAX_KEY_CHARS, n),
        text=_string(item, "text", MAX_TEXT_CHARS, n),
        entities=tuple(dict.fromkeys(e.strip() for e in entities if e.strip())),
    )


def drafts_from_items(items: Any) -> list[MemoryDraft]:
    """Validate a list of memory objects (≤ 3, known types, bounded text and key)."""
    if not isinstance(items, list):
        raise _invalid("'memories' is not a list")
    if len(items) > MAX_MEMORIES:
        raise _invalid(f"{len(items)} memories (at most {MAX_MEMORIES})")
    return [_draft(item, n) for n, item in enumerate(items)]


def parse_reply(reply: str, source_id: str) -> list[MemoryDraft]:
    """Drafts from `{"source_id": ..., "memories": [...]}` (or a bare list whose items
    each carry `source_id`); ReplyRejected unless it echoes `source_id` exactly."""
    data = _load_json(reply)
    if isinstance(data, dict):
        if data.get("source_id") != source_id:
            raise _invalid(f"reply does not echo source_id {source_id}")
        items = data.get("memories")
    elif isinstance(data, list) and data:
        items = data
        if not all(isinstance(i, dict) and "source_id" in i for i in items):
            raise _invalid(f"reply does not echo source_id {source_id}")
    else:
        raise _invalid("reply is neither an object with 'memories' nor a non-empty list")
    if isinstance(items, list):
        for item in items:
            if isinstance(item, dict) and item.get("source_id", source_id) != source_id:
                raise _invalid(f"a memory names another source_id than {source_id}")
    return drafts_from_items(items)


def _to_json(draft: MemoryDraft) -> dict[str, Any]:
    return {
        "type": draft.type,
        "key": draft.key,
        "text": draft.text,
        "entities": list(draft.entities),
    }


class _DiskCache:
    """Small JSON files under `root/distill-v1/ab/<key>.json`, written atomically."""

    def __init__(self, root: Path | None) -> None:
        self.root = root / CACHE_FOLDER if root is not None else None

    def _path(self, key: str) -> Path | None:
        return self.root / key[:2] / f"{key}.json" if self.root is not None else None

    def get(self, key: str) -> list[MemoryDraft] | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return drafts_from_items(data["memories"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing, or unreadable: a miss, rewritten after the next call

    def put(self, key: str, distiller: str, drafts: list[MemoryDraft]) -> bool:
        path = self._path(key)
        if path is None:
            return True
        body = {"distiller": distiller, "memories": [_to_json(d) for d in drafts]}
        tmp = ""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(body, fh, ensure_ascii=False)
            os.replace(tmp, path)
            return True
        except OSError:
            if tmp:
                Path(tmp).unlink(missing_ok=True)
            return False  # a cache that cannot be written costs calls, never a result


class LlmDistiller:
    """`Distiller` that asks an LLM, and uses `fallback` whenever that fails."""

    def __init__(
        self,
        llm: LLM,
        fallback: Distiller,
        cache_dir: Path | None,
        *,
        max_tokens: int = 1024,
    ) -> None:
        self.llm = llm
        self.fallback = fallback
        self.max_tokens = max_tokens
        self.system_prompt = load_prompt("distill")
        digest = hashlib.sha256()
        for part in (self.system_prompt, _USER_TEMPLATE):
            digest.update(part.encode("utf-8") + b"\0")
        self.prompt_digest = digest.hexdigest()
        self.name = f"llm:{llm.name}:{self.prompt_digest[:8]}"
        self._cache = _DiskCache(cache_dir)
        self._lock = threading.Lock()
        self._counts = {"calls": 0, "cache_hits": 0, "fallbacks": 0, "cache_write_errors": 0}
        self._reasons: dict[str, int] = {}

    def cache_key(self, chunk: Chunk) -> str:
        parts = (self.llm.name, self.prompt_digest, chunk.content_hash)
        return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()

    def distill(self, chunk: Chunk) -> list[MemoryDraft]:
        return self.distill_with_source(chunk)[1]

    def distill_with_source(self, chunk: Chunk) -> tuple[str, list[MemoryDraft]]:
        """(name of the distiller that produced the drafts, drafts): this one's name,
        or the fallback's when the model failed — for each memory's provenance."""
        key = self.cache_key(chunk)
        cached = self._cache.get(key)
        if cached is not None:
            self._count("cache_hits")
            return self.name, cached
        self._count("calls")
        try:
            reply = self.llm.complete(
                self.system_prompt, user_message(chunk), max_tokens=self.max_tokens
            )
            drafts = parse_reply(reply, chunk.id)
        except (LlmError, ReplyRejected) as exc:
            reason = exc.reason if isinstance(exc, ReplyRejected) else "llm_error"
            self._count("fallbacks", reason)
            return self.fallback.name, self.fallback.distill(chunk)
        if not self._cache.put(key, self.name, drafts):
            self._count("cache_write_errors")
        return self.name, drafts

    def _count(self, counter: str, reason: str = "") -> None:
        with self._lock:
            self._counts[counter] += 1
            if reason:
                self._reasons[reason] = self._reasons.get(reason, 0) + 1

    def stats(self) -> dict[str, Any]:
        """Counters: model calls, cache hits, fallbacks (with reasons), cache write errors."""
        with self._lock:
            return {**self._counts, "fallback_reasons": dict(sorted(self._reasons.items()))}
