"""Code highlighting for the review page (the sole Pygments importer).

Lexers are looked up by the chunk's language name; unknown ones are shown plain. The
styles are CSS classes (no inline styles, so the page's Content-Security-Policy holds).
"""

from __future__ import annotations

from functools import cache, lru_cache

from markupsafe import Markup
from pygments import highlight as _highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.lexers.special import TextLexer
from pygments.util import ClassNotFound

__all__ = ["code_css", "highlight"]

_ALIASES = {"tsx": "tsx", "c_sharp": "csharp", "csharp": "csharp", "shell": "bash",
            "bash": "bash", "text": "text", "markdown": "markdown"}  # fmt: skip
_CSS_CLASS = "hl"


@cache
def _lexer(language: str) -> object:
    try:
        return get_lexer_by_name(_ALIASES.get(language, language), stripnl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False)


@lru_cache(maxsize=1024)  # chunks are immutable: a search shows many of the same again
def highlight(text: str, language: str, first_line: int = 1) -> Markup:
    """`text` as highlighted HTML with line numbers starting at `first_line`."""
    formatter = HtmlFormatter(
        cssclass=_CSS_CLASS, linenos="table", linenostart=max(1, first_line), wrapcode=True
    )
    return Markup(_highlight(text, _lexer(language), formatter))  # Pygments escapes the text


@cache
def code_css() -> str:
    """The stylesheet for highlighted code (light, and dark when the system is)."""
    light = HtmlFormatter(style="friendly").get_style_defs(f".{_CSS_CLASS}")
    dark = HtmlFormatter(style="monokai").get_style_defs(f".{_CSS_CLASS}")
    return f"{light}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n"
