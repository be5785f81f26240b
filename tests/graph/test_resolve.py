"""Resolution and lookup: ranked candidates, nothing dropped, external names left alone,
every lookup form, and dict-speed questions."""

from __future__ import annotations

import time

import memserver.graph
from indexers.treesitter.tags import extract_tags
from memserver.core.graph import FileTags, Reference
from memserver.graph import HOMONYM, MIN_CONFIDENCE, SymbolTable, resolve
from tests.graph.graphkit import FIXTURES, load


def tags_of(files: dict[str, str], language: str = "python") -> dict[str, FileTags]:
    return {path: extract_tags(path, text, language) for path, text in files.items()}


def refs(tags: FileTags, name: str) -> list[Reference]:
    return [r for r in tags.references if r.name == name]


PROJECT = {
    "app/a.py": "class A:\n    def run(self):\n        return 1\n",
    "app/b.py": "class B:\n    def run(self):\n        return 2\n",
    "app/use.py": (
        "import os.path\nfrom os.path import join\n\n"
        "def join_all(x):\n    return join(x)\n\n"
        "def go(thing):\n    thing.run()\n    os.path.exists(thing)\n    missing_name()\n"
    ),
    "lib/util.py": "def join(x):\n    return x\n\ndef missing_name():\n    pass\n",
}


def test_an_ambiguous_receiver_keeps_every_candidate_ranked_below_confidence() -> None:
    tags = tags_of(PROJECT)
    table = SymbolTable(tags.values())
    (run,) = refs(tags["app/use.py"], "run")
    found = resolve(run, tags["app/use.py"], table)
    assert {d.qualified for d, _ in found} == {"A.run", "B.run"}
    assert all(score < MIN_CONFIDENCE for _, score in found)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)


def test_a_name_an_external_import_binds_resolves_to_nothing_despite_a_homonym() -> None:
    tags = tags_of(PROJECT)
    table = SymbolTable(tags.values())
    use = tags["app/use.py"]
    (join,) = [r for r in refs(use, "join") if r.kind == "call"]
    assert resolve(join, use, table) == []  # os.path.join, not lib/util.py's join
    (exists,) = refs(use, "exists")
    assert resolve(exists, use, table) == []


def test_a_bare_name_nothing_in_scope_explains_gets_its_homonyms_at_the_bottom() -> None:
    tags = tags_of(PROJECT)
    table = SymbolTable(tags.values())
    use = tags["app/use.py"]
    (missing,) = refs(use, "missing_name")
    found = resolve(missing, use, table)
    assert [(d.path, d.qualified) for d, _ in found] == [("lib/util.py", "missing_name")]
    assert found[0][1] <= HOMONYM


def test_imports_outrank_a_same_named_definition_elsewhere() -> None:
    repo = load("python")
    app = repo.tags["app.py"]
    normalize = [r for r in refs(app, "normalize") if r.kind == "call" and not r.qualifier]
    found = resolve(normalize[0], app, repo.table)
    assert found[0][0].path == "shop/pricing.py"  # imported, not util/text.py's
    assert found[0][1] >= MIN_CONFIDENCE


def test_lookup_takes_every_form_of_a_name() -> None:
    python, rust, ruby = load("python").table, load("rust").table, load("ruby").table
    assert [d.qualified for d in python.lookup("Order.add")] == ["Order.add"]
    assert {d.path for d in python.lookup("normalize")} == {"shop/pricing.py", "util/text.py"}
    assert [d.path for d in python.lookup("text.py:normalize")] == ["util/text.py"]
    assert [d.path for d in python.lookup("util/text.py:normalize")] == ["util/text.py"]
    assert python.lookup("shop.pricing.normalize")[0].path == "shop/pricing.py"
    assert python.lookup("shop.models.Order.add")[0].qualified == "Order.add"
    assert [d.qualified for d in python.lookup("models.py:Order")] == ["Order"]
    assert rust.lookup("crate::shapes::Polygon")[0].path == "src/shapes/mod.rs"
    assert [d.qualified for d in rust.lookup("Polygon::new")] == ["Polygon.new"]
    assert [d.qualified for d in ruby.lookup("Cache::Store#fetch")] == ["Cache.Store.fetch"]
    assert [d.qualified for d in ruby.lookup("Store.fetch")] == ["Cache.Store.fetch"]
    assert python.lookup("nothing_like_this") == [] and python.lookup("") == []


def test_lookups_and_resolution_are_dict_speed() -> None:
    tables = [load(p.name) for p in sorted(FIXTURES.iterdir()) if p.is_dir()]
    names = [d.qualified for repo in tables for t in repo.tags.values() for d in t.definitions]
    started = time.perf_counter()
    for _ in range(20):
        for repo in tables:
            for name in names[:200]:
                repo.table.lookup(name)
    lookups = 20 * len(tables) * min(200, len(names))
    per_lookup = (time.perf_counter() - started) / lookups
    assert per_lookup < 0.001, per_lookup  # well under a millisecond, whatever the machine
    started = time.perf_counter()
    count = sum(
        len(resolve(r, t, repo.table)) >= 0
        for repo in tables
        for t in repo.tags.values()
        for r in t.references
    )
    assert (time.perf_counter() - started) / count < 0.002


def test_public_surface() -> None:
    assert set(memserver.graph.__all__) == {
        "HOMONYM", "MIN_CONFIDENCE", "Candidate", "SymbolTable", "resolve",
    }  # fmt: skip


LUA = {
    "shop/store.lua": (
        "local Store = {}\nStore.__index = Store\n\n"
        "function Store.new(name)\n  local self = setmetatable({}, Store)\n  self.name = name\n"
        "  return self\nend\n\n"
        "function Store:total()\n  return 0\nend\n\nreturn Store\n"
    ),
    "main.lua": (
        'local Store = require("shop.store")\n'
        'local corner = Store.new("Corner")\n'
        "print(corner:total())\n\n"
        "local function report()\n"
        '  local kiosk = Store.new("Kiosk")\n'
        "  return kiosk:total()\nend\n"
    ),
}


def test_a_lua_object_made_by_its_constructor_finds_its_methods() -> None:
    """`setmetatable({}, Store)` makes a Store, `Store.new` returns one, so a value made by
    `Store.new` (a module's variable or a function's local) has Store's methods: the table
    `Store` is the class its members are defined in."""
    tags = tags_of(LUA, "lua")
    table = SymbolTable(tags.values())
    main = tags["main.lua"]
    totals = refs(main, "total")
    assert [r.line for r in totals] == [3, 7]
    for ref in totals:
        found = resolve(ref, main, table)
        assert found and found[0][1] >= MIN_CONFIDENCE, ref
        assert (found[0][0].path, found[0][0].qualified) == ("shop/store.lua", "Store.total")
