"""Query expansion by an LLM: at most 3 rewrites, validated, cached; [] on any failure.

The one optional model call of the recall path. The question is passed as data
between <query_data> tags. Any failure (no reply, bad JSON, a limit broken)
returns no expansions, and recall uses the code-terminology table instead.
"""

from __future__ import annotations

import hashlib
import threading

from memserver.core.errors import LlmError
from memserver.core.protocols import LLM
from memserver.llm.distiller import ReplyRejected, _load_json, load_prompt
from memserver.llm.lru import Lru

MAX_EXPANSIONS = 3
MAX_CHARS = 200
_CACHE_SIZE = 512
_TAG = "query_data"


class LlmExpander:
    def __init__(self, llm: LLM, *, max_tokens: int = 256) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.system_prompt = load_prompt("expand")
        digest = hashlib.sha256(self.system_prompt.encode("utf-8")).hexdigest()
        self.name = f"llm:{llm.name}:{digest[:8]}"
        self._cache: Lru[list[str]] = Lru(_CACHE_SIZE)
        self._lock = threading.Lock()
        self.failures = 0

    def expand(self, query: str) -> list[str]:
        cached = self._cache.get(query)
        if cached is not None:
            return list(cached)
        safe = query.replace(f"<{_TAG}", f"&lt;{_TAG}").replace(f"</{_TAG}", f"&lt;/{_TAG}")
        try:
            reply = self.llm.complete(
                self.system_prompt, f"<{_TAG}>\n{safe}\n</{_TAG}>", max_tokens=self.max_tokens
            )
            expansions = parse_expansions(reply, query)
        except (LlmError, ReplyRejected):
            with self._lock:
                self.failures += 1
            return []
        self._cache.put(query, expansions)
        return list(expansions)


def parse_expansions(reply: str, query: str) -> list[str]:
    data = _load_json(reply)
    items = data.get("expansions") if isinstance(data, dict) else data
    if not isinstance(items, list) or len(items) > MAX_EXPANSIONS:
        raise ReplyRejected("invalid_reply", "expected a list of at most 3 expansions")
    out: list[str] = []
    for item in items:
        if not isinstance(item, str) or not item.strip() or len(item) > MAX_CHARS:
            raise ReplyRejected("invalid_reply", "each expansion must be a short string")
        text = " ".join(item.split())
        if text.lower() != query.strip().lower() and text not in out:
            out.append(text)
    return out
