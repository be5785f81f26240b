"""What tree-sitter parses of a C or C++ file: its text with attribute-like macros blanked,
and C++'s namespace macros written as the namespaces they open and close (`namespaces`).

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

import bisect
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
# a line holding only a namespace macro (`PYBIND11_NAMESPACE_BEGIN(detail)`,
# `FOO_END_NAMESPACE(detail);`) and maybe a comment: its name ends or starts with BEGIN/END
# and NAMESPACE, its argument is the namespace's name. No two runs of blanks can share the
# same blanks (possessive): a line of 40,000 spaces after the call took 24 s with them.
_NAMESPACE_MACRO = re.compile(
    rb"^[ \t]*+(?P<call>(?P<macro>[A-Z][A-Z0-9_]*?(?:NAMESPACE_(?P<a>BEGIN|END)|"
    rb"(?P<b>BEGIN|END)_NAMESPACE))[ \t]*+\([ \t]*+(?P<name>[A-Za-z_]\w*+)[ \t]*+\)"
    rb"(?:[ \t]*+;)?)[ \t]*+(?://[^\n]*+|/\*[^\n]*?\*/[ \t]*+)?\r?$",
    re.MULTILINE,
)
# what hides a line from the parse as the preprocessor leaves it: a block comment (an
# unclosed one runs to the end), skipping line comments and strings, whose `/*` opens none
_HIDING = re.compile(
    rb"//[^\n]*+|/\*(?:.*?\*/|.*)|\"(?:\\.|[^\"\\\n])*+\"|'(?:\\.|[^'\\\n])*+'", re.DOTALL
)
# a conditional's directive: `#if`, `#ifdef`, `#ifndef`, `#elif…`, `#else`, `#endif`
_CONDITIONAL = re.compile(
    rb"^[ \t]*+#[ \t]*+(?P<word>ifn?def|if|elif\w*|else|endif)\b(?P<rest>[^\n]*+)", re.MULTILINE
)
_NAME = re.compile(rb"\w+")
_LANGUAGES = frozenset({"c", "cpp"})
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# the last source read and its spans: the chunker's parse and the tags of the same file (the
# same bytes object) scan it once (about 6 ms a megabyte)
_LAST: tuple[bytes, list[tuple[int, int]]] | None = None
_LAST_NAMESPACES: tuple[bytes, list[tuple[int, int, bytes]]] | None = None


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


def namespaces(language: str, source: bytes) -> list[tuple[int, int, bytes]]:
    """What `parsed_source` writes over namespace macros, as (start, end, bytes of that
    length): `PYBIND11_NAMESPACE_BEGIN(detail)` opens `namespace detail {` and the
    `…_END(detail)` after it closes it, the definitions between are that namespace's. One
    whose argument is a macro itself (`PYBIND11_NAMESPACE_BEGIN(PYBIND11_NAMESPACE)`, whose
    name the preprocessor alone knows) is blanked with its end: what it holds is read as
    if at the level around it. An end closes only the last one open, of its name; one in a
    comment, in a conditional's later branch or under `#if 0` is left as written (a
    conditional's first branch is the one read), and so is one without a beginning.
    pybind11's 33 headers that use them: 681 error and missing nodes in their parse before,
    513 now; references resolved in the package, 7,763 before and 8,377 now."""
    global _LAST_NAMESPACES
    if language != "cpp" or b"NAMESPACE" not in source:
        return []
    last = _LAST_NAMESPACES
    if last is not None and last[0] is source:
        return last[1]
    found = list(_NAMESPACE_MACRO.finditer(source))
    hidden = _hidden(source) if found else []
    out: list[tuple[int, int, bytes]] = []
    opened: list[tuple[bytes, bool]] = []  # per open macro: its name, whether it opened one
    for m in found:
        start, end = m.span("call")
        if _inside(hidden, start):
            continue
        size, name = end - start, m.group("name")
        if (m.group("a") or m.group("b")) == b"BEGIN":
            # (the macro's name is longer than `namespace `: the name stays where it is, and
            # a tag's name is read from the file's text) `namespace      detail{`
            at, after = m.span("name")
            if re.fullmatch(_MACRO, name):
                opened.append((name, False))
                out.append((start, end, b" " * size))
            else:
                opened.append((name, True))
                text = b"namespace".ljust(at - start) + name + b"{".rjust(end - after)
                out.append((start, end, text))
        elif opened and opened[-1][0] == name:
            out.append((start, end, (b"}" if opened.pop()[1] else b" ").ljust(size)))
    _LAST_NAMESPACES = (source, out)
    return out


def _hidden(source: bytes) -> list[tuple[int, int]]:
    """The byte spans the parse does not read as the preprocessor leaves them: block
    comments, and the branches of conditionals after their first (and `#if 0`'s first), in
    order and apart."""
    spans = [m.span() for m in _HIDING.finditer(source) if m.group().startswith(b"/*")]
    branches: list[tuple[bool, int]] = []  # per open conditional: hidden, since where
    for m in _CONDITIONAL.finditer(source):
        if _inside(spans, m.start()):
            continue
        word, outer = m.group("word"), any(h for h, _ in branches[:-1])
        if word.startswith(b"if"):
            zero = word == b"if" and m.group("rest").split(b"//")[0].strip() == b"0"
            branches.append((zero, m.end()))
        elif branches:
            was, since = branches.pop()
            if was or outer:
                spans.append((since, m.start()))
            if word != b"endif":
                branches.append((True, m.end()))
    for was, since in branches:  # unclosed
        if was:
            spans.append((since, len(source)))
    return _merged(spans)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def _inside(spans: list[tuple[int, int]], byte: int) -> bool:
    """Whether `byte` is in one of these spans (in order, apart)."""
    at = bisect.bisect_right(spans, (byte + 1, 0)) - 1  # the last starting at or before it
    return at >= 0 and byte < spans[at][1]


def macro_uses(language: str, source: bytes) -> list[tuple[int, int]]:
    """The byte spans of the macro names `parsed_source` writes over (attribute-like
    macros, namespace macros), in order: each is a use of its macro still."""
    spans = blanked(language, source)
    written = namespaces(language, source)
    if not written:
        return spans
    names = [m.span() for start, _, _ in written if (m := _NAME.match(source, start))]
    return sorted([*spans, *names])


def parsed_source(language: str, source: bytes) -> bytes:
    """The bytes tree-sitter should parse for `source` (a file's text as UTF-8): for C and
    C++, with attribute-like macros blanked and namespace macros written as namespaces
    (same length); else `source` itself."""
    spans = blanked(language, source)
    written = namespaces(language, source)
    if not spans and not written:
        return source
    out = bytearray(source)
    for start, end in spans:
        out[start:end] = b" " * (end - start)
    for start, end, text in written:
        out[start:end] = text
    return bytes(out)


__all__ = ["blanked", "macro_uses", "namespaces", "parsed_source"]
