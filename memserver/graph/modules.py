"""Module paths: which files (and which namespace inside them) an import names.

One finder per symbol table, caching per (importing file, module as written): Python
packages and relative imports, JS/TS specifiers with their extensions and index files, Go
and Swift folders, Rust `crate`/`self`/`super` paths and mod files, Java/Kotlin/Scala/C#/PHP
packages and namespaces, C includes (with the sources beside a header), Ruby/Bash/Zig/Lua
files, and modules that are definitions (Elixir `Shop.Item`, a Ruby module).
"""

from __future__ import annotations

import posixpath

from memserver.core.graph import FileTags
from memserver.graph.languages import (
    family,
    python_relative,
    relative_candidates,
    rules,
    rust_module_of,
)
from memserver.graph.table import SymbolTable

Target = tuple[str, str]  # (file, qualified prefix inside it: "" for the module itself)
_RUST_EXTERNAL = frozenset({"std", "core", "alloc"})


class Modules:
    def __init__(self, table: SymbolTable) -> None:
        self.table = table
        self._held: dict[tuple[str, str], list[Target]] = {}

    def submodule(self, path: str, name: str) -> list[Target]:
        tags = self.table.files.get(path)
        if tags is None:
            return []
        stem = posixpath.splitext(posixpath.basename(path))[0]
        r = rules(tags.language)
        spec = f"./{name}" if stem in r.index_files else f"./{stem}/{name}"
        return [(p, "") for p in relative_candidates(spec, path, tags.language)
                if p in self.table.files]  # fmt: skip

    def targets(self, module: str, tags: FileTags) -> list[Target]:
        key = (tags.path, module)
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = self._find_module(module, tags)
        return held

    def _find_module(self, module: str, tags: FileTags) -> list[Target]:
        table, path, language = self.table, tags.path, tags.language
        fam = family(language)
        files = table.files
        if fam == "python":
            if module.startswith("."):
                relative = python_relative(module, path)
                if relative is None:
                    return []
                folder, rest = relative
                base = posixpath.join(folder, *rest.split(".")) if rest else folder
                names = [f"{base}.py", f"{base}.pyi", f"{base}/__init__.py", f"{base}/__init__.pyi"]
                return [(p, "") for p in names if p in files]
            return self._by_keys(module, tags) or self._namespace(module, tags)
        if fam in ("go", "swift"):  # a Go package, a Swift module: a folder of files
            return self._go_package(module, fam)
        if fam == "rust":
            return self.rust(module, tags)
        spec = module.replace("\\", "/") if fam == "php" else module
        if fam == "php" and spec.startswith("/"):  # require __DIR__ . '/x.php'
            spec = "." + spec
        if spec.startswith((".", "/")) or fam in ("c", "ruby", "bash", "zig"):
            near = [(p, "") for p in relative_candidates(spec, path, language) if p in files]
            if near:
                return self._with_sources(near, fam)
        if fam == "ecmascript" and not spec.startswith("."):
            spec = spec.removeprefix("@/").removeprefix("~/")
        if fam == "lua":
            spec = spec.replace(".", "/")
            return self._by_keys(spec.replace("/", "."), tags) or self._namespace(module, tags)
        if fam in ("jvm", "csharp", "php"):  # packages and namespaces, not files, are imported
            found = self._packages(module.replace("\\", "."), tags)
            if found:
                return found
        found = self._by_keys(spec, tags)
        if found:
            return self._with_sources(found, fam)
        return self._packages(module.replace("\\", "."), tags) or self._namespace(module, tags)

    def _by_keys(self, spec: str, tags: FileTags) -> list[Target]:
        stem = spec
        if family(tags.language) in ("ecmascript",):
            root, extension = posixpath.splitext(spec)
            stem = root if extension in (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs") else spec
        return [(p, "") for p in self.table.module_paths(tags.language, stem)]

    def _packages(self, module: str, tags: FileTags) -> list[Target]:
        """A declared package or namespace; or `package.Class` (a static import's module)."""
        parts = module.split(".")
        for cut in range(len(parts), 0, -1):
            paths = self.table.package_paths(tags.language, ".".join(parts[:cut]))
            if paths:
                return [(p, ".".join(parts[cut:])) for p in paths]
        return []

    def _namespace(self, module: str, tags: FileTags) -> list[Target]:
        """A module named by a definition (Elixir `Acme.Store`, a Ruby module, a C# class)."""
        name = module.replace("::", ".").replace("\\", ".")
        found = [d for d in self.table.by_qualified.get(name, []) if d.kind != "function"]
        return [(d.path, d.qualified) for d in found]

    def _with_sources(self, targets: list[Target], fam: str) -> list[Target]:
        """C/C++: an included header also means the sources beside it with its stem."""
        if fam != "c":
            return targets
        out = list(targets)
        for path, _ in targets:
            stem = posixpath.splitext(path)[0]
            for sibling in self.table.folder_paths(posixpath.dirname(path)):
                if posixpath.splitext(sibling)[0] == stem and sibling != path:
                    out.append((sibling, ""))
        return out

    def _go_package(self, module: str, fam: str) -> list[Target]:
        """The folder an import path names by its last segments; else, in Go, the files at
        the project's root when they declare the package it ends with: a module's own root
        package (`github.com/spf13/cobra` from cobra's `doc` folder) has no folder named so."""
        parts = [p for p in module.split("/") if p]
        for start in range(len(parts)):
            folders = self.table.folder_tails.get("/".join(parts[start:]))
            if folders:
                return [(p, "") for f in folders for p in self.table.folder_paths(f)]
        if fam != "go" or len(parts) < 2:  # a bare path is the standard library's
            return []
        root = self.table.packages.get((fam, parts[-1]), [])
        return [(p, "") for p in root if "/" not in p]

    def rust(self, module: str, tags: FileTags) -> list[Target]:
        segments = [s for s in module.replace("::", ".").split(".") if s]
        here = rust_module_of(tags.path)
        external = bool(segments) and segments[0] not in ("crate", "self", "super")
        if segments and segments[0] == "crate":
            segments = segments[1:]
        elif segments and segments[0] in ("self", "super"):
            base = list(here)
            while segments and segments[0] in ("self", "super"):
                if segments.pop(0) == "super" and base:
                    base.pop()
            segments = base + segments
        for cut in range(len(segments), -1, -1):
            key = ".".join(segments[:cut]) if cut else "crate"
            paths = self.table.module_paths(tags.language, key)
            if paths and (cut or not external):
                return [(p, ".".join(segments[cut:])) for p in paths]
        if external and segments[0] not in _RUST_EXTERNAL:  # `geo::x` from the crate's binary
            return self.rust("::".join(["crate", *segments[1:]]), tags)
        return []


__all__ = ["Modules", "Target"]
