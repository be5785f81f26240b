"""SymbolTable: every definition of a project, indexed so that each question is a few dict
lookups (never a scan of all definitions).

Indexes: by name, by qualified name, by qualified tail ("InvoiceBuilder.Render" for
"Acme.Billing.InvoiceBuilder.Render"), by (file, qualified or namespace-local name), module
keys and declared packages to files, folders to files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator
from typing import Any

from memserver.core.graph import Definition, FileTags
from memserver.graph.languages import family, module_keys

_SEPARATORS = ("::", "#", "->", "\\")


def lookup_text(name: str) -> tuple[str, str]:
    """(path part, dotted name) of what a user wrote: "utils.py:send" -> ("utils.py",
    "send"), "crate::shapes::Polygon" -> ("", "shapes.Polygon"), "Store#fetch" -> ("",
    "Store.fetch")."""
    text, path_part = name, ""
    if ":" in text.replace("::", ""):
        path_part, _, text = text.replace("::", "\0").partition(":")
        path_part, text = path_part.replace("\0", "::"), text.replace("\0", "::")
    for separator in _SEPARATORS:
        text = text.replace(separator, ".")
    return path_part, text.strip(".").removeprefix("crate.")  # Rust's path from the crate root


class SymbolTable:
    """The definitions of many files; read-only once built."""

    def __init__(self, files: Iterable[FileTags]) -> None:
        self.files: dict[str, FileTags] = {}
        self.by_name: dict[str, list[Definition]] = {}
        self.by_qualified: dict[str, list[Definition]] = {}
        self.by_tail: dict[str, list[Definition]] = {}
        self.in_file: dict[tuple[str, str], list[Definition]] = {}
        self.names_in_file: dict[tuple[str, str], list[Definition]] = {}
        self.modules: dict[tuple[str, str], list[str]] = {}  # (family, key) -> paths
        self.packages: dict[tuple[str, str], list[str]] = {}  # (family, package) -> paths
        self.folders: dict[str, list[str]] = {}  # folder -> paths directly in it
        self.folder_tails: dict[str, list[str]] = {}  # "shop/store" -> folders ending so
        self.basenames: dict[str, list[str]] = {}
        self.families: set[str] = set()
        for tags in files:
            self._add(tags)

    def _add(self, tags: FileTags, push: Any = None) -> None:
        path = tags.path
        if path in self.files:
            return
        self.files[path] = tags
        self.families.add(family(tags.language))
        push = push or _push
        for index, key, value in self._entries(tags):
            push(getattr(self, index), key, value)

    def _entries(self, tags: FileTags) -> Iterator[tuple[str, Any, Any]]:
        """(index, key, value) of everything a file puts in the table."""
        path = tags.path
        fam = family(tags.language)
        namespaces = sorted(
            (d.qualified for d in tags.definitions if d.kind == "module"), key=len, reverse=True
        )
        for d in tags.definitions:
            yield "by_name", d.name, d
            yield "by_qualified", d.qualified, d
            parts = d.qualified.split(".")
            for start in range(1, len(parts) - 1):
                yield "by_tail", ".".join(parts[start:]), d
            yield "in_file", (path, d.qualified), d
            yield "names_in_file", (path, d.name), d
            local = _local(d.qualified, namespaces, tags.package)
            if local != d.qualified:
                yield "in_file", (path, local), d
        for key in module_keys(path, tags.language):
            yield "modules", (fam, key), path
        if tags.package:
            yield "packages", (fam, tags.package), path
        folder = posixpath.dirname(path)
        if folder not in self.folders:
            parts = folder.split("/") if folder else []
            for start in range(len(parts)):
                yield "folder_tails", "/".join(parts[start:]), folder
        yield "folders", folder, path
        yield "basenames", posixpath.basename(path), path

    def replaced(self, gone: Iterable[str], added: Iterable[FileTags]) -> SymbolTable:
        """A new table without the files at `gone` and with `added` (which replace files of
        their paths), sharing what did not change with this one, which stays as it was:
        dict copies and the changed files' entries, not a rebuild."""
        new = SymbolTable(())
        for index in _INDEXES:
            setattr(new, index, dict(getattr(self, index)))
        new.families = set(self.families)
        added = list(added)
        for path in (set(gone) | {t.path for t in added}) & self.files.keys():
            tags = new.files.pop(path)
            for index, key, value in new._entries(tags):
                if index in ("folder_tails",):
                    continue  # a folder's tails stay (a folder without files names none)
                bucket = getattr(new, index)
                kept = [v for v in bucket.get(key, ()) if v is not value]
                if kept:
                    bucket[key] = kept
                else:
                    bucket.pop(key, None)
        for tags in added:
            new._add(tags, _push_copy)
        return new

    # --- questions ---------------------------------------------------------------------------

    def defined_in(self, path: str, qualified: str) -> list[Definition]:
        """Definitions in one file under a qualified (or namespace-local) name."""
        return self.in_file.get((path, qualified), [])

    def named_in(self, path: str, name: str) -> list[Definition]:
        return self.names_in_file.get((path, name), [])

    def module_paths(self, language: str, key: str) -> list[str]:
        return self.modules.get((family(language), key), [])

    def package_paths(self, language: str, package: str) -> list[str]:
        return self.packages.get((family(language), package), [])

    def folder_paths(self, folder: str) -> list[str]:
        return self.folders.get(folder, [])

    def lookup(self, name: str) -> list[Definition]:
        """Definitions a user may mean by `name`: "Client.send", "send", "utils.py:send",
        "pkg.mod.Client.send", "crate::shapes::Polygon", "Store#fetch"; best first."""
        path_part, text = lookup_text(name.strip())
        if path_part:
            return self._in_paths(self._paths_like(path_part), text)
        if not text:
            return []
        found: list[Definition] = list(self.by_qualified.get(text, []))
        parts = text.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module, rest = parts[:cut], ".".join(parts[cut:])
            for path in self._module_candidates(module):
                found += self.defined_in(path, rest)
        found += self.by_tail.get(text, [])
        found += self.by_name.get(text, [])
        return _unique(found)

    def _module_candidates(self, module: list[str]) -> list[str]:
        """Files (any family) a dotted or slashed module path names, as module or package."""
        paths: list[str] = []
        for fam in self.families:
            for key in (".".join(module), "/".join(module)):
                paths += self.modules.get((fam, key), []) + self.packages.get((fam, key), [])
        return list(dict.fromkeys(paths))

    def _paths_like(self, path: str) -> list[str]:
        path = path.strip("/")
        if path in self.files:
            return [path]
        base = posixpath.basename(path)
        return [p for p in self.basenames.get(base, []) if p == path or p.endswith("/" + path)]

    def _in_paths(self, paths: list[str], text: str) -> list[Definition]:
        found: list[Definition] = []
        for path in paths:
            if not text:
                found += self.files[path].definitions
                continue
            exact = self.defined_in(path, text)
            found += exact or self.named_in(path, text.rsplit(".", 1)[-1])
        return _unique(found)


def _local(qualified: str, namespaces: list[str], package: str) -> str:
    """A qualified name without its enclosing namespaces/modules (longest first)."""
    for prefix in namespaces:
        if qualified != prefix and qualified.startswith(prefix + "."):
            return qualified[len(prefix) + 1 :]
    if package and qualified.startswith(package + "."):
        return qualified[len(package) + 1 :]
    return qualified


_INDEXES = (
    "files", "by_name", "by_qualified", "by_tail", "in_file", "names_in_file", "modules",
    "packages", "folders", "folder_tails", "basenames",
)  # fmt: skip


def _push_copy(index: dict[Any, Any], key: object, value: object) -> None:
    """`_push` into a table that shares its lists with another: a new list."""
    index[key] = [*index.get(key, ()), value]


def _push(index: dict[Any, Any], key: object, value: object) -> None:
    bucket = index.get(key)
    if bucket is None:
        index[key] = [value]
    else:
        bucket.append(value)


def _unique(items: list[Definition]) -> list[Definition]:
    return list(dict.fromkeys(items))


__all__ = ["SymbolTable"]
