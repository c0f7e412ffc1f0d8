"""The page in a real browser: Debian's chromium, headless, driven by Playwright, from file://.

Screenshots go to $REPROMATRIX_TEST_ARTIFACTS (CI collects it) or to the test's tmp dir; every
open tab is also captured when a test fails. Timings are measured in benchmarks/, not here.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from repromatrix.model import Repro, Status
from repromatrix.report.render import page_name, render_site
from repromatrix.store.record import SCHEMA_VERSION, Result
from repromatrix.store.results import ResultStore

pytestmark = pytest.mark.browser

DATA = Path(__file__).resolve().parents[1] / "data" / "results"
CATALOG = {"deform_conv2d_device": Repro(
    id="deform_conv2d_device", path="repros/deform_conv2d_device.py", title="deform_conv2d device mismatch",
    upstream=("https://github.com/pytorch/TensorRT/issues/3556",),
    expect=({"when": {"torch_tensorrt": ">=2.4,<2.5"}, "status": "fail"},
            {"when": {"torch_tensorrt": ">=2.5"}, "status": "pass"}))}
VISIBLE_CELLS = "#matrix td.cell[data-cell] a:visible"
STATUSES = [s.value for s in Status]


class Tab:
    """A page plus everything it complained about."""

    def __init__(self, browser, width: int = 1280, height: int = 900) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": height})
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

    def wait_for_cells(self, count: int, timeout_s: float = 10.0) -> None:
        """Until ``count`` cells are visible (the page filters on events it gets later)."""
        deadline = time.monotonic() + timeout_s
        while self.visible_cells() != count:
            assert time.monotonic() < deadline, f"{self.visible_cells()} cells visible, not {count}"
            self.page.wait_for_timeout(50)

    def open_cell(self, cell: str) -> None:
        self.page.locator(f'td.cell[data-cell="{cell}"] a').click()
        self.drawer_ready(cell)

    def drawer_ready(self, cell: str) -> None:
        """Details load from a data chunk: wait until the drawer shows this cell's fields."""
        self.page.locator("#drawer .d-fields").wait_for(state="visible")
        self.page.wait_for_function("id => document.getElementById('d-title').textContent === id", arg=cell)

    def focused_cell(self) -> str | None:
        return self.page.evaluate("(document.activeElement.closest('td.cell') || {}).dataset?.cell || null")

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def tabs(browser, artifacts, request):
    """Opens tabs; on a failing test, screenshots every tab still open into the artifacts."""
    opened: list[Tab] = []
    failed_before = request.session.testsfailed

    def new(width: int = 1280, height: int = 900) -> Tab:
        tab = Tab(browser, width, height)
        opened.append(tab)
        return tab

    yield new
    failed = request.session.testsfailed > failed_before
    for i, tab in enumerate(opened):
        if failed and not tab.page.is_closed():
            tab.page.screenshot(path=str(artifacts / f"FAILED-{request.node.name}-{i}.png"), full_page=True)
        if not tab.page.is_closed():
            tab.close()


def site(tmp_path: Path, name: str, repros=CATALOG) -> Path:
    out = tmp_path / name
    shutil.copytree(DATA / name, out.parent / "golden" / name, dirs_exist_ok=True)
    render_site([out.parent / "golden" / name], out, repros)  # the report indexes the folder
    return out


def record(stack: str, repro: str, status: str, run: int = 0, *, torch: str = "2.4.1",
           stages=(), tags=(), workaround=None, message: str = "m") -> Result:
    day = f"2026-11-{run + 1:02d}"
    return Result.from_dict({
        "schema_version": SCHEMA_VERSION, "run_id": f"run-{run}", "cell": f"{stack}--{repro}",
        "stack": {"id": stack, "kind": "pip", "torch": torch, "tags": list(tags)}, "repro": repro,
        "status": status, "stages": list(stages), "workaround": workaround, "message": message,
        "host": "h", "env": {"torch": torch}, "started_at": f"{day}T00:00:00+00:00",
        "finished_at": f"{day}T00:01:00+00:00"})


def big_store(root: Path, stacks: int, repros: int, runs: int) -> None:
    store = ResultStore(root)
    for run in range(runs):
        for s in range(stacks):
            for r in range(repros):
                status = STATUSES[(s * 7 + r * 3 + run) % 7]
                stages = [{"name": "eager", "role": "main", "status": status},
                          {"name": "fake_export", "role": "info", "status": "pass" if s % 2 else "fail"}]
                store.append(record(f"pip-t2.{s}.0", f"r{r:02d}", status, run, torch=f"2.{s // 10}.{s % 10}",
                                    stages=stages, message="x" * 200))


# ----------------------------------------------------------------- golden sets


def test_filters_drawer_and_permalink(tmp_path, tabs, artifacts):
    out = site(tmp_path, "every_status")
    tab = tabs().open(out / "index.html", "#unfold=1")  # folds: test_folds_and_unfold
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
    page.check("#f-unfold")
    assert tab.visible_cells() == 9 and "status=" not in page.url

    cell = "ngc-24.05--deform_conv2d_device"
    tab.open_cell(cell)
    drawer = page.locator("#drawer")
    assert drawer.is_visible()
    rows = page.locator("#drawer .d-stages tbody tr")
    assert rows.count() == 3
    assert page.locator("#drawer .d-stages thead th").all_inner_texts()[:3] == ["stage", "role", "status"]
    assert page.locator("#drawer .d-stages td.role").all_inner_texts() == ["main", "main", "main"]
    assert page.locator("#drawer .d-history li").count() >= 1
    assert page.locator("#drawer .d-cmd").inner_text() == (
        f"repromatrix run --matrix matrix.yaml -k {cell} --rerun")
    assert "cell=" + quote(cell, safe="") in page.url or "cell=" + cell in page.url
    page.screenshot(path=str(artifacts / "report-every-status-drawer.png"), full_page=True)
    page.keyboard.press("Escape")
    assert not drawer.is_visible()
    assert tab.problems == [] and tab.dialogs == []
    tab.close()

    # a permalink restores filters and the open cell
    tab = tabs().open(out / "index.html", f"#status=fail&unfold=1&cell={quote(cell, safe='')}")
    tab.drawer_ready(cell)
    assert tab.visible_cells() == 3
    assert tab.page.locator("input[name=status][value=pass]").is_checked() is False
    assert tab.problems == []


def test_change_links_and_repro_page(tmp_path, tabs, artifacts):
    out = site(tmp_path, "every_status")
    tab = tabs().open(out / "index.html")
    link = tab.page.locator("#changes a.permalink").first
    cell = link.get_attribute("data-cell")
    link.click()
    tab.drawer_ready(cell)
    tab.close()
    target = "pip-torch2.10.0--deform_conv2d_device"
    tab = tabs().open(out / page_name("deform_conv2d_device"), "#c-" + quote(target, safe=""))
    row = tab.page.locator(f'tr[data-cell="{target}"]')
    assert "contra" in (row.get_attribute("class") or "")
    detail = row.locator("details.cell-detail")
    assert detail.get_attribute("open") is not None  # opened from the hash
    detail.locator(".d-fields").wait_for()
    assert "contradicted" in detail.locator(".d-fields").inner_text()
    assert detail.locator(".d-stages tbody tr").count() == 3
    other = tab.page.locator('tr[data-cell="pip-torch2.4.1--deform_conv2d_device"] details.cell-detail')
    assert other.locator(".d-fields").count() == 0   # filled only when opened
    other.locator("summary").click()
    other.locator(".d-cmd").wait_for()
    assert other.locator(".d-cmd").inner_text().endswith("-k pip-torch2.4.1--deform_conv2d_device --rerun")
    assert tab.page.locator("#answer-summary").inner_text().startswith("reproduces on 3 of 4 stacks")
    tab.page.screenshot(path=str(artifacts / "report-repro-page.png"), full_page=True)
    assert tab.problems == [] and tab.dialogs == []


HOSTILE_MESSAGE = ("<script>window.__pwned = 1; alert(1)</script> "
                   "\"><img src=x onerror=\"window.__pwned=1;alert(2)\">")


def test_hostile_strings_render_as_text_and_run_nothing(tmp_path, tabs, artifacts):
    out = site(tmp_path, "hostile")
    tab = tabs().open(out / "index.html", "#unfold=1")
    page = tab.page
    cells = page.locator("#matrix td.cell[data-cell]")
    for i in range(cells.count()):
        td = cells.nth(i)
        tab.open_cell(td.get_attribute("data-cell"))
    tab.open_cell("pip-torch2.4.1--deform_conv2d_device")
    fields = page.locator("#drawer .d-fields dd.msg")
    assert fields.inner_text() == HOSTILE_MESSAGE
    tail = page.locator("#drawer .d-tb").inner_text()
    assert tail.endswith("<script>window.__pwned = 1; alert(1)</script>")
    page.locator("#drawer details.env summary").click()
    page.fill("#f-q", "<img")
    page.fill("#f-q", "")
    page.screenshot(path=str(artifacts / "report-hostile.png"), full_page=True)
    assert page.evaluate("document.images.length") == 0
    assert page.evaluate("window.__pwned") is None
    for repro_page in sorted(out.glob("repro-*.html")):
        other = tabs().open(repro_page)
        for det in other.page.locator("details.cell-detail").all():
            det.locator("summary").click()
            det.locator(".d-fields").wait_for(state="attached")  # filled from its chunk
            assert det.locator(".d-fields").count() == 1
        for det in other.page.locator("details").all():
            det.evaluate("d => d.open = true")
        assert other.page.evaluate("document.images.length") == 0
        assert other.page.evaluate("window.__pwned") is None
        assert other.problems == [] and other.dialogs == []
        other.close()
    assert tab.problems == [] and tab.dialogs == []


# ----------------------------------------------------------------- what users ask


def test_keyboard_moves_through_the_grid_and_the_drawer(tmp_path, tabs):
    out = site(tmp_path, "every_status")
    tab = tabs().open(out / "index.html", "#unfold=1")
    page = tab.page
    tab_stops = page.locator('#matrix td.cell a[tabindex="0"]')
    assert tab_stops.count() == 1                       # the grid is one tab stop
    tab_stops.focus()
    first = tab.focused_cell()
    assert first == "pip-torch2.4.1--deform_conv2d_device"
    page.keyboard.press("ArrowRight")                   # cells without a result are skipped
    assert tab.focused_cell() == "pip-torch2.4.1--ts_device_gpu_id"
    page.keyboard.press("ArrowDown")
    assert tab.focused_cell() == "pip-torch2.5.1--ts_device_gpu_id"
    page.keyboard.press("ArrowLeft")
    assert tab.focused_cell() == "pip-torch2.5.1--deform_conv2d_device"
    page.keyboard.press("ArrowUp")
    assert tab.focused_cell() == first
    page.keyboard.press("End")
    assert tab.focused_cell().startswith("pip-torch2.4.1--")
    page.keyboard.press("Home")
    assert tab.focused_cell() == first
    assert page.locator('#matrix td.cell a[tabindex="0"]').count() == 1
    page.keyboard.press("Enter")
    tab.drawer_ready(first)
    assert page.evaluate("document.activeElement.id") == "d-title"   # focus moves into the drawer
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('#drawer') !== null")
    page.keyboard.press("Escape")
    assert not page.locator("#drawer").is_visible()
    assert tab.focused_cell() == first                  # and back to the cell that opened it
    assert tab.problems == []


FOLDS_JS = """() => Array.from(document.querySelectorAll('#matrix td.cell[data-cell]')).map(td => ({
  cell: td.dataset.cell, repro: td.dataset.repro, v: td.dataset.v, stack: td.closest('tr').dataset.stack,
  shown: td.getClientRects().length > 0}))"""


def test_folds_and_unfold(tmp_path, tabs):
    """Columns and rows whose every cell cannot tell (their ``data-v``) are out of the grid by
    default, each row's one cell and the list above the grid say so; the tab stop and the
    arrow keys stay on cells in view; "show what cannot tell" brings every cell back."""
    out = site(tmp_path, "every_status")
    tab = tabs().open(out / "index.html")
    page = tab.page
    cells = page.evaluate(FOLDS_JS)

    def undecided(key: str) -> set[str]:
        groups: dict[str, set[str]] = {}
        for c in cells:
            groups.setdefault(c[key], set()).add(c["v"])
        return {k for k, said in groups.items() if said == {"cannot tell"}}

    columns, rows = undecided("repro"), undecided("stack")
    assert columns and rows
    assert {c["cell"] for c in cells if not c["shown"]} == \
        {c["cell"] for c in cells if c["repro"] in columns or c["stack"] in rows}
    assert {li.get_attribute("data-repro") for li in page.locator("#folds li").all()} == columns
    notes = page.locator("#matrix td.fold-note:visible")
    assert notes.count() == len(rows) and all("cannot tell on" in n for n in notes.all_inner_texts())
    stop = page.locator('#matrix td.cell a[tabindex="0"]')
    assert stop.count() == 1 and stop.is_visible()
    page.check("#f-unfold")
    assert all(c["shown"] for c in page.evaluate(FOLDS_JS)) and "unfold=1" in page.url
    assert page.locator("#matrix td.fold-note:visible").count() == 0
    assert tab.problems == []


def test_stage_selector_colours_the_grid_by_one_stage(tmp_path, tabs, artifacts):
    store = ResultStore(tmp_path / "results")
    for stack, torch, conv in (("local-t213", "2.13.0", "pass"), ("local-t214", "2.14.1", "fail")):
        stages = [{"name": "fake_export_conv_mixed", "role": "info", "status": conv},
                  {"name": "legacy_export", "role": "main", "status": "skip"}]
        store.append(record(stack, "onnx_export_device", "skip", torch=torch, stages=stages))
    render_site([store.root], tmp_path / "site")
    tab = tabs().open(tmp_path / "site" / "index.html")
    page = tab.page
    letters = lambda: page.locator("#matrix td.cell .l").all_inner_texts()  # noqa: E731
    assert letters() == ["S", "S"]
    page.select_option("#f-stage", label="stage fake_export_conv_mixed")
    assert letters() == ["P", "F"]
    classes = page.locator("#matrix td.cell").evaluate_all("tds => tds.map(t => t.className)")
    assert "st-pass" in classes[0] and "st-fail" in classes[1]
    label = page.locator('td.cell[data-cell="local-t214--onnx_export_device"] a').get_attribute("aria-label")
    assert label == "local-t214--onnx_export_device: stage fake_export_conv_mixed fail"
    assert "stage=fake_export_conv_mixed" in page.url
    page.screenshot(path=str(artifacts / "report-stage-selector.png"))
    page.select_option("#f-stage", "")
    assert letters() == ["S", "S"]
    assert tab.problems == []


def test_advisor_suggests_the_newest_stacks_without_the_bugs(tmp_path, tabs):
    store = ResultStore(tmp_path / "results")
    for stack, torch, a, b, w in (("pip-a", "2.4.1", "fail", "fail", None),
                                  ("pip-b", "2.5.1", "pass", "fail", "pass"),
                                  ("pip-c", "2.6.0", "pass", "pass", None),
                                  ("pip-d", "2.7.0", "pass", "skip", None)):
        store.append(record(stack, "bug_a", a, torch=torch))
        store.append(record(stack, "bug_b", b, torch=torch, workaround=w))
    render_site([store.root], tmp_path / "site")
    tab = tabs().open(tmp_path / "site" / "index.html")
    page = tab.page
    page.check("#advisor input[value=bug_a]")
    assert page.locator(".advice-clear li .ver").all_inner_texts() == [" pip-d", " pip-c", " pip-b"]
    page.check("#advisor input[value=bug_b]")
    assert page.locator(".advice-clear li .ver").all_inner_texts() == [" pip-c"]
    assert page.locator(".advice-workaround li .ver").all_inner_texts() == [" pip-b"]
    assert "1 stack(s) cannot tell" in page.locator("#advice").inner_text()
    page.locator(".advice-clear li a").first.click()
    # the link filters the grid to that stack (when the hash change reaches the page)
    page.wait_for_function("() => location.hash.startsWith('#q=')")
    tab.wait_for_cells(2)
    assert tab.problems == []


def test_bisect_probes_and_one_off_runs_are_off_by_default(tmp_path, tabs):
    store = ResultStore(tmp_path / "results")
    store.append(record("pip-a", "bug", "fail"))
    store.append(record("pip-probe", "bug", "pass", torch="2.5.0", tags=["bisect"]))
    store.append(record("local", "bug", "pass", torch="2.6.0"))
    render_site([store.root], tmp_path / "site", published={"pip-a", "pip-probe"})
    tab = tabs().open(tmp_path / "site" / "index.html")
    page = tab.page
    assert page.locator("#matrix tbody tr[data-stack]:visible").evaluate_all(
        "trs => trs.map(t => t.dataset.stack)") == ["pip-a"]
    page.select_option("#f-scope", "all")
    assert tab.visible_cells() == 3 and "scope=all" in page.url
    page.select_option("#f-scope", "bisect")
    assert page.locator("#matrix tbody tr[data-stack]:visible").evaluate_all(
        "trs => trs.map(t => t.dataset.stack)") == ["pip-probe"]
    assert tab.problems == []


@pytest.mark.parametrize("width", [375, 1920])
def test_narrow_and_wide_screens(tmp_path, tabs, artifacts, width):
    big_store(tmp_path / "results", 20, 10, 1)
    render_site([tmp_path / "results"], tmp_path / "site")
    tab = tabs(width=width, height=800).open(tmp_path / "site" / "index.html", "#unfold=1")
    page = tab.page
    # the page never scrolls sideways: the grid scrolls inside its own box
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    header = page.locator("#matrix thead th.repro").first
    page.locator(".matrix-wrap").evaluate("w => { w.scrollTop = 400; }")
    assert header.bounding_box()["y"] >= page.locator(".matrix-wrap").bounding_box()["y"] - 1  # sticky
    tab.open_cell("pip-t2.19.0--r09")
    box = page.locator("#drawer").bounding_box()
    assert box["x"] + box["width"] <= width + 1 and (width > 640 or box["width"] >= width - 1)
    page.screenshot(path=str(artifacts / f"report-{width}px.png"))
    assert tab.problems == []


def test_fifty_by_ten_matrix_is_interactive_and_compact(tmp_path, tabs, artifacts):
    big_store(tmp_path / "results", 50, 10, 3)
    render_site([tmp_path / "results"], tmp_path / "site")
    tab = tabs().open(tmp_path / "site" / "index.html", "#unfold=1")
    page = tab.page
    assert tab.visible_cells() == 500
    normal = page.locator("#matrix td.cell").first.bounding_box()["height"]
    page.check("#f-compact")
    assert page.locator("#matrix td.cell").first.bounding_box()["height"] < normal
    assert "compact=1" in page.url
    page.locator("input[name=status][value=fail]").uncheck()
    assert 0 < tab.visible_cells() < 500
    last = page.locator(VISIBLE_CELLS).last
    cell = last.evaluate("a => a.closest('td').dataset.cell")
    last.click()
    tab.drawer_ready(cell)
    assert page.locator("#drawer .d-history li").count() >= 1
    assert page.locator("#matrix tr.group:visible").count() == 5   # torch 2.0 .. 2.4
    page.screenshot(path=str(artifacts / "report-50x10-compact.png"))
    assert tab.problems == []


def test_picked_bugs_stay_in_the_url_and_counts_follow_the_stacks_in_view(tmp_path, tabs):
    store = ResultStore(tmp_path / "results")
    store.append(record("pip-a", "bug_a", "fail"))
    store.append(record("pip-a", "bug_b", "pass"))
    store.append(record("pip-probe", "bug_a", "pass", torch="2.5.0", tags=["bisect"]))
    store.append(record("pip-probe", "bug_b", "pass", torch="2.5.0", tags=["bisect"]))
    render_site([store.root], tmp_path / "site", published={"pip-a", "pip-probe"})
    tab = tabs().open(tmp_path / "site" / "index.html")
    page = tab.page

    def count(status: str) -> str:
        return page.locator(f"label.f-status:has(input[value={status}]) .count").inner_text()

    assert (count("pass"), count("fail")) == ("1", "1")  # the probe stack is hidden by default
    page.select_option("#f-scope", "all")
    assert (count("pass"), count("fail")) == ("3", "1")
    page.select_option("#f-scope", "published")
    page.check("#advisor input[value=bug_b]")
    assert "bugs=bug_b" in page.url
    again = tabs().open(tmp_path / "site" / "index.html", "#" + page.url.split("#", 1)[1])
    assert again.page.locator("#advisor input[value=bug_b]").is_checked()
    assert not again.page.locator("#advisor input[value=bug_a]").is_checked()
    assert again.page.locator(".advice-clear li .ver").all_inner_texts() == [" pip-a"]
    again.page.locator(".advice-clear li a").first.click()  # filtering by the stack keeps them
    assert again.page.locator("#advisor input[value=bug_b]").is_checked()
    assert tab.problems == [] and again.problems == []


def test_a_repro_no_stack_can_tell_says_so(tmp_path, tabs):
    store = ResultStore(tmp_path / "results")
    store.append(record("pip-a", "bug", "skip"))
    store.append(record("pip-b", "bug", "error", torch="2.5.1"))
    render_site([store.root], tmp_path / "site")
    tab = tabs().open(tmp_path / "site" / "index.html")
    answer = tab.page.locator('#matrix td.answer[data-repro="bug"]')
    assert answer.inner_text() == "cannot tell on 2"
    assert answer.get_attribute("title").startswith("cannot tell on 2 stacks")
    assert "reproduces on 0" not in tab.page.locator("#answers").inner_text()
    assert tab.problems == []


@pytest.mark.parametrize("width", [1400, 400])
def test_the_published_page_answers_above_the_fold(browser, tmp_path, artifacts, width):
    """Rendered from the published records: at 1400x900 the sentence saying what the page
    answers (and from what evidence), the check box and the table of known bugs start above
    the fold, before the legend and the grid; every known bug of the catalog has its row
    naming its package and fix; at 400 px the page scrolls vertically only; no console error."""
    from repromatrix import paths
    from repromatrix.config.catalog import load_catalog

    published = Path(__file__).resolve().parents[2] / "results" / "published"
    catalog = load_catalog(paths.repros_dir())
    render_site([published], tmp_path / "site", catalog)
    tab = Tab(browser, width=width).open(tmp_path / "site" / "index.html")
    page = tab.page
    page.screenshot(path=str(artifacts / f"published-{width}.png"))
    tops = {sel: page.locator(sel).bounding_box()["y"] for sel in
            ("#purpose", "#check", "#bugs", "#legend", "#matrix")}
    assert tops["#purpose"] < tops["#check"] < tops["#bugs"] < tops["#legend"] < tops["#matrix"]
    purpose = page.inner_text("#purpose")
    assert "on a real GPU" in purpose and "TensorRT stood in" in purpose
    rows = page.locator("#bugs tbody tr")
    assert rows.count() == len(catalog)
    tv = page.locator('#bugs tr[data-repro="tv_masks_to_boxes_empty"]').inner_text()
    assert "torchvision" in tv and "0.26.0" in tv
    if width == 1400:
        assert tops["#bugs"] + page.locator("#bugs thead").bounding_box()["height"] < 900
    else:
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert not tab.problems, tab.problems


def test_the_known_bugs_say_their_kind_and_filter_by_it(tmp_path, tabs):
    """A catalog with kinds: the table of known bugs has each bug's kind, a select (counts of
    the kinds present) shows one kind's rows only, the repro page and the feed say it."""
    rule = ({"when": {"torch": ">=2.4"}, "status": "fail"},)
    catalog = {rid: Repro(id=rid, path=f"repros/{rid}.py", title=f"{rid} title", kind=kind, expect=rule)
               for rid, kind in (("gone", "breaking-change"), ("wrong", "silent-wrong-output"),
                                 ("gone_too", "breaking-change"), ("plain", "bug"))}
    store = ResultStore(tmp_path / "results")
    for rid in catalog:
        store.append(record("pip-a", rid, "pass", 0))
        store.append(record("pip-a", rid, "fail", 1))
    render_site([store.root], tmp_path / "site", catalog)
    tab = tabs().open(tmp_path / "site" / "index.html")
    page = tab.page
    kinds = {tr.get_attribute("data-repro"): tr.locator("td.kind").inner_text()
             for tr in page.locator("#bugs tbody tr").all()}
    assert kinds == {"gone": "breaking change", "wrong": "silent wrong output",
                     "gone_too": "breaking change", "plain": "bug"}
    options = page.locator("#bugs-kind option").all_inner_texts()
    assert options == ["all kinds (4)", "bug (1)", "silent wrong output (1)", "breaking change (2)"]
    page.focus("#bugs-kind")  # a native select: reachable and changed from the keyboard
    page.select_option("#bugs-kind", "breaking-change")
    visible = page.locator("#bugs tbody tr:visible")
    assert [tr.get_attribute("data-repro") for tr in visible.all()] == ["gone", "gone_too"]
    assert page.inner_text("#bugs-shown") == "2 of 4 bugs"
    page.select_option("#bugs-kind", "")
    assert page.locator("#bugs tbody tr:visible").count() == 4
    repro = tabs().open(tmp_path / "site" / page_name("wrong"))
    assert repro.page.inner_text("p.kind") == "kind: silent wrong output"
    feed = (tmp_path / "site" / "changes.atom").read_text()
    assert '<category term="breaking-change" label="breaking change"/>' in feed
    assert tab.problems == [] and repro.problems == []


def test_an_error_cell_s_drawer_says_why_it_is_not_the_bug(tmp_path, tabs):
    stages = [{"name": "compile", "role": "main", "status": "error",
               "message": "TypeError: expected str, not BytesIO\nTraceback ..."}]
    store = ResultStore(tmp_path / "results")
    store.append(record("pip-a", "bug", "error", stages=stages, message="compile: TypeError: ..."))
    store.append(record("pip-b", "bug", "skip", torch="2.5.1", stages=[
        {"name": "compile", "role": "main", "status": "skip", "message": "no CUDA device"}]))
    render_site([store.root], tmp_path / "site")
    tab = tabs().open(tmp_path / "site" / "index.html", "#unfold=1")  # every cell cannot tell
    tab.open_cell("pip-a--bug")
    fields = tab.page.locator("#drawer .d-fields")
    assert fields.locator("dt", has_text="not the bug").count() == 1
    assert fields.locator("dd.untold").inner_text() == "compile: TypeError: expected str, not BytesIO"
    tab.open_cell("pip-b--bug")
    assert tab.page.locator("#drawer dd.untold").inner_text() == "compile: no CUDA device"
    assert tab.page.locator("#drawer dt", has_text="cannot tell").count() == 1
    repro = tabs().open(tmp_path / "site" / page_name("bug"))
    groups = [" ".join(t.split()) for t in repro.page.locator("#untold li").all_inner_texts()]
    assert groups[0].startswith("E error 1 compile: TypeError: expected str, not BytesIO: pip-a")
    assert groups[1].startswith("S skip 1 compile: no CUDA device: pip-b")
    assert tab.problems == [] and repro.problems == []
