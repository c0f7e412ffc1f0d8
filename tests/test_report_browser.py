"""The page in a real browser: Debian's chromium, headless, driven by Playwright, from file://.

Screenshots go to $REPROMATRIX_TEST_ARTIFACTS (CI collects it) or to the test's tmp dir.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from repromatrix.model import Repro, Status
from repromatrix.report import page_name, render_site
from repromatrix.result import SCHEMA_VERSION, Result
from repromatrix.results import ResultStore

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("REPROMATRIX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
DATA = Path(__file__).parent / "data" / "results"
CATALOG = {"deform_conv2d_device": Repro(
    id="deform_conv2d_device", path="repros/deform_conv2d_device.py", title="deform_conv2d device mismatch",
    upstream=("https://github.com/pytorch/TensorRT/issues/3556",),
    expect=({"when": {"torch_tensorrt": ">=2.4,<2.5"}, "status": "fail"},
            {"when": {"torch_tensorrt": ">=2.5"}, "status": "pass"}))}
VISIBLE_CELLS = "#matrix td.cell[data-cell] a:visible"


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
def artifacts(tmp_path, request) -> Path:
    root = Path(os.environ.get("REPROMATRIX_TEST_ARTIFACTS") or tmp_path / "artifacts")
    root.mkdir(parents=True, exist_ok=True)
    return root


class Tab:
    """A page plus everything it complained about."""

    def __init__(self, browser) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.problems: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(m.text))
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.on("dialog", self._dialog)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path: Path, fragment: str = "") -> Tab:
        self.page.goto(path.resolve().as_uri() + fragment)
        self.page.wait_for_load_state("load")
        return self

    def visible_cells(self) -> int:
        return self.page.locator(VISIBLE_CELLS).count()

    def close(self) -> None:
        self.page.close()


def site(tmp_path: Path, name: str, repros=CATALOG) -> Path:
    out = tmp_path / name
    render_site([DATA / name], out, repros)
    return out


def test_filters_drawer_and_permalink(browser, tmp_path, artifacts):
    out = site(tmp_path, "every_status")
    tab = Tab(browser).open(out / "index.html")
    page = tab.page
    assert tab.visible_cells() == 9
    page.locator("input[name=status][value=pass]").uncheck()
    assert tab.visible_cells() == 8
    assert "status=" in page.url and page.locator("#shown").inner_text() == "8 of 9 cells"
    page.select_option("#f-repro", "deform_conv2d_device")
    assert tab.visible_cells() == 3
    assert page.locator("#matrix th.repro:visible").count() == 1
    page.fill("#f-q", "2.10")
    assert tab.visible_cells() == 1
    page.click("#f-reset")
    assert tab.visible_cells() == 9 and "status=" not in page.url

    cell = "ngc-24.05--deform_conv2d_device"
    page.locator(f'td.cell[data-cell="{cell}"] a').click()
    drawer = page.locator("#drawer")
    assert drawer.is_visible()
    assert page.locator("#d-title").inner_text() == cell
    assert page.locator("#drawer .d-stages tbody tr").count() == 3
    assert page.locator("#drawer .d-cmd").inner_text() == (
        f"repromatrix run --matrix matrix.yaml -k {cell} --rerun")
    assert "cell=" + quote(cell, safe="") in page.url or "cell=" + cell in page.url
    page.screenshot(path=str(artifacts / "report-every-status-drawer.png"), full_page=True)
    page.keyboard.press("Escape")
    assert not drawer.is_visible()
    assert tab.problems == [] and tab.dialogs == []
    tab.close()

    # a permalink restores filters and the open cell
    tab = Tab(browser).open(out / "index.html", f"#status=fail&cell={quote(cell, safe='')}")
    assert tab.page.locator("#d-title").inner_text() == cell
    assert tab.visible_cells() == 3
    assert tab.page.locator("input[name=status][value=pass]").is_checked() is False
    assert tab.problems == []
    tab.close()


def test_change_links_and_repro_page(browser, tmp_path, artifacts):
    out = site(tmp_path, "every_status")
    tab = Tab(browser).open(out / "index.html")
    tab.page.locator("#changes a.permalink").first.click()
    assert tab.page.locator("#drawer").is_visible()
    tab.close()
    target = "pip-torch2.10.0--deform_conv2d_device"
    tab = Tab(browser).open(out / page_name("deform_conv2d_device"), "#c-" + quote(target, safe=""))
    row = tab.page.locator(f'tr[data-cell="{target}"]')
    assert "contra" in (row.get_attribute("class") or "")
    detail = row.locator("details.cell-detail")
    assert detail.get_attribute("open") is not None  # opened from the hash
    assert "contradicted" in detail.locator(".d-fields").inner_text()
    assert detail.locator(".d-stages tbody tr").count() == 3
    other = tab.page.locator('tr[data-cell="pip-torch2.4.1--deform_conv2d_device"] details.cell-detail')
    assert other.locator(".d-fields").count() == 0   # filled only when opened
    other.locator("summary").click()
    assert other.locator(".d-cmd").inner_text().endswith("-k pip-torch2.4.1--deform_conv2d_device --rerun")
    tab.page.screenshot(path=str(artifacts / "report-repro-page.png"), full_page=True)
    assert tab.problems == [] and tab.dialogs == []
    tab.close()


HOSTILE_MESSAGE = ("<script>window.__pwned = 1; alert(1)</script> "
                   "\"><img src=x onerror=\"window.__pwned=1;alert(2)\">")


def test_hostile_strings_render_as_text_and_run_nothing(browser, tmp_path, artifacts):
    out = site(tmp_path, "hostile")
    tab = Tab(browser).open(out / "index.html")
    page = tab.page
    cells = page.locator("#matrix td.cell[data-cell] a")
    for i in range(cells.count()):
        cells.nth(i).click()
        assert page.locator("#drawer").is_visible()
    page.locator('td.cell[data-cell="pip-torch2.4.1--deform_conv2d_device"] a').click()
    fields = page.locator("#drawer .d-fields dd.msg")
    assert fields.inner_text() == HOSTILE_MESSAGE
    tail = page.locator("#drawer .d-tb").inner_text()
    assert tail.endswith("<script>window.__pwned = 1; alert(1)</script>")
    page.fill("#f-q", "<img")
    page.fill("#f-q", "")
    page.screenshot(path=str(artifacts / "report-hostile.png"), full_page=True)
    assert page.evaluate("document.images.length") == 0
    assert page.evaluate("window.__pwned") is None
    for repro_page in sorted(out.glob("repro-*.html")):
        other = Tab(browser).open(repro_page)
        for det in other.page.locator("details.cell-detail").all():
            det.locator("summary").click()
            det.locator(".d-fields").wait_for(state="attached")  # filled on the toggle event
            assert det.locator(".d-fields").count() == 1
        for det in other.page.locator("details").all():
            det.evaluate("d => d.open = true")
        assert other.page.evaluate("document.images.length") == 0
        assert other.page.evaluate("window.__pwned") is None
        assert other.problems == [] and other.dialogs == []
        other.close()
    assert tab.problems == [] and tab.dialogs == []
    tab.close()


def test_hundred_stacks_by_twenty_repros_stays_usable(browser, tmp_path, artifacts):
    store = ResultStore(tmp_path / "store")
    statuses = [s.value for s in Status]
    for s in range(100):
        for r in range(20):
            sid, rid = f"pip-t2.{s}.0", f"r{r:02d}"
            store.append(Result.from_dict({
                "schema_version": SCHEMA_VERSION, "run_id": "run-1", "cell": f"{sid}--{rid}",
                "stack": {"id": sid, "torch": f"2.{s}.0"}, "repro": rid,
                "status": statuses[(s * 7 + r * 3) % 7], "message": "m", "host": "h",
                "finished_at": "2026-11-01T00:00:00Z"}))
    render_site([tmp_path / "store"], tmp_path / "big")
    tab = Tab(browser).open(tmp_path / "big" / "index.html")
    assert tab.visible_cells() == 2000
    tab.page.locator("input[name=status][value=fail]").uncheck()
    remaining = tab.visible_cells()
    assert 0 < remaining < 2000
    tab.page.locator("#matrix td.cell[data-cell] a:visible").last.click()
    assert tab.page.locator("#drawer").is_visible()
    tab.page.screenshot(path=str(artifacts / "report-100x20.png"))
    assert tab.problems == []
    tab.close()
