"""Files re-ordered by an LLM for a long query: the optional model step of locating code.

For a task (an issue text, a traceback), recall ranks files by itself first; with `[llm]`
enabled and a key, the first `[recall] llm_files` of them go to the model as a list of
paths with the names each defines, beside the task's title and prose (as data between
tags), and the model answers with the paths in the order it would open them. The reply is
checked: only candidate paths, each once; the files it leaves out keep their order after
the ones it names. Any failure (no key, an API error, a reply that is not that JSON)
keeps recall's own order, so the model is never required.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence

from memserver.core.errors import LlmError
from memserver.core.protocols import LLM
from memserver.llm.distiller import ReplyRejected, _load_json, load_prompt
from memserver.llm.lru import Lru

__all__ = ["LlmFileRanker", "parse_order"]

TASK_CHARS = 6000  # of the task's title and prose sent to the model
NAMES_PER_FILE = 12
_TAGS = ("task_data", "files_data")


def _defuse(text: str) -> str:
    for tag in _TAGS:
        text = text.replace(f"<{tag}", f"&lt;{tag}").replace(f"</{tag}", f"&lt;/{tag}")
    return text


class LlmFileRanker:
    """`FileOrder` over an LLM: (task text, [(path, names)]) → paths, or None to keep ours."""

    def __init__(self, llm: LLM, *, max_tokens: int = 600) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.system_prompt = load_prompt("locate")
        digest = hashlib.sha256(self.system_prompt.encode("utf-8")).hexdigest()
        self.name = f"llm:{llm.name}:{digest[:8]}"
        self._cache: Lru[list[str]] = Lru(256)
        self._lock = threading.Lock()
        self.failures = 0

    def __call__(self, task: str, candidates: Sequence[tuple[str, Sequence[str]]]
                 ) -> list[str] | None:  # fmt: skip
        if len(candidates) < 2:
            return None
        listing = "\n".join(
            f"{path}: {', '.join(names[:NAMES_PER_FILE])}" if names else path
            for path, names in candidates
        )
        user = (f"<task_data>\n{_defuse(task[:TASK_CHARS])}\n</task_data>\n"
                f"<files_data>\n{_defuse(listing)}\n</files_data>")  # fmt: skip
        key = hashlib.sha256(user.encode("utf-8")).hexdigest()
        cached = self._cache.get(key)
        if cached is not None:
            return list(cached)
        try:
            reply = self.llm.complete(self.system_prompt, user, max_tokens=self.max_tokens)
            order = parse_order(reply, [path for path, _ in candidates])
        except (LlmError, ReplyRejected):
            with self._lock:
                self.failures += 1
            return None
        self._cache.put(key, order)
        return list(order)


def parse_order(reply: str, paths: Sequence[str]) -> list[str]:
    """The reply's paths, checked against the candidates: each known path once, in order."""
    data = _load_json(reply)
    items = data.get("files") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ReplyRejected("invalid_reply", 'expected {"files": [path, ...]}')
    known = set(paths)
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ReplyRejected("invalid_reply", "each file must be a path string")
        path = item.strip()
        if path in known and path not in out:
            out.append(path)
    if not out:
        raise ReplyRejected("invalid_reply", "the reply names none of the candidate files")
    return out
