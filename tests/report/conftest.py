"""Fixtures of the page's browser tests: Debian's chromium, headless, driven by Playwright
(``executable_path``: no browser download), skipped with a reason when either is absent."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("REPROMATRIX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="Playwright's Python package is not installed")
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def artifacts(tmp_path) -> Path:
    root = Path(os.environ.get("REPROMATRIX_TEST_ARTIFACTS") or tmp_path / "artifacts")
    root.mkdir(parents=True, exist_ok=True)
    return root
