"""The review page through Starlette's test client: every page renders, every change goes
through the services as actor `ui`, and the guard holds the HTTP transport's rules."""

from __future__ import annotations

import re

import pytest

from memserver.store.browse import EventQuery
from tests.ui.conftest import BASE_URL
from tests.ui.reviewkit import ERASE_TEXT, STALE_TEXT

PAGES = ["/", "/search", "/memories", "/memories?status=stale&status=active&type=fact",
         "/review", "/review/consolidation", "/review/redactions", "/events",
         "/events?op=add&actor=test", "/health"]  # fmt: skip


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders(client, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 200, r.text
    assert "<main" in r.text and "<h1>" in r.text
    assert r.headers["content-security-policy"].startswith("default-src 'none'")
    assert r.headers["x-frame-options"] == "DENY"


def test_static_files_are_served_from_the_package(client) -> None:
    for path, kind in [("/static/ui.css", "text/css"), ("/static/ui.js", "javascript"),
                       ("/static/code.css", "text/css")]:  # fmt: skip
        r = client.get(path)
        assert r.status_code == 200 and kind in r.headers["content-type"], path


def test_search_runs_recall_with_filters_and_scope(client, scenario) -> None:
    r = client.get("/search", params={"q": "apply_discount rate", "memories": "1"})
    assert r.status_code == 200
    assert "src/billing.py" in r.text and f"/memories/{scenario.stale_memory}" in r.text
    assert 'class="hl"' in r.text  # highlighted code
    quick = client.get("/search", params={"q": "apply_discount rate"})  # the header's box
    assert f"/memories/{scenario.stale_memory}" in quick.text  # memories are included
    cleared = client.get("/search", params={"q": "apply_discount rate", "filters": "1"})
    assert f"/memories/{scenario.stale_memory}" not in cleared.text  # the box unticked
    r = client.get("/search", params={"q": "apply_discount", "paths": "README.md"})
    assert "src/billing.py" not in r.text
    bob = client.get("/search", params={"q": "squash merges billing", "user": "bob"})
    dana = client.get("/search", params={"q": "squash merges billing", "user": "dana"})
    assert "squash merges" not in bob.text.split("<ol", 1)[-1]  # scopes are a boundary
    assert "squash merges" in dana.text.split("<ol", 1)[-1]
    bad = client.get("/search", params={"q": "x", "paths": "/etc/passwd"})
    assert bad.status_code == 400 and "What to do" in bad.text


def test_a_stale_memory_shows_the_diff_of_its_cited_code(client, scenario) -> None:
    r = client.get(f"/memories/{scenario.stale_memory}")
    assert r.status_code == 200 and STALE_TEXT.replace("`", "") in r.text.replace("`", "")
    assert "What changed" in r.text
    assert re.search(r'class="d-del">-\s+rate = min\(rate, 0\.5\)', r.text)
    assert re.search(r'class="d-add">\+\s+rate = min\(rate, 0\.4\)', r.text)
    assert client.get("/memories/m_" + "0" * 32).status_code == 404


def _post(client, path: str, **data):  # type: ignore[no-untyped-def]
    return client.post(path, data={"form_token": client.form_token, **data})


def test_keep_from_the_page_is_an_event_by_ui_and_can_be_undone(client, engine, scenario) -> None:
    r = _post(client, f"/memories/{scenario.stale_memory}/keep")
    assert r.status_code == 303 and r.headers["location"].endswith("?done=keep")
    page = client.get(r.headers["location"])
    assert "Kept:" in page.text
    [keep] = engine.browser().events(EventQuery(ops=("keep",), actors=("ui",))).items
    r = _post(client, f"/events/{keep.key}/undo", near=scenario.stale_memory, next="/review")
    assert r.status_code == 303 and r.headers["location"] == "/review?done=undo"
    assert scenario.stale_memory in client.get("/review").text
    r = _post(client, f"/events/{keep.key}/undo", near=scenario.stale_memory)
    assert r.status_code == 400 and "undone already" in r.text


def test_a_form_without_the_page_token_is_refused(client, scenario) -> None:
    r = client.post(f"/memories/{scenario.stale_memory}/keep", data={})
    assert r.status_code == 400 and "reload the page" in r.text
    r = client.post(f"/memories/{scenario.stale_memory}/keep", data={"form_token": "guess"})
    assert r.status_code == 400


def test_rewrite_from_the_page(client, engine, scenario) -> None:
    r = _post(client, f"/memories/{scenario.stale_memory}/rewrite",
              text="`apply_discount` caps the rate at 0.4.", paths="src/billing.py")  # fmt: skip
    assert r.status_code == 303
    new_id = r.headers["location"].split("/memories/")[1].split("?")[0]
    assert engine.open_store().memories.get([new_id])[new_id].status == "active"
    old = engine.open_store().memories.get([scenario.stale_memory])[scenario.stale_memory]
    assert old.status == "superseded"


def test_consolidation_proposals_are_accepted_and_rejected_one_by_one(client, engine) -> None:
    page = client.get("/review/consolidation")
    [merge] = re.findall(r'name="merge" value="(m_[0-9a-f]{32})"', page.text)[:1]
    older = re.search(r'name="older" value="(m_[0-9a-f]{32})"', page.text).group(1)
    newer = re.search(r'name="newer" value="(m_[0-9a-f]{32})"', page.text).group(1)
    assert _post(client, "/review/consolidation/accept", merge=merge).status_code == 303
    assert engine.open_store().memories.get([merge])[merge].status == "active"
    r = _post(client, "/review/consolidation/reject", older=older, newer=newer)
    assert r.status_code == 303
    after = client.get("/review/consolidation").text
    assert merge not in after and older not in after
    ops = [e.event.op for e in engine.browser().events(EventQuery(actors=("ui",))).items]
    assert ops == ["reject-contradiction", "consolidate"]
    r = _post(client, "/review/consolidation/accept", older=older, newer=newer)
    assert r.status_code == 400 and "no longer proposed" in r.text


def test_forget_shows_what_goes_then_erases(client, engine, scenario) -> None:
    page = client.get("/forget", params={"id": scenario.erase_note, "erase": "1"})
    assert page.status_code == 200 and "cannot be undone" in page.text
    assert scenario.erase_note in page.text
    assert all(m in page.text for m in scenario.erase_memories)
    r = _post(client, "/forget", id=scenario.erase_note, erase="1", reason="obsolete")
    assert r.status_code == 303 and "done=erase" in r.headers["location"]
    log = client.get(r.headers["location"])
    assert "forget" in log.text and "(erased)" in log.text and ERASE_TEXT not in log.text
    evidence = engine.recaller().recall("nightly billing export cron", k=10).evidence
    assert all(ERASE_TEXT[:24] not in e.text for e in evidence)
    [forget] = engine.browser().events(EventQuery(ops=("forget",), actors=("ui",))).items
    assert forget.event.before == "" and scenario.erase_note in forget.event.targets


def test_a_stale_page_token_or_a_bad_filter_says_what_to_do(client) -> None:
    r = client.get("/memories", params={"since": "last tuesday"})
    assert r.status_code == 400 and "YYYY-MM-DD" in r.text


# -- the guard ---------------------------------------------------------------------------


def test_foreign_host_and_origin_are_refused(client) -> None:
    assert client.get("/", headers={"host": "evil.example:8766"}).status_code == 421
    assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    assert client.get("/", headers={"origin": "http://localhost:9999"}).status_code == 200
    r = client.post("/forget", data={"form_token": client.form_token},
                    headers={"origin": "http://localhost:9999"})  # fmt: skip
    assert r.status_code == 403  # another local page may not post here


def test_with_a_token_every_request_needs_it(engine) -> None:
    from starlette.testclient import TestClient

    from memserver.ui.app import build_app
    from memserver.ui.state import UiState

    app = build_app(UiState(engine), host="127.0.0.1", port=8766, token="s3cret-token")
    with TestClient(app, base_url=BASE_URL, follow_redirects=False) as c:
        assert c.get("/").status_code == 401
        assert c.get("/", params={"token": "wrong"}).status_code == 401
        assert c.get("/", headers={"authorization": "Bearer s3cret-token"}).status_code == 200
        r = c.get("/events", params={"token": "s3cret-token", "op": "add"})
        assert r.status_code == 303 and r.headers["location"] == "/events?op=add"
        assert "s3cret-token" not in r.headers["set-cookie"]
        assert "httponly" in r.headers["set-cookie"].lower()
        assert c.get("/events?op=add").status_code == 200  # the cookie now


def test_the_guard_makes_the_http_transports_host_and_origin_decisions(client) -> None:
    """The review page refuses what the MCP HTTP transport refuses, by the same rules."""
    from memserver.server.guard import HostGuard
    from memserver.ui.guard import Guard, origin_allowed

    mcp = HostGuard(lambda *a: None, "127.0.0.1", 8766)
    guard = Guard(lambda *a: None, host="127.0.0.1", port=8766)
    expected = {"127.0.0.1:8766": True, "localhost:8766": True, "[::1]:8766": True,
                "127.0.0.1:9": False, "evil:8766": False}  # fmt: skip
    for host, ok in expected.items():
        assert guard.host_allowed(host) == mcp.host_ok(host, None) == ok, host
    origins = {"http://127.0.0.1:5": True, "https://localhost:1": True,
               "http://evil.example": False, None: True}  # fmt: skip
    for origin, ok in origins.items():
        assert origin_allowed(origin) == HostGuard.origin_ok(origin) == ok, origin


def test_health_lists_the_secrets_masked_per_file(tmp_path, make_engine) -> None:  # type: ignore[no-untyped-def]
    """What `status` counts per file (never the values) is on the health page too."""
    from starlette.testclient import TestClient

    from memserver.ui.app import build_app
    from memserver.ui.state import UiState
    from tests.ingest.test_masking import GHP, _repo

    engine = make_engine(_repo(tmp_path / "repo"))
    engine.index()
    masked = engine.status().masked
    assert masked  # the repository holds secrets the index masked
    with TestClient(build_app(UiState(engine)), base_url=BASE_URL) as c:
        page = c.get("/health").text
    table = page.split('id="masked"', 1)[1].split("</table>", 1)[0]
    for path, kinds in masked.items():
        row = table.split(f"<code>{path}</code>", 1)[1].split("</tr>", 1)[0]
        assert all(f"{n} {kind}" in row for kind, n in kinds.items()), (path, row)
    assert GHP not in page
