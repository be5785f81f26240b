"""Fixture repositories per language family: exact definitions, and resolved references
scored against the `@ref` annotations in their source (see graphkit.py)."""

from __future__ import annotations

import pytest

from tests.graph.graphkit import Score, load, score

PRECISION_FLOOR = 0.95
RECALL_FLOOR = 0.9

# path:qualified:kind of every definition the tags give, per fixture repository
DEFINITIONS: dict[str, set[str]] = {
    "python": {
        "app.py:checkout:function",
        "app.py:main.report:function",
        "app.py:main:function",
        "shop/__init__.py:__all__:variable",
        "shop/base.py:Base.save:method",
        "shop/base.py:Base.validate:method",
        "shop/base.py:Base:class",
        "shop/models.py:Item.label:method",
        "shop/models.py:Item.price:field",
        "shop/models.py:Item.sku:field",
        "shop/models.py:Item:class",
        "shop/models.py:Order.__init__:method",
        "shop/models.py:Order.add:method",
        "shop/models.py:Order.items:field",
        "shop/models.py:Order.labels:method",
        "shop/models.py:Order.validate:method",
        "shop/models.py:Order:class",
        "shop/pricing.py:RATE:constant",
        "shop/pricing.py:normalize:function",
        "shop/pricing.py:total:function",
        "util/text.py:normalize:function",
    },
    "typescript": {
        "src/models/entity.ts:Entity.constructor:method",
        "src/models/entity.ts:Entity.describe:method",
        "src/models/entity.ts:Entity.id:field",
        "src/models/entity.ts:Entity.save:method",
        "src/models/entity.ts:Entity.validate:method",
        "src/models/entity.ts:Entity:class",
        "src/models/entity.ts:normalize:function",
        "src/models/user.ts:Named.displayName:method",
        "src/models/user.ts:Named:interface",
        "src/models/user.ts:User.constructor:method",
        "src/models/user.ts:User.displayName:method",
        "src/models/user.ts:User.name:field",
        "src/models/user.ts:User.validate:method",
        "src/models/user.ts:User:class",
        "src/repo.ts:Repo.add:method",
        "src/repo.ts:Repo.find:method",
        "src/repo.ts:Repo.items:field",
        "src/repo.ts:Repo:class",
        "src/service.ts:UserService.constructor:method",
        "src/service.ts:UserService.label:method",
        "src/service.ts:UserService.register:method",
        "src/service.ts:UserService.repo:field",
        "src/service.ts:UserService:class",
        "src/util/normalize.ts:SEPARATOR:variable",
        "src/util/normalize.ts:normalize:function",
    },
    "javascript": {
        "components/Widget.jsx:Button:function",
        "components/Widget.jsx:Widget:function",
        "index.js:app:variable",
        "lib/handlers.js:exports.list:function",
        "lib/handlers.js:exports.old:function",
        "lib/legacy/query.js:exports.parseQuery:function",
        "lib/router.js:Router.add:method",
        "lib/router.js:Router.constructor:method",
        "lib/router.js:Router.dispatch:method",
        "lib/router.js:Router.match:method",
        "lib/router.js:Router.routes:field",
        "lib/router.js:Router:class",
        "lib/router.js:parseQuery:function",
    },
    "go": {
        "main.go:main:function",
        "models/format.go:Format:function",
        "models/item.go:Item.Cents:field",
        "models/item.go:Item.Price:method",
        "models/item.go:Item.SKU:field",
        "models/item.go:Item:struct",
        "models/item.go:NewItem:function",
        "store/base.go:Base.Name:field",
        "store/base.go:Base.Save:method",
        "store/base.go:Base:struct",
        "store/store.go:NewStore:function",
        "store/store.go:Saver.Save:method",
        "store/store.go:Saver:interface",
        "store/store.go:Store.Add:method",
        "store/store.go:Store.Total:method",
        "store/store.go:Store.items:field",
        "store/store.go:Store:struct",
        "util/format.go:Format:function",
    },
    "rust": {
        "src/lib.rs:total_area:function",
        "src/main.rs:main:function",
        "src/shapes/circle.rs:Circle.area:method",
        "src/shapes/circle.rs:Circle.radius:field",
        "src/shapes/circle.rs:Circle.unit:method",
        "src/shapes/circle.rs:Circle:struct",
        "src/shapes/mod.rs:Polygon.area:method",
        "src/shapes/mod.rs:Polygon.new:method",
        "src/shapes/mod.rs:Polygon.perimeter:method",
        "src/shapes/mod.rs:Polygon.points:field",
        "src/shapes/mod.rs:Polygon:struct",
        "src/shapes/mod.rs:Shape.area:method",
        "src/shapes/mod.rs:Shape.describe:method",
        "src/shapes/mod.rs:Shape:trait",
        "src/shapes/mod.rs:normalize:function",
        "src/util.rs:normalize:function",
    },
    "java": {
        "src/com/acme/App.java:App.main:method",
        "src/com/acme/App.java:App:class",
        "src/com/acme/audit/Fmt.java:Fmt.format:method",
        "src/com/acme/audit/Fmt.java:Fmt:class",
        "src/com/acme/billing/Account.java:Account.Account:method",
        "src/com/acme/billing/Account.java:Account.describe:method",
        "src/com/acme/billing/Account.java:Account.name:field",
        "src/com/acme/billing/Account.java:Account:class",
        "src/com/acme/billing/Entry.java:Entry.amount:field",
        "src/com/acme/billing/Entry.java:Entry.label:field",
        "src/com/acme/billing/Entry.java:Entry:class",
        "src/com/acme/billing/Ledger.java:Ledger.Ledger:method",
        "src/com/acme/billing/Ledger.java:Ledger.entries:field",
        "src/com/acme/billing/Ledger.java:Ledger.post:method",
        "src/com/acme/billing/Ledger.java:Ledger.report:method",
        "src/com/acme/billing/Ledger.java:Ledger.total:field",
        "src/com/acme/billing/Ledger.java:Ledger:class",
        "src/com/acme/util/Fmt.java:Fmt.format:method",
        "src/com/acme/util/Fmt.java:Fmt:class",
        "src/com/acme/util/Money.java:Money.Money:method",
        "src/com/acme/util/Money.java:Money.cents:field",
        "src/com/acme/util/Money.java:Money.cents:method",
        "src/com/acme/util/Money.java:Money.of:method",
        "src/com/acme/util/Money.java:Money.plus:method",
        "src/com/acme/util/Money.java:Money:class",
    },
    "kotlin": {
        "src/com/acme/Main.kt:main:function",
        "src/com/acme/audit/Format.kt:format:function",
        "src/com/acme/billing/Account.kt:Account.describe:method",
        "src/com/acme/billing/Account.kt:Account.kind:method",
        "src/com/acme/billing/Account.kt:Account.name:field",
        "src/com/acme/billing/Account.kt:Account:class",
        "src/com/acme/billing/Account.kt:Audited.audit:method",
        "src/com/acme/billing/Account.kt:Audited:interface",
        "src/com/acme/billing/Account.kt:Kind.CARD:constant",
        "src/com/acme/billing/Account.kt:Kind.CASH:constant",
        "src/com/acme/billing/Account.kt:Kind:enum",
        "src/com/acme/billing/Ledger.kt:Ledger.audit:method",
        "src/com/acme/billing/Ledger.kt:Ledger.entries:field",
        "src/com/acme/billing/Ledger.kt:Ledger.kind:method",
        "src/com/acme/billing/Ledger.kt:Ledger.post:method",
        "src/com/acme/billing/Ledger.kt:Ledger.total:field",
        "src/com/acme/billing/Ledger.kt:Ledger:class",
        "src/com/acme/util/Money.kt:Money.cents:field",
        "src/com/acme/util/Money.kt:Money.of:method",
        "src/com/acme/util/Money.kt:Money.plus:method",
        "src/com/acme/util/Money.kt:Money:class",
        "src/com/acme/util/Money.kt:String.shout:function",
        "src/com/acme/util/Money.kt:format:function",
    },
    "scala": {
        "src/com/acme/Main.scala:Main.main:method",
        "src/com/acme/Main.scala:Main:class",
        "src/com/acme/audit/Fmt.scala:Fmt.format:method",
        "src/com/acme/audit/Fmt.scala:Fmt:class",
        "src/com/acme/billing/Account.scala:Account.describe:method",
        "src/com/acme/billing/Account.scala:Account.name:field",
        "src/com/acme/billing/Account.scala:Account:class",
        "src/com/acme/billing/Account.scala:Auditable.audit:method",
        "src/com/acme/billing/Account.scala:Auditable:trait",
        "src/com/acme/billing/Ledger.scala:Ledger.audit:method",
        "src/com/acme/billing/Ledger.scala:Ledger.owner:field",
        "src/com/acme/billing/Ledger.scala:Ledger.post:method",
        "src/com/acme/billing/Ledger.scala:Ledger.total:field",
        "src/com/acme/billing/Ledger.scala:Ledger:class",
        "src/com/acme/util/Money.scala:Fmt.format:method",
        "src/com/acme/util/Money.scala:Fmt:class",
        "src/com/acme/util/Money.scala:Money.cents:field",
        "src/com/acme/util/Money.scala:Money.of:method",
        "src/com/acme/util/Money.scala:Money.plus:method",
        "src/com/acme/util/Money.scala:Money:class",
    },
    "swift": {
        "Sources/App/main.swift:apple:variable",
        "Sources/App/main.swift:cart:variable",
        "Sources/Audit/Format.swift:format:function",
        "Sources/Shop/Base.swift:Base.describe:method",
        "Sources/Shop/Base.swift:Base.init:method",
        "Sources/Shop/Base.swift:Base.name:field",
        "Sources/Shop/Base.swift:Base:class",
        "Sources/Shop/Cart.swift:Cart.add:method",
        "Sources/Shop/Cart.swift:Cart.items:field",
        "Sources/Shop/Cart.swift:Cart.receipt:method",
        "Sources/Shop/Cart.swift:Cart.total:method",
        "Sources/Shop/Cart.swift:Cart:class",
        "Sources/Shop/Item.swift:Item.cents:field",
        "Sources/Shop/Item.swift:Item.price:method",
        "Sources/Shop/Item.swift:Item.sku:field",
        "Sources/Shop/Item.swift:Item:struct",
        "Sources/Shop/Item.swift:Priced.price:method",
        "Sources/Shop/Item.swift:Priced:interface",
        "Sources/Shop/Item.swift:format:function",
    },
    "lua": {
        "main.lua:store:variable",
        "shop/format.lua:format.normalize:function",
        "shop/format.lua:format:variable",
        "shop/store.lua:Store.add:method",
        "shop/store.lua:Store.new:function",
        "shop/store.lua:Store.total:method",
        "shop/store.lua:Store:variable",
        "shop/store.lua:sum:function",
        "shop/util.lua:M.cents:function",
        "shop/util.lua:M.normalize:function",
        "shop/util.lua:M:variable",
    },
    "zig": {
        "src/geo/point.zig:Point.init:method",
        "src/geo/point.zig:Point.length:method",
        "src/geo/point.zig:Point.x:field",
        "src/geo/point.zig:Point.y:field",
        "src/geo/point.zig:Point:struct",
        "src/geo/point.zig:square:function",
        "src/geo/shapes.zig:Circle.area:method",
        "src/geo/shapes.zig:Circle.center:field",
        "src/geo/shapes.zig:Circle.radius:field",
        "src/geo/shapes.zig:Circle:struct",
        "src/geo/shapes.zig:square:function",
        "src/main.zig:main:function",
    },
    "elixir": {
        "lib/audit.ex:Audit.Format.normalize:function",
        "lib/audit.ex:Audit.Format:module",
        "lib/shop/cart.ex:Shop.Cart.add:function",
        "lib/shop/cart.ex:Shop.Cart.label:function",
        "lib/shop/cart.ex:Shop.Cart.total:function",
        "lib/shop/cart.ex:Shop.Cart:module",
        "lib/shop/item.ex:Shop.Item.new:function",
        "lib/shop/item.ex:Shop.Item.price:function",
        "lib/shop/item.ex:Shop.Item:module",
        "lib/shop/util.ex:Shop.Util.normalize:function",
        "lib/shop/util.ex:Shop.Util:module",
    },
    "c": {
        "buffer.c:buffer_append:function",
        "buffer.c:buffer_free:function",
        "buffer.c:buffer_reserve:function",
        "buffer.h:BUFFER_H:macro",
        "buffer.h:buffer.cap:field",
        "buffer.h:buffer.data:field",
        "buffer.h:buffer.len:field",
        "buffer.h:buffer:struct",
        "legacy/text.c:normalize:function",
        "main.c:GREETING:macro",
        "main.c:main:function",
        "util/text.c:normalize:function",
    },
    "cpp": {
        "geometry/circle.cpp:geo.Circle.area:function",
        "geometry/circle.cpp:geo.Circle.scaled:function",
        "geometry/circle.cpp:geo:module",
        "geometry/circle.h:geo.Circle.area:method",
        "geometry/circle.h:geo.Circle.radius_:field",
        "geometry/circle.h:geo.Circle.scaled:method",
        "geometry/circle.h:geo.Circle:class",
        "geometry/circle.h:geo:module",
        "geometry/shape.cpp:geo.Shape.describe:function",
        "geometry/shape.cpp:geo.clamp:function",
        "geometry/shape.cpp:geo:module",
        "geometry/shape.h:geo.Shape.area:method",
        "geometry/shape.h:geo.Shape.describe:method",
        "geometry/shape.h:geo.Shape.~Shape:method",
        "geometry/shape.h:geo.Shape:class",
        "geometry/shape.h:geo.clamp:function",
        "geometry/shape.h:geo:module",
        "legacy.cpp:clamp:function",
        "main.cpp:main:function",
    },
}
FAMILIES = sorted(DEFINITIONS)


def report(scores: dict[str, Score]) -> str:
    """A per-language precision/recall table (printed by the tests; -s shows it)."""
    rows = [f"{'language':<12}{'tp':>5}{'fp':>5}{'fn':>5}{'precision':>11}{'recall':>8}"]
    for family, s in sorted(scores.items()):
        rows.append(
            f"{family:<12}{s.true_pos:>5}{s.false_pos:>5}{s.false_neg:>5}"
            f"{s.precision:>11.3f}{s.recall:>8.3f}"
        )
    return "\n".join(rows)


@pytest.mark.parametrize("family", FAMILIES)
def test_definitions_are_exactly_the_expected_ones(family: str) -> None:
    repo = load(family)
    found, expected = repo.definitions(), DEFINITIONS[family]
    assert found == expected, (
        f"missing {sorted(expected - found)}, extra {sorted(found - expected)}"
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_references_resolve_as_annotated(family: str) -> None:
    repo = load(family)
    assert repo.expected, "the fixture has no @ref annotations"
    result = score(repo)
    print(report({family: result}))
    assert result.precision >= PRECISION_FLOOR, "\n".join(result.wrong)
    assert result.recall >= RECALL_FLOOR, "\n".join(result.wrong)


def test_per_language_table() -> None:
    scores = {family: score(load(family)) for family in FAMILIES}
    table = report(scores)
    print(table)
    total = Score(
        sum(s.true_pos for s in scores.values()),
        sum(s.false_pos for s in scores.values()),
        sum(s.false_neg for s in scores.values()),
        (),
    )
    assert total.precision >= PRECISION_FLOOR and total.recall >= RECALL_FLOOR, table
