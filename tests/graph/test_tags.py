"""Tag extraction: queries as data, the fields of what comes out, one parse shared with the
chunker, and never an exception."""

from __future__ import annotations

import dataclasses
import re
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import indexers.treesitter.tags
import memserver.core.graph
from indexers.chunking import FileChunker
from indexers.languages import detect_language
from indexers.tagfile import tag_file
from indexers.treesitter import LANGUAGES
from indexers.treesitter.registry import (
    _REGISTRY,
    _TAGS,
    _single_capture,
    grammar,
    query_text,
    split_patterns,
    tags_queries,
)
from indexers.treesitter.tags import extract_tags, parse
from memserver.core.graph import DEFINITION_KINDS, REFERENCE_KINDS, FileTags, Import
from memserver.core.types import ChunkOptions
from tests.indexers.test_chunking import CODE_FIXTURES, RegexTokens

POLYGLOT = Path(__file__).resolve().parent.parent / "fixtures" / "polyglot"
CAPTURES = {
    "name", "receiver", "doc", "declared.type", "declared.from", "declaration", "scope",
    "qualifier", "qualifier.before", "receiver.type", "import", "import.module", "import.name",
    "import.alias", "import.star", "package", "ignore", "ignore.inside", "local.definition",
    "local.type", "local.iterable", "local.implicit", "local.scope", "local.global",
    "local.nonlocal", "local.entered", "local.constructor", "annotated", "decorator", "returned",
    "import.default", "export.default", "export.named", "export.name", "export.as",
    "export.statement", "export.value", "export.member", "export.left",
}  # fmt: skip
KIND_PREFIXES = ("definition.", "reference.", "member.")


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_every_language_has_compiling_tags_split_as_tree_sitter_splits_them(
    language: str,
) -> None:
    """Each half is compiled from its own patterns: the source split into the patterns
    tree-sitter finds in it (compiled whole here), multi-capture ones in `grouped`."""
    from tree_sitter import Query

    queries = tags_queries(language)
    assert queries.grouped.pattern_count > 0 and queries.flat.pattern_count > 0
    assert tags_queries(language) is queries  # cached
    stem = _TAGS.get(language, _REGISTRY[language][1])
    source = query_text(f"{stem}-tags")
    whole = Query(grammar(language).language, source)
    data = source.encode("utf-8")
    theirs = [
        data[whole.start_byte_for_pattern(i) : whole.end_byte_for_pattern(i)].decode()
        for i in range(whole.pattern_count)
    ]  # each up to the next pattern, comments between them included
    ours = split_patterns(source)
    assert [_code(p) for p in ours] == [_code(p) for p in theirs]
    assert queries.grouped.pattern_count + queries.flat.pattern_count == whole.pattern_count
    assert queries.flat.pattern_count == sum(1 for p in ours if _single_capture(p))


def _code(pattern: str) -> list[str]:
    """A pattern's tokens without its comments (strings kept whole)."""
    strings: list[str] = []

    def keep(m: re.Match[str]) -> str:
        strings.append(m.group())
        return f'"{len(strings) - 1}"'

    code = re.sub(r'"(?:\\.|[^"\\])*"', keep, pattern)
    return "\n".join(line.split(";")[0] for line in code.split("\n")).split()


def test_queries_load_from_a_zipped_package_too(tmp_path: Path) -> None:
    """The query files are read from disk beside the module; where the package is not a
    folder (imported from a zip) they come through `importlib.resources`, the same text."""
    import subprocess
    import sys
    import zipfile

    package = Path(indexers.treesitter.tags.__file__).parent.parent
    archive = tmp_path / "indexers.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in package.rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(package.parent).as_posix())
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from indexers.treesitter import registry; "
        "assert registry.__file__.startswith(sys.argv[1]), registry.__file__; "
        "sys.stdout.write(registry.query_text('go-tags') + registry.query_text('tsx-tags'))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(archive)], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == query_text("go-tags") + query_text("tsx-tags")


def test_tags_files_use_the_capture_convention() -> None:
    folder = resources.files("indexers.treesitter").joinpath("queries")
    stems = [p.name[:-4] for p in folder.iterdir() if p.name.endswith("-tags.scm")]
    assert len(stems) >= 19
    for stem in stems:
        code = "\n".join(line.split(";")[0] for line in query_text(stem).split("\n"))
        code = re.sub(r'"(?:\\.|[^"\\])*"', '""', code)
        for capture in set(re.findall(r"@([\w.]+)", code)):
            if capture.startswith("_") or capture in CAPTURES:
                continue
            assert capture.startswith(KIND_PREFIXES), (stem, capture)
            kind = capture.split(".", 1)[1]
            if capture.startswith("definition."):
                assert kind in DEFINITION_KINDS, (stem, capture)
            else:
                assert kind in {*REFERENCE_KINDS, "class", "implementation"}, (stem, capture)


PYTHON = '''"""A module."""
import os.path as osp
from .models import Item, Order as O

LIMIT = 3


class Client(Base):
    """Sends requests.

    More text."""

    retries: int = 2

    @retry(times=3)
    def send(
        self, item: Item
    ) -> Response:
        from .wire import encode
        self.sent = encode(item)
        return self.transport.post(item)  # é


def helper(value):
    # returns the value
    return value
'''


def test_python_definitions_carry_their_fields() -> None:
    tags = extract_tags("pkg/client.py", PYTHON, "python")
    by_name = {d.qualified: d for d in tags.definitions}
    assert set(by_name) == {"LIMIT", "Client", "Client.retries", "Client.send", "Client.sent",
                            "helper"}  # fmt: skip
    client, send = by_name["Client"], by_name["Client.send"]
    assert (client.kind, client.start_line, client.end_line) == ("class", 8, 21)
    assert client.doc == "Sends requests." and client.signature == "class Client(Base):"
    assert (send.kind, send.parent, send.start_line, send.name_line) == ("method", "Client", 16, 16)
    assert send.signature == "def send(" and send.declared_type == "Response"
    assert by_name["Client.retries"].declared_type == "int"
    assert by_name["Client.sent"].declared_type == "encode"  # what it is made from
    assert by_name["LIMIT"].kind == "constant" and by_name["helper"].doc == ""


def test_a_docstring_keeps_the_quotes_and_backticks_it_starts_or_ends_with() -> None:
    source = (
        'def a():\n    """`a` in row form."""\n\n'
        "def b():\n    r'''<b> is \"quoted\"'''\n\n"
        'def c():\n    """"Quoted" first.\n\n    More."""\n\n'
        "def d():\n    'Plain.'\n"
    )
    docs = {d.name: d.doc for d in extract_tags("m.py", source, "python").definitions}
    assert docs == {"a": "`a` in row form.", "b": '<b> is "quoted"', "c": '"Quoted" first.',
                    "d": "Plain."}  # fmt: skip


def test_python_references_imports_and_scopes() -> None:
    tags = extract_tags("pkg/client.py", PYTHON, "python")
    refs = {(r.name, r.line): r for r in tags.references}
    post = refs[("post", 21)]
    assert (post.kind, post.qualifier, post.enclosing) == ("call", "self.transport", "Client.send")
    assert refs[("Base", 8)].kind == "inherit" and refs[("retry", 15)].kind == "call"
    assert refs[("Item", 17)].kind == "type" and refs[("encode", 20)].kind == "call"
    assert ("value", 26) not in refs  # a parameter is not a reference to a definition
    assert ("item", 21) not in refs
    assert refs[("Item", 3)].kind == "import" and refs[("Item", 3)].qualifier == ".models"
    assert set(tags.imports) == {
        Import("pkg/client.py", "os.path", "", "osp", 2),
        Import("pkg/client.py", ".models", "Item", "", 3),
        Import("pkg/client.py", ".models", "Order", "O", 3),
        Import("pkg/client.py", ".wire", "encode", "", 19, enclosing="Client.send"),
    }


def test_python_names_are_uses_where_they_are_values_not_where_they_are_bound() -> None:
    """A bare name is a use where an expression is (and in the two places tree-sitter
    leaves one out: a generic type's arguments, a starred attribute's object); names
    being bound, parameters and keyword names are not."""
    source = (
        "registry = {}\n"
        "if registry:\n"
        "    fallback = None\n"
        "\n"
        "def keys(*names: str, **options: int) -> list[Entry]:\n"
        "    total = 0\n"
        "    total += len(names)\n"
        "    return [*registry.keys()], dict(sep=options)\n"
    )
    refs = {(r.name, r.line) for r in extract_tags("keys.py", source, "python").references}
    assert {("registry", 2), ("Entry", 5), ("registry", 8), ("len", 7), ("dict", 8)} <= refs
    assert {("fallback", 3), ("names", 5), ("options", 5), ("sep", 8), ("total", 6)}.isdisjoint(
        refs)  # fmt: skip


def test_javascript_names_are_uses_where_they_are_values_not_where_they_are_bound() -> None:
    """As in Python: a bare name is a use where an expression is, and where a decorator or
    a JSX tag's namespace names it; the names being declared are not (TypeScript keeps
    every identifier: its types hold uses that are no expressions)."""
    source = (
        "const store = require('./store');\n"
        "@sealed class Shop {}\n"
        "Shop.prototype.open = function open(hours) {\n"
        "  const { days, ...rest } = hours;\n"
        "  return store.open(days, rest, limit);\n"
        "};\n"
        "const view = <Layout.Page title={banner} />;\n"
    )
    tags = extract_tags("shop.js", source, "javascript")
    refs = {(r.name, r.line) for r in tags.references}
    assert {("sealed", 2), ("Shop", 3), ("store", 5), ("limit", 5), ("Layout", 7),
            ("banner", 7)} <= refs  # fmt: skip
    assert {("open", 3), ("hours", 3), ("days", 4), ("rest", 4), ("view", 7)}.isdisjoint(refs)
    assert [r.kind for r in tags.references if r.line == 1 and r.name == "store"] == ["import"]
    typed = {(r.name, r.line) for r in extract_tags(
        "shop.ts", "let pool: typeof store.pool;\n", "typescript").references}  # fmt: skip
    assert ("store", 1) in typed


_JS_BINDINGS = (
    "function open(hours, {a: renamed, b = 2, c: {d}}, [x, ...tail]) {\n"
    "  const { days, ...rest } = hours;\n"
    "  const { k: kk, m = 3, n: nn = 4 } = hours;\n"
    "  const [p, q = 1, ...others] = hours;\n"
    "  for (const { s } of hours) { use(s); }\n"
    "  for (const [i, j] of hours) { use(i, j); }\n"
    "  return store.open(days, rest, renamed, b, d, x, tail, kk, m, nn, p, q, others, limit);\n"
    "}\n"
)
# (path, source, the names its patterns bind) per language; each source also uses `limit`,
# which nothing binds
_BINDINGS = [
    ("open.js", _JS_BINDINGS, "renamed b d x tail days rest kk m nn p q others s i j"),
    ("open.ts", _JS_BINDINGS, "renamed b d x tail days rest kk m nn p q others s i j"),
    (
        "open.py",
        "def run(items):\n    a, (b, c) = split(items)\n    [d, *others] = items\n"
        "    for i, (k, v) in enumerate(items):\n        use(i, k, v)\n"
        "    with open(a) as fh, lock() as (l1, l2):\n        use(fh, l1, l2)\n"
        "    match items:\n        case [first, *tail]:\n            use(first, tail)\n"
        "        case {'key': val, **more}:\n            use(val, more)\n"
        "        case Point(x=px) | Other(px):\n            use(px)\n"
        "        case str() as s:\n            use(s)\n"
        "    return total(a, b, c, d, others, limit)\n",
        "a b c d others i k v fh l1 l2 first tail val more px s",
    ),
    (
        "open.rs",
        "fn run(items: Vec<Item>, &r: &u32) -> u32 {\n"
        "    let Point { x, y: yy, .. } = origin();\n"
        "    if let S { a: Some(z), b } = p() { use_it(z, b); }\n"
        "    let [m, rest @ ..] = items;\n    let ref rr = x;\n    let mut mm = 0;\n"
        "    for (i, mut item) in enumerate(items) { use_it(i, item); }\n"
        "    for &v in items.iter() { use_it(v); }\n"
        "    r + x + yy + m + rest + rr + mm + limit\n}\n",
        "r x yy z b m rest rr mm i item v",
    ),
    (
        "open.go",
        "package m\nfunc run(items []Item) int {\n"
        "\tswitch t := pick(items).(type) { case int: use(t) }\n"
        "\tselect { case v := <-ch: use(v) }\n\treturn limit\n}\n",
        "t v",
    ),
    (
        "Open.kt",
        "fun run(items: List<Item>): Int {\n    val (a, b) = split(items)\n"
        "    for ((i, item) in items.withIndex()) { use(i, item) }\n"
        "    items.forEach { (k, v) -> use(k, v) }\n"
        "    try { g() } catch (e: IOException) { use(e) }\n"
        "    when (val r = h()) { is Int -> use(r) }\n    return total(a, b, limit)\n}\n",
        "a b i item k v e r",
    ),
    (
        "Open.swift",
        "func run(items: [Item]) -> Int {\n    let (a, b) = split(items)\n"
        "    if let v = first(a) { use(v) }\n    guard let g = first(b) else { return 0 }\n"
        "    for (i, item) in items.enumerated() { use(i, item) }\n"
        "    let f = { (p: Int) in p + 1 }\n    do { try h() } catch let e { use(e) }\n"
        "    if case .some(let z) = o { use(z) }\n    return total(a, b, g, f, limit)\n}\n",
        "a b v g i item p e z",
    ),
    (
        "Open.java",
        "class A { int run(List<Item> items) {\n"
        "    try (var r = open(items)) { use(r); }\n"
        "    if (items instanceof Item it) { use(it); }\n"
        "    if (o instanceof Point(int x, var y)) { use(x, y); }\n"
        "    var n = 1;\n    return n + limit;\n} }\n",
        "r it x y n var",
    ),
    (
        "Open.cs",
        "class A { int Run(List<Item> items) {\n    var (a, b) = Split(items);\n"
        "    if (a is Item it) { Use(it); }\n    foreach (var (k, v) in dict) { Use(k, v); }\n"
        "    Func<int, int, int> g = (u, w) => u + w;\n    return Total(a, b, limit);\n} }\n",
        "a b it k v u w",
    ),
    (
        "open.rb",
        "def run(items, **opts)\n  a, (b, c) = split(items)\n  x, *ys = items\n"
        "  items.each { |(k, v), i| use(k, v, i) }\n  items.map { |m, *ms| m + ms }\n"
        "  total(a, b, c, x, ys, opts, limit)\nrescue => e\n  use(e)\nend\n",
        "a b c x ys k v i m ms opts e",
    ),
    (
        "Open.scala",
        "object A { def run(items: List[Item]): Int = {\n"
        "  val (a, b) = split(items)\n  for ((i, item) <- items.zipWithIndex) use(i, item)\n"
        "  for (x <- xs; y = x + 1) use(y)\n  items.foreach { z => use(z) }\n"
        "  items match { case head :: tl => use(head, tl); case Some(v) => v; case n: Int => n;"
        " case all @ Seq(_*) => all }\n  total(a, b, limit)\n} }\n",
        "a b i item x y z head tl v n all",
    ),
    (
        "open.cpp",
        "int run(std::vector<Item> items) {\n    auto [a, b] = split(items);\n"
        "    for (auto& [k, v] : dict) { use(k, v); }\n"
        "    for (const auto& item : items) { use(item); }\n    return total(a, b, limit);\n}\n",
        "a b k v item",
    ),
    (
        "open.zig",
        "fn run(items: []Item) u32 {\n"
        "    for (items, 0..) |item, i| { use(item, i); }\n"
        "    if (first(items)) |v| { use(v); } else |err| { fail(err); }\n"
        "    return limit;\n}\n",
        "item i v err",
    ),
]


@pytest.mark.parametrize(("path", "source", "bound"), _BINDINGS, ids=[b[0] for b in _BINDINGS])
def test_the_names_a_pattern_binds_are_locals_not_uses(path: str, source: str, bound: str
                                                       ) -> None:  # fmt: skip
    """Whatever binds a name in a function (a destructuring renamed, defaulted, nested or
    with a rest; a loop's variables; a match arm, a type test or a catch's pattern), it is
    the function's own: neither where it is bound nor where it is used is it a reference
    (else `references rest` would list it, resolved to any definition of its name)."""
    from indexers.languages import detect_language

    tags = extract_tags(path, source, detect_language(path))
    names = {r.name for r in tags.references}
    assert "limit" in names
    assert not names & set(bound.split())


@pytest.mark.parametrize(
    ("path", "source", "language", "expected"),
    [
        ("chain.js", "function f(ready) {\n  return ready\n    .then(done)\n    .catch(fail);\n}\n",
         "javascript", {"then": "ready", "catch": "ready .then(done)"}),
        ("meta.h", "template <class T> int f() {\n  return traits<T>::limit +\n"
         "    holder->value + pm.*member;\n}\n",
         "cpp", {"limit": "traits<T>", "value": "holder", "member": "pm"}),
        ("c.py", "client = make()\nclient.session\\\n    .send()\n",
         "python", {"send": "client.session"}),
    ],
)  # fmt: skip
def test_a_members_qualifier_is_the_text_before_its_separator(
    path: str, source: str, language: str, expected: dict[str, str]
) -> None:
    """Without the separator (`.`, `->`, `::`, `.*`) or the spaces of a chain broken over
    lines; a bracket before the separator stays (a template's `traits<T>::limit`)."""
    refs = {r.name: r.qualifier for r in extract_tags(path, source, language).references}
    assert {name: refs.get(name) for name in expected} == expected


def test_a_module_exported_whole_is_its_function_and_a_path_imports_its_file() -> None:
    """`module.exports = function build() {…}` defines `build` and binds it as the module's
    value, where the statement sits (not inside `build`); a module imported by its path is
    a reference by its file's name, at that name, in its folder as written."""
    source = (
        'const s = require("./lib/s.js");\n'
        "module.exports = exports = function made(x) {\n  return x;\n};\n"
        'function setup() { exports.a = require("./a") }\n'
        'const theme = require("./theme/site.css");\n'
    )
    tags = extract_tags("m.js", source, "javascript")
    assert [(d.qualified, d.kind) for d in tags.definitions] == [
        ("made", "function"),
        ("setup", "function"),
    ]
    assert [(i.module, i.name, i.alias, i.enclosing) for i in tags.imports] == [
        ("./lib/s.js", "", "s", ""), ("", "made", "module.exports", ""),
        ("./a", "", "exports.a", "setup"), ("./theme/site.css", "", "theme", ""),
    ]  # fmt: skip
    imported = [(r.name, r.qualifier, r.line, r.column) for r in tags.references
                if r.kind == "import"]  # fmt: skip
    assert imported == [
        ("s", "./lib/", 1, source.index("s.js")),
        ("site", "./theme/", 6, len('const theme = require("./theme/')),
    ]  # any extension: `site`, not `css`
    go = extract_tags("m.go", 'package m\n\nimport "github.com/satori/go.uuid"\n', "go")
    assert [(r.name, r.qualifier) for r in go.references if r.kind == "import"] == [
        ("uuid", "github.com/satori/")
    ]


def test_columns_count_characters_not_bytes() -> None:
    text = 'x = "é"; y = f(x)\n'
    (call,) = [r for r in extract_tags("a.py", text, "python").references if r.name == "f"]
    assert call.column == text.index("f(")


@pytest.mark.parametrize("name", sorted(CODE_FIXTURES))
def test_chunk_symbols_are_the_graphs_qualified_names(name: str) -> None:
    text = (POLYGLOT / name).read_text(encoding="utf-8")
    language = CODE_FIXTURES[name]
    tags = extract_tags(name, text, language)
    qualified = {d.qualified for d in tags.definitions}
    chunks = FileChunker(ChunkOptions(max_tokens=80, min_tokens=0), RegexTokens()).chunk(
        name, text, language
    )
    for c in chunks.chunks:
        if c.kind in ("function", "method") and ", " not in c.symbol:
            assert c.symbol.strip("\"'") in qualified, (c.symbol, sorted(qualified))


@pytest.mark.parametrize("name", sorted(CODE_FIXTURES))
def test_tag_file_tags_the_tree_the_chunker_cuts(name: str) -> None:
    text = (POLYGLOT / name).read_text(encoding="utf-8")
    language = CODE_FIXTURES[name]
    tags = tag_file(name, text, language, ChunkOptions().max_parse_bytes)
    cut = FileChunker(ChunkOptions(), RegexTokens()).chunk(name, text, language, tags=True)
    assert cut.fallback_reason is None
    assert tags == extract_tags(name, text, language, parse(text, language))
    assert tags.definitions
    assert cut.tags == tags  # the chunker's own parse gives the same tags
    plain = FileChunker(ChunkOptions(), RegexTokens()).chunk(name, text, language)
    assert plain.tags is None and plain.chunks == cut.chunks  # and the same chunks


def _lines_down(tags: FileTags, by: int) -> FileTags:
    """`tags` with every line number `by` lines further down."""
    return dataclasses.replace(
        tags,
        definitions=tuple(
            dataclasses.replace(d, start_line=d.start_line + by, end_line=d.end_line + by,
                                name_line=d.name_line + by if d.name_line else 0)
            for d in tags.definitions
        ),
        references=tuple(dataclasses.replace(r, line=r.line + by) for r in tags.references),
        imports=tuple(dataclasses.replace(i, line=i.line + by if i.line else 0)
                      for i in tags.imports),
    )  # fmt: skip


def _code_files() -> dict[str, list[Path]]:
    """Every fixture file in a language with tags, by language."""
    out: dict[str, list[Path]] = {}
    for folder in ("polyglot", "polyglot-more", "graph"):
        for path in sorted((POLYGLOT.parent / folder).rglob("*")):
            language = detect_language(path.name)
            if path.is_file() and language in LANGUAGES:
                out.setdefault(language, []).append(path)
    return out


CODE_FILES = _code_files()


@pytest.mark.parametrize("language", sorted(CODE_FILES))
def test_blank_lines_before_the_code_only_move_its_tags_down(language: str) -> None:
    """A tree's root starts at its first token: names, signatures and columns must not shift
    with the blank lines before it (a file saved empty, then written, had its `def fresh_fn`
    named "esh_fn(x"), in the worker's tags and the chunker's alike."""
    limit = ChunkOptions().max_parse_bytes
    chunker = FileChunker(ChunkOptions(), RegexTokens())
    definitions = 0
    for path in CODE_FILES[language]:
        text = path.read_text(encoding="utf-8")
        plain = tag_file(path.name, text, language, limit)
        definitions += len(plain.definitions)
        padded = "\n \n\t\n" + text
        expected = _lines_down(plain, 3)
        assert tag_file(path.name, padded, language, limit) == expected, path.name
        assert chunker.chunk(path.name, padded, language, tags=True).tags == expected, path.name
    assert definitions > 0


def test_tag_file_gives_no_tags_where_the_chunker_does_not_parse() -> None:
    chunker = FileChunker(ChunkOptions(), RegexTokens())

    def none_either_way(path: str, text: str, language: str, options: ChunkOptions) -> None:
        empty = FileTags(path, language)
        assert tag_file(path, text, language, options.max_parse_bytes) == empty
        assert FileChunker(options, RegexTokens()).chunk(path, text, language, True).tags == empty

    for text, language in [("# Title\n\nbody\n", "markdown"), ("a: 1\n", "yaml")]:
        none_either_way("f", text, language, ChunkOptions())
    minified = "var a=[" + ",".join(str(i) for i in range(40_000)) + "];\n"
    assert chunker.chunk("m.js", minified, "javascript").fallback_reason
    none_either_way("m.js", minified, "javascript", ChunkOptions())
    broken = "def f(:\n  ))) ((( ]]\n" * 20
    assert "syntax errors" in (chunker.chunk("b.py", broken, "python").fallback_reason or "")
    none_either_way("b.py", broken, "python", ChunkOptions())
    big = "def f():\n    return 1\n" * 50
    none_either_way("big.py", big, "python", ChunkOptions(max_parse_bytes=100))


def test_a_cpp_header_named_dot_h_is_tagged_as_cpp() -> None:
    header = "namespace geo {\nclass Box {\n public:\n  double area() const;\n};\n}\n"
    for tags in (
        extract_tags("box.h", header, "c"),
        tag_file("box.h", header, "c", ChunkOptions().max_parse_bytes),
        FileChunker(ChunkOptions(), RegexTokens()).chunk("box.h", header, "c", tags=True).tags,
    ):
        assert tags is not None
        assert tags.language == "cpp"
        assert {d.qualified for d in tags.definitions} == {"geo", "geo.Box", "geo.Box.area"}


def test_unknown_languages_and_empty_files_give_empty_tags() -> None:
    assert extract_tags("notes.txt", "hello", "text") == FileTags("notes.txt", "text")
    for language in sorted(LANGUAGES):
        assert extract_tags("f", "", language) == FileTags("f", language, package="")


_CODEISH = st.text(
    alphabet="abc xyz(){}[]<>;:=.,#/*\"'\\@\t\r\n-+def class fn import é", max_size=300
)


@settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(text=_CODEISH, language=st.sampled_from(sorted(LANGUAGES)))
def test_never_raises_on_arbitrary_text(text: str, language: str) -> None:
    tags = extract_tags("f", text, language)
    rows = text.split("\n")
    for d in tags.definitions:
        assert 1 <= d.start_line <= d.end_line <= len(rows)
    for r in tags.references:
        assert 1 <= r.line <= len(rows) and r.kind in REFERENCE_KINDS
    cut = FileChunker(ChunkOptions(), RegexTokens()).chunk("f", text, language, tags=True)
    # one parse or two
    assert cut.tags == tag_file("f", text, language, ChunkOptions().max_parse_bytes)


def test_public_surface() -> None:
    assert indexers.treesitter.tags.__all__ == ["extract_tags", "parse"]
    assert set(memserver.core.graph.__all__) == {
        "CLASS_KINDS", "DEFINITION_KINDS", "GRAPH_VERSION", "REFERENCE_KINDS", "Definition",
        "FileTags", "Import", "RefColumns", "Reference", "StoredFile", "dotted", "file_stem",
        "file_version", "make_definition", "make_reference", "module_stem", "only_declares",
    }  # fmt: skip


def test_a_file_the_chunker_fails_to_cut_still_gets_tag_files_tags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cutting that fails after a good parse falls back to line windows; the tags are then
    made as `tag_file` makes them (a worker would store those), not left out."""
    import indexers.treesitter.chunker as chunker_module

    name = sorted(CODE_FIXTURES)[0]
    text, language = (POLYGLOT / name).read_text(encoding="utf-8"), CODE_FIXTURES[name]

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a chunker bug")

    monkeypatch.setattr(chunker_module, "find_definitions", broken)
    cut = FileChunker(ChunkOptions(), RegexTokens()).chunk(name, text, language, tags=True)
    assert cut.fallback_reason and "chunking failed" in cut.fallback_reason
    assert cut.tags == tag_file(name, text, language, ChunkOptions().max_parse_bytes)
    assert cut.tags.definitions


_PREDICATE = re.compile(r"\(#(?!set!)[\w-]+\?")


def test_no_tags_pattern_sets_a_property_after_a_predicate() -> None:
    """`(#set! …)` after a predicate (`#eq?`, `#match?`, `#is?`) makes tree-sitter's Python
    binding (0.26) corrupt memory compiling the query: a crash later, anywhere (compiling a
    pattern `… (#match? @m "^map$") (#set! implicit "$0")` 300 times ended in a segfault,
    with the `#set!` first it did not)."""
    folder = resources.files("indexers.treesitter").joinpath("queries")
    stems = [p.name[:-4] for p in folder.iterdir() if p.name.endswith("-tags.scm")]
    settings = 0
    for stem in stems:
        for pattern in split_patterns(query_text(stem)):
            code = re.sub(r'"(?:\\.|[^"\\])*"', '""', pattern)
            for found in re.finditer(r"\(#set!", code):
                settings += 1
                assert not _PREDICATE.search(code[: found.start()]), (stem, pattern)
    assert settings >= 3  # Swift's closures, Kotlin's lambdas
