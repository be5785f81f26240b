"""Resolution and lookup: ranked candidates, nothing dropped, external names left alone,
every lookup form, and dict-speed questions."""

from __future__ import annotations

import time
from typing import Any

import pytest

import memserver.graph
from indexers.treesitter.tags import extract_tags
from memserver.core.graph import FileTags, Reference
from memserver.graph import HOMONYM, MIN_CONFIDENCE, SymbolTable, resolve
from memserver.graph.resolve import _Resolver
from tests.graph.graphkit import FIXTURES, load


def tags_of(files: dict[str, str], language: str = "python") -> dict[str, FileTags]:
    return {path: extract_tags(path, text, language) for path, text in files.items()}


def refs(tags: FileTags, name: str) -> list[Reference]:
    return [r for r in tags.references if r.name == name]


def _project(files: dict[str, str], path: str, language: str = "python"
             ) -> tuple[FileTags, SymbolTable]:  # fmt: skip
    """The tags of `path` among `files`, and the table of them all."""
    tags = tags_of(files, language)
    return tags[path], SymbolTable(tags.values())


def _confident(tags: FileTags, table: SymbolTable, line: int, name: str) -> list[str]:
    """The definitions the one use of `name` on `line` resolves to with confidence."""
    (ref,) = [r for r in tags.references if r.line == line and r.name == name]
    return [d.qualified for d, s in resolve(ref, tags, table) if s >= MIN_CONFIDENCE]


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


def test_every_file_gets_an_ambiguous_names_candidates_nearest_first() -> None:
    """A receiver of unknown type and a homonym rank their candidates from the asking file
    (its folder's definition first), however often it asks and whatever another file asked
    before, and a caller changing the list it got changes nothing for the next."""
    files = {
        "a/one.py": "class One:\n    def run(self):\n        return 1\n",
        "b/two.py": "class Two:\n    def run(self):\n        return 2\n",
        "a/use.py": "def go(thing):\n    thing.run()\n    thing.run()\n    free()\n",
        "b/use.py": "def go(thing):\n    thing.run()\n    free()\n",
        "a/free.py": "def free():\n    pass\n",
        "b/free.py": "def free():\n    pass\n",
    }
    tags = tags_of(files)
    table = SymbolTable(tags.values())
    for _ in range(2):
        for path in ("a/use.py", "b/use.py"):
            folder = path.split("/")[0]
            for name in ("run", "free"):
                for ref in refs(tags[path], name):
                    found = resolve(ref, tags[path], table)
                    assert len(found) == 2 and found[0][0].path.startswith(folder + "/")
                    found.clear()  # the caller's own list


def _capped(monkeypatch: pytest.MonkeyPatch, method: str, cap: int) -> None:
    """`_Resolver.<method>` fails once called `cap` times: a walk gone exponential ends the
    test at once instead of running for hours."""
    real = getattr(_Resolver, method)
    calls = [0]

    def counted(self: _Resolver, *args: Any) -> Any:
        calls[0] += 1
        assert calls[0] <= cap, f"{method} called more than {cap} times"
        return real(self, *args)

    monkeypatch.setattr(_Resolver, method, counted)


def test_headers_that_include_one_another_and_specializations_that_inherit_stay_cheap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A header's includes are star imports, and C++ specializations share their template's
    name and inherit from one another: each walk meets the same headers and classes again
    through every other one. Walked without holding what they found, pybind11's `attr.h`
    took 14 s for one reference and 48 s for `references name`; this project, millions of
    calls. Held, it is a few thousand, and the answers are the same."""
    n = 8
    files = {
        f"h{i}.hpp": "".join(f'#include "h{j}.hpp"\n' for j in range(n) if j != i)
        + f"int f{i}(int x);\n"
        for i in range(n)
    }
    files["use.cpp"] = "".join(f'#include "h{j}.hpp"\n' for j in range(n)) + (
        "int use() { return missing(1) + f3(2); }\n"
    )
    spec = "template <typename T, typename S = void>\nstruct process;\n\n"
    spec += "template <typename T>\nstruct process_base {\n    static void init(const T &) {}\n};\n"
    for i in range(12):
        base = f"process_base<t{i}>" if i % 3 else f"process<t{i - 1}>"
        spec += (f"\ntemplate <>\nstruct process<t{i}> : {base} {{\n"
                 f"    static void run(const t{i} &v) {{ init(v); name(v); }}\n}};\n")  # fmt: skip
    files["attr.hpp"] = spec
    tags = tags_of(files, "cpp")
    table = SymbolTable(tags.values())
    _capped(monkeypatch, "_member_of", 100_000)
    _capped(monkeypatch, "_reexported", 5_000)
    found = {
        (r.path, r.line, r.name): resolve(r, t, table) for t in tags.values() for r in t.references
    }
    use = tags["use.cpp"]
    [f3] = refs(use, "f3")
    assert [(d.path, d.name) for d, _ in found[("use.cpp", f3.line, "f3")]] == [("h3.hpp", "f3")]
    inits = [k for k in found if k[0] == "attr.hpp" and k[2] == "init"]
    assert len(inits) == 12
    assert all({d.qualified for d, _ in found[k]} == {"process_base.init"} for k in inits)


def test_a_caller_keeping_only_confident_candidates_is_spared_the_global_tiers() -> None:
    """With a floor above them, a receiver of unknown type and a homonym give nothing (they
    would give only guesses below it); what reaches the floor is as without one."""
    tags = tags_of(PROJECT)
    table = SymbolTable(tags.values())
    use = tags["app/use.py"]
    for name in ("run", "missing_name"):
        (ref,) = refs(use, name)
        assert resolve(ref, use, table) and resolve(ref, use, table, floor=MIN_CONFIDENCE) == []
    for t in tags.values():
        for ref in t.references:
            floored = resolve(ref, t, table, floor=MIN_CONFIDENCE)
            kept = [c for c in resolve(ref, t, table) if c[1] >= MIN_CONFIDENCE]
            assert [c for c in floored if c[1] >= MIN_CONFIDENCE] == kept


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


def test_a_name_imported_from_a_module_of_the_same_name_is_that_modules_definition() -> None:
    """`from .fence import fence` (a package's `__init__.py` re-exporting its rules) and
    `from app.core import core`: the module is the one written, not the importing file."""
    files = {
        "rules/__init__.py": "from .fence import fence, make_rule\nfrom rules.hr import hr\n",
        "rules/fence.py": "def make_rule():\n    pass\n\ndef fence(state):\n    pass\n",
        "rules/hr.py": "def hr(state):\n    pass\n",
        "parser.py": "from rules import fence, hr\n\ndef run(s):\n    fence(s)\n    hr(s)\n",
    }
    init, table = _project(files, "rules/__init__.py")
    parser = tags_of({"parser.py": files["parser.py"]})["parser.py"]
    assert {(i.module, i.name) for i in init.imports} == {
        (".fence", "fence"), (".fence", "make_rule"), ("rules.hr", "hr"),
    }  # fmt: skip
    for name, path in (("fence", "rules/fence.py"), ("hr", "rules/hr.py")):
        (imported,) = refs(init, name)
        found = resolve(imported, init, table)
        assert found[0][0].path == path and found[0][1] >= MIN_CONFIDENCE, name
        (call,) = [r for r in refs(parser, name) if r.kind == "call"]
        found = resolve(call, parser, table)
        assert (found[0][0].path, found[0][0].qualified) == (path, name), name


def test_receivers_typed_by_a_generic_constructor_a_default_an_element_or_an_attribute() -> None:
    """`Ruler[T]()`, `x or Default()`, `A() if c else None`, `tokens[i]` and `for t in
    tokens` of a `Sequence[Token]`, `tokens[i].block()`, `info = self.info`: each receiver's
    class is known. A slice is no element; a binding that only copies an attribute leaves a
    constructed one in another branch its type."""
    files = {
        "m/ruler.py": "class Ruler:\n    def push(self, x):\n        pass\n",
        "m/token.py": "class Token:\n    def block(self):\n        pass\n",
        "m/info.py": "class Info:\n    def ampm(self):\n        pass\n    conv = None\n",
        "m/use.py": (
            "from typing import Sequence\nfrom .ruler import Ruler\nfrom .token import Token\n"
            "from .info import Info\n\n"
            "class P:\n"
            "    def __init__(self, info=None):\n"
            "        self.ruler = Ruler[int]()\n"
            "        self.info = info or Info()\n\n"
            "    def go(self, tokens: Sequence[Token], idx: int, other):\n"
            "        self.ruler.push(1)\n"  # 12
            "        token = tokens[idx]\n"
            "        token.block()\n"  # 14
            "        info = self.info\n"
            "        info.ampm()\n"  # 16
            "        made = Info() if idx else None\n"
            "        made.ampm()\n"  # 18
            "        for t in tokens:\n"
            "            t.block()\n"  # 20
            "        part = tokens[1:]\n"
            "        part.block()\n"  # 22
            "        if idx:\n"
            "            conv = Info()\n"
            "        else:\n"
            "            conv = other.conv\n"
            "        conv.ampm()\n"  # 27
            "        tokens[idx].block()\n"  # 28
            "        tokens[1:].block()\n"  # 29
        ),
    }
    use, table = _project(files, "m/use.py")
    expected = {12: "Ruler.push", 14: "Token.block", 16: "Info.ampm", 18: "Info.ampm",
                20: "Token.block", 27: "Info.ampm", 28: "Token.block"}  # fmt: skip
    names = {r.line: r.name for r in use.references if r.name in ("push", "block", "ampm")}
    assert set(names) == {*expected, 22, 29}
    for line, name in names.items():
        wanted = [expected[line]] if line in expected else []
        assert _confident(use, table, line, name) == wanted, line


def test_a_union_ranks_each_alternatives_members_in_the_order_written() -> None:
    """`transport: AnyStream` with `AnyStream: TypeAlias = Obj[bytes] | Bytes`, and
    `Union[Bytes, Obj]`: every alternative's member is a candidate, the first written
    first (even through inheritance), and a name no alternative has is none."""
    files = {
        "s/abc.py": (
            "from typing import TypeAlias\n"
            "class Base:\n    def receive(self):\n        pass\n"
            "class Obj(Base):\n    pass\n"
            "class Bytes:\n    def receive(self):\n        pass\n"
            "    def only_bytes(self):\n        pass\n"
            "AnyStream: TypeAlias = Obj[bytes] | Bytes\n"
        ),
        "s/use.py": (
            "from typing import Union\nfrom .abc import AnyStream, Obj, Bytes\n\n"
            "class Text:\n"
            "    transport: AnyStream\n"
            "    other: Union[Bytes, Obj]\n\n"
            "    def go(self):\n"
            "        self.transport.receive()\n"  # 9
            "        self.transport.only_bytes()\n"  # 10
            "        self.other.receive()\n"  # 11
            "        self.transport.nothing()\n"  # 12
        ),
    }
    use, table = _project(files, "s/use.py")
    expected = {
        9: ["Base.receive", "Bytes.receive"],
        10: ["Bytes.only_bytes"],
        11: ["Bytes.receive", "Base.receive"],
        12: [],
    }
    for line, name in ((9, "receive"), (10, "only_bytes"), (11, "receive"), (12, "nothing")):
        assert _confident(use, table, line, name) == expected[line], line


def test_a_local_rebound_from_itself_keeps_its_type() -> None:
    """`url = url.copy_with(...)`: the call on its right is on the URL made before, and
    after it `url` is what copy_with returns; `made = None if c else URL()` is a URL."""
    files = {
        "u/url.py": (
            "class URL:\n    def copy_with(self) -> 'URL':\n        return self\n"
            "    def host(self):\n        pass\n"
        ),
        "u/use.py": (
            "from .url import URL\n\n"
            "def go(location, c):\n"
            "    url = URL(location)\n"
            "    url = url.copy_with()\n"  # 5
            "    url.host()\n"  # 6
            "    made = None if c else URL(location)\n"
            "    made.host()\n"  # 8
        ),
    }
    use, table = _project(files, "u/use.py")
    expected = {(5, "copy_with"): "URL.copy_with", (6, "host"): "URL.host",
                (8, "host"): "URL.host"}  # fmt: skip
    seen = set()
    for ref in use.references:
        if (ref.line, ref.name) in expected:
            found = resolve(ref, use, table)
            assert found[0][0].qualified == expected[ref.line, ref.name]
            assert found[0][1] >= MIN_CONFIDENCE
            seen.add((ref.line, ref.name))
    assert seen == set(expected)


def test_what_is_no_element_nor_copy_gives_no_type() -> None:
    """An annotation beside a copied value wins; a call on an index of an instance, a copy
    read through an index, a tuple's second place, a list of values and a choice of two
    calls make no type; a comprehension variable's element (`r[0]` of a `list[Key]`) is a
    Key."""
    files = {
        "k/kinds.py": (
            "class Node:\n    def args(self):\n        pass\n    def walk(self):\n        pass\n"
            "class Call(Node):\n    def args(self):\n        pass\n"
            "class Key:\n    def walk(self):\n        pass\n    def run(self):\n        pass\n"
            "    def value(self):\n        pass\n    entry = None\n"
            "class Other:\n    def run(self):\n        pass\n"
        ),
        "k/use.py": (
            "from .kinds import Node, Call, Key, Other\n"
            "registry = Key()\n\n"
            "class W:\n"
            "    rows: list[Key]\n\n"
            "    def go(self, node: Node, pair: tuple[Key, Node], rows: list[list[Key]]):\n"
            "        node: Call = self.current\n"
            "        node.args()\n"  # 9
            "        obj = registry[1]()\n"
            "        obj.run()\n"  # 11
            "        entry = self.rows[0].entry\n"
            "        entry.run()\n"  # 13
            "        pair[1].walk()\n"  # 14
            "        for h in [Key(), Other()]:\n"
            "            h.run()\n"  # 16
            "        pick = Key() if node else Other()\n"
            "        pick.run()\n"  # 18
            "        HANDLERS = Key()\n"
            "        made = HANDLERS[1]()\n"
            "        made.walk()\n"  # 21
            "        return [r[0].value() for r in rows]\n"  # 22
        ),
    }
    use, table = _project(files, "k/use.py")
    assert _confident(use, table, 9, "args") == ["Call.args"]
    for line, name in ((11, "run"), (13, "run"), (14, "walk"), (16, "run"), (18, "run"),
                       (21, "walk")):  # fmt: skip
        assert _confident(use, table, line, name) == [], (line, name)
    assert _confident(use, table, 22, "value") == ["Key.value"]  # an element of list[Key]


def test_a_comprehensions_variable_heads_its_chain_once() -> None:
    """`[e.manager.name() for e in staff]`: the chain is walked from e's type once (a
    second walk went on to the manager's manager)."""
    source = (
        "class Director:\n    def name(self):\n        pass\n"
        "class Manager:\n    manager: Director\n    def name(self):\n        pass\n"
        "class Employee:\n    manager: Manager\n"
        "def go(staff: list[Employee]):\n"
        "    return [e.manager.name() for e in staff]\n"  # 11
    )
    tags = tags_of({"staff.py": source})
    table = SymbolTable(tags.values())
    assert _confident(tags["staff.py"], table, 11, "name") == ["Manager.name"]


def test_a_php_arrow_functions_parameter_heads_its_chain_not_the_outer_local() -> None:
    """`fn(Shop $o) => $o->owner->price()` inside a function whose own `$o` is an Order."""
    source = (
        "<?php\n"
        "class Owner { function price() {} }\n"
        "class Bill { function price() {} }\n"
        "class Shop { public Owner $owner; }\n"
        "class Order { public Bill $owner; }\n"
        "function f(Order $o, array $xs) {\n"
        "    return array_map(fn(Shop $o) => $o->owner->price(), $xs);\n"  # 7
        "}\n"
    )
    tags = tags_of({"a.php": source}, "php")
    table = SymbolTable(tags.values())
    assert _confident(tags["a.php"], table, 7, "price") == ["Owner.price"]


def test_type_texts_with_nothing_inside_their_brackets_are_no_type() -> None:
    from memserver.graph.typetext import element_type, main_type, union_members

    for text in ("Optional[]", "Final[ ]", "Annotated[]", "ArrayList< >", "list[]", "Union[]"):
        assert union_members(text) == []
        element_type(text), main_type(text)  # and nothing raised
    assert main_type("Item[]?") == "" and element_type('"tuple[Key, Node]"') == ""
    from memserver.graph.typetext import entered_type

    entered = {"t.Iterator[Runner]": "Runner", "Generator[Runner, None, None]": "Runner",
               "contextlib.AbstractAsyncContextManager[Conn]": "Conn",
               '"ContextManager[Conn]"': "Conn", "list[Conn]": "", "Conn": "", "": ""}  # fmt: skip
    assert {text: entered_type(text) for text in entered} == entered
    assert union_members('"a" | "b"') == [] and union_members('Union["A", "B"]') == ["A", "B"]


def test_a_typescript_key_and_a_row_of_a_grid_are_no_element() -> None:
    source = (
        "class Item { fill() {} }\n"
        "function go(items: Item[], grid: Item[][]) {\n"
        "  for (const k in items) { k.fill(); }\n"
        "  for (const v of items) { v.fill(); }\n"
        "  for (const row of grid) { row.fill(); }\n"
        "}\n"
    )
    tags = tags_of({"a.ts": source}, "typescript")
    table = SymbolTable(tags.values())
    use = tags["a.ts"]
    assert [_confident(use, table, line, "fill") for line in (3, 4, 5)] == [[], ["Item.fill"], []]


def test_a_chain_of_rebindings_from_itself_is_followed_and_a_long_one_is_cut() -> None:
    files = {
        "u/url.py": (
            "class URL:\n    def join(self) -> 'Joined':\n        pass\n"
            "class Joined:\n    def copy(self) -> 'Copied':\n        pass\n"
            "class Copied:\n    def foo(self):\n        pass\n"
        ),
        "u/use.py": (
            "from .url import URL\n\n"
            "def go(x):\n"
            "    url = URL(x)\n"
            "    url = url.join()\n"
            "    url = url.copy()\n"
            "    url.foo()\n"  # 7
            "    s = URL(x)\n" + "    s = s.join()\n" * 600 + "    s.foo()\n"
        ),
    }
    use, table = _project(files, "u/use.py")
    assert _confident(use, table, 7, "foo") == ["Copied.foo"]
    assert len([r for r in use.references if r.name == "join"]) == 601  # the file was tagged


def test_a_nested_function_sees_the_locals_around_it_and_global_binds_only_where_written(
) -> None:  # fmt: skip
    """A closure's free name is its enclosing function's local, typed by a binding made
    after the closure (it runs later); `nonlocal` makes it so where the closure rebinds it.
    `global x` makes x the module's in its own function only: another function's local x
    is still local (a `global` anywhere in the file made every x a reference)."""
    files = {
        "p/io.py": (
            "class Buffer:\n    def read(self):\n        pass\n"
            "class Total:\n    def add(self, n) -> 'Total':\n        pass\n"
            "    def report(self):\n        pass\n"
            "def handle():\n    pass\n"
        ),
        "p/use.py": (
            "from .io import Buffer, Total\n"
            "handle = None\n"
            "def outer():\n"
            "    def send():\n"
            "        return buffered.read()\n"  # 5
            "    def bump():\n"
            "        nonlocal total\n"
            "        total = total.add(1)\n"  # 8
            "        total.report()\n"
            "    buffered = Buffer()\n"
            "    total = Total()\n"
            "    return send, bump\n"
            "def setter():\n"
            "    global handle\n"
            "    handle = make()\n"
            "    return handle\n"  # 16
            "def task():\n"
            "    handle = Total()\n"
            "    use(handle.report, handle)\n"  # 19
        ),
    }
    use, table = _project(files, "p/use.py")
    expected = {(5, "read"): ["Buffer.read"], (8, "add"): ["Total.add"],
                (9, "report"): ["Total.report"], (19, "report"): ["Total.report"]}  # fmt: skip
    assert {at: _confident(use, table, *at) for at in expected} == expected
    handles = {r.line for r in use.references if r.name == "handle" and not r.qualifier}
    assert handles == {16}  # the module's in setter; task's own local in task
    assert {r.name for r in use.references if r.line in (5, 9)} == {"read", "report"}


def test_a_with_statement_binds_what_entering_gives() -> None:
    """`with X() as x`: what X's `__enter__` returns (`async with`: `__aenter__`; `Self`
    or none: the instance, a subclass's its own), the instance where the project defines
    neither (a guess only when a base is from elsewhere); `with f() as x`: what a
    `@contextmanager` generator yields, or the value of the context manager f returns."""
    files = {
        "c/kit.py": (
            "from contextlib import contextmanager\n"
            "from typing import Iterator, ContextManager, Self\n"
            "class Scope:\n    def __enter__(self) -> Self:\n        return self\n"
            "    def cancel(self):\n        pass\n"
            "class Conn:\n    def send(self):\n        pass\n"
            "class Pool(Scope):\n    async def __aenter__(self) -> Conn:\n        pass\n"
            "    def send(self):\n        pass\n"
            "class Plain(Base):\n    def shut(self):\n        pass\n"
            "class Bare:\n    def close(self):\n        pass\n"
            "T = TypeVar('T', bound='Client')\n"
            "class Client:\n    def __enter__(self: T) -> T:\n        return self\n"
            "    def get(self):\n        pass\n"
            "class Child(Scope):\n    def cancel(self):\n        pass\n"
            "@contextmanager\n"
            "def runner() -> Iterator[Conn]:\n    yield Conn()\n"
            "def session() -> ContextManager[Conn]:\n    pass\n"
            "def made() -> Scope:\n    pass\n"
        ),
        "c/use.py": (
            "from .kit import Scope, Pool, Plain, Bare, Client, Child, runner, session, made\n"
            "async def go():\n"
            "    with Scope() as s:\n"
            "        s.cancel()\n"  # 4
            "    async with Pool() as p:\n"
            "        p.send()\n"  # 6
            "    with Plain() as q, Bare() as b:\n"
            "        q.shut(), b.close()\n"  # 8
            "    with runner() as r, session() as t:\n"
            "        r.send()\n"  # 10
            "        t.send()\n"
            "    with made() as m:\n"
            "        m.cancel()\n"  # 13
            "    with Client() as c:\n"
            "        c.get()\n"  # 15
            "    with Pool() as w, Child() as h:\n"
            "        w.send(), h.cancel()\n"  # 17
            "    with runner() as rows:\n"
            "        for e in rows:\n"
            "            e.send()\n"  # 20
        ),
    }
    use, table = _project(files, "c/use.py")
    expected = {
        (4, "cancel"): ["Scope.cancel"],
        (6, "send"): ["Conn.send"],  # not Pool's own
        (8, "shut"): [],  # Base may enter otherwise
        (8, "close"): ["Bare.close"],
        (10, "send"): ["Conn.send"],
        (11, "send"): ["Conn.send"],
        (13, "cancel"): ["Scope.cancel"],
        (15, "get"): ["Client.get"],
        (17, "send"): ["Pool.send"],  # Scope's __enter__: Self, the Pool
        (17, "cancel"): ["Child.cancel"],
        (20, "send"): [],  # the elements of a Conn: unknown
    }
    assert {at: _confident(use, table, *at) for at in expected} == expected


def test_a_copy_of_a_collection_holds_its_elements_and_a_nonlocal_its_own_rebinding() -> None:
    files = {
        "w/kit.py": (
            "class Widget:\n    def draw(self):\n        pass\n"
            "class Field:\n    def draw(self):\n        pass\n"
            "class Root:\n    def child(self) -> 'Node':\n        pass\n"
            "    def visit(self):\n        pass\n"
            "class Node:\n    def visit(self):\n        pass\n"
            "fields: list[Field] = []\n"
        ),
        "w/use.py": (
            "from .kit import Widget, Root, fields\n"
            "def render(fields: list[Widget]):\n"
            "    copy = list(fields)\n"
            "    for w in copy:\n"
            "        w.draw()\n"  # 5
            "    for v in sorted(fields, key=str):\n"
            "        v.draw()\n"  # 7
            "    for u in tuple(fields):\n"
            "        u.draw()\n"  # 9
            "def parse():\n"
            "    node = Root()\n"
            "    def descend():\n"
            "        nonlocal node\n"
            "        node.visit()\n"  # 14
            "        node = node.child()\n"
            "        node.visit()\n"  # 16
        ),
    }
    use, table = _project(files, "w/use.py")
    assert _confident(use, table, 5, "draw") == ["Widget.draw"]  # the local's, not the module's
    assert _confident(use, table, 7, "draw") == ["Widget.draw"]
    assert _confident(use, table, 9, "draw") == ["Widget.draw"]
    assert _confident(use, table, 14, "visit") == ["Root.visit"]
    assert _confident(use, table, 16, "visit") == ["Node.visit"]


def test_indexing_gives_a_mappings_value_and_a_sequences_element_and_pop_takes_one() -> None:
    """`d[k]` of a `dict[K, V]` is a V (iterating it gives K's), of a `list[T]` a T;
    `tasks[key].scope` is the V's member; `.pop()` / `.popleft()` take an element. An
    annotation says a variable's type even when a constructor of another type makes it."""
    files = {
        "m/kit.py": (
            "class Conn:\n    def send(self):\n        pass\n"
            "class Key:\n    def hash(self):\n        pass\n"
            "class Scope:\n    def cancel(self):\n        pass\n"
            "class State:\n    def __init__(self, scope: Scope):\n        self.scope = scope\n"
        ),
        "m/use.py": (
            "from weakref import WeakKeyDictionary\n"
            "from collections import deque\n"
            "from .kit import Conn, Key, State\n"
            "_states: WeakKeyDictionary[Key, State] = WeakKeyDictionary()\n"
            "def go(d: dict[Key, Conn], q: deque[Conn], task):\n"
            "    c = d['x']\n"
            "    c.send()\n"  # 7
            "    d[task].send()\n"  # 8
            "    for k in d:\n"
            "        k.hash()\n"  # 10
            "    scope = _states[task].scope\n"
            "    scope.cancel()\n"  # 12
            "    last = q.popleft()\n"
            "    last.send()\n"  # 14
            "    made = d.get(task)\n"
            "    made.send()\n"  # 16
            "def walk(node: Node, keys: list[Key]):\n"
            "    node = node.kids[0].child\n"
            "    node.visit()\n"  # 19
            "    keys.pop().hash()\n"  # 20
            "    one = keys.pop()\n"
            "    one.hash()\n"  # 22
            "any_conn: Any = Conn()\n"
            "any_conn.send()\n"  # 24
        ),
    }
    files["m/kit.py"] += (
        "class Node:\n    kids: list['Node']\n    child: 'Node'\n"
        "    def visit(self):\n        pass\n"
    )
    files["m/use.py"] = files["m/use.py"].replace("Key, State\n", "Key, State, Node\n")
    use, table = _project(files, "m/use.py")
    expected = {(7, "send"): ["Conn.send"], (8, "send"): ["Conn.send"], (10, "hash"): ["Key.hash"],
                (12, "cancel"): ["Scope.cancel"], (14, "send"): ["Conn.send"],
                (16, "send"): [], (19, "visit"): ["Node.visit"], (22, "hash"): ["Key.hash"],
                (24, "send"): ["Conn.send"]}  # fmt: skip
    assert {at: _confident(use, table, *at) for at in expected} == expected
    from memserver.graph.typetext import item_type

    items = {"dict[str, Conn]": "Conn", "t.Mapping[Key, list[Conn]]": "list[Conn]",
             "list[Conn]": "Conn", "defaultdict[str]": "", "Conn": ""}  # fmt: skip
    assert {text: item_type(text) for text in items} == items


def test_a_python_class_has_no_member_another_files_class_of_its_name_defines() -> None:
    """abc's `Process` inherits `aclose` from its base; the backends' own `Process`
    classes (the same qualified name, other files) define one each, which is not its."""
    files = {
        "a/abc/base.py": "class Resource:\n    async def aclose(self):\n        pass\n",
        "a/abc/proc.py": "from .base import Resource\nclass Process(Resource):\n    pass\n",
        "a/backend.py": "class Process:\n    async def aclose(self):\n        pass\n",
        "a/use.py": (
            "from .abc.proc import Process\n"
            "async def stop(process: Process):\n"
            "    await process.aclose()\n"
        ),
    }
    use, table = _project(files, "a/use.py")
    (ref,) = [r for r in use.references if r.name == "aclose"]
    assert [(d.path, d.qualified) for d, s in resolve(ref, use, table) if s >= MIN_CONFIDENCE] == [
        ("a/abc/base.py", "Resource.aclose")
    ]


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


def _top(tags: dict[str, FileTags], path: str, name: str, line: int) -> tuple[str, str] | None:
    """The confident top candidate of the reference `name` on `line` of `path`."""
    table = SymbolTable(tags.values())
    (ref,) = [r for r in refs(tags[path], name) if r.line == line]
    found = resolve(ref, tags[path], table)
    if not found or found[0][1] < MIN_CONFIDENCE:
        return None
    return found[0][0].path, found[0][0].qualified


SWIFT_ITEM = "struct Item {\n    let cents: Int\n    func price() -> Int { return cents }\n}\n"
SWIFT_CART = (
    "class Cart {\n    var items: [Item] = []\n"  # 1-2
    "    func total() -> Int { return items.reduce(0) { $0 + $1.price() } }\n"  # 3
    "    func prices() -> [Int] { return items.map { $0.price() } }\n"  # 4
    "    func cheap() -> Item? { return items.first(where: { $0.price() < 100 }) }\n"  # 5
    "    func sum(_ a: Item, _ b: Item) -> Int { return a.cents + b.price() }\n"  # 6
    "    func nested() { items.forEach { _ in [1].map { $0.price() } } }\n}\n"  # 7
)


def test_swift_closure_arguments_are_the_collections_elements() -> None:
    """`$0` (`$1` for reduce) in a closure given to an array's method is an element; the
    grammar's `(a + b).price()` for `a + b.price()` is read as b's price."""
    tags = tags_of({"Item.swift": SWIFT_ITEM, "Cart.swift": SWIFT_CART}, "swift")
    price = ("Item.swift", "Item.price")
    assert [_top(tags, "Cart.swift", "price", line) for line in (3, 4, 5, 6)] == [price] * 4
    assert _top(tags, "Cart.swift", "price", 7) is None  # an Int's `$0`, bound again inside
    assert not [r for r in tags["Cart.swift"].references if r.name.startswith("$")]


KOTLIN_ITEM = "package shop\n\nclass Item(val cents: Int) {\n    fun price(): Int = cents\n}\n"
KOTLIN_CART = (
    "package shop\n\nclass Cart(val items: List<Item>) {\n"  # 1-3
    "    fun prices() = items.map { it.price() }\n"  # 4
    "    fun named() = items.filter { item -> item.price() > 0 }\n"  # 5
    "    fun total() = items.fold(0) { acc, item -> acc + item.price() }\n"  # 6
    "    fun loop() { for (item in items) { item.price() } }\n}\n"  # 7
)


def test_kotlin_lambda_parameters_are_the_collections_elements() -> None:
    """`it`, a lambda's one parameter, and fold's second are elements of the list (as a
    loop variable over it is)."""
    tags = tags_of({"Item.kt": KOTLIN_ITEM, "Cart.kt": KOTLIN_CART}, "kotlin")
    price = ("Item.kt", "Item.price")
    assert [_top(tags, "Cart.kt", "price", line) for line in (4, 5, 6, 7)] == [price] * 4


JS_CONNECTION = (
    "function Connection(uri) {\n  this.open(uri);\n}\n\n"  # 1-3
    "Connection.prototype.open = function(uri) {\n  this.close();\n};\n\n"  # 5-7
    "Connection.prototype.close = function() {};\n\n"  # 9
    "module.exports = Connection;\n"
)


def test_a_javascript_constructor_has_the_members_set_on_its_prototype() -> None:
    tags = tags_of({"lib/connection.js": JS_CONNECTION}, "javascript")
    path = "lib/connection.js"
    assert _top(tags, path, "open", 2) == (path, "Connection.prototype.open")
    assert _top(tags, path, "close", 6) == (path, "Connection.prototype.close")


def test_container_types_give_their_elements() -> None:
    from memserver.graph.typetext import element_type

    written = {
        "list[Item]": "Item", "t.Sequence[Item]": "Item", "[]*Item": "*Item",
        "map[string]*Item": "*Item", "[Item]": "Item", "[Item]?": "Item", "[[Item]]": "[Item]",
        "Item[]": "Item", "List<Item>": "Item", "java.util.List<Item>": "Item",
        "std::vec::Vec<Item>": "Item", "IEnumerable<Item>": "Item", "MutableList<Item>": "Item",
        "[String: Item]": "", "Map<K, V>": "", "Item": "", "dict[str, Item]": "str",  # its keys
    }  # fmt: skip
    assert {text: element_type(text) for text in written} == written


def test_unions_give_their_alternatives_and_anything_else_none() -> None:
    from memserver.graph.typetext import union_members

    written = {
        "A | B | None": ["A", "B"], "Union[A, B]": ["A", "B"], "t.Union[a.A, B]": ["a.A", "B"],
        "Optional[Union[A, B]]": ["A", "B"], "Annotated[A | B, meta]": ["A", "B"],
        "Obj[bytes] | Bytes": ["Obj[bytes]", "Bytes"], '"A" | "B"': [],
        "X | None": [], "Optional[X]": [], "dict[str, A | B]": [], "Type[A | B]": [], "A|": [],
    }  # fmt: skip
    assert {text: union_members(text) for text in written} == written


def test_a_chain_of_calls_resolves_through_each_calls_type_and_an_index_stops_it() -> None:
    """`make().first().label()`: each call's declared or guessed return type is the next
    call's receiver, whatever the arguments say; a local's type types only the chain's
    head; an index in the chain (`items[0]`) is no member, so nothing is guessed there."""
    files = {
        "shop.py": (
            "class Item:\n    def label(self):\n        return ''\n\n"
            "class Store:\n    items: list\n\n    def first(self, at) -> Item:\n"
            "        return Item()\n\n    def label(self):\n        return 'store'\n\n"
            "def make() -> Store:\n    return Store()\n"
        ),
        "use.py": (
            "from shop import make\n\n"
            "def go(n):\n    make().first(n.count(1)).label()\n    s = make()\n"
            "    s.first(2).label()\n    s.items[0].label()\n"
        ),
    }
    tags = tags_of(files)
    table = SymbolTable(tags.values())
    found = {r.line: resolve(r, tags["use.py"], table) for r in refs(tags["use.py"], "label")}
    for line in (4, 6):
        best = [d for d, s in found[line] if s >= MIN_CONFIDENCE]
        assert [d.qualified for d in best[:1]] == ["Item.label"], found[line]
    assert all(s < MIN_CONFIDENCE for _, s in found[7])  # not Store.label, nor Item.label


@pytest.mark.parametrize(
    ("language", "store", "use"),
    [
        ("php", "<?php\nclass Item { public function label() { return ''; } }\n"
         "class Store {\n    public $items = [];\n"
         "    public function first(): Item { return new Item(); }\n"
         "    public function label() { return 's'; }\n}\n",
         "<?php\nfunction go() {\n    $s = new Store();\n    $s->first()->label();\n"
         "    $s->items[0]->label();\n}\n"),
        ("cpp", "struct Item { int label() { return 0; } };\n"
         "struct Store {\n    Item items[4];\n    Item first() { return Item(); }\n"
         "    int label() { return 1; }\n};\n",
         "int go() {\n    Store s;\n    s.first().label();\n    s.items[0].label();\n"
         "    Store* p = &s;\n    p->items[0].label();\n    return 0;\n}\n"),
    ],
)  # fmt: skip
def test_a_chain_after_an_arrow_is_read_as_after_a_dot(language: str, store: str, use: str
                                                       ) -> None:  # fmt: skip
    """`$s->first()->label()` and `p->items[0].label()` are chains as `s.first().label()`
    is: the local's type types the head only, never the chain's last member (`label` is
    not `Store.label`)."""
    ext = {"php": "php", "cpp": "cpp"}[language]
    tags = tags_of({f"store.{ext}": store, f"use.{ext}": use}, language)
    table = SymbolTable(tags.values())
    found = {}
    for ref in refs(tags[f"use.{ext}"], "label"):
        best = [d.qualified for d, s in resolve(ref, tags[f"use.{ext}"], table)
                if s >= MIN_CONFIDENCE]  # fmt: skip
        assert "Store.label" not in best, (ref.line, ref.qualifier, best)
        found[ref.line] = best
    if language == "php":  # a declared return type continues the chain
        assert found[4][:1] == ["Item.label"]


def test_a_go_module_s_root_package_is_found_from_its_subfolders() -> None:
    """A module's own root package (`github.com/acme/shop` imported from the module's `doc`
    folder) has no folder named after it: the root's files declaring the package the path
    ends with are it. A path that ends with no root package's name stays external."""
    files = {
        "command.go": (
            "package shop\n\ntype Command struct{}\n\nfunc (c *Command) Path() string {\n"
            '    return ""\n}\n'
        ),
        "doc/man.go": (
            'package doc\n\nimport (\n    "github.com/acme/shop"\n'
            '    "github.com/other/flag"\n)\n\n'
            "func Gen(cmd *shop.Command) string {\n    flag.Parse()\n    return cmd.Path()\n}\n"
        ),
    }
    tags = tags_of(files, "go")
    assert _top(tags, "doc/man.go", "Command", 8) == ("command.go", "Command")
    assert _top(tags, "doc/man.go", "Path", 10) == ("command.go", "Command.Path")
    assert _top(tags, "doc/man.go", "Parse", 9) is None
