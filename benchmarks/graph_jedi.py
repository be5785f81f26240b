"""The code graph checked against jedi, a real Python static analyser.

Usage: python benchmarks/graph_jedi.py TREE [TREE ...] [--names 300] [--seed 17] [--json]
                                      [--stored] [--cache DIR]

With --stored the graph is the one `memserver index` stores (each tree indexed into a
temporary folder with `--embedder none`, read back by navigation): lookups go through the
`symbol` service (`Navigator.symbols`), references through the `references` service
(`Navigator.references_of`, by the definition's id), call sites through the stored
graph's resolution (what both services resolve with). Without it, tags are extracted
in-process (the extraction half alone).

For each Python package tree: extract tags from every .py/.pyi file, build the symbol
table and resolve every reference once. Then pick N function and method definitions at
random (seeded; from non-test source files, dunder methods left out) and compare:

- symbols: at one real call site of each name (a random reference with that name anywhere
  in the tree) our top candidate against `jedi.Script.goto(follow_imports=True)`; both
  finding nothing in the tree counts as agreement, and so does ours being one of several
  places goto gives (a name defined in both branches of an `if`, listed in no fixed
  order). Also `SymbolTable.lookup` of the qualified, module-qualified and
  `file.py:qualified` names, which must give the definition first.
- references: the (path, line) locations whose references we resolve to the definition
  (top candidate, score >= MIN_CONFIDENCE) against `jedi.Script.get_references` inside the
  tree, the definition's own line left out on both sides. Precision and recall are summed
  over the sampled definitions (micro-averaged).

Every disagreement is classified (receiver of unknown type, star import, re-export,
decorator, inheritance, name collision, not extracted, jedi cannot infer, …). jedi runs
with the tree (and its src/ folder) first on sys.path and the standard library after it,
never the installed site-packages, so `import click` means the tree's click; its cap of
30 newly parsed files per get_references is lifted.

jedi's own answers depend on Python's string hashing: a name bound twice in one module
(attrs' `_get_annotations`, an assignment in one branch and a `def` in the other) gets
either binding from `goto`, and attrs' symbol agreement was 95.7 or 96.1 % run to run. The
benchmark runs under PYTHONHASHSEED=0 (it starts itself again with it) unless the caller
sets one: the same trees give the same numbers.

Prints a table, or JSON; with --report DIR also a report folder (agreement, precision and
recall per package, and the disagreements by class, as figures; needs matplotlib).
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import random
import re
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from indexers.treesitter.tags import extract_tags
from memserver.core.graph import Definition, FileTags, Reference
from memserver.graph import MIN_CONFIDENCE, SymbolTable, resolve
from memserver.graph.resolve import IMPORTED, STAR, UNKNOWN_RECEIVER

_SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "node_modules", "__pycache__", ".tox"}
_TEST_PARTS = {"tests", "test", "testing", "docs", "doc", "examples", "benchmarks"}


@dataclass
class Project:
    root: Path
    tags: dict[str, FileTags]
    table: SymbolTable
    resolved: dict[Reference, list[tuple[Definition, float]]]
    referrers: dict[Definition, set[tuple[str, int]]]
    at_line: dict[tuple[str, int], list[Definition]]
    seconds: dict[str, float]
    reexport_stops: int = 0  # symbol checks where jedi stopped at a re-exporting import
    navigator: Any = None  # --stored: the symbol and references services
    graph: Any = None  # --stored: the GraphIndex they read


@dataclass
class Tally:
    names: int = 0
    sites: int = 0
    site_agree: int = 0
    lookups: int = 0
    lookup_agree: int = 0
    true_pos: int = 0
    false_pos: int = 0
    false_neg: int = 0
    confirmed: int = 0  # extras where jedi's own goto at the site gives the definition
    classes: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, kind: str, text: str) -> None:
        self.classes[kind] += 1
        self.examples.setdefault(kind, [])
        if len(self.examples[kind]) < 40:
            self.examples[kind].append(text)


def python_files(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py*")):
        rel = path.relative_to(root)
        if path.suffix not in (".py", ".pyi") or not path.is_file():
            continue
        if any(part in _SKIP_DIRS or part.startswith(".") for part in rel.parts[:-1]):
            continue
        out.append(rel.as_posix())
    return out


def load(root: Path) -> Project:
    started = time.perf_counter()
    tags = {}
    for rel in python_files(root):
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        tags[rel] = extract_tags(rel, text, "python")
    extracted = time.perf_counter()
    table = SymbolTable(tags.values())
    built = time.perf_counter()
    resolved, referrers, at_line = _resolved(tags, lambda ref, ft: resolve(ref, ft, table))
    done = time.perf_counter()
    seconds = {"extract": extracted - started, "table": built - extracted, "resolve": done - built}
    return Project(root, tags, table, resolved, referrers, at_line, seconds)


def _resolved(tags: dict[str, Any], resolve_one: Any
              ) -> tuple[dict[Any, Any], dict[Any, Any], dict[Any, Any]]:  # fmt: skip
    """Every reference resolved, who refers to each top definition, definitions by line."""
    resolved: dict[Any, Any] = {}
    referrers: dict[Any, set[tuple[str, int]]] = {}
    for file_tags in tags.values():
        for ref in file_tags.references:
            found = resolve_one(ref, file_tags)
            resolved[ref] = found
            for definition in _top(found):
                referrers.setdefault(definition, set()).add((ref.path, ref.line))
    at_line: dict[tuple[str, int], list[Definition]] = {}
    for file_tags in tags.values():
        for d in file_tags.definitions:
            at_line.setdefault((d.path, d.name_line), []).append(d)
    return resolved, referrers, at_line


def load_stored(root: Path, index_dir: Path) -> Project:
    """The tree indexed by `memserver index` (embedder none), its graph read back."""
    from memserver.engine import Engine

    started = time.perf_counter()
    engine = Engine(root, index_dir, embedder_flag="none", env={})
    engine.index()
    indexed = time.perf_counter()
    store = engine.open_store()
    navigator = engine.navigator(store)
    graph = engine.graph_view(store).get()
    loaded = time.perf_counter()
    tags = {
        p: replace(e.tags, references=tuple(at.ref for at in graph.refs_of(p)))
        for p, e in graph.files.items()
        if p.endswith((".py", ".pyi"))
    }
    # every ranked candidate, as the stored graph resolves (its reading keeps the best)
    stored = graph.stored
    resolved, referrers, at_line = _resolved(
        tags, lambda ref, ft: resolve(ref, stored[ref.path].tags, graph.table)
    )
    done = time.perf_counter()
    seconds = {"index": indexed - started, "load": loaded - indexed, "resolve": done - loaded}
    return Project(root, tags, graph.table, resolved, referrers, at_line, seconds,
                   navigator=navigator, graph=graph)  # fmt: skip


def _top(found: list[tuple[Definition, float]]) -> list[Definition]:
    if not found or found[0][1] < MIN_CONFIDENCE:
        return []
    best = found[0][1]
    return [d for d, s in found if s >= best - 1e-9]


def sample(project: Project, count: int, seed: int) -> list[Definition]:
    """Function and method definitions of .py files (stubs declare, they do not define),
    one per qualified name (overloads are one); from source files first, topped up from
    test files (without test_* functions, which nothing calls) when source has too few."""
    rng = random.Random(seed)
    chosen: list[Definition] = []
    for tests in (False, True):
        pool = [
            d
            for path, file_tags in sorted(project.tags.items())
            if path.endswith(".py") and _is_test(path) == tests
            for d in file_tags.definitions
            if d.kind in ("function", "method")
            and not (d.name.startswith("__") and d.name.endswith("__"))
            and not (tests and d.name.startswith("test"))
        ]
        pool = list({(d.path, d.qualified): d for d in reversed(pool)}.values())[::-1]
        chosen += rng.sample(pool, min(count - len(chosen), len(pool)))
    return chosen


def _is_test(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return bool(_TEST_PARTS & set(parts[:-1])) or name.startswith("test_") or name == "conftest.py"


def _module_name(path: str) -> str:
    stem = posixpath.splitext(path)[0].split("/")
    if stem and stem[-1] == "__init__":
        stem = stem[:-1]
    if stem and stem[0] == "src":
        stem = stem[1:]
    return ".".join(stem)


class Jedi:
    """jedi's answers, memoised (and kept in a JSON file with --cache, to iterate quickly)."""

    def __init__(self, root: Path, cache: Path | None = None) -> None:
        import jedi
        import jedi.inference.references

        # jedi's get_references parses at most 30 files it has not seen (a speed cap), and
        # silently misses references beyond them; lifted here so its answer is complete.
        jedi.inference.references._PARSED_FILE_LIMIT = 100_000
        self.cache_path = cache
        self.memo: dict[str, Any] = {}
        if cache is not None and cache.exists():
            self.memo = json.loads(cache.read_text())

        paths = [str(root / "src")] if (root / "src").is_dir() else []
        paths += [str(root), sysconfig.get_paths()["stdlib"]]
        self.jedi = jedi
        self.root = root.resolve()
        self.project = jedi.Project(str(root), sys_path=paths, smart_sys_path=False)
        self.scripts: dict[str, Any] = {}

    def script(self, rel: str) -> Any:
        held = self.scripts.get(rel)
        if held is None:
            held = self.jedi.Script(path=str(self.root / rel), project=self.project)
            self.scripts[rel] = held
        return held

    def _rel(self, name: Any) -> str | None:
        if name.module_path is None:
            return None
        try:
            return Path(name.module_path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def save(self) -> None:
        if self.cache_path is not None:
            self.cache_path.write_text(json.dumps(self.memo))

    def goto(self, rel: str, line: int, column: int, ours: Definition | None = None
             ) -> tuple[str, int] | None:  # fmt: skip
        """Where jedi's goto lands in the tree: of several places (a name defined in both
        branches of an `if`, which jedi lists in no fixed order), `ours` when it is one of
        them, else the first in path and line order."""
        key = f"goto* {rel} {line} {column}"
        if key not in self.memo:
            self.memo[key] = sorted(self._goto(rel, line, column))
        held = [(path, number) for path, number in self.memo[key]]
        if ours is not None and (ours.path, ours.name_line) in held:
            return ours.path, ours.name_line
        return held[0] if held else None

    def references(self, rel: str, line: int, column: int) -> set[tuple[str, int]] | None:
        key = f"refs {rel} {line} {column}"
        if key not in self.memo:
            found = self._references(rel, line, column)
            self.memo[key] = sorted(found) if found is not None else None
        held = self.memo[key]
        return None if held is None else {(p, n) for p, n in held}

    def _goto(self, rel: str, line: int, column: int) -> set[tuple[str, int]]:
        try:
            names = self.script(rel).goto(line, column, follow_imports=True)
        except Exception:
            return set()
        return {
            (where, name.line) for name in names
            if (where := self._rel(name)) is not None and name.line is not None
        }  # fmt: skip

    def _references(self, rel: str, line: int, column: int) -> set[tuple[str, int]] | None:
        try:
            names = self.script(rel).get_references(line, column)
        except Exception:
            return None
        out = set()
        for name in names:
            where = self._rel(name)
            if where is None or name.line is None:
                continue
            if name.is_definition() and not _in_import(name):
                continue
            out.add((where, name.line))
        return out


_LINES: dict[tuple[Path, str], list[str]] = {}


def _lines(root: Path, rel: str) -> list[str]:
    key = (root, rel)
    if key not in _LINES:
        _LINES[key] = (root / rel).read_text(encoding="utf-8", errors="replace").split("\n")
    return _LINES[key]


def _in_import(name: Any) -> bool:
    """Is this name part of an import statement (a reference, though jedi calls it a
    definition)?"""
    tree_name = getattr(name._name, "tree_name", None)
    if tree_name is None:
        return False
    return tree_name.search_ancestor("import_from", "import_name") is not None


def _name_column(root: Path, d: Definition) -> int:
    text = _lines(root, d.path)[d.name_line - 1]
    match = re.search(rf"\b(?:def|class)\s+({re.escape(d.name)})\b", text)
    if match:
        return match.start(1)
    found = re.search(rf"\b{re.escape(d.name)}\b", text)
    return found.start() if found else 0


def _same(project: Project, ours: Definition, where: tuple[str, int] | None) -> bool:
    """Is jedi's location our definition? Overloads count as one definition, and a field
    declared in the class body is the same field jedi finds assigned in a method."""
    if where is None:
        return False
    if (ours.path, ours.name_line) == where:
        return True
    if any(
        d.qualified == ours.qualified and d.path == ours.path
        for d in project.at_line.get(where, [])
    ):
        return True
    if _reexports(project, ours, where):
        return True
    if ours.kind != "field" or ours.path != where[0]:
        return False
    text = _lines(project.root, where[0])[where[1] - 1]
    owners = project.table.defined_in(ours.path, ours.parent)
    inside = any(o.start_line <= where[1] <= o.end_line for o in owners)
    return inside and re.search(rf"\bself\.{re.escape(ours.name)}\b", text) is not None


def _reexports(project: Project, ours: Definition, where: tuple[str, int]) -> bool:
    """Did jedi stop at an import that re-exports our definition (`from ._funcs import
    asdict` in a package's __init__, often reached through a .pyi stub)?"""
    tags = project.tags.get(where[0])
    if tags is None:
        return False
    return any(
        ref.line == where[1]
        and ref.kind == "import"
        and ref.name == ours.name
        and ours in _top(project.resolved.get(ref, []))
        for ref in tags.references
    )


def check(project: Project, jedi_: Jedi, chosen: list[Definition], seed: int) -> Tally:
    tally = Tally()
    rng = random.Random(seed + 1)
    by_name: dict[str, list[Reference]] = {}
    for ref in project.resolved:
        by_name.setdefault(ref.name, []).append(ref)
    for d in chosen:
        tally.names += 1
        _check_lookup(project, d, tally)
        sites = sorted(by_name.get(d.name, []), key=lambda r: (r.path, r.line, r.column))
        if sites:
            _check_site(project, jedi_, rng.choice(sites), tally)
        _check_references(project, jedi_, d, tally)
    return tally


def _check_lookup(project: Project, d: Definition, tally: Tally) -> None:
    module = _module_name(d.path)
    names = [d.qualified, f"{module}.{d.qualified}", f"{posixpath.basename(d.path)}:{d.qualified}"]
    for name in names:
        tally.lookups += 1
        found = _lookup(project, name)
        if found and (
            found[0] == d or (found[0].qualified == d.qualified and found[0].path == d.path)
        ):
            tally.lookup_agree += 1
        elif name != d.qualified:  # a bare qualified name may be ambiguous across modules
            tally.note("lookup", f"{name} -> {found[0].path if found else None}")
        else:
            tally.lookup_agree += 0
            tally.note("lookup: qualified name defined in several modules", name)


def _lookup(project: Project, name: str) -> list[Definition]:
    """Definitions of a name, best first: the `symbol` service's with --stored."""
    if project.navigator is None:
        return project.table.lookup(name)
    return [project.graph.by_id(item.id) for item in project.navigator.symbols(name)]


def _check_site(project: Project, jedi_: Jedi, site: Reference, tally: Tally) -> None:
    tally.sites += 1
    found = project.resolved[site]
    ours = found[0][0] if found and found[0][1] >= MIN_CONFIDENCE else None
    theirs = jedi_.goto(site.path, site.line, site.column, ours)
    where = f"{site.path}:{site.line} {site.qualifier + '.' if site.qualifier else ''}{site.name}"
    if (ours is None and theirs is None) or (ours is not None and _same(project, ours, theirs)):
        tally.site_agree += 1
        exact = ours is None or theirs == (ours.path, ours.name_line)
        if (
            not exact
            and ours is not None
            and theirs is not None
            and _reexports(project, ours, theirs)
        ):
            project.reexport_stops += 1
    else:
        kind = _classify_site(project, site, found, theirs)
        tally.note(f"symbol: {kind}", f"{where}: ours {_show(ours)}, jedi {theirs}")


def _classify_site(project: Project, site: Reference, found: Any, theirs: Any) -> str:
    tags = project.tags[site.path]
    score = found[0][1] if found else 0.0
    if theirs is None:
        if score <= UNKNOWN_RECEIVER + 1e-9:
            return "receiver of unknown type guessed (jedi finds nothing)"
        return "jedi cannot infer"
    if not found or score < MIN_CONFIDENCE:
        if any(i.star for i in tags.imports):
            return "star import"
        if site.qualifier and site.qualifier.split(".")[0] not in ("self", "cls"):
            return "receiver of unknown type (dynamic attribute)"
        return "unresolved"
    target = project.at_line.get(theirs, [])
    ours = found[0][0]
    if target and any(t.name == ours.name and t.kind == "method" for t in target):
        return "inheritance" if ours.kind == "method" else "name collision"
    if score <= UNKNOWN_RECEIVER + 1e-9:
        return "receiver of unknown type (name collision among methods)"
    if score >= IMPORTED - 1e-9 and site.kind == "import":
        return "re-export"
    if score <= STAR + 1e-9 and score > UNKNOWN_RECEIVER:
        return "star import or same package"
    return "name collision"


def _show(d: Definition | None) -> str:
    return f"{d.path}:{d.name_line} {d.qualified}" if d else "None"


def _check_references(project: Project, jedi_: Jedi, d: Definition, tally: Tally) -> None:
    theirs: set[tuple[str, int]] = set()
    for same in project.table.defined_in(d.path, d.qualified):  # every overload
        found = jedi_.references(same.path, same.name_line, _name_column(project.root, same))
        if found is None:
            tally.note("references: jedi failed", _show(same))
            return
        theirs |= found
    own = {(x.path, x.name_line) for x in project.table.defined_in(d.path, d.qualified)}
    stub = d.path + "i"  # a .pyi beside the module declares the same names
    own |= {(x.path, x.name_line) for x in project.table.defined_in(stub, d.qualified)}
    theirs -= own
    ours = set()
    for same in project.table.defined_in(d.path, d.qualified):
        if project.navigator is not None:  # the references service, by the definition's id
            _, refs, _ = project.navigator.references_of(project.graph.def_id(same))
            ours |= {(r.path, r.line) for r in refs}
        else:
            ours |= project.referrers.get(same, set())
    ours -= own
    tally.true_pos += len(ours & theirs)
    for where in sorted(ours - theirs):
        tally.false_pos += 1
        kind = _classify_extra(project, jedi_, d, where)
        tally.confirmed += kind.startswith("jedi goto agrees")
        tally.note(f"extra: {kind}", f"{_show(d)} @ {where}")
    for where in sorted(theirs - ours):
        tally.false_neg += 1
        tally.note(f"missed: {_classify_missed(project, d, where)}", f"{_show(d)} @ {where}")


def _refs_at(project: Project, where: tuple[str, int], name: str) -> list[Reference]:
    tags = project.tags.get(where[0])
    if tags is None:
        return []
    return [r for r in tags.references if r.line == where[1] and r.name == name]


def _classify_extra(project: Project, jedi_: Jedi, d: Definition, where: tuple[str, int]) -> str:
    refs = _refs_at(project, where, d.name)
    if not refs:  # a use under a name of its own (`from m import f as g`; g())
        tags = project.tags.get(where[0])
        refs = [
            r for r in (tags.references if tags is not None else ())
            if r.line == where[1] and any(c == d for c, _ in project.resolved.get(r, ())[:1])
        ]  # fmt: skip
    if not refs:
        return "other"
    ref = refs[0]
    found = project.resolved[ref]
    score = found[0][1] if found else 0.0
    theirs = jedi_.goto(ref.path, ref.line, ref.column, d)
    if _same(project, d, theirs):
        return "jedi goto agrees with us (get_references misses it)"
    if theirs is None:
        if score <= UNKNOWN_RECEIVER + 1e-9:
            return "receiver of unknown type guessed (jedi cannot infer either)"
        return "jedi cannot infer"
    target = project.at_line.get(theirs, [])
    if any(t.name == d.name and t.kind == "method" for t in target):
        return "inheritance or override"
    if score <= UNKNOWN_RECEIVER + 1e-9:
        return "receiver of unknown type (name collision among methods)"
    return "name collision"


def _classify_missed(project: Project, d: Definition, where: tuple[str, int]) -> str:
    refs = _refs_at(project, where, d.name)
    rows = _lines(project.root, where[0])
    text = rows[where[1] - 1] if 0 < where[1] <= len(rows) else ""
    if not refs:
        if "import" in text:
            return "not extracted (import form)"
        return "not extracted"
    ref = refs[0]
    found = project.resolved[ref]
    tags = project.tags[where[0]]
    if not found or found[0][1] < MIN_CONFIDENCE:
        if any(i.star for i in tags.imports):
            return "star import"
        head = ref.qualifier.split(".")[0] if ref.qualifier else ref.name
        if any(i.bound == head or i.name == head for i in tags.imports):
            return "re-export or import not followed"
        if ref.qualifier:
            return "receiver of unknown type (dynamic attribute)"
        return "unresolved"
    ours = found[0][0]
    if ours.name == d.name and ours.kind == "method" and d.kind == "method":
        if found[0][1] <= UNKNOWN_RECEIVER + 1e-9:
            return "receiver of unknown type (name collision among methods)"
        return "inheritance or override"
    if "@" in text:
        return "decorator"
    return "name collision"


def run(tree: Path, names: int, seed: int, cache: Path | None, stored: bool = False
        ) -> dict[str, Any]:  # fmt: skip
    if stored:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="graph-jedi-") as index_dir:
            project = load_stored(tree, Path(index_dir))
            return _run(project, tree, names, seed, cache)
    return _run(load(tree), tree, names, seed, cache)


def _run(project: Project, tree: Path, names: int, seed: int, cache: Path | None
         ) -> dict[str, Any]:  # fmt: skip
    jedi_ = Jedi(tree, cache / f"{tree.name}.json" if cache else None)
    chosen = sample(project, names, seed)
    started = time.perf_counter()
    tally = check(project, jedi_, chosen, seed)
    jedi_.save()
    seconds = dict(project.seconds, jedi_check=time.perf_counter() - started)
    precision = tally.true_pos / max(1, tally.true_pos + tally.false_pos)
    recall = tally.true_pos / max(1, tally.true_pos + tally.false_neg)
    refs = sum(len(t.references) for t in project.tags.values())
    return {
        "package": tree.name,
        "files": len(project.tags),
        "definitions": sum(len(t.definitions) for t in project.tags.values()),
        "references": refs,
        "names": tally.names,
        "call_sites": tally.sites,
        "symbol_agreement": tally.site_agree / max(1, tally.sites),
        "symbol_agreement_via_reexport": project.reexport_stops,
        "lookup_agreement": tally.lookup_agree / max(1, tally.lookups),
        "references_precision": precision,
        "references_recall": recall,
        "references_precision_goto_confirmed": (tally.true_pos + tally.confirmed)
        / max(1, tally.true_pos + tally.false_pos),
        "true_pos": tally.true_pos,
        "false_pos": tally.false_pos,
        "false_neg": tally.false_neg,
        "disagreements": dict(tally.classes.most_common()),
        "examples": tally.examples,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
    }


def report(results: list[dict[str, Any]]) -> None:
    head = f"{'package':<16}{'names':>6}{'sites':>6}{'symbol':>8}{'lookup':>8}"
    print(head + f"{'prec':>7}{'recall':>7}{'prec*':>7}")
    for r in results:
        print(
            f"{r['package']:<16}{r['names']:>6}{r['call_sites']:>6}{r['symbol_agreement']:>8.1%}"
            f"{r['lookup_agreement']:>8.1%}{r['references_precision']:>7.3f}"
            f"{r['references_recall']:>7.3f}{r['references_precision_goto_confirmed']:>7.3f}"
        )
    print(
        "symbol: our top candidate = jedi goto at one call site per name (jedi stopping at a\n"
        "re-exporting import of our definition counts as agreement); prec*: precision when an\n"
        "extra location whose jedi goto gives the definition counts as correct"
    )
    for r in results:
        stops = r["symbol_agreement_via_reexport"]
        print(f"\n{r['package']}: tp {r['true_pos']} fp {r['false_pos']} fn {r['false_neg']}")
        print(f"  symbol agreements where jedi stopped at a re-export: {stops}")
        print(f"  seconds: {r['seconds']}")
        for kind, count in r["disagreements"].items():
            print(f"  {count:>4}  {kind}")
            for example in r["examples"].get(kind, [])[:2]:
                print(f"          e.g. {example}")


def save_report(results: list[dict[str, Any]], out: Path) -> None:
    from memserver.eval.report import Bars, Page, Table, write_report

    packages = [r["package"] for r in results]
    rates = {"symbol agreement": "symbol_agreement", "lookup agreement": "lookup_agreement",
             "references precision": "references_precision",
             "references precision (goto confirmed)": "references_precision_goto_confirmed",
             "references recall": "references_recall"}  # fmt: skip
    classes = sorted({c for r in results for c in r["disagreements"]})
    figures = (
        Bars("agreement", "The code graph against jedi", "Per package: our top candidate "
             "against jedi's goto at one call site per sampled name, lookups by name, and "
             "the references we resolve against jedi's get_references (micro-averaged).",
             "rate", packages, {k: [r[v] for r in results] for k, v in rates.items()}),
        Bars("disagreements", "Disagreements by class", "How many disagreements of each "
             "class per package (receiver of unknown type, star import, re-export, …).",
             "count", packages, {c: [r["disagreements"].get(c) for r in results]
                                 for c in classes}),
    )  # fmt: skip
    keys = ["names", "call_sites", *rates.values(), "true_pos", "false_pos", "false_neg"]
    table = Table("Per package", ["package", *keys], [[r["package"], *(r[k] for k in keys)]
                                                      for r in results])  # fmt: skip
    command = " ".join(["python", *sys.argv])
    page = Page("memserver graph against jedi", figures, (table,))
    written = write_report(out, page, command=command, data=results)
    print(f"report: {written.index}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    if argv is None and "PYTHONHASHSEED" not in os.environ:  # see the module's docstring
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        return subprocess.run([sys.executable, __file__, *sys.argv[1:]], env=env).returncode
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="Python package trees")
    parser.add_argument("--names", type=int, default=300, help="definitions sampled per tree")
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--cache", type=Path, help="folder keeping jedi's answers between runs (per tree)"
    )
    parser.add_argument(
        "--stored", action="store_true",
        help="check the graph `memserver index` stores, through the symbol/references services",
    )  # fmt: skip
    parser.add_argument("--report", type=Path, help="also write a report folder here")
    args = parser.parse_args(argv)
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    results = [run(tree, args.names, args.seed, args.cache, args.stored) for tree in args.trees]
    if args.report:
        save_report(results, args.report)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
