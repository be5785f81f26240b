"""Which grammar and which query file serve each language; loaded once and cached.

Adding a language is data: a `queries/<name>.scm` file (chunk definitions), a
`queries/<name>-tags.scm` file (the code graph's tags) and one line in `_REGISTRY`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

# language name -> (tree-sitter-language-pack grammar, query file stem)
_REGISTRY: dict[str, tuple[str, str]] = {
    "python": ("python", "python"),
    "javascript": ("javascript", "javascript"),
    "typescript": ("typescript", "typescript"),
    "tsx": ("tsx", "typescript"),
    "go": ("go", "go"),
    "rust": ("rust", "rust"),
    "java": ("java", "java"),
    "c": ("c", "c"),
    "cpp": ("cpp", "cpp"),
    "csharp": ("csharp", "csharp"),
    "ruby": ("ruby", "ruby"),
    "php": ("php", "php"),
    "bash": ("bash", "bash"),
    "kotlin": ("kotlin", "kotlin"),
    "swift": ("swift", "swift"),
    "scala": ("scala", "scala"),
    "lua": ("lua", "lua"),
    "zig": ("zig", "zig"),
    "elixir": ("elixir", "elixir"),
}

# language -> tags query stem, where it differs from the chunk query's (TSX has JSX)
_TAGS: dict[str, str] = {"tsx": "tsx"}

LANGUAGES: frozenset[str] = frozenset(_REGISTRY)


@dataclass(frozen=True, slots=True)
class Grammar:
    name: str
    language: Any  # tree_sitter.Language
    query: Any  # tree_sitter.Query (read-only once compiled; one cursor per use)


def query_text(stem: str) -> str:
    """The query source shipped as package data in indexers/treesitter/queries/.

    A line `; inherits: a, b` appends those files' patterns (grammars that share
    node types, like JavaScript and TypeScript, keep the shared patterns once)."""
    text = (
        resources.files("indexers.treesitter")
        .joinpath("queries")
        .joinpath(f"{stem}.scm")
        .read_text("utf-8")
    )
    parents = [
        name.strip()
        for line in text.splitlines()
        if line.startswith("; inherits:")
        for name in line.removeprefix("; inherits:").split(",")
        if name.strip()
    ]
    return "\n".join([text, *(query_text(p) for p in parents)])


@functools.cache
def grammar(language: str) -> Grammar:
    """The compiled grammar and definitions query for a registered language (cached)."""
    from tree_sitter import Query
    from tree_sitter_language_pack import get_language

    grammar_name, stem = _REGISTRY[language]
    ts_language = get_language(grammar_name)  # type: ignore[arg-type]
    return Grammar(language, ts_language, Query(ts_language, query_text(stem)))


@dataclass(frozen=True, slots=True)
class TagsQueries:
    """A language's tags query (`<stem>-tags.scm`) compiled twice: patterns with several
    captures are read match by match (`grouped`); patterns with one capture, like a bare
    identifier's, are read capture by capture (`flat`), which is several times cheaper."""

    grouped: Any  # tree_sitter.Query
    flat: Any  # tree_sitter.Query


_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_CAPTURE = re.compile(r"@([\w.]+)")


@functools.cache
def tags_queries(language: str) -> TagsQueries:
    """The compiled tags queries of a registered language (cached)."""
    from tree_sitter import Query

    stem = _TAGS.get(language, _REGISTRY[language][1])
    source = query_text(f"{stem}-tags")
    ts_language = grammar(language).language
    grouped, flat = Query(ts_language, source), Query(ts_language, source)
    data = source.encode("utf-8")
    for index in range(grouped.pattern_count):
        text = data[grouped.start_byte_for_pattern(index) : grouped.end_byte_for_pattern(index)]
        code = "\n".join(
            line.split(";")[0] for line in _STRING.sub('""', text.decode()).split("\n")
        )
        captures = {name for name in _CAPTURE.findall(code) if not name.startswith("_")}
        (grouped if len(captures) == 1 else flat).disable_pattern(index)
    return TagsQueries(grouped, flat)


__all__ = ["LANGUAGES", "Grammar", "TagsQueries", "grammar", "query_text", "tags_queries"]
