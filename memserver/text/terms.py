"""Identifier-aware words: what the BM25 analyser indexes and what a query searches for.

`parseHTTPResponse` → parse http response; `snake_case_name` → snake case name;
`Client.send` → client send. Stop words and a query's content words live here too, so the
keyword index, query planning, the gate and turn scoring agree on them. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_TOKEN = re.compile(r"[A-Za-z0-9_]+")
_CAMEL = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_identifier(token: str) -> list[str]:
    """Split one identifier into lower-case word parts."""
    return list(_split(token))


@lru_cache(maxsize=1 << 14)
def _split(token: str) -> tuple[str, ...]:
    """Identifiers repeat (in a file, in a repository, in an issue's traceback): analysing
    1.7 MB of Django's code (9,200 distinct tokens) took 0.52 s splitting each anew, 0.22 s
    remembering the last 16,384 (about 4 MB when full)."""
    parts: list[str] = []
    for piece in token.split("_"):
        if piece:
            parts.extend(p.lower() for p in _CAMEL.findall(piece))
    return tuple(parts)


def words(text: str) -> list[str]:
    """Every identifier part of `text`, lower-cased, in order."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        out.extend(_split(token))
    return out


def whole_words(text: str) -> set[str]:
    """The words and identifiers of `text` as written, lower-cased, not split:
    `LiveServerTestCase` is one word here, not `live server test case`."""
    return {token.lower() for token in _TOKEN.findall(text)}


def analysed(text: str) -> str:
    """Text for the split-identifier BM25 field: whole identifiers lowered, plus their parts."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        parts = _split(token)
        whole = token.lower().strip("_")
        if len(parts) > 1 and whole:
            out.append(whole.replace("_", ""))
        out.extend(parts)
    return " ".join(out)


STOP_WORDS = frozenset(
    "a an and are as at be by for from has have how i in is it its of on or that the this to "
    "was were what when where which who why will with does do we our you your can".split()
)
# a query also drops the rest of the function words a question is framed in (pronouns,
# auxiliaries, modals): "What would Caroline's political leaning likely be?" asks about
# "political leaning"; on the DEV LoCoMo set R@10 0.793 -> 0.798, false abstention
# 0.091 -> 0.075. Indexed text and salience keep the shorter list.
QUERY_STOP_WORDS = STOP_WORDS | frozenset(
    "he she her his him they them their me my did been being had would could should might "
    "likely probably perhaps maybe".split()
)


def query_terms(text: str) -> list[str]:
    """Content words of a query, identifiers split, stop words dropped, order kept."""
    seen: dict[str, None] = {}
    for word in analysed(text).split():
        if word not in QUERY_STOP_WORDS and len(word) > 1:
            seen.setdefault(word, None)
    if not seen:  # a query of only stop words still searches for them
        seen = dict.fromkeys(w for w in words(text) if len(w) > 1)
    return list(seen)


def splice(text: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """`text` with each (start, end, replacement) applied; edits in order, not overlapping."""
    out, last = [], 0
    for start, end, replacement in edits:
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out)
