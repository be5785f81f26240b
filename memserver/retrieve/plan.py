"""Query planning: the routes a query is asked in, its identifiers, and how deep to go.

Routes (DESIGN.md): the original text; a canonical form (identifiers split and
normalised, stop words dropped); and up to three expansions that swap one
content word for a code-terminology synonym. Weights 1.0 / 1.0 / 0.5.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources

from memserver.text.task import Task, parse_task
from memserver.text.terms import analysed, query_terms
from memserver.text.timeexpr import dates_named

# a dotted name, a snake/camel identifier, or a file name / path
_WORD = re.compile(r"[A-Za-z_$][\w$]{2,}")
_IDENT = re.compile(
    r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[A-Za-z_$]*[a-z][A-Z][\w$]*|[A-Za-z$]+_[\w$]+"
    r"|[\w./-]+\.(?:py|js|ts|tsx|go|rs|java|c|h|cpp|cs|rb|php|sh|md|json|ya?ml|toml)\b"
)


@dataclass(frozen=True, slots=True)
class Route:
    name: str  # original | canonical | expansion:<word>
    text: str  # what the dense arm embeds
    terms: tuple[str, ...]  # what the BM25 arm searches
    weight: float


@dataclass(frozen=True, slots=True)
class QueryPlan:
    query: str
    routes: tuple[Route, ...]
    identifiers: tuple[str, ...]
    content_words: tuple[str, ...]
    depth: int  # candidates kept per arm
    dates: tuple[tuple[datetime, datetime], ...] = ()  # days and months named: [start, end)
    task: Task | None = None  # a long query (a task description): its parts, ranked by file


@lru_cache(maxsize=1)
def synonyms() -> dict[str, tuple[str, ...]]:
    text = resources.files("memserver.retrieve").joinpath("data/synonyms.txt").read_text()
    table: dict[str, list[str]] = {}
    for line in text.splitlines():
        group = line.split("#", 1)[0].split()
        for word in group:
            table.setdefault(word, []).extend(w for w in group if w != word)
    return {w: tuple(dict.fromkeys(alts)) for w, alts in table.items()}


def identifiers(query: str) -> tuple[str, ...]:
    """Names the query mentions; a query of one bare word (`tokenize`) looks a name up too."""
    found = [m.group(0).strip(".") for m in _IDENT.finditer(query)]
    word = query.strip()
    if not found and _WORD.fullmatch(word):
        found = [word]
    return tuple(dict.fromkeys(found))


def plan_query(
    query: str,
    *,
    expansions: int = 3,
    weights: tuple[float, float, float] = (1.0, 1.0, 0.5),
    base_depth: int = 30,
    rewrites: Sequence[str] = (),
    long_words: int = 0,
) -> QueryPlan:
    """Routes for `query`; `rewrites` (from an LLM) replace the table's expansions. A query
    of at least `long_words` distinct content words (0: never) is a task description: its
    plan carries its parts (`task`), and recall ranks files for it (`longquery`)."""
    terms = tuple(dict.fromkeys(w for w in analysed(query).split() if len(w) > 1))
    content = tuple(query_terms(query))
    if long_words and len(content) >= long_words:
        task = parse_task(query)
        return QueryPlan(query, (Route("original", query, terms, weights[0]),),
                         identifiers(query), content, base_depth, task=task)  # fmt: skip
    canonical = " ".join(content)
    routes = [Route("original", query, terms, weights[0])]
    if canonical and canonical != query.strip().lower():
        routes.append(Route("canonical", canonical, content, weights[1]))
    for n, text in enumerate(rewrites[:expansions], start=1):
        routes.append(Route(f"expansion:llm{n}", text, tuple(query_terms(text)), weights[2]))
    table = {} if rewrites else synonyms()
    for word in content:
        if len(routes) >= 2 + expansions:
            break
        alts = [a for a in table.get(word, ()) if a not in content]
        if alts:
            swapped = tuple(alts[0] if t == word else t for t in content)
            routes.append(Route(f"expansion:{word}", " ".join(swapped), swapped, weights[2]))
    # more content words → a vaguer question → look deeper before fusing
    depth = min(3 * base_depth, base_depth + 5 * max(0, len(content) - 4))
    dates = tuple(dates_named(query))
    return QueryPlan(query, tuple(routes), identifiers(query), content, depth, dates)
