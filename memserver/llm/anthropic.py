"""Anthropic adapter (the sole `anthropic` importer).

The SDK is imported when a model is built, not when this module is: importing
it takes seconds, and most commands never call a model. anthropic 2.x talks
through `httpx2` (not `httpx`), so an injected `http_client` is an
`httpx2.Client`; tests pass one over `httpx2.MockTransport`.

Every SDK error is mapped to `LlmError` (in `memserver.core.errors`) at this boundary: a
model call failed on the key, a rate limit, the server, the network, a timeout, or a reply
cut off at max_tokens / without text.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memserver.core.errors import LlmError
from memserver.llm.settings import LlmSettings

if TYPE_CHECKING:
    import httpx2

API_KEY_ENV = "ANTHROPIC_API_KEY"


@dataclass
class LlmAccounting:
    """Calls, failures and tokens of one model (mutable, thread-safe)."""

    calls: int = 0  # every complete() call, failed ones included
    failures: int = 0  # calls that raised LlmError
    input_tokens: int = 0
    output_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(
        self, *, calls: int = 0, failures: int = 0, input_tokens: int = 0, output_tokens: int = 0
    ) -> None:
        with self._lock:
            self.calls += calls
            self.failures += failures
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens

    def to_dict(self) -> dict[str, int]:
        with self._lock:
            return {
                "calls": self.calls,
                "failures": self.failures,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
            }


def _hint(exc: Exception) -> str:
    import anthropic

    if isinstance(exc, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return f"check {API_KEY_ENV}, or set [llm] enabled = false to use the fallback"
    if isinstance(exc, anthropic.NotFoundError):
        return "check [llm] model: it names a model this key cannot use"
    if isinstance(exc, anthropic.RateLimitError):
        return "rate limited; the fallback was used — retry later or raise [llm] max_retries"
    if isinstance(exc, anthropic.APITimeoutError):
        return "the request timed out; raise [llm] timeout_seconds or retry later"
    if isinstance(exc, anthropic.APIConnectionError):
        return "cannot reach the Anthropic API; check the network (or ANTHROPIC_BASE_URL)"
    if isinstance(exc, anthropic.APIStatusError) and exc.status_code >= 500:
        return "the Anthropic API failed on its side; the fallback was used — retry later"
    return "the fallback was used; set [llm] enabled = false to skip the model"


@contextmanager
def _mapped_errors(model: str) -> Iterator[None]:
    import anthropic

    try:
        yield
    except anthropic.AnthropicError as exc:
        status = getattr(exc, "status_code", None)
        what = f"HTTP {status}" if status else type(exc).__name__
        detail = str(exc)[:300]
        raise LlmError(f"call to {model} failed ({what}): {detail}", hint=_hint(exc)) from exc


class AnthropicLLM:
    """`LLM` over the Anthropic Messages API, counting calls, failures and tokens."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        api_key: str | None = None,
        http_client: httpx2.Client | None = None,
    ) -> None:
        key = os.environ.get(API_KEY_ENV, "") if api_key is None else api_key
        if not key.strip():
            raise LlmError(
                f"no Anthropic API key for model {settings.model}",
                hint=f"set {API_KEY_ENV}, or set [llm] enabled = false",
            )
        import anthropic

        self.settings = settings
        self.name = settings.model
        self.accounting = LlmAccounting()
        self._owns_http = http_client is None
        self._client: Any = anthropic.Anthropic(
            api_key=key.strip(),
            http_client=http_client,
            max_retries=settings.max_retries,
            timeout=settings.timeout_seconds,
        )

    def complete(self, system: str, user: str, *, max_tokens: int = 512) -> str:
        """The model's text reply; LlmError on any failure (counted)."""
        limit = max(1, min(max_tokens, self.settings.max_tokens))
        try:
            with _mapped_errors(self.name):
                response = self._client.messages.create(
                    model=self.name,
                    max_tokens=limit,
                    system=system,
                    messages=[{"role": "user", "content": user}],
                )
        except LlmError:
            self.accounting.add(calls=1, failures=1)
            raise
        usage = getattr(response, "usage", None)
        self.accounting.add(
            calls=1,
            input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        )
        text = "".join(
            getattr(block, "text", "") for block in response.content if block.type == "text"
        )
        if response.stop_reason == "max_tokens":
            self.accounting.add(failures=1)
            raise LlmError(
                f"reply from {self.name} was cut off at {limit} tokens",
                hint="raise [llm] max_tokens",
            )
        if not text.strip():
            self.accounting.add(failures=1)
            raise LlmError(
                f"reply from {self.name} had no text (stop reason {response.stop_reason})",
                hint="the fallback was used; this input may be refused by the model",
            )
        return text

    def close(self) -> None:
        """Close the HTTP connections this adapter opened (not an injected client)."""
        if self._owns_http:
            self._client.close()


def llm_unavailable_reason(settings: LlmSettings, env: Mapping[str, str]) -> str | None:
    """Why no model will be used (for `status`/`doctor`), or None when one will."""
    if not settings.enabled:
        return "disabled ([llm] enabled = false)"
    if not env.get(API_KEY_ENV, "").strip():
        return f"enabled but {API_KEY_ENV} is not set"
    return None


def llm_from_settings(settings: LlmSettings, env: Mapping[str, str]) -> AnthropicLLM | None:
    """The configured model, or None when disabled or without a key (never imports the
    SDK in that case)."""
    if llm_unavailable_reason(settings, env) is not None:
        return None
    return AnthropicLLM(settings, api_key=env[API_KEY_ENV])
