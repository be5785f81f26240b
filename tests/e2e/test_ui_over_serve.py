"""The review page as a route of `memserver serve --transport http`, over real HTTP.

One `memserver serve` subprocess on the review scenario (tests/ui/reviewkit.py), with a
token: /ui/ answers beside /mcp, by the transport's Host/Origin rules and the same token;
its links stay under /ui/; a change made on the page is seen at once by an MCP client of
the same process (one backend), and it is in the events table with actor `ui`. With
scoped tokens the page is off and says why. Then a real Chromium uses it as a person would.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memserver.store.browse import EventQuery
from tests.e2e.browserkit import free_port
from tests.e2e.test_mcp_transports import stop
from tests.ui.reviewkit import Scenario, build

TOKEN = "ui-route-token-" + "0123456789" * 3
WAIT = 90.0  # seconds: start plus the first engine load, on a busy 2-core runner
ENV = {"MEMSERVER_RERANK_ENABLED": "false", "MEMSERVER_EMBEDDING_MODEL": "hashing"}


def _env(**extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSERVER_")}
    return {**env, **ENV, **extra}


def _start(scenario: Scenario, port: int, log: Path, *args: str,
           env: dict[str, str]) -> subprocess.Popen[bytes]:  # fmt: skip
    cmd = [sys.executable, "-m", "memserver", "serve", "--transport", "http", "--root",
           str(scenario.root), "--index-dir", str(scenario.index_dir), "--port", str(port),
           *args]  # fmt: skip
    with log.open("wb") as err:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)


def _wait_for(url: str, proc: subprocess.Popen[bytes], log: Path,
              headers: dict[str, str]) -> httpx2.Response:  # fmt: skip
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"memserver serve exited: {log.read_text()[-2000:]}")
        try:
            return httpx2.get(url, headers=headers, timeout=WAIT)
        except httpx2.TransportError:
            time.sleep(0.1)  # polling a port that is not listening yet; no event to wait on
    raise AssertionError(f"memserver serve did not answer at {url} within {WAIT}s")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Scenario, str]]:
    scenario = build(tmp_path / "work")
    port = free_port()
    log = tmp_path / "serve.log"
    proc = _start(scenario, port, log, env=_env(MEMSERVER_TOKEN=TOKEN))
    url = f"http://127.0.0.1:{port}"
    try:
        first = _wait_for(url + "/ui/", proc, log, {"authorization": f"Bearer {TOKEN}"})
        assert first.status_code == 200, first.text
        yield scenario, url
    finally:
        stop(proc, terminate=True)
    assert "/ui/" in log.read_text()  # the start-up log names the page's address


def _links(html: str) -> list[str]:
    return re.findall(r'(?:href|action|src)="(/[^"]*)"', html)


async def _memory_over_mcp(url: str, memory_id: str) -> dict[str, object]:
    headers = {"authorization": f"Bearer {TOKEN}"}
    with anyio.fail_after(WAIT):
        async with (
            httpx2.AsyncClient(headers=headers, timeout=WAIT) as http,
            Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
        ):
            found = await client.read_resource(f"memserver://memory/{memory_id}")
    return dict(json.loads(found.contents[0].text))  # type: ignore[union-attr]


def test_the_page_is_a_route_of_the_http_transport(served) -> None:
    scenario, url = served
    auth = {"authorization": f"Bearer {TOKEN}"}
    # the transport's rules: a token, a Host of this server, an Origin of this machine
    assert httpx2.get(url + "/ui/", timeout=WAIT).status_code == 401
    assert httpx2.get(url + "/ui/", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert httpx2.get(url + "/ui/", headers={**auth, "host": "evil.example"}).status_code == 421
    foreign = {**auth, "origin": "http://evil.example"}
    assert httpx2.get(url + "/ui/", headers=foreign).status_code == 403
    assert httpx2.post(url + "/mcp", headers=foreign).status_code == 403
    bare = httpx2.get(url + "/ui", headers=auth)
    assert bare.status_code == 308 and bare.headers["location"] == "/ui/"
    # the address with the token sets the cookie a browser then sends
    with httpx2.Client(base_url=url, timeout=WAIT) as browser:
        r = browser.get("/ui/events", params={"token": TOKEN, "op": "add"})
        assert r.status_code == 303 and r.headers["location"] == "/ui/events?op=add"
        assert browser.get("/ui/events?op=add").status_code == 200

    review = httpx2.get(url + "/ui/review", headers=auth, timeout=WAIT)
    assert review.status_code == 200
    links = _links(review.text)
    assert f"/ui/memories/{scenario.stale_memory}" in links
    assert links and all(link.startswith("/ui/") for link in links), links
    assert httpx2.get(url + "/ui/static/ui.css", headers=auth).status_code == 200

    # keep the stale note on the page; an MCP client of the same server sees it at once
    form_token = re.search(r'name="form_token" value="([^"]+)"', review.text)
    assert form_token is not None
    kept = httpx2.post(url + f"/ui/memories/{scenario.stale_memory}/keep", headers=auth,
                       data={"form_token": form_token[1], "reason": "still true"},
                       timeout=WAIT)  # fmt: skip
    assert kept.status_code == 303, kept.text
    location = kept.headers["location"]
    assert location.startswith("/ui/memories/m_") and location.endswith("?done=keep")
    copy = location.removeprefix("/ui/memories/").split("?")[0]
    old = anyio.run(_memory_over_mcp, url, scenario.stale_memory)
    new = anyio.run(_memory_over_mcp, url, copy)
    assert old["status"] == "superseded" and new["status"] == "active"
    assert new["text"] == old["text"]

    from memserver.engine import Engine

    engine = Engine(scenario.root, scenario.index_dir, env=ENV)
    changes = engine.browser().events(EventQuery(actors=("ui",))).items
    assert changes and all(r.event.reason.startswith("still true") for r in changes)
    assert any(scenario.stale_memory in r.event.targets for r in changes)


def test_scoped_tokens_turn_the_page_off_and_say_why(tmp_path: Path) -> None:
    scenario = build(tmp_path / "work")
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({TOKEN: {"user": "dana"}}))
    tokens.chmod(0o600)
    port, log = free_port(), tmp_path / "serve.log"
    proc = _start(scenario, port, log, "--tokens", str(tokens), env=_env())
    try:
        auth = {"authorization": f"Bearer {TOKEN}"}
        r = _wait_for(f"http://127.0.0.1:{port}/ui/", proc, log, auth)
        assert r.status_code == 404 and "pinned to scopes" in r.text
        assert "memserver ui" in r.text
    finally:
        stop(proc, terminate=True)


def test_a_person_uses_the_page_under_serve_in_chromium(served, browser_page,
                                                        screenshots) -> None:  # fmt: skip
    scenario, url = served
    page = browser_page
    page.goto(url + f"/ui/?token={TOKEN}")  # the address with the token; the cookie after it
    page.wait_for_url(url + "/ui/")
    assert page.title() == "Overview · memserver"
    page.screenshot(path=str(screenshots / "serve-overview.png"), full_page=True)
    page.keyboard.press("/")
    page.keyboard.type("apply_discount rate")
    page.keyboard.press("Enter")
    page.wait_for_url("**/ui/search?**")
    assert page.locator(".result figcaption", has_text="src/billing.py").count() >= 1
    page.screenshot(path=str(screenshots / "serve-search.png"), full_page=True)
    page.get_by_role("link", name="Review", exact=True).click()
    page.wait_for_url("**/ui/review")
    page.locator(f'a.title[href="/ui/memories/{scenario.stale_memory}"]').click()
    page.wait_for_url(f"**/ui/memories/{scenario.stale_memory}")
    assert page.locator("figure.diff .d-add", has_text="min(rate, 0.4)").count() == 1
    page.locator("#keep").click()
    page.wait_for_url("**/ui/memories/**?done=keep")
    assert "Kept" in page.locator(".flash").inner_text()
    page.screenshot(path=str(screenshots / "serve-kept.png"), full_page=True)
    assert page.console_errors == []  # styles and script load from /ui/static under the CSP
