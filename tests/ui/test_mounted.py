"""The review page mounted below a prefix, as `memserver serve --transport http` mounts it
at /ui beside /mcp (`server.transports.Mounts`): every page's links, forms and assets stay
under the prefix, and so does every redirect after a change. Over the server's own
backend (`state.Shared`), so the page and the MCP tools hold one engine and one store.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from memserver.server.transports import Mounts, unavailable
from tests.ui.conftest import BASE_URL
from tests.ui.test_pages import PAGES

PREFIX = "/ui"


@pytest.fixture
def mounted(scenario) -> Iterator[object]:  # type: ignore[no-untyped-def]
    from starlette.testclient import TestClient

    from memserver.server.backend import Backend
    from memserver.ui.mount import review_page

    backend = Backend(scenario.root, scenario.index_dir, env={})
    page = review_page(backend, host="127.0.0.1", port=8766, token=None)
    app = Mounts(unavailable("the MCP endpoint's place"), {PREFIX: page})
    c = TestClient(app, base_url=BASE_URL, follow_redirects=False)  # no lifespan: none here
    c.form_token = page.form_token  # type: ignore[attr-defined]
    c.backend = backend  # type: ignore[attr-defined]
    yield c
    c.close()


def _local_links(html: str) -> list[str]:
    return re.findall(r'(?:href|action|src)="(/[^"]*)"', html)


@pytest.mark.parametrize("path", PAGES)
def test_every_link_of_every_page_stays_under_the_prefix(mounted, path: str) -> None:
    r = mounted.get(PREFIX + path)
    assert r.status_code == 200, r.text
    links = _local_links(r.text)
    assert links, "a page without links to the rest of the page"
    assert [x for x in links if not x.startswith(PREFIX + "/")] == []


def test_detail_pages_and_the_forget_confirmation_too(mounted, scenario) -> None:
    for path in (f"/memories/{scenario.stale_memory}", f"/chunks/{scenario.erase_note}",
                 f"/forget?id={scenario.erase_note}&erase=1",
                 "/search?q=apply_discount+rate"):  # fmt: skip
        r = mounted.get(PREFIX + path)
        assert r.status_code == 200, (path, r.text)
        assert [x for x in _local_links(r.text) if not x.startswith(PREFIX + "/")] == [], path
    for asset in ("/static/ui.css", "/static/code.css", "/static/ui.js"):
        assert mounted.get(PREFIX + asset).status_code == 200, asset


def test_the_bare_prefix_and_other_paths(mounted) -> None:
    bare = mounted.get(PREFIX, params={"q": "x"})
    assert bare.status_code == 308 and bare.headers["location"] == PREFIX + "/?q=x"
    assert mounted.get("/mcp").text == "the MCP endpoint's place"
    assert mounted.get("/uix").text == "the MCP endpoint's place"  # a prefix, not a start


def test_a_change_redirects_under_the_prefix_via_the_servers_backend(mounted, scenario) -> None:
    r = mounted.post(f"{PREFIX}/memories/{scenario.stale_memory}/keep",
                     data={"form_token": mounted.form_token, "reason": "checked"})  # fmt: skip
    assert r.status_code == 303
    location = r.headers["location"]
    assert location.startswith(f"{PREFIX}/memories/m_") and location.endswith("?done=keep")
    copy = location.removeprefix(f"{PREFIX}/memories/").split("?")[0]
    # the MCP tools' own read of the same backend sees it
    assert mounted.backend.memory(copy)["status"] == "active"
    assert mounted.backend.memory(scenario.stale_memory)["status"] == "superseded"
    after = mounted.get(location)
    assert after.status_code == 200 and "Kept" in after.text
