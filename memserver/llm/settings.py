"""The `[llm]` settings section (no SDK import here, so config stays cheap to load)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LlmSettings:
    enabled: bool = False  # the LLM is optional; it also needs ANTHROPIC_API_KEY
    model: str = "claude-haiku-4-5"  # an Anthropic model id or alias
    max_tokens: int = 1024  # ceiling on output tokens per call (a cost cap)
    timeout_seconds: float = 30.0  # per request, before the step falls back
    max_retries: int = 2  # SDK retries on 429, 5xx and connection errors
    cache_dir: str = ""  # "": <index dir>/llm-cache; relative: from the project root

    def resolve_cache_dir(self, root: Path, index_dir: Path) -> Path:
        """Where cached model results live for this project."""
        if not self.cache_dir:
            return index_dir / "llm-cache"
        path = Path(self.cache_dir).expanduser()
        return path if path.is_absolute() else root / path
