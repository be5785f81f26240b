"""C and C++ parse with attribute-like macros blanked: the class or function after one is
a unit and a definition again, every byte keeps its place, and a macro that may be a type
(or is called) is left as written."""

from __future__ import annotations

import pytest

from indexers.chunking import FileChunker
from indexers.treesitter.macros import blanked, macro_uses, namespaces, parsed_source
from indexers.treesitter.tags import extract_tags
from tests.indexers.test_chunking import UNITS, RegexTokens, first_of

HEADER = """\
#pragma once
#define API_EXPORT __attribute__((visibility("default")))
#define API_NOINLINE __attribute__((noinline)) inline

class API_EXPORT error_already_set : public std::exception {
 public:
  const char* what() const noexcept override;
};

API_NOINLINE detail::type_info *get_type_info(int type) {
  return lookup(type);
}

static API_NOINLINE
void split_line(int x) {
  record(x);
}
"""


@pytest.mark.parametrize(
    ("line", "blank"),
    [
        (b"class API_EXPORT Widget : public Base {\n", b"API_EXPORT"),
        (b"struct API_EXPORT Point final {\n", b"API_EXPORT"),
        (b"  API_NOINLINE void run(int x) {\n", b"API_NOINLINE"),
        (b"inline API_NOINLINE const std::string& name() {\n", b"API_NOINLINE"),
        (b"UINT32 count(int x);\n", b""),  # a type: one name after it
        (b"MY_TYPE_T *make(int);\n", b""),
        (b"RETURN_IF_ERROR run(x);\n", b""),
        (b"API_REGISTER(detail)\n", b""),  # called
        (b"int MAX_SIZE = limit(3);\n", b""),
        (b"class Widget {\n", b""),
    ],
)
def test_what_is_blanked(line: bytes, blank: bytes) -> None:
    spans = blanked("cpp", line)
    assert [line[a:b] for a, b in spans] == ([blank] if blank else [])
    out = parsed_source("cpp", line)
    assert len(out) == len(line)
    assert out.replace(b" ", b"") == line.replace(b" ", b"").replace(blank, b"")


def test_other_languages_parse_their_text_as_written() -> None:
    line = b"class API_EXPORT Widget:\n    pass\n"
    assert parsed_source("python", line) is line and blanked("python", line) == []


def test_the_class_and_functions_after_macros_are_units_and_definitions() -> None:
    chunks = FileChunker(UNITS, RegexTokens()).chunk("api.h", HEADER, "cpp")
    assert first_of(chunks, "error_already_set").kind == "class"
    for name, first_line in (("get_type_info", "API_NOINLINE detail::type_info"),
                             ("split_line", "static API_NOINLINE")):  # fmt: skip
        unit = first_of(chunks, name)
        assert unit.kind == "function"
        assert unit.text.startswith(first_line)  # the file's text: the macro is in it
    tags = extract_tags("api.h", HEADER, "cpp")
    defined = {(d.qualified, d.kind) for d in tags.definitions}
    assert {("error_already_set", "class"), ("error_already_set.what", "method"),
            ("get_type_info", "function"), ("split_line", "function")} <= defined  # fmt: skip
    uses = [(r.name, r.line, r.column) for r in tags.references if r.name.startswith("API_")]
    assert uses == [("API_EXPORT", 5, 6), ("API_NOINLINE", 10, 0), ("API_NOINLINE", 14, 7)]
    calls = {r.name: r.enclosing for r in tags.references if r.kind == "call"}
    assert calls == {"lookup": "get_type_info", "record": "split_line"}


NAMESPACED = b"""\
#define API_NAMESPACE api
API_NAMESPACE_BEGIN(API_NAMESPACE)
API_NAMESPACE_BEGIN(detail) // implementation
int half(int x) { return x / 2; }
API_NAMESPACE_END(detail)
int quarter(int x) { return detail::half(detail::half(x)); }
API_NAMESPACE_END(API_NAMESPACE)
"""


def test_namespace_macros_open_and_close_their_namespaces() -> None:
    """`API_NAMESPACE_BEGIN(detail)` is parsed as `namespace detail {`, its name where the
    file has it; one whose name is a macro (only the preprocessor knows it) is blanked with
    its end; each macro is a use of it still."""
    out = parsed_source("cpp", NAMESPACED)
    assert len(out) == len(NAMESPACED)
    lines = out.decode().split("\n")
    assert lines[1].strip() == "" and lines[6].strip() == ""
    assert lines[2].replace(" ", "") == "namespacedetail{//implementation"
    assert lines[2].index("detail") == NAMESPACED.decode().split("\n")[2].index("detail")
    assert lines[4].strip() == "}"
    tags = extract_tags("api.h", NAMESPACED.decode(), "cpp")
    defined = {(d.qualified, d.kind) for d in tags.definitions}
    assert {("detail", "module"), ("detail.half", "function"), ("quarter", "function")} <= defined
    uses = [(r.name, r.line) for r in tags.references if r.name.startswith("API_NAMESPACE_")]
    assert uses == [("API_NAMESPACE_BEGIN", 2), ("API_NAMESPACE_BEGIN", 3),
                    ("API_NAMESPACE_END", 5), ("API_NAMESPACE_END", 7)]  # fmt: skip
    named = [NAMESPACED[a:b] for a, b in macro_uses("cpp", NAMESPACED)]
    assert named == [b"API_NAMESPACE_BEGIN"] * 2 + [b"API_NAMESPACE_END"] * 2


def test_a_declaration_the_parse_recovers_into_is_named_by_its_last_word() -> None:
    """A struct left open (pybind11's numpy.h) makes tree-sitter take the declaration after
    the namespace's end for a name: the definition is named by the word it ends with."""
    text = (
        "API_NAMESPACE_BEGIN(detail)\n"
        "struct caster<array_t<T>> {\n"
        "helper<F, R> extract(const F &f, R (*)()) {\n"
        "}\n"
        "API_NAMESPACE_END(detail)\n"
        "template <typename R, typename... A>\n"
        "detail::helper<R (*)(A...), R> vectorize(R (*f)(A...)) {\n"
        "    return detail::helper<R (*)(A...), R>(f);\n"
        "}\n"
    )
    names = [d.qualified for d in extract_tags("n.h", text, "cpp").definitions]
    assert any(n.endswith("vectorize") for n in names)
    assert not [n for n in names if " " in n], names


@pytest.mark.parametrize(
    "between",
    [
        b"/* closed by\n   API_NAMESPACE_END(a)\n*/\n",  # in a comment
        b"#if 0\nAPI_NAMESPACE_END(a)\n#endif\n",  # under `#if 0`
        b"#ifdef OLD\n#else\nAPI_NAMESPACE_END(a)\n#endif\n",  # in a later branch
        b"API_NAMESPACE_END(b)\n",  # of another name
    ],
)
def test_an_end_the_parse_would_not_see_closes_nothing(between: bytes) -> None:
    """What a namespace macro opens is closed by the end of its name the parse reads."""
    text = b"API_NAMESPACE_BEGIN(a)\n" + between + b"int f();\nAPI_NAMESPACE_END(a)\nint g();\n"
    tags = extract_tags("api.h", text.decode(), "cpp")
    assert {"a.f", "g"} <= {d.qualified for d in tags.definitions}
    assert parsed_source("cpp", text).count(b"}") == 1


def test_a_long_line_after_a_namespace_macro_is_read_once() -> None:
    """Blanks after the call match one way only: a line of 100,000 took minutes when two
    runs of blanks could share them."""
    text = b"API_NAMESPACE_BEGIN(a)" + b" " * 100_000 + b"x\nint f();\n"
    assert namespaces("cpp", text) == []
    assert parsed_source("cpp", text) == text


@pytest.mark.parametrize(
    "text",
    [
        b"API_NAMESPACE_END(detail)\nint f();\n",  # an end with no beginning
        b"NS_BEGIN(detail)\nint f();\nNS_END(detail)\n",  # no NAMESPACE in the name
        b"API_NAMESPACE_BEGIN(detail) int x;\n",  # more on its line
        b"API_NAMESPACE_BEGIN(detail, v2)\n",  # not one name
    ],
)
def test_other_namespace_like_lines_are_parsed_as_written(text: bytes) -> None:
    written = namespaces("cpp", text)
    assert all(t.strip() == b"" for _, _, t in written)  # blanked at most
    assert b"namespace" not in parsed_source("cpp", text)
