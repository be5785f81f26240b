"""Which grammar and which query file serve each language; loaded once and cached.

Adding a language is data: a `queries/<name>.scm` file (chunk definitions), a
`queries/<name>-tags.scm` file (the code graph's tags) and one line in `_REGISTRY`.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
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
    text = _package_text(f"{stem}.scm")
    parents = [
        name.strip()
        for line in text.splitlines()
        if line.startswith("; inherits:")
        for name in line.removeprefix("; inherits:").split(",")
        if name.strip()
    ]
    return "\n".join([text, *(query_text(p) for p in parents)])


_QUERIES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "queries")


def _package_text(name: str) -> str:
    """A file of the queries folder: read from disk where the package is (an installed
    wheel, a checkout), through `importlib.resources` elsewhere (a zip). The tags worker
    imports this module at its start, on the core the indexing shares: without that
    import here (nor `hashlib` in `core.graph`) its start takes 50 ms of CPU, not 56."""
    try:
        with open(os.path.join(_QUERIES, name), encoding="utf-8") as f:
            return f.read()
    except OSError:  # not a folder on disk (inside a zip: NotADirectoryError)
        from importlib import resources

        folder = resources.files("indexers.treesitter").joinpath("queries")
        return folder.joinpath(name).read_text("utf-8")


@functools.cache
def language(name: str) -> Any:
    """The tree-sitter language of a registered language (cached), without its queries: the
    tags worker parses with it and never compiles the chunker's query (TypeScript's takes
    0.012 s)."""
    from tree_sitter_language_pack import get_language

    return get_language(_REGISTRY[name][0])  # type: ignore[arg-type]


@functools.cache
def grammars_version() -> str:
    """The installed grammars' package version (tree-sitter-language-pack's): a release of
    it may parse the same text otherwise, so indexes record it with the chunker's version
    (`Engine.chunker_id`) and are cut and tagged again when it changes."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tree-sitter-language-pack")
    except PackageNotFoundError:  # importable but not installed as a distribution
        return "unknown"


@functools.cache
def grammar(name: str) -> Grammar:
    """The compiled grammar and definitions query for a registered language (cached)."""
    from tree_sitter import Query

    ts_language = language(name)
    return Grammar(name, ts_language, Query(ts_language, query_text(_REGISTRY[name][1])))


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
def tags_queries(name: str) -> TagsQueries:
    """The compiled tags queries of a registered language (cached): each half compiled from
    its own patterns (compiling is most of a worker's start: Python's whole query 0.04 s,
    TypeScript's 0.06); should the split not give one pattern per piece, the whole query
    compiled twice with the other half's patterns disabled."""
    from tree_sitter import Query

    stem = _TAGS.get(name, _REGISTRY[name][1])
    source = query_text(f"{stem}-tags")
    ts_language = language(name)
    pieces = [(p, _single_capture(p)) for p in split_patterns(source)]
    grouped = [p for p, single in pieces if not single]
    flat = [p for p, single in pieces if single]
    try:
        halves = Query(ts_language, "\n".join(grouped)), Query(ts_language, "\n".join(flat))
        if (halves[0].pattern_count, halves[1].pattern_count) == (len(grouped), len(flat)):
            return TagsQueries(*halves)
    except Exception:  # the split misread the source: tree-sitter's own boundaries below
        pass
    full, other = Query(ts_language, source), Query(ts_language, source)
    data = source.encode("utf-8")
    for index in range(full.pattern_count):
        text = data[full.start_byte_for_pattern(index) : full.end_byte_for_pattern(index)]
        (full if _single_capture(text.decode()) else other).disable_pattern(index)
    return TagsQueries(full, other)


def _single_capture(pattern: str) -> bool:
    """Whether a pattern names one capture (its `_`-prefixed helper captures left out)."""
    code = "\n".join(line.split(";")[0] for line in _STRING.sub('""', pattern).split("\n"))
    return len({name for name in _CAPTURE.findall(code) if not name.startswith("_")}) == 1


def split_patterns(source: str) -> list[str]:
    """The top-level patterns of a query source, each with the captures and quantifier
    written after it (comment lines after it dropped)."""
    pieces: list[str] = []
    depth, start, at, n = 0, -1, 0, len(source)
    while at < n:
        char = source[at]
        if char == ";":  # a comment, to the end of its line
            at = source.find("\n", at)
            at = n if at < 0 else at
            continue
        if char == '"':  # a string, with its escapes (at the top level, a pattern)
            end = _STRING.match(source, at)
            if depth == 0:
                if start >= 0:
                    pieces.append(source[start:at].strip())
                start = at
            at = end.end() if end else n
            continue
        if depth == 0 and (char in "([_" or char.isalpha()) and not _after_capture(source, at):
            if start >= 0:
                pieces.append(source[start:at].strip())
            start = at
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        at += 1
    if start >= 0:
        pieces.append(source[start:].strip())
    return [_strip_comments(p) for p in pieces if p]


def _after_capture(source: str, at: int) -> bool:
    """Whether `at` is inside a capture name or a field name (`@name.kind`, `name:`)."""
    back = at
    while back > 0 and (source[back - 1].isalnum() or source[back - 1] in "_.-"):
        back -= 1
    return back > 0 and source[back - 1] == "@"


def _strip_comments(piece: str) -> str:
    """A trailing comment line after a pattern's captures is no part of it."""
    lines = piece.split("\n")
    while len(lines) > 1 and lines[-1].lstrip().startswith(";"):
        lines.pop()
    return "\n".join(lines).strip()


__all__ = [
    "LANGUAGES",
    "Grammar",
    "TagsQueries",
    "grammar",
    "grammars_version",
    "language",
    "query_text",
    "tags_queries",
]
