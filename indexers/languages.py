"""Language names for paths: by file name, by extension, or by a `#!` line.

Every name here is one the chunkers know; anything else is "text".
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import TypeVar

__all__ = [
    "LANGUAGES", "choose_parse", "detect_language", "is_c_header", "parse_languages",
    "shebang_language",
]  # fmt: skip

_T = TypeVar("_T")

LANGUAGES: tuple[str, ...] = (
    "python",
    "javascript",
    "typescript",
    "tsx",
    "go",
    "rust",
    "java",
    "c",
    "cpp",
    "csharp",
    "ruby",
    "php",
    "bash",
    "kotlin",
    "swift",
    "scala",
    "lua",
    "zig",
    "elixir",
    "markdown",
    "json",
    "yaml",
    "toml",
    "text",
)

_BY_EXTENSION: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",  # also covers ".d.ts"
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".ipp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".ru": "ruby",
    ".php": "php",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".lua": "lua",
    ".zig": "zig",
    ".ex": "elixir",
    ".exs": "elixir",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".json": "json",
    ".jsonc": "json",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".toml": "toml",
}

# Whole file names that say the language better than their (missing) extension.
_BY_NAME: dict[str, str] = {
    "rakefile": "ruby",
    "gemfile": "ruby",
    "podfile": "ruby",
    "vagrantfile": "ruby",
    "guardfile": "ruby",
    "brewfile": "ruby",
    "pipfile": "toml",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".bash_aliases": "bash",
    ".profile": "bash",
    ".zshrc": "bash",
    ".zprofile": "bash",
    ".zshenv": "bash",
}

# Interpreter (version suffix stripped) -> language.
_BY_INTERPRETER: dict[str, str] = {
    "python": "python",
    "pypy": "python",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "dash": "bash",
    "ksh": "bash",
    "ash": "bash",
    "ruby": "ruby",
    "node": "javascript",
    "nodejs": "javascript",
    "php": "php",
    "lua": "lua",
    "elixir": "elixir",
}

_VERSION_SUFFIX = re.compile(r"[\d.]*$")


def detect_language(path: str) -> str:
    """The language of a POSIX relative path, from its name; "text" when unknown."""
    name = posixpath.basename(path).lower()
    by_name = _BY_NAME.get(name)
    if by_name is not None:
        return by_name
    return _BY_EXTENSION.get(posixpath.splitext(name)[1], "text")


def shebang_language(first_line: str) -> str | None:
    """The language a `#!` line names (`#!/usr/bin/env python3` -> "python"), or None."""
    if not first_line.startswith("#!"):
        return None
    words = first_line[2:].split()
    if not words:
        return None
    program = posixpath.basename(words[0])
    if program == "env":
        # `env [-S] [-i] [NAME=value ...] program args`: the first plain word is the program.
        rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        if not rest:
            return None
        program = posixpath.basename(rest[0])
    return _BY_INTERPRETER.get(_VERSION_SUFFIX.sub("", program))


# A line of a `.h` header that only C++ starts so: a template, a namespace block or alias, a
# class (declared or defined: one or two words, then `{`, `:`, `;` or the line's end), an
# `enum class`, a `using` declaration, an access label, a declaration of a `std::` type, an
# `extern "C++"` block, an include of a standard C++ header (no extension). At the start of a
# line, not anywhere: C sources name C++ in their comments (xxhash's "Example C++
# `std::string`"), and GNU-style comment lines start with plain words ("class decides…").
_CPP_MARKS = re.compile(
    r"^[ \t]*(?:template[ \t]*<"
    r"|namespace(?:[ \t]+[\w:]+)?[ \t]*(?:\{|$)|namespace[ \t]+\w+[ \t]*="
    r"|class[ \t]+(?:\w+[ \t]+)?\w+[ \t]*(?:final[ \t]*)?(?:[:{;]|$)"
    r"|enum[ \t]+class\b|using[ \t]+(?:namespace\b|\w+[ \t]*=)"
    r"|(?:public|private|protected)[ \t]*:"
    r"|(?:(?:static|inline|const|typedef|extern)[ \t]+)*std::"
    r"|extern[ \t]+\"C\+\+\"|\#[ \t]*include[ \t]*<\w+>)",
    re.MULTILINE,
)


def is_c_header(language: str, path: str) -> bool:
    """A `.h` file: C or C++, which only its text tells. A `.c` file is C."""
    return language == "c" and path.lower().endswith(".h")


def parse_languages(language: str, text: str, path: str) -> tuple[str, ...]:
    """The grammars to parse a file with, in order (`choose_parse` picks one): a C file is
    also parsed as C++ when C refuses it, and a `.h` header whose lines start as only C++
    starts them is parsed as C++ first.

    Parsing C++ as C costs most of the time of a C++ project's headers: the C grammar's
    error recovery on pybind11's 36 headers took 335 ms, the C++ parses 98 ms, and 12 of
    them passed as C with their errors (classes and templates cut as broken C)."""
    if language != "c":
        return (language,)
    if is_c_header(language, path) and _CPP_MARKS.search(text):
        return ("cpp", "c")
    return ("c", "cpp")


def choose_parse(
    language: str, text: str, path: str, attempt: Callable[[str], tuple[_T | None, float]]
) -> tuple[str, _T] | None:
    """The grammar and the parse a file is cut and tagged from, the same for the chunker
    and the tagger: `attempt(grammar)` parses (None when the parse is refused) and gives
    its error share. The grammars are tried in `parse_languages`' order and the first
    accepted parse wins, but a `.h` header that C reads with errors is weighed against its
    C++ parse (fewer errors win, C on a tie): a header that shows no C++ at its lines'
    starts may still be C++. (Not the other way round: C's error recovery on C++ is what
    made C++ projects slow to parse.)"""
    best: tuple[float, str, _T] | None = None
    for used in parse_languages(language, text, path):
        result, share = attempt(used)
        if result is None:
            continue
        if best is None or share < best[0]:
            best = (share, used, result)
        if share == 0.0 or used != "c" or not is_c_header(language, path):
            break
    return None if best is None else (best[1], best[2])
