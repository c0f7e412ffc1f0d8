"""The README's pictures of the page, made from the published records (never by hand).

    python scripts/page-screenshots.py [OUT_DIR]      # default: docs/

Renders results/published (the catalog, the published matrix) into a temporary folder with
the clock fixed at the records' newest day, opens it in Debian's chromium (headless, through
Playwright; REPROMATRIX_CHROMIUM names another binary) and writes ``page-1400.png`` (1400x900)
and ``page-400.png`` (400x900, a phone) into OUT_DIR: the top of the page a visitor sees.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = ((1400, 900), (400, 900))
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def render(site: Path) -> None:
    """The published records' page in ``site``, dated by their newest record."""
    from repromatrix import paths
    from repromatrix.check.records import store_rows
    from repromatrix.config.catalog import load_catalog
    from repromatrix.report.render import render_site

    published = ROOT / "results" / "published"
    newest = store_rows(published)[1]["newest"] or "2026-01-01T00:00:00+00:00"
    now = datetime.fromisoformat(newest).astimezone(timezone.utc)
    render_site([published], site, load_catalog(paths.repros_dir()),
                matrix=str(published / "matrix.yaml"), now=now)


def shoot(site: Path, out: Path) -> list[Path]:
    """One screenshot of ``site/index.html`` per size, into ``out``."""
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("REPROMATRIX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    made = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=ARGS)
        for width, height in SIZES:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto((site / "index.html").resolve().as_uri())
            page.wait_for_load_state("load")
            made.append(out / f"page-{width}.png")
            page.screenshot(path=str(made[-1]))
            page.close()
        browser.close()
    return made


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "docs"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="repromatrix-shots-") as tmp:
        render(Path(tmp) / "site")
        for path in shoot(Path(tmp) / "site", out):
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
