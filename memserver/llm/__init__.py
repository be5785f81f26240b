"""Optional LLM steps: the Anthropic adapter, prompts as data, cached distillation.

Nothing here is required: every step has a deterministic fallback, and the
`anthropic` SDK (slow to import) is loaded only when a model is really built.

    llm = llm_from_settings(settings.llm, os.environ)  # None: disabled or no key
    distiller = LlmDistiller(llm, fallback, cache_dir) if llm else fallback
"""

from __future__ import annotations

from memserver.core.errors import LlmError
from memserver.llm.anthropic import AnthropicLLM, LlmAccounting, llm_from_settings
from memserver.llm.distiller import LlmDistiller, ReplyRejected, parse_reply
from memserver.llm.settings import LlmSettings

__all__ = [
    "AnthropicLLM",
    "LlmAccounting",
    "LlmDistiller",
    "LlmError",
    "LlmSettings",
    "ReplyRejected",
    "llm_from_settings",
    "parse_reply",
]
