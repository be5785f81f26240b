"""A task description as the query: files first, code before its tests and docs, every
likely file before a second chunk of one, filters and budgets kept, and a map answer."""

from __future__ import annotations

import json

import pytest

from memserver.core import render
from memserver.core.errors import BadRequest
from memserver.core.requests import Filters
from tests.conftest import write_tree

SESSION = '''"""Sessions: cookies, redirects and retries."""


class Session:
    def __init__(self, max_redirects=10):
        self.max_redirects = max_redirects
        self.cookies = {}

    def send(self, request):
        response = self.adapter.send(request)
        return self.resolve_redirects(response, request)

    def resolve_redirects(self, response, request):
        """Follow the Location header of 3xx responses until a final response."""
        hops = 0
        while response.is_redirect:
            hops += 1
            if hops > self.max_redirects:
                raise TooManyRedirects(hops)
            request = request.copy(url=response.headers["Location"])
            response = self.adapter.send(request)
        return response

    def merge_cookies(self, jar):
        self.cookies.update(jar)
'''

TESTS = """from lib.session import Session


class TestRedirects:
    def test_resolve_redirects_follows_location(self):
        session = Session(max_redirects=3)
        assert session.resolve_redirects is not None

    def test_too_many_redirects_raises(self):
        session = Session(max_redirects=0)
        assert session.max_redirects == 0
"""

TREE = {
    "lib/session.py": SESSION,
    "lib/adapters.py": (
        "class HTTPAdapter:\n    def send(self, request):\n        return self.pool.urlopen("
        "request.method, request.url)\n"
    ),
    "lib/cookies.py": "def merge_jars(a, b):\n    out = dict(a)\n    return out | b\n",
    "lib/exceptions.py": "class TooManyRedirects(Exception):\n    pass\n",
    "tests/test_session.py": TESTS,
    "docs/redirects.md": "# Redirects\n\nSession.resolve_redirects follows redirects up to "
    "max_redirects times; TooManyRedirects is raised after that.\n",
}
for n in range(12):  # unrelated modules, so that ranking has something to rank past
    TREE[f"lib/extra_{n}.py"] = f"def helper_{n}(value):\n    return value * {n}  # session\n"

ISSUE = """Session.resolve_redirects() ignores max_redirects when the Location header repeats
Description

When a server answers with a redirect loop, resolve_redirects keeps following the Location
header past max_redirects instead of raising TooManyRedirects, and the session hangs.

>>> s = Session(max_redirects=2)
>>> s.send(request)
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/lib/session.py", line 11, in send
    return self.resolve_redirects(response, request)
  File "/venv/lib/python3.11/site-packages/lib/session.py", line 20, in resolve_redirects
    response = self.adapter.send(request)
RecursionError: maximum recursion depth exceeded

The tests in tests/test_session.py only check that a redirect is followed once. Expected:
TooManyRedirects after max_redirects hops, whatever the headers say about the location.
"""


@pytest.fixture(scope="module")
def recaller(tmp_path_factory):
    from memserver.engine import Engine

    root = write_tree(tmp_path_factory.mktemp("long") / "repo", TREE)
    engine = Engine(root, None, embedder_flag="hashing", env={})
    engine.index()
    return engine.recaller(rerank=False)


def _files(result) -> list[str]:
    return list(dict.fromkeys(e.path for e in result.evidence))


def test_an_issue_is_answered_file_by_file_code_first(recaller) -> None:
    result = recaller.recall(ISSUE, explain=True)
    files = _files(result)
    assert files[0] == "lib/session.py"
    first = result.evidence[0]
    assert "def resolve_redirects" in first.text
    assert any(r.startswith("file:") for r in first.routes)  # ranked by its file's signals
    # tests and docs come after the code they are about
    assert files.index("tests/test_session.py") > files.index("lib/exceptions.py")
    # every likely file before a second chunk of one: the first items are distinct files
    head = [e.path for e in result.evidence[: len(files)]]
    assert len(set(head[:4])) == 4
    assert result.tokens <= 4096 and result.signals.keys() >= {"long_share", "long_agree"}


def test_a_task_answer_names_the_files_its_chunks_do_not_reach(recaller) -> None:
    result = recaller.recall(ISSUE, k=3, max_files=6)
    shown = _files(result)
    named = [f.path for f in result.also]
    assert len(result.evidence) <= 3 and named and not set(named) & set(shown)
    assert len(shown) + len(named) == 6  # up to max_files files in all, a place apiece
    few = recaller.recall(ISSUE, k=3, max_files=2)
    assert len(_files(few)) == 2 and not few.also  # the chunks already span max_files
    assert all(len(f.symbols) == 1 for f in result.also)
    text = render.recall_text(result)
    assert render.ALSO_HEADING in text and text.index(named[0]) > text.index(shown[-1])
    assert f"then {len(named)} more likely files" in text.splitlines()[0]
    data = json.loads(render.dumps(render.recall_dict(result)))
    assert [f["path"] for f in data["also"]] == named
    count = recaller.tokens.count
    assert result.tokens == max(count(render.dumps(render.recall_dict(result))),
                                count(render.recall_text(result)))  # fmt: skip


def test_a_short_question_keeps_the_short_path(recaller) -> None:
    result = recaller.recall("where are redirects followed")
    assert "long_share" not in result.signals and "dense" in result.signals


def test_a_long_query_embeds_its_prose_once_unless_told_not_to(recaller, monkeypatch) -> None:
    """By default a task's title and prose are embedded (one text: the code sample is not)
    for a dense arm and the file signal `dense`; `[recall] long_dense = false` leaves both
    out and embeds nothing."""
    from dataclasses import replace

    embedded: list[list[str]] = []
    real = recaller.embedder.embed_documents

    def counted(texts, *args, **kw):
        embedded.append(list(texts))
        return real(texts, *args, **kw)

    monkeypatch.setattr(recaller.embedder, "embed_documents", counted)
    result = recaller.recall(ISSUE, explain=True)
    assert len(embedded) == 1 and len(embedded[0]) == 1
    assert embedded[0][0].startswith("Session.resolve_redirects() ignores max_redirects")
    assert ">>> s = Session" not in embedded[0][0]  # the code sample is left out
    routes = {r for e in result.evidence for r in e.routes}
    assert "file:dense" in routes and "dense" in routes
    embedded.clear()
    monkeypatch.setattr(recaller, "settings", replace(recaller.settings, long_dense=False))
    plain = recaller.recall(ISSUE, explain=True)
    routes = {r for e in plain.evidence for r in e.routes}
    assert not embedded and "file:dense" not in routes and "dense" not in routes
    assert _files(plain)[0] == "lib/session.py"


def test_a_short_question_puts_tests_after_the_code_unless_it_asks_for_tests(recaller) -> None:
    question = "resolve redirects follows location max redirects"
    ranked = [e.path for e in recaller.recall(question).evidence]
    assert ranked.index("lib/session.py") < ranked.index("tests/test_session.py")
    asked = [e.path for e in recaller.recall("tests of " + question).evidence]
    assert asked[0] == "tests/test_session.py"
    plain = recaller.recall(question, explain=True).evidence  # scores say the ranking
    assert [e.score for e in plain] == sorted((e.score for e in plain), reverse=True)


def test_filters_bound_a_long_query(recaller) -> None:
    result = recaller.recall(ISSUE, filters=Filters(paths=("tests/**", "docs/**")))
    assert _files(result) and set(_files(result)) <= {"tests/test_session.py", "docs/redirects.md"}


def test_a_map_answer_lists_files_and_places_within_its_budget(recaller) -> None:
    result = recaller.recall(ISSUE, format="map")
    assert result.format == "map" and not result.evidence
    assert result.files[0].path == "lib/session.py"
    assert 0 < result.tokens <= 1000  # the map's own default budget
    where = SESSION.splitlines().index("    def resolve_redirects(self, response, request):") + 1
    assert any(m.start_line <= where <= m.end_line for m in result.files[0].symbols)
    assert all(m.start_line <= m.end_line for f in result.files for m in f.symbols)
    text = render.recall_text(result)
    assert text.splitlines()[1] == "lib/session.py"
    assert text.splitlines()[2].startswith("  L") and "class Session" in text.splitlines()[2]
    data = json.loads(render.dumps(render.recall_dict(result)))
    assert data["files"][0]["path"] == "lib/session.py" and "evidence" not in data
    small = recaller.recall(ISSUE, format="map", budget_tokens=256)
    assert small.tokens <= 256 and len(small.files) < len(result.files) and small.truncated


def test_a_map_of_a_short_question_is_its_evidence_by_file(recaller) -> None:
    result = recaller.recall("where are redirects followed", format="map")
    assert result.files and len({f.path for f in result.files}) == len(result.files)


def test_an_unknown_format_is_refused_with_the_choices(recaller) -> None:
    with pytest.raises(BadRequest, match="chunks, map"):
        recaller.recall(ISSUE, format="tree")


# A module of functions, each its own chunk, and an issue about one of them that names
# another in passing: the file's chunks follow how well the issue's words describe each,
# not the exact-name arm's rank across the repository.
REDIRECTS = '''"""Redirect handling."""


def merge_cookies(jar, response):
    """Copy the cookies a response sets into the jar."""
    for name, value in response.cookies.items():
        jar[name] = value
    return jar


def follow_redirects(session, response, request, max_redirects):
    """Follow the Location header of each redirect response until a final response."""
    hops = 0
    while response.is_redirect:
        hops += 1
        location = response.headers["Location"]
        request = request.copy(url=location)
        response = session.send(request)
    return response


def strip_auth(request, new_url):
    """Drop the Authorization header when a redirect leaves the original host."""
    if request.url.host != new_url.host:
        request.headers.pop("Authorization", None)
    return request
'''

PASSING = """Redirect loops hang the session instead of raising TooManyRedirects
Description

When a server answers with a redirect loop the session keeps following the Location header:
each hop copies the request to the new location and sends it again, and the hops counter
never reaches max_redirects because every response is a redirect. The session should raise
TooManyRedirects once the hops exceed max_redirects, whatever the Location header says.
Unrelated: merge_cookies() was fine here.
"""


@pytest.fixture(scope="module")
def functions(tmp_path_factory):
    from memserver.engine import Engine

    tree = {"lib/redirects.py": REDIRECTS, "lib/exceptions.py": TREE["lib/exceptions.py"]}
    tree |= {f"lib/extra_{n}.py": TREE[f"lib/extra_{n}.py"] for n in range(6)}
    root = write_tree(tmp_path_factory.mktemp("functions") / "repo", tree)
    engine = Engine(root, None, embedder_flag="hashing", env={})
    engine.index()
    return engine.recaller(rerank=False)


def test_a_tight_budget_trades_a_files_second_chunk_for_more_files(functions) -> None:
    roomy = functions.recall(PASSING, k=6, max_files=20, budget_tokens=4096)
    paths = [e.path for e in roomy.evidence]
    assert len(paths) > len(set(paths))  # some file gave a second chunk
    # a budget that holds the chunks but not the lines for every other file
    tight = functions.recall(PASSING, k=6, max_files=20, budget_tokens=roomy.tokens - 40)
    assert tight.tokens <= roomy.tokens - 40 and tight.truncated
    # a repeated file's chunk went, every file stayed: by its code or by name
    assert len(tight.evidence) < len(roomy.evidence)
    assert _files(tight) + [f.path for f in tight.also] == _files(roomy) + [
        f.path for f in roomy.also
    ]
    assert all(e.path not in {f.path for f in tight.also} for e in tight.evidence)


def _terms(recaller, text: str) -> list[tuple[str, float]]:
    from memserver.retrieve.files import weighted_terms
    from memserver.text.task import parse_task

    return weighted_terms(parse_task(text), text, recaller.settings.title_weight)


def test_a_files_chunks_come_best_described_first(functions) -> None:
    result = functions.recall(PASSING)
    mine = [e for e in result.evidence if e.path == "lib/redirects.py"]
    assert len(mine) >= 2 and mine[0].symbol == "follow_redirects"
    scores = dict(functions.keyword.search_weighted(_terms(functions, PASSING), 50,
                                                    path="lib/redirects.py"))  # fmt: skip
    named = next(e for e in mine if e.symbol == "merge_cookies")  # named, in passing
    assert scores[named.id] < scores[mine[0].id]


def test_a_named_symbol_counts_within_its_file_by_the_name_weight(functions) -> None:
    from memserver.retrieve.files import names_symbol
    from memserver.retrieve.fuse import Fused
    from memserver.retrieve.longquery import _within_file
    from memserver.text.task import parse_task

    snap = functions.snapshots()
    terms = _terms(functions, PASSING)
    mine = {snap.id_at(r) for r in snap.rows_in_file("lib/redirects.py")}

    def order(weight: float) -> list[str]:
        words = dict(functions.keyword.search_weighted(terms, 100))  # the keyword arm's
        candidates = [Fused(cid, 0.0, ("bm25",)) for cid in words]
        chunks = _within_file(snap, "lib/redirects.py", [c for c in candidates if c.id in mine],
                              None, 10, words, [], names_symbol(parse_task(PASSING)),
                              weight)  # fmt: skip
        return [snap.symbol_at(r) for r in snap.rows_of([c.id for c in chunks]) if r is not None]

    plain, heavy = order(0.0), order(10.0)
    assert plain[0] == "follow_redirects" and plain.index("merge_cookies") > 0
    assert heavy[0] == "merge_cookies"  # the one function the issue names
    assert sorted(plain) == sorted(heavy)  # the same chunks, re-ordered


def test_a_map_lists_more_places_for_its_first_files_best_first(functions) -> None:
    from memserver.retrieve.codemap import PLACES

    result = functions.recall(PASSING, format="map")
    first = result.files[0]
    assert first.path == "lib/redirects.py"
    assert first.symbols[0].name == "follow_redirects"  # best first, not by line
    assert len(first.symbols) == min(PLACES[0], 3)  # the module's three functions, up to PLACES
    for i, f in enumerate(result.files):
        assert len(f.symbols) <= (PLACES[i] if i < len(PLACES) else 1)


def test_a_long_querys_words_weigh_the_square_root_of_how_often_it_says_them() -> None:
    from memserver.retrieve.files import weighted_terms
    from memserver.text.task import parse_task

    text = "Lexer drops a token\n" + "token " * 15 + "then the parser stops"
    weights = dict(weighted_terms(parse_task(text), text, 4.0))
    assert weights["token"] == 4.0 + 4.0  # said 16 times (once in the title): 4, plus 4
    assert weights["parser"] == 1.0 and weights["lexer"] == 1.0 + 4.0


def test_a_likely_file_the_keyword_hits_missed_is_searched_within(tmp_path) -> None:
    """With room for one keyword hit, the second file (ranked by its whole text) still
    opens on its chunk the task describes, not on its first one."""
    from dataclasses import replace

    from memserver.engine import Engine

    body = "\n".join(f"    value_{n} = {n}" for n in range(8))
    tree = {
        "lib/winner.py": "def parse_header_folding(header):\n    # header folding parse"
        " header folding continuation lines header\n    return header.replace('\\n ', ' ')\n",
        "lib/big.py": (
            f"def alpha():\n{body}\n    return value_1\n\n\n"
            f"def beta():\n{body}\n    return value_2\n\n\n"
            "def unfold(raw):\n    # continuation lines of a folded header are joined\n"
            "    return raw.replace('\\r\\n ', ' ')\n"
        ),
    }
    for n in range(6):
        tree[f"lib/other_{n}.py"] = f"def other_{n}():\n    return {n}\n"
    root = write_tree(tmp_path / "repo", tree)
    engine = Engine(root, None, embedder_flag="none", env={})
    engine.index()
    recaller = engine.recaller(rerank=False)
    recaller.settings = replace(recaller.settings, long_candidates=1, within_file_candidates=1)
    issue = (
        "Header folding: continuation lines are not joined when parsing a folded header\n"
        "When a mail or HTTP message header is folded over several continuation lines, "
        "the parser keeps the raw carriage return and line feed breaks instead of joining "
        "each continuation line into one value. Expected: a folded header reads back as "
        "a single line with one space where every break was, as the RFC describes for "
        "unstructured fields."
    )
    result = recaller.recall(issue)
    assert result.evidence and result.evidence[0].path == "lib/winner.py"
    first_of_big = next(e for e in result.evidence if e.path == "lib/big.py")
    assert first_of_big.symbol == "unfold"
