"""The Jinja2 environment of the review page (the sole Jinja2 importer).

Templates are package data (`templates/*.html`), autoescaped; the filters below are the
only formatting the templates do.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from memserver.ui.highlight import highlight

__all__ = ["render"]

REDACTION = "[REDACTED:"


def _when(value: datetime | None) -> str:
    if value is None:
        return "—"
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%d %H:%M UTC")


def _iso(value: datetime | None) -> str:
    return "" if value is None else value.astimezone(UTC).isoformat(timespec="seconds")


def _scope(pairs: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in pairs) or "project-wide"


def _short(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _marked(text: str) -> Markup:
    """`text` escaped, each `[REDACTED:kind]` wrapped in <mark>."""
    out, i = [], 0
    while (start := text.find(REDACTION, i)) != -1:
        end = text.find("]", start)
        if end == -1:
            break
        out += [escape(text[i:start]), Markup("<mark>"), escape(text[start : end + 1]),
                Markup("</mark>")]  # fmt: skip
        i = end + 1
    out.append(escape(text[i:]))
    return Markup("").join(out)


@cache
def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("memserver.ui", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(when=_when, iso=_iso, scope=_scope, short=_short, marked=_marked)
    env.globals["highlight"] = highlight
    return env


def render(name: str, context: Mapping[str, Any]) -> str:
    return _env().get_template(name).render(context)
