"""The code graph as recall's graph arms read it (`core.protocols.CodeGraph`): chunks
that define what a query names, and chunks around the best hits (callers and callees).

Bounded work on the request path: a name that many files use (`get`, `run`) is not
resolved through all its references for its callers; callees are always cheap (the
references written in a definition's own body)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memserver.core.graph import Definition, StoredFile
from memserver.graph.table import SymbolTable, lookup_text
from memserver.navigate import find
from memserver.navigate.view import GraphIndex

__all__ = ["GraphArm"]

_PER_NAME = 3  # definitions per identifier
_PER_HIT = 6  # neighbours per hit, callees first
_MAX_CALLER_FILES = 40  # files using a name beyond which its callers are not looked up
_VALUES = frozenset({"field", "variable", "constant"})


def _lookup_text(name: str) -> str:
    return lookup_text(name.strip())[1]


def _last(text: str) -> str:
    return text.rsplit(".", 1)[-1]


class GraphArm:
    def __init__(self, graph: Callable[[], GraphIndex],
                 named: Callable[[Sequence[str]], list[StoredFile]]) -> None:  # fmt: skip
        self.graph = graph  # the whole graph: read once, then kept up to date
        self.named = named  # the definitions of some names, read from the store as asked

    def defining(self, names: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """The chunks defining what the query names. Only those names' definitions are
        read (a few milliseconds), never the whole graph: the first short query of a
        server does not wait for it; a symbol table over them answers as the whole one
        would (every definition a name can mean carries the name's last part)."""
        if any(find.SYMBOL_ID.match(n.strip()) for n in names):  # an id: the whole graph
            return self._defining_in(self.graph(), names, limit)
        texts = [n.strip() for n in names if _lookup_text(n)]
        stored = self.named([_last(_lookup_text(t)) for t in texts])
        if not stored:
            return []
        table = SymbolTable([s.tags for s in stored])
        chunk_of = {
            d: c
            for s in stored
            for d, c in zip(s.tags.definitions, s.definition_chunks, strict=True)
        }
        out: dict[str, float] = {}
        for rank, text in enumerate(texts):
            hits = find.best_first(table.lookup(text), text)
            found = [d for d in hits if d.kind not in _VALUES][:_PER_NAME]
            for n, d in enumerate(found):
                out.setdefault(chunk_of[d], 1.0 / (1 + rank + n))
        return sorted(out.items(), key=lambda kv: -kv[1])[:limit]

    @staticmethod
    def _defining_in(g: GraphIndex, names: Sequence[str], limit: int) -> list[tuple[str, float]]:
        out: dict[str, float] = {}
        for rank, name in enumerate(names):
            found = [d for d in find.symbols(g, name) if d.kind not in _VALUES][:_PER_NAME]
            for n, d in enumerate(found):
                out.setdefault(g.def_chunk(d), 1.0 / (1 + rank + n))
        return sorted(out.items(), key=lambda kv: -kv[1])[:limit]

    def around(self, chunk_ids: Sequence[str], limit: int) -> list[tuple[str, float]]:
        g = self.graph()
        out: dict[str, float] = {}
        for rank, cid in enumerate(chunk_ids):
            defs = [d for d in g.defs_in_chunk(cid) if d.kind not in _VALUES]
            for n, chunk in enumerate(self._near(g, cid, defs)[:_PER_HIT]):
                out.setdefault(chunk, 1.0 / (1 + rank + n))
        return sorted(out.items(), key=lambda kv: -kv[1])[:limit]

    def _near(self, g: GraphIndex, cid: str, defs: list[Definition]) -> list[str]:
        callees: list[str] = []
        for at in g.refs_in_chunk(cid):
            if at.ref.kind == "import":
                continue
            for d in g.targets(at.ref):
                if d.kind not in _VALUES and g.def_chunk(d) != cid:
                    callees.append(g.def_chunk(d))
        callers: list[str] = []
        for d in defs:
            if g.count_named(d.name) > _MAX_CALLER_FILES:
                continue
            callers += [at.chunk_id for at in g.references_to([d]) if at.chunk_id != cid]
        return list(dict.fromkeys(callees + callers))
