"""The review page as a person uses it: `memserver ui` in a subprocess, driven by a real
headless Chromium (Debian's `chromium`, through playwright; nothing downloads a browser).

On the review scenario (tests/ui/reviewkit.py) it opens the page, searches, opens the stale
note and reads its diff, accepts a consolidation merge, forgets a note with erasure, and
checks through recall and the events table that each action took effect. One screenshot
per page goes to a folder under tmp_path, printed, and copied to $MEMSERVER_SCREENSHOTS
when set (CI keeps it as an artifact).
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from memserver.store.browse import EventQuery
from tests.e2e.browserkit import free_port
from tests.e2e.test_mcp_transports import stop
from tests.ui.reviewkit import ERASE_TEXT, Scenario, build

START_TIMEOUT = 60.0


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"memserver ui exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)  # polling a port that is not listening yet; no event to wait on
    raise AssertionError(f"memserver ui did not answer at {url} within {START_TIMEOUT}s")


@pytest.fixture
def served(tmp_path: Path, chromium_path: Path) -> Iterator[tuple[Scenario, str]]:
    scenario = build(tmp_path / "work")
    port = free_port()
    cmd = [sys.executable, "-m", "memserver", "ui", "--root", str(scenario.root),
           "--index-dir", str(scenario.index_dir), "--port", str(port), "--no-open"]  # fmt: skip
    log = tmp_path / "ui.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url + "/", proc, log)
        yield scenario, url
    finally:
        stop(proc, terminate=True)


def _engine(scenario: Scenario):  # type: ignore[no-untyped-def]
    from memserver.engine import Engine

    return Engine(scenario.root, scenario.index_dir, env={})


def test_a_person_reviews_the_index_in_a_real_browser(served, browser_page, screenshots) -> None:
    scenario, url = served
    page = browser_page
    shot = iter(range(1, 100))

    def snap(name: str) -> None:
        page.screenshot(path=str(screenshots / f"{next(shot):02d}-{name}.png"), full_page=True)

    page.goto(url + "/")
    assert page.title() == "Overview · memserver"
    snap("overview")

    # search, from the keyboard: "/" focuses the box
    page.keyboard.press("/")
    page.keyboard.type("apply_discount rate")
    page.keyboard.press("Enter")
    page.wait_for_url("**/search?**")
    assert page.locator(".result figcaption", has_text="src/billing.py").count() >= 1
    assert page.locator(f'a[href="/memories/{scenario.stale_memory}"]').count() >= 1
    snap("search")

    # the stale note, from the review queue: its diff shows the edit
    page.get_by_role("link", name="Review", exact=True).click()
    page.wait_for_url("**/review")
    snap("review-stale")
    page.locator(f'a.title[href="/memories/{scenario.stale_memory}"]').click()
    page.wait_for_url(f"**/memories/{scenario.stale_memory}")
    diff = page.locator("figure.diff")
    assert diff.locator(".d-del", has_text="min(rate, 0.5)").count() == 1
    assert diff.locator(".d-add", has_text="min(rate, 0.4)").count() == 1
    assert page.locator("#keep").is_visible()
    snap("stale-memory-diff")

    # accept the consolidation merge
    page.goto(url + "/review/consolidation")
    snap("review-consolidation")
    page.get_by_role("button", name="Accept merge").click()
    page.wait_for_url("**/review/consolidation?done=accept")
    assert "Accepted" in page.locator(".flash").inner_text()
    snap("consolidation-accepted")
    engine = _engine(scenario)
    store = engine.open_store()
    members = store.memories.get(list(scenario.merge_members))
    assert {m.status for m in members.values()} == {"superseded"}
    [accepted] = engine.browser().events(EventQuery(ops=("consolidate",), actors=("ui",))).items
    abstraction = accepted.event.targets[0]
    assert store.memories.get([abstraction])[abstraction].status == "active"
    recalled = engine.recaller().recall("where is the deploy script", k=10).evidence
    assert any(abstraction in e.memory_ids for e in recalled)
    assert not any(set(scenario.merge_members) & set(e.memory_ids) for e in recalled)

    # forget a note with erasure: find it, confirm on the page that lists what goes
    page.goto(url + f"/chunks/{scenario.erase_note}")
    snap("note")
    page.get_by_role("link", name="Forget and erase…").click()
    page.wait_for_url("**/forget?**")
    assert page.locator("#erase").is_checked()
    assert page.get_by_text("cannot be undone").count() >= 1
    for mid in scenario.erase_memories:
        assert page.get_by_text(mid).count() == 1
    snap("forget-confirm")
    page.fill("#reason", "obsolete: the export moved")
    page.locator("#confirm-forget").click()
    page.wait_for_url("**/events?**done=erase")
    assert "erased" in page.locator(".flash").inner_text()
    snap("audit-log-after-erase")
    engine = _engine(scenario)
    store = engine.open_store()
    recalled = engine.recaller().recall("nightly billing export cron reporting host", k=10)
    assert all(ERASE_TEXT[:24] not in e.text for e in recalled.evidence)
    assert store.chunks.get([scenario.erase_note])[scenario.erase_note][0].text == ""
    [forget] = engine.browser().events(EventQuery(ops=("forget",), actors=("ui",))).items
    assert forget.event.reason == "obsolete: the export moved (erased)"
    assert scenario.erase_note in forget.event.targets and forget.event.before == ""
    assert all(not e.before and not e.after for e in store.events.of(scenario.erase_note))

    rest = [("/memories", "memories"), ("/events", "audit-log"),
            ("/review/redactions", "review-redactions"), ("/health", "health")]  # fmt: skip
    for path, name in rest:
        page.goto(url + path)
        assert page.locator("h1").count() == 1
        snap(name)
    assert page.console_errors == []  # no script error, no resource the CSP blocked
    assert len(list(screenshots.glob("*.png"))) >= 12


def test_the_page_reads_in_a_narrow_window_and_by_keyboard(served, browser_page,
                                                           screenshots) -> None:  # fmt: skip
    scenario, url = served
    page = browser_page
    page.set_viewport_size({"width": 420, "height": 800})
    for path, name in [(f"/memories/{scenario.stale_memory}", "narrow-stale-memory"),
                       ("/search?q=apply_discount", "narrow-search")]:  # fmt: skip
        page.goto(url + path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} scrolls sideways by {overflow}px at 420px"
        page.screenshot(path=str(screenshots / f"{name}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(url + "/review")
    page.keyboard.press("Tab")  # the skip link comes first
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("j")
    focused = page.evaluate("document.activeElement.getAttribute('href')")
    assert focused == f"/memories/{scenario.stale_memory}"
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/memories/{scenario.stale_memory}")
    page.locator("#keep").focus()
    page.keyboard.press("Enter")  # keep it, by keyboard
    page.wait_for_url("**?done=keep")
    assert "Kept" in page.locator(".flash").inner_text()
    assert page.console_errors == []
