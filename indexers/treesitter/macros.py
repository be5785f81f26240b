"""What tree-sitter parses of a C or C++ file: its text with attribute-like macros blanked.

A macro that expands to attributes or storage words (`PYBIND11_NOINLINE void f()`,
`class Q_DECL_EXPORT Widget`, `LLVM_ATTRIBUTE_NORETURN static void g()`) reads to the
grammar as a type or a class name: the class or function after it is lost to an error
(pybind11's `error_already_set`, 87 throws, was no definition). Without the preprocessor its
expansion is unknown, but where it stands it says nothing the parse needs: such a macro (an
upper-case name with an underscore, no arguments) right after `class`/`struct`/`union` and
before the class's name, or at the start of a declaration and before a type and a function's
name, is replaced by as many spaces. Every byte keeps its offset, so the tree's positions are
the file's own (the chunks, tags and their text are read from the file, not from this).
"""

from __future__ import annotations

import re

_MACRO = rb"([A-Z][A-Z0-9]*_[A-Z0-9_]*)"  # an upper-case name with an underscore
# `class MACRO Name :|{|final|end of line`, `struct MACRO Name`: one pattern per keyword, so
# that each starts with a literal (a regular expression finds those fast)
_CLASSES = tuple(
    re.compile(word + rb"[ \t]+" + _MACRO + rb"[ \t]+(?=[A-Za-z_]\w*[ \t]*(?:[:{]|final\b|\r?\n))")
    for word in (b"class", b"struct", b"union")
)
# a line's start: storage words, then MACRO, then a type and a function's name and `(`
_FUNCTION = re.compile(
    rb"\n[ \t]*(?:(?:static|inline|extern|virtual|explicit|constexpr|friend)[ \t]+)*"
    + _MACRO
    + rb"(?:[ \t]+|[ \t]*\r?\n[ \t]*)(?=(?:const[ \t]+)?[A-Za-z_][\w:]*(?:<[^;{}()\n]*>)?"
    rb"[ \t*&]+[~A-Za-z_][\w:]*[ \t]*\()"
)
_LANGUAGES = frozenset({"c", "cpp"})
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# the last source read and its spans: the chunker's parse and the tags of the same file (the
# same bytes object) scan it once (about 6 ms a megabyte)
_LAST: tuple[bytes, list[tuple[int, int]]] | None = None


def blanked(language: str, source: bytes) -> list[tuple[int, int]]:
    """The byte spans of the attribute-like macros `parsed_source` blanks, in order."""
    global _LAST
    if language not in _LANGUAGES or b"_" not in source:
        return []
    last = _LAST
    if last is not None and last[0] is source:
        return last[1]
    spans = {
        m.span(1)
        for pattern in _CLASSES
        for m in pattern.finditer(source)
        if m.start() == 0 or source[m.start() - 1] not in _WORD
    }
    spans.update((a - 1, b - 1) for m in _FUNCTION.finditer(b"\n" + source) for a, b in [m.span(1)])
    found = sorted(spans)
    _LAST = (source, found)
    return found


def parsed_source(language: str, source: bytes) -> bytes:
    """The bytes tree-sitter should parse for `source` (a file's text as UTF-8): for C and
    C++, with attribute-like macros blanked (same length); else `source` itself."""
    spans = blanked(language, source)
    if not spans:
        return source
    out = bytearray(source)
    for start, end in spans:
        out[start:end] = b" " * (end - start)
    return bytes(out)


__all__ = ["blanked", "parsed_source"]
