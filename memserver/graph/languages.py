"""What resolution needs to know about each language: how files name modules, which words
mean "this object", and which names a file sees without importing them.

Module keys are how a file can be named by an import: Python `pkg/mod.py` is "pkg.mod" (and
"mod"), JavaScript `src/lib/util.ts` is "src/lib/util" (and "lib/util", "util"), a Rust
`src/shapes/mod.rs` is "shapes". Keys are registered for every suffix of the path, since
the project root is rarely the package root (`src/` layouts, monorepos).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

# language -> family: languages of one family import each other's files the same way
FAMILY: dict[str, str] = {
    "python": "python",
    "javascript": "ecmascript",
    "typescript": "ecmascript",
    "tsx": "ecmascript",
    "go": "go",
    "rust": "rust",
    "java": "jvm",
    "kotlin": "jvm",
    "scala": "jvm",
    "csharp": "csharp",
    "c": "c",
    "cpp": "c",
    "ruby": "ruby",
    "php": "php",
    "bash": "bash",
    "lua": "lua",
    "zig": "zig",
    "elixir": "elixir",
    "swift": "swift",
}


@dataclass(frozen=True, slots=True)
class Rules:
    """How names are looked up in one family."""

    self_names: frozenset[str] = frozenset()  # receivers meaning "this object"
    super_names: frozenset[str] = frozenset()  # receivers meaning "my bases"
    implicit_self: bool = False  # a bare name may be a member of the enclosing class
    package_scope: bool = False  # files of one package/directory see each other's names
    global_scope: bool = False  # every file sees every top-level name (Swift, Ruby, Bash…)
    separator: str = "."  # how module keys join (files named by dotted or slashed paths)
    extensions: tuple[str, ...] = ()  # tried after an import specifier without one
    index_files: tuple[str, ...] = ()  # a folder imported as a module means this file
    export_prefixes: tuple[str, ...] = ()  # `exports.parse = …` exports "parse" (CommonJS)
    loose_members: bool = False  # a module's `M.f` / `String.f` is importable as `f`
    # a module bound whole is the value it exports, named as it binds it (CommonJS: `const
    # Router = require("./router")` for `module.exports = Router`)
    module_value: bool = False
    # definitions named by an assignment's target (`exports.x = …`, `Model.prototype.save =
    # …`): the names before theirs are no scopes a bare name is looked up in
    assigned_names: bool = False
    # a class's members are written in its own file only (no partial class, extension,
    # reopening or impl elsewhere): another file's class of the same name shares none
    members_at_home: bool = False


_JS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
RULES: dict[str, Rules] = {
    "python": Rules(frozenset({"self", "cls"}), frozenset({"super()", "super"}),
                    extensions=(".py", ".pyi"), index_files=("__init__",), members_at_home=True),
    "ecmascript": Rules(frozenset({"this"}), frozenset({"super"}), separator="/",
                        extensions=_JS_EXTENSIONS, index_files=("index",),
                        export_prefixes=("exports", "module.exports"), module_value=True,
                        assigned_names=True),
    "go": Rules(package_scope=True, separator="/"),
    "rust": Rules(frozenset({"self", "Self"}), extensions=(".rs",), index_files=("mod", "lib")),
    "jvm": Rules(frozenset({"this"}), frozenset({"super"}), implicit_self=True,
                 package_scope=True, loose_members=True),
    "csharp": Rules(frozenset({"this"}), frozenset({"base"}), implicit_self=True,
                    package_scope=True),
    "c": Rules(frozenset({"this"}), implicit_self=True, global_scope=True, separator="/"),
    "ruby": Rules(frozenset({"self"}), frozenset({"super"}), implicit_self=True,
                  global_scope=True, separator="/", extensions=(".rb",)),
    "php": Rules(frozenset({"$this", "self", "static"}), frozenset({"parent"}),
                 package_scope=True, global_scope=True, separator="/", extensions=(".php",)),
    "bash": Rules(global_scope=True, separator="/", extensions=(".sh", ".bash")),
    "lua": Rules(frozenset({"self"}), global_scope=True, extensions=(".lua",),
                 index_files=("init",), loose_members=True),
    "zig": Rules(frozenset({"self", "Self", "@This()"}), separator="/", extensions=(".zig",)),
    "elixir": Rules(frozenset({"__MODULE__"}), implicit_self=True),
    "swift": Rules(frozenset({"self", "Self"}), frozenset({"super"}), implicit_self=True,
                   package_scope=True, global_scope=True),
}  # fmt: skip
_DEFAULT = Rules()


def family(language: str) -> str:
    return FAMILY.get(language, language)


def rules(language: str) -> Rules:
    return RULES.get(family(language), _DEFAULT)


def exported_as(binding: str, language: str) -> str | None:
    """The name a module exports under one of its own bindings (`exports.parse`, and
    `module.exports.parse`: parse), "" for the module's whole value (`module.exports`), None
    for any other binding or a language without such exports (`Rules.export_prefixes`)."""
    for prefix in rules(language).export_prefixes:
        if binding == prefix:
            return ""
        if binding.startswith(prefix) and binding[len(prefix) : len(prefix) + 1] == ".":
            return binding[len(prefix) + 1 :]
    return None


def module_keys(path: str, language: str) -> list[str]:
    """The names an import may use for this file, most specific first."""
    fam = family(language)
    stem, extension = posixpath.splitext(path)
    if fam == "ecmascript" and stem.endswith(".d"):
        stem = stem[:-2]
    parts = [p for p in stem.split("/") if p]
    r = rules(language)
    if fam == "rust":
        parts = _rust_module(parts)
    elif parts and parts[-1] in r.index_files:
        parts = parts[:-1]
    keys: list[str] = []
    for start in range(len(parts)):
        keys.append(r.separator.join(parts[start:]))
    if fam in ("c", "ruby", "php", "bash", "zig"):  # included or required with the extension
        whole = [p for p in path.split("/") if p]
        keys += ["/".join(whole[start:]) for start in range(len(whole))]
    if fam == "rust" and not parts:
        keys.append("crate")
    if fam == "c" and extension:
        keys.append(stem.rsplit("/", 1)[-1])
    return keys


def _rust_module(parts: list[str]) -> list[str]:
    """Rust module path of a file: src/a/b.rs -> a.b, src/a/mod.rs -> a, src/lib.rs -> ()."""
    if "src" in parts:
        parts = parts[len(parts) - 1 - parts[::-1].index("src") + 1 :]
    if parts and parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return [p.replace("-", "_") for p in parts]


def rust_module_of(path: str) -> list[str]:
    stem = posixpath.splitext(path)[0]
    return _rust_module([p for p in stem.split("/") if p])


def relative_candidates(spec: str, from_path: str, language: str) -> list[str]:
    """Paths a relative import specifier (./x, ../x, x.rb beside the file) may mean."""
    r = rules(language)
    base = posixpath.dirname(from_path)
    joined = posixpath.normpath(posixpath.join(base, spec))
    if joined.startswith("../") or joined == "..":
        return []
    joined = "" if joined == "." else joined
    out = [joined] if posixpath.splitext(joined)[1] else []
    stem = joined
    if family(language) == "ecmascript" and posixpath.splitext(joined)[1] in (".js", ".jsx"):
        stem = posixpath.splitext(joined)[0]  # TypeScript ESM writes ./util.js for util.ts
    out += [stem + ext for ext in r.extensions]
    out += [posixpath.join(stem, index + ext) for index in r.index_files for ext in r.extensions]
    return out


def python_relative(spec: str, from_path: str) -> tuple[str, str] | None:
    """(package folder, dotted rest) of a relative Python module (".utils" from a/b/c.py)."""
    level = len(spec) - len(spec.lstrip("."))
    folder = posixpath.dirname(from_path)
    for _ in range(level - 1):
        if not folder:
            return None
        folder = posixpath.dirname(folder)
    return folder, spec[level:]


__all__ = [
    "FAMILY",
    "RULES",
    "Rules",
    "exported_as",
    "family",
    "module_keys",
    "python_relative",
    "relative_candidates",
    "rules",
    "rust_module_of",
]
