"""Navigation over the stored graph of the sample repository: the finders, and budgeted
answers whose text and JSON each fit the budget by the real tokenizer."""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path

import pytest

from memserver.core.errors import BadRequest
from memserver.engine import Engine
from memserver.navigate import find, rank
from memserver.navigate.items import OutlineEntry
from memserver.navigate.service import Navigator
from memserver.navigate.view import GraphIndex
from memserver.tokens import default_counter
from tests.conftest import write_tree


@pytest.fixture(scope="module")
def nav(indexed_repo: Path) -> Navigator:
    return Engine(indexed_repo, None, env={}).navigator()


def test_symbol_takes_qualified_bare_module_and_file_names(nav: Navigator) -> None:
    for name in ("RetryPolicy.delays", "delays", "src.http_client.RetryPolicy.delays",
                 "http_client.py:RetryPolicy.delays"):  # fmt: skip
        found = nav.symbols(name)
        assert [(s.path, s.symbol, s.kind) for s in found][:1] == [
            ("src/http_client.py", "RetryPolicy.delays", "method")
        ], name
    [policy] = nav.symbols("RetryPolicy")
    assert policy.doc == "How often and how long to wait between attempts."
    assert nav.symbols(policy.id) == [policy]
    assert nav.symbols("no_such_name") == []


def test_references_callers_and_neighbours(nav: Navigator) -> None:
    targets, refs, _ = nav.references_of("RetryPolicy.delays")
    assert [t.symbol for t in targets] == ["RetryPolicy.delays"]
    assert [(r.path, r.kind, r.qualifier, r.enclosing and r.enclosing.symbol) for r in refs] == [
        ("src/http_client.py", "call", "policy", "send_with_retry")
    ]
    _, typed, _ = nav.references_of("RetryPolicy", kinds=["type"])
    assert {r.enclosing.symbol for r in typed if r.enclosing} == {"send_with_retry"}
    assert nav.references_of("RetryPolicy", kinds=["call"])[1] == []
    of, found = nav.neighbours_of("send_with_retry")
    assert [o.symbol for o in of] == ["send_with_retry"]
    callees = {n.item.symbol: n for n in found if n.direction == "callee"}
    assert {"RetryPolicy", "RetryPolicy.delays"} <= set(callees)
    assert callees["RetryPolicy.delays"].lines == (19,)
    _, deep = nav.neighbours_of(of[0].chunk_id, depth=2)
    assert {n.depth for n in deep} <= {1, 2}
    with pytest.raises(BadRequest):
        nav.neighbours_of("send_with_retry", depth=3)
    with pytest.raises(BadRequest, match="unknown reference kind"):
        nav.references_of("RetryPolicy", kinds=["calls"])


def test_a_module_name_that_defines_nothing_is_shown_as_its_file(nav: Navigator) -> None:
    """`symbol src.http_client` (or `http_client.py`): no definition has that name, but a
    module does; the answer says which file it is and what to ask instead."""
    for name in ("src.http_client", "http_client", "http_client.py", "src/http_client.py"):
        answer = nav.symbol(name)
        assert answer.data["modules"] == ["src/http_client.py"], name
        assert "`outline src/http_client.py` lists what it defines" in answer.text
    assert "modules" not in nav.symbol("no_such_name").data
    paths = ["pkg/__init__.py", "pkg/mod.py", "web/lib/index.js", "web/lib/util.js",
             "src/net/mod.rs", "other/pkg/mod.py"]  # fmt: skip
    assert find.modules_named(paths, "pkg") == ["pkg/__init__.py"]
    assert find.modules_named(paths, "pkg.mod") == ["pkg/mod.py", "other/pkg/mod.py"]
    assert find.modules_named(paths, "lib") == ["web/lib/index.js"]
    assert find.modules_named(paths, "net") == ["src/net/mod.rs"]
    assert find.modules_named(paths, "a b") == [] and find.modules_named(paths, "") == []
    assert find.module_outline("pkg/__init__.py") == "pkg/"
    assert find.module_outline("pkg/mod.py") == "pkg/mod.py"


def test_what_was_asked_is_repeated_on_one_line_and_cut_short(nav: Navigator) -> None:
    """A name or path with a line break in it adds no made-up result line to its answer, and
    a name of thousands of characters is not repeated whole."""
    forged = "x\n## src/http_client.py:1-9 function forged c_0"
    answers = [nav.symbol(forged, None), nav.references(forged),
               nav.neighbors(forged, 1, None), nav.outline(forged, None)]  # fmt: skip
    for answer in answers:
        assert not any(line.startswith("## ") for line in answer.text.splitlines()), answer.text
        assert "x\\x0a## src/http_client.py" in answer.text.splitlines()[0]
    long = nav.symbol("y" * 10_000, None).text.splitlines()[0]
    assert long.startswith("symbol yyy") and "…: 0 definitions" in long and len(long) < 200
    count = default_counter().count
    for answer in (nav.symbol("z" * 3000, 256), nav.references("z" * 3000, (), 256)):
        assert answer.tokens <= 256 and count(json.dumps(answer.data)) <= 256, answer.data


def _indexed(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Engine]:
    """`files` written under tmp_path/repo and indexed (keywords and the graph only)."""
    root = write_tree(tmp_path / "repo", files)
    engine = Engine(root, None, embedder_flag="none", env={})
    engine.index()
    return root, engine


def test_uses_tied_to_no_definition_are_listed_after_the_others(tmp_path: Path) -> None:
    """A call through a receiver of unknown type (`registry.lookup(...)` on whatever a
    function was given) may be a use of the method asked about: `references` lists such
    calls after the ones it resolves, marked, counted, and of the kinds asked for; so may a
    bare `lookup(3)` (a bound method taken into a name), not a use in JavaScript (another
    language family)."""
    files = {
        "store.py": "class Store:\n    def lookup(self, key):\n        return key\n",
        "use.py": ("from store import Store\n\n"
                   "def direct():\n    return Store().lookup(1)\n\n"
                   "def given(registry):\n    registry.lookup(2)\n    return registry.lookup\n"
                   "\n\ndef bare():\n    return lookup(3)\n"),
        "web/app.js": "function show(s) { return s.lookup('a'); }\n",
    }  # fmt: skip
    nav = _indexed(tmp_path, files)[1].navigator()
    _, refs, uncertain = nav.references_of("Store.lookup")
    assert [(r.path, r.line) for r in refs] == [("use.py", 4)] and uncertain == 3

    answer = nav.references("Store.lookup")
    lines = answer.text.splitlines()
    assert "3 more uses of the name resolve to no definition for sure" in lines[0]
    first_maybe = lines.index("# uses of the name tied to no definition (3 of 3 shown)")
    assert any("4 call Store().lookup" in line for line in lines[:first_maybe])
    maybe = lines[first_maybe + 1 :]
    assert maybe[0] == "## use.py" and "7 call registry.lookup in function given" in maybe[1]
    assert "8 other registry.lookup in function given" in maybe[2]
    assert "12 call lookup in function bare" in maybe[3] and len(maybe) == 4
    assert [[u["line"] for u in f["references"]] for f in answer.data["maybe"]] == [[7, 8, 12]]

    calls = nav.references("Store.lookup", kinds=["call"])
    assert calls.data["uncertain"] == 2 and "(2 of 2 shown)" in calls.text
    tight = nav.references("Store.lookup", budget_tokens=256)
    assert tight.tokens <= 256
    around = nav.neighbors("Store.lookup")
    assert [c["symbol"] for c in around.data["callers"]] == ["direct"]
    assert around.data["uncertain"] == 3 and "any may be one of its callers" in around.text

    outside = nav.references("registry.lookup")  # defined nowhere: its uses on that name
    assert "no definition of that name in the index; 2 uses of the name" in outside.text
    assert [[u["line"] for u in f["references"]] for f in outside.data["maybe"]] == [[7, 8]]
    assert nav.references("other.lookup").data["uncertain"] == 0
    for written in ("  registry.lookup ", "use.py:registry.lookup", "registry::lookup"):
        assert nav.references(written).data["uncertain"] == 2, written


def test_an_answer_cut_short_makes_only_the_uses_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = "".join(f"def use{i}(r):\n    return r.lookup({i})\n\n" for i in range(60))
    files = {"store.py": "class Store:\n    def lookup(self, key):\n        return key\n",
             "use.py": calls}  # fmt: skip
    nav = _indexed(tmp_path, files)[1].navigator()
    made: list[object] = []
    real = find._ref_item
    monkeypatch.setattr(find, "_ref_item", lambda *a: made.append(a) or real(*a))
    answer = nav.references("Store.lookup", budget_tokens=256)
    shown = sum(len(f["references"]) for f in answer.data.get("maybe", []))
    assert answer.data["uncertain"] == 60 and answer.tokens <= 256
    assert 0 < shown <= len(made) < 60  # not every use made, though only a few fit


def test_uses_are_made_into_items_only_as_far_as_an_answer_reads_them() -> None:
    made: list[int] = []
    items = find._Made(list(range(10)), lambda at: made.append(at) or at)  # type: ignore[arg-type]
    assert len(items) == 10 and made == []
    assert list(items[:3]) == [0, 1, 2] and made == [0, 1, 2]
    assert items[1] == 1 and list(items[:2]) == [0, 1] and made == [0, 1, 2]
    assert items[-1] == 9 and len(made) == 10
    assert items[-2] == 8 and list(items[:-8]) == [0, 1] and list(items[1:-7]) == [1, 2]
    assert list(items[::-4]) == [9, 5, 1] and list(items[10:]) == []


def test_symbol_names_the_module_before_its_stub_whichever_was_stored_first(tmp_path: Path
                                                                          ) -> None:  # fmt: skip
    """`pkg/mod.py` and its type stub `pkg/mod.pyi` define the same module: `symbol` answers
    with the module's definition first, by name, module name or file, in either order of
    the files in the index (their names are swapped between the two runs)."""
    body = "def check(value):\n    return value > 0\n"
    stub = "def check(value: int) -> bool: ...\n"
    for first, second in (("mod", "other"), ("other", "mod")):
        files = {f"pkg/{first}.py": body, f"pkg/{first}.pyi": stub, "pkg/__init__.py": "",
                 f"pkg/{second}.py": "from pkg.{first} import check\n\ncheck(1)\n"}  # fmt: skip
        nav = _indexed(tmp_path / first, files)[1].navigator()
        for name in ("check", f"pkg.{first}.check", f"{first}.py:check"):
            found = nav.symbols(name)
            assert [f.path for f in found][:1] == [f"pkg/{first}.py"], (name, found)
        assert {f.path for f in nav.symbols("check")} == {f"pkg/{first}.py", f"pkg/{first}.pyi"}


def test_references_and_callers_follow_a_definition_under_names_of_its_own(tmp_path: Path
                                                                            ) -> None:  # fmt: skip
    """A definition imported under another name (`from … import x as y`, a module required
    or default-imported whole, its re-export `exports.read = read`) is used under that name:
    `references` and the callers of `neighbors` find those uses, only where the name is
    bound so (a homonym elsewhere is not one)."""
    files = {
        "shop/pricing.py": "def total(items):\n    return sum(items)\n",
        "shop/use.py": (
            "from shop.pricing import total as grand_total\n\n\n"
            "def checkout(items):\n    return grand_total(items)\n"
        ),
        "shop/other.py": (
            "def grand_total():\n    return 0\n\n\ndef audit():\n    return grand_total()\n"
        ),
        "lib/parse.js": "module.exports = function parseItem(text) {\n  return text.trim();\n};\n",
        "lib/util.js": 'const read = require("./parse");\n\nexports.read = read;\n',
        "app.js": (
            'const reader = require("./lib/parse");\nconst util = require("./lib/util");\n\n'
            "function run(text) {\n  return reader(text) + util.read(text);\n}\n\n"
            "function other(read) {\n  return read(1);\n}\n"
        ),
        "web/shop.ts": "export default class Shop {\n  sell(): number {\n    return 1;\n  }\n}\n",
        "web/market.ts": (
            'import Market from "./shop";\n\n'
            "export function open(): number {\n  return new Market().sell();\n}\n"
        ),
    }
    nav = _indexed(tmp_path, files)[1].navigator()
    uses = {(r.path, r.line, r.qualifier) for r in nav.references_of("shop.pricing.total")[1]}
    assert uses == {("shop/use.py", 5, ""), ("shop/use.py", 1, "shop.pricing")}
    _, callers = nav.neighbours_of("shop.pricing.total")
    assert [(n.item.symbol, n.direction) for n in callers] == [("checkout", "caller")]
    parse = nav.references_of("lib/parse.js:parseItem")[1]
    assert {(r.path, r.line, r.kind, r.name) for r in parse} == {
        ("app.js", 1, "import", "parse"),  # required by its file's name
        ("app.js", 5, "call", "reader"),
        ("app.js", 5, "call", "read"),  # util.read
        ("lib/util.js", 1, "import", "parse"),
        ("lib/util.js", 3, "other", "read"),
    }  # not `read(1)` in `other`: a parameter of that name
    shop = nav.references_of("Shop")[1]
    assert {(r.path, r.line) for r in shop} == {("web/market.ts", 1), ("web/market.ts", 4)}


def test_neighbours_cut_to_a_budget_keep_callers_and_callees(tmp_path: Path) -> None:
    """Callers alternate with callees, so the smallest answer that names two neighbours
    names one of each, whatever the order the graph lists them in."""
    callees = "".join(f"def callee_{i}():\n    return {i}\n\n\n" for i in range(6))
    callers = "".join(f"def caller_{i}():\n    return core()\n\n\n" for i in range(6))
    core = "def core():\n    return " + " + ".join(f"callee_{i}()" for i in range(6)) + "\n\n\n"
    nav = _indexed(tmp_path, {"mod.py": callees + core + callers})[1].navigator()
    _, found = nav.neighbours_of("core")
    assert sorted(n.direction for n in found) == ["callee"] * 6 + ["caller"] * 6
    assert [n.direction for n in found[:4]] == ["caller", "callee", "caller", "callee"]
    for budget in range(256, 1200, 16):
        answer = nav.neighbors("core", 1, budget)
        shown = len(answer.data["callers"]) + len(answer.data["callees"])
        if shown >= 2:
            assert answer.data["callers"] and answer.data["callees"], budget
            break
    else:
        raise AssertionError("no budget showed two neighbours")


def test_outline_nests_and_the_map_ranks(nav: Navigator) -> None:
    files, order = nav.outline_of("src/http_client.py")
    [f] = files
    assert [e.item.symbol for e in f.entries] == ["RetryPolicy", "send_with_retry"]
    assert [k.item.symbol for k in f.entries[0].children] == [
        "RetryPolicy.__init__", "RetryPolicy.delays"]  # fmt: skip
    assert len(order) == 4
    assert {f.path for f in nav.outline_of("src/")[0]} == {"src/config.py", "src/http_client.py"}
    assert [f.path for f in nav.outline_of("**/*.js")[0]] == ["web/app.js"]
    files, order = nav.outline_of()
    assert order[0].item.symbol == "RetryPolicy"  # the only definition another one uses
    with pytest.raises(BadRequest, match="leaves the project root"):
        nav.outline_of("../x")


def test_a_use_is_placed_in_the_overload_or_specialization_it_is_written_in(tmp_path: Path
                                                                          ) -> None:  # fmt: skip
    """Definitions that share a name (C++ specializations, Java overloads) each hold their
    own uses: `references` names the one whose lines hold the use, and `neighbours` counts
    each as a caller of its own, not all as the first."""
    cpp = ("void log(int v);\n\ntemplate <typename T>\nstruct process;\n\n"
           "template <>\nstruct process<int> {\n    static void run(int v) { log(v); }\n};\n\n"
           "template <>\nstruct process<long> {\n    static void run(long v) {\n"
           "        log(1);\n    }\n};\n")  # fmt: skip
    java = ("class Sink {\n    static void log(int v) {}\n\n    void put(int a) {\n"
            "        log(a);\n    }\n\n    void put(String a) {\n        log(a.length());\n"
            "    }\n}\n")  # fmt: skip
    nav = _indexed(tmp_path, {"process.cpp": cpp, "Sink.java": java})[1].navigator()
    _, cpp_refs, _ = nav.references_of("process.cpp:log", kinds=["call"])
    assert [(r.line, r.enclosing and (r.enclosing.symbol, r.enclosing.start_line))
            for r in cpp_refs] == [(8, ("process.run", 8)), (14, ("process.run", 13))]  # fmt: skip
    _, java_refs, _ = nav.references_of("Sink.log", kinds=["call"])
    assert [(r.line, r.enclosing and r.enclosing.start_line) for r in java_refs] == [(5, 4), (9, 8)]
    _, found = nav.neighbours_of("Sink.log")
    assert sorted(n.item.start_line for n in found if n.direction == "caller") == [4, 8]


def test_an_outline_puts_each_definition_once_under_the_namesake_around_it(tmp_path: Path
                                                                         ) -> None:  # fmt: skip
    """Two namespaces of one name (declaration merging), a getter and its setter: each
    child is listed once, under the one whose lines hold it, in the map as in the file's
    outline."""
    shapes = ("namespace Shapes {\n  export class Circle {\n    area(): number { return 1; }\n"
              "  }\n}\n\nnamespace Shapes {\n  export class Square {\n"
              "    side(): number { return 2; }\n  }\n}\n")  # fmt: skip
    props = ("class Box:\n    @property\n    def size(self):\n        class Inner:\n"
             "            pass\n        return 1\n\n    @size.setter\n    def size(self, value):\n"
             "        class Other:\n            pass\n        self._size = value\n")  # fmt: skip
    root, engine = _indexed(tmp_path, {"shapes.ts": shapes, "props.py": props})
    nav = engine.navigator()

    def tree(entries: tuple[OutlineEntry, ...]) -> list[object]:
        return [(e.item.symbol, e.item.start_line, tree(e.children)) for e in entries]

    [ts] = nav.outline_of("shapes.ts")[0]
    assert tree(ts.entries) == [
        ("Shapes", 1, [("Shapes.Circle", 2, [("Shapes.Circle.area", 3, [])])]),
        ("Shapes", 7, [("Shapes.Square", 8, [("Shapes.Square.side", 9, [])])]),
    ]
    [py] = nav.outline_of("props.py")[0]
    getter, setter = ("Box.size", 3, [("Box.size.Inner", 4, [])]), ("Box.size", 9, [
        ("Box.size.Other", 10, [])])  # fmt: skip
    assert tree(py.entries) == [("Box", 1, [getter, setter])]
    many = "".join(f"def f():\n    class Inner{i}:\n        pass\n    return {i}\n\n\n"
                   for i in range(40))  # fmt: skip
    (root / "gen.py").write_text(many, encoding="utf-8")
    engine.index()
    [gen] = engine.navigator().outline_of("gen.py")[0]
    assert [(e.item.start_line, [k.item.symbol for k in e.children]) for e in gen.entries] == [
        (1 + 6 * i, [f"f.Inner{i}"]) for i in range(40)
    ]
    (root / "gen.py").unlink()
    engine.index()
    files, order = nav.outline_of()
    assert sorted(e.item.id for e in order) == sorted({e.item.id for e in order})
    assert {f.path: tree(f.entries) for f in files} == {"shapes.ts": tree(ts.entries),
                                                        "props.py": tree(py.entries)}  # fmt: skip
    whole = nav.outline(None, 4096)
    assert whole.text.count("class Square") == 1 and whole.data["total"] == len(order) == 11


def test_the_map_ranks_a_reading_the_same_however_it_was_read(tmp_path: Path) -> None:
    """By columns or by objects, from one read or from two (a reading a change made: its
    files' columns share no values with the rest), the same ranks, and not all alike."""
    files = {"pkg/__init__.py": "", "tests/test_core.py": "from pkg.core import Engine\n\n\n"
             "def test_engine():\n    assert Engine().run_everything()\n"}  # fmt: skip
    for i in range(6):
        files[f"pkg/mod{i}.py"] = (
            "from pkg.core import Engine, helper_function\n\n\n"
            f"class Part{i}:\n    def go(self, engine: Engine):\n"
            f"        return engine.run_everything() + helper_function({i})\n"
            + "".join(f"\n\ndef use_{i}_{k}():\n    return Part{k}().go(None)\n"
                      for k in range(i))
        )  # fmt: skip
    files["pkg/core.py"] = ("class Engine:\n    def run_everything(self):\n        return 1\n\n\n"
                            "def helper_function(x):\n    return x\n")  # fmt: skip
    root = write_tree(tmp_path / "repo", files)
    engine = Engine(root, None, embedder_flag="none", env={})
    engine.index()
    store = engine.open_store()
    manifest = store.files.read()
    by_columns = GraphIndex(store.graph.load(columns=True), manifest)
    by_objects = GraphIndex(store.graph.load(), manifest)
    everything = store.graph.load(columns=True)
    half = {s.tags.path for s in everything[::2]}
    first = GraphIndex([s for s in everything if s.tags.path in half], manifest)
    versions = [s.version for s in everything if s.tags.path not in half]
    changed = first.changed(store.graph.load(versions, columns=True), (), manifest)
    ranked = [rank.rank(g) for g in (by_columns, by_objects, changed)]
    files_rank, defs_rank = ranked[0]
    assert len(set(files_rank.values())) > 3 and len(set(defs_rank.values())) > 3
    assert max(defs_rank, key=defs_rank.__getitem__)[0] == "pkg/core.py"  # used everywhere
    for other_files, other_defs in ranked[1:]:
        assert other_files.keys() == files_rank.keys() and other_defs.keys() == defs_rank.keys()
        for key, value in [*files_rank.items(), *defs_rank.items()]:
            theirs = other_files.get(key) if isinstance(key, str) else other_defs.get(key)
            assert theirs == pytest.approx(value, rel=1e-9), key


@pytest.mark.parametrize("budget", [256, 400, 4096])
def test_every_answer_fits_its_budget_in_both_forms(nav: Navigator, budget: int) -> None:
    count = default_counter().count
    answers = [
        nav.outline(None, budget), nav.outline("src/", budget), nav.symbol("delays", budget),
        nav.references("RetryPolicy", (), budget), nav.neighbors("send_with_retry", 2, budget),
    ]  # fmt: skip
    for a in answers:
        compact = json.dumps(a.data, ensure_ascii=False, separators=(",", ":"))
        assert max(count(a.text), count(compact)) <= a.tokens <= budget
        assert a.data["truncated"] is a.truncated
    assert not answers[2].truncated or budget == 256


def test_a_small_budget_keeps_the_first_items_and_says_so(nav: Navigator) -> None:
    whole = nav.outline(None, 4096)
    cut = nav.outline(None, 256)
    assert not whole.truncated and cut.truncated
    assert "raise budget_tokens" in cut.text
    first = whole.data["files"][0]
    assert cut.data["files"][0]["path"] == first["path"]


def test_an_answer_about_a_name_many_definitions_share_fits_its_budget(tmp_path: Path) -> None:
    """References and neighbours are about a name's best five definitions (the rest
    counted: an id asks about another), listed first, then what follows cut to the budget:
    a name that twenty classes define made even their smallest answer overrun it."""
    count = default_counter().count
    classes = "".join(
        f"class Store{i}:\n    def rows(self, ids_{i}: list[int]) -> list[int]:\n"
        f"        return [self.rows_of(x) for x in ids_{i}]\n\n\n"
        for i in range(20)
    )
    uses = "".join(f"def use_{i}(s: Store{i}):\n    return s.rows([{i}])\n\n\n" for i in range(20))
    root = write_tree(tmp_path / "repo", {"stores.py": classes + uses})
    engine = Engine(root, None, embedder_flag="none", env={})
    engine.index()
    nav = engine.navigator()
    assert len(nav.symbols("rows")) == 20
    for budget in (256, 400, 4096):
        for answer, listed, total in (
            (nav.references("rows", (), budget), "targets", "targets_total"),
            (nav.neighbors("rows", 1, budget), "of", "of_total"),
        ):
            compact = json.dumps(answer.data, ensure_ascii=False, separators=(",", ":"))
            assert max(count(answer.text), count(compact)) <= answer.tokens <= budget
            assert 1 <= len(answer.data[listed]) <= 5 and answer.data[total] == 20
    wide = nav.references("rows", (), 4096)  # the uses of the best five, and it says so
    assert wide.data["total"] == 5 and not wide.truncated
    assert "the best 5 of the 20 definitions of rows: pass an id" in wide.text
    one = nav.symbols("rows")[7]  # asked by id: that one's use alone
    k = one.symbol.removeprefix("Store").removesuffix(".rows")
    by_id = nav.references(one.id, (), 4096)
    [group] = by_id.data["files"]
    assert [r["enclosing"]["symbol"] for r in group["references"]] == [f"use_{k}"]
    assert len(by_id.data["targets"]) == 1 and not by_id.truncated
    near = nav.neighbors(one.id, 1, 4096)
    assert [c["symbol"] for c in near.data["callers"]] == [f"use_{k}"]


def test_depth_two_goes_on_from_the_first_direct_neighbours_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hub's direct neighbours are many: depth 2 goes on from the first `FRONTIER` of
    them in the answer's order (Django's Model took 10 s for what no budget shows)."""
    from memserver.navigate import find

    callers = "".join(f"def caller_{i}():\n    return core()\n\n\n" for i in range(6))
    tops = "".join(f"def top_{i}():\n    return caller_{i}()\n\n\n" for i in range(6))
    root = write_tree(tmp_path / "repo", {"mod.py": "def core():\n    return 1\n\n\n"
                                          + callers + tops})  # fmt: skip
    engine = Engine(root, None, embedder_flag="none", env={})
    engine.index()
    nav = engine.navigator()
    whole = nav.neighbors("core", 2, 4096)
    assert len([c for c in whole.data["callers"] if c["depth"] == 2]) == 6
    assert "depth 2 of the first" not in whole.text and "depth_2_from" not in whole.data
    monkeypatch.setattr(find, "FRONTIER", 3)
    cut = nav.neighbors("core", 2, 4096)
    direct = [c["symbol"] for c in cut.data["callers"] if c["depth"] == 1]
    deep = [c["symbol"] for c in cut.data["callers"] if c["depth"] == 2]
    assert len(direct) == 6
    assert deep == [f"top_{s.removeprefix('caller_')}" for s in direct[:3]]
    assert "depth 2 of the first 3 of the 6 direct ones" in cut.text
    assert cut.data["depth_2_from"] == 3


def test_a_dropped_reading_is_freed_at_once_with_its_table_and_resolver(indexed_repo: Path
                                                                        ) -> None:  # fmt: skip
    """A watcher makes a reading a change: the one it replaces, once every answer has
    read it (map, outline, resolution memos included), goes at once, not at the cyclic
    GC's next full pass, nor never (its symbol table held by its own resolver)."""
    store = Engine(indexed_repo, None, env={}).open_store()

    def answered() -> tuple[weakref.ref[GraphIndex], weakref.ref[object]]:
        g = GraphIndex(store.graph.load(columns=True), store.files.read())
        nav = Navigator(lambda: g, default_counter())
        nav.outline(None), nav.outline("src/"), nav.symbol("delays")
        nav.references("RetryPolicy"), nav.neighbors("send_with_retry", 2)
        return weakref.ref(g), weakref.ref(g.table)

    gc.disable()  # freed by reference counts alone, or not at all
    try:
        reading, table = answered()
        assert reading() is None and table() is None
    finally:
        gc.enable()
