"""Fixtures of the browser tests: a headless Chromium page (Debian's `chromium` through
playwright; nothing downloads a browser) and the screenshots folder, printed and copied to
$MEMSERVER_SCREENSHOTS when set (CI keeps it as an artifact)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.browserkit import CHROMIUM, CHROMIUM_FLAGS, KEEP_SCREENSHOTS


@pytest.fixture(scope="module")
def chromium_path() -> Path:
    pytest.importorskip("playwright.sync_api", reason="the playwright package is missing: "
                        "pip install -e '.[dev]'")  # fmt: skip
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium is missing at {CHROMIUM}: apt-get install -y chromium "
                    "(.ci/run installs it when it can)")  # fmt: skip
    return CHROMIUM


@pytest.fixture
def screenshots(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "screenshots"
    folder.mkdir()
    print(f"\nscreenshots: {folder}")
    yield folder
    if KEEP_SCREENSHOTS:
        keep = Path(KEEP_SCREENSHOTS)
        keep.mkdir(parents=True, exist_ok=True)
        for shot in folder.glob("*.png"):
            shutil.copy2(shot, keep / shot.name)
        print(f"screenshots copied to {keep}")


@pytest.fixture
def browser_page(chromium_path: Path) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=str(chromium_path), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 800},
        )  # fmt: skip
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.console_errors = errors  # type: ignore[attr-defined]
        try:
            yield page
        finally:
            context.close()
