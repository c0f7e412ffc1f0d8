"""The site rendered from the published records (results/published), as a visitor gets it:
every relative link and fragment of every page resolves (parsed, no browser needed), and in
chromium every text's colour has WCAG contrast on its background, light and dark."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from support import ROOT

from repromatrix.check.candidates import releases
from repromatrix.config.catalog import load_catalog
from repromatrix.config.compat import load_table
from repromatrix.paths import repros_dir
from repromatrix.report.render import page_name, render_site
from repromatrix.rules.versions import LABELS, key_package

PUBLISHED = ROOT / "results" / "published"
# WCAG 2.x, 1.4.3: normal text 4.5:1, large text (24 px, or 18.66 px bold) 3:1
NORMAL, LARGE = 4.5, 3.0
# the page and two repro pages (every page shares the stylesheet; between them every status
# a published record has, and the legend every one)
PAGES = ("index.html", "repro-dynamo_require_full_compilation_ignored.html",
         "repro-onnx_dynamic_axes_names_dropped.html")
MARK = re.compile(r'<li class="rel rel-([a-z-]+)[^"]*" title="[^"]*"><span class="rel-mark" '
                  r'aria-hidden="true">.</span><span class="rel-v">([^<]+)</span>'
                  r'<span class="visually-hidden">: ([^<]+)</span>(<span class="rel-fix")?')
CONTRAST_JS = (Path(__file__).with_name("contrast.js")).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("published") / "site"
    render_site([PUBLISHED], out, load_catalog(repros_dir()),
                matrix=str(PUBLISHED / "matrix.yaml"))
    return out


class _Page(HTMLParser):
    """A page's ids, grid cells and relative references (tag, attribute, value)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.cells: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v for k, v in attrs if v is not None}
        if "id" in found:
            self.ids.add(found["id"])
        if "data-cell" in found:
            self.cells.add(found["data-cell"])
        for key in ("href", "src"):
            if key in found:
                self.refs.append((tag, key, found[key]))


def parsed(site: Path) -> dict[Path, _Page]:
    pages = {}
    for path in sorted(site.rglob("*.html")):
        pages[path] = _Page()
        pages[path].feed(path.read_text(encoding="utf-8"))
    return pages


def broken_links(site: Path) -> list[str]:
    """Each relative href/src of every page whose file is missing, each ``#fragment`` naming
    no id of its page, and each ``#cell=`` state naming no cell of its page."""
    pages = parsed(site)
    bad = []
    for path, page in pages.items():
        for tag, key, ref in page.refs:
            url = urlsplit(ref)
            if url.scheme or url.netloc:  # http(s), data: (the icon), mailto
                continue
            target = (path.parent / unquote(url.path)).resolve() if url.path else path
            where = f"{path.name}: <{tag} {key}={ref!r}>"
            if not target.is_file() or site.resolve() not in target.parents:
                bad.append(f"{where}: no file {target}")
                continue
            if not url.fragment or target.suffix != ".html":
                continue
            fragment = unquote(url.fragment)
            if "=" in fragment:  # the grid's state in the URL (report.js)
                cells = parse_qs(url.fragment).get("cell", [])
                bad += [f"{where}: no cell {c}" for c in cells if c not in pages[target].cells]
            elif fragment not in pages[target].ids:
                bad.append(f"{where}: no id {fragment!r} in {target.name}")
    return bad


def test_every_link_on_every_page_resolves(site: Path) -> None:
    pages = parsed(site)
    assert len(pages) == 1 + len(load_catalog(repros_dir()))
    assert sum(len(p.refs) for p in pages.values()) > 100
    assert broken_links(site) == []


def test_a_link_to_nothing_is_found(site: Path, tmp_path: Path) -> None:
    """The check itself: a missing file, a missing id and a missing cell are each named."""
    copy = tmp_path / "site"
    copy.mkdir()
    (copy / "index.html").write_text(
        '<a href="gone.html">x</a><a href="#nowhere">y</a><a href="#cell=nope">z</a>'
        '<p id="here"></p><a href="#here">ok</a>', encoding="utf-8")
    found = broken_links(copy)
    assert len(found) == 3
    assert "no file" in found[0] and "'nowhere'" in found[1] and "no cell nope" in found[2]


def test_each_bug_page_shows_its_release_timeline(site: Path) -> None:
    """Each repro page: a mark per release of the bug's package the table knows, in release
    order, each with its verdict in words for a screen reader; the release marked as the fix
    is the one the page's "fix" line names."""
    known = releases(load_table())
    for repro in load_catalog(repros_dir()).values():
        html = (site / page_name(repro.id)).read_text(encoding="utf-8")
        package = key_package(repro.expect)
        marks = MARK.findall(html)
        assert [m[1] for m in marks] == known[package], repro.id
        assert all(m[2].startswith(m[0].replace("-", " ")) for m in marks), repro.id
        fixes = [m[1] for m in marks if m[3]]
        fix_line = re.search(r'<dd id="fix"[^>]*>([^<]*)</dd>', html)
        if fixes:
            assert len(fixes) == 1 and fix_line, repro.id
            assert f"fixed in {LABELS[package]} {fixes[0]}" in fix_line.group(1), repro.id
        else:
            assert not fix_line or "fixed in " not in fix_line.group(1), repro.id
        assert f'id="releases-text">{LABELS[package]} ' in html, repro.id


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_has_contrast_on_its_background(browser, site: Path, scheme: str) -> None:
    """Chromium's computed colours of every visible text (the legend and every details
    opened, the check box answered) on the backgrounds behind it, composited, gradients by
    each stop: at least 4.5:1 (3:1 for large text)."""
    low = []
    for path in [site / name for name in PAGES]:
        page = browser.new_page(viewport={"width": 1400, "height": 900}, color_scheme=scheme)
        errors: list[str] = []
        page.on("pageerror", lambda e, found=errors: found.append(str(e)))
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        if path.name == "index.html":
            page.fill("#c-torch", "2.4.1")
            page.click("#check-form button")
            page.wait_for_selector("#check-answer li")
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        page.wait_for_timeout(100)
        texts = page.evaluate(CONTRAST_JS)
        assert len(texts) > 20 and not errors, (path.name, errors)
        low += [f"{path.name}: {t['text']!r} ({t['where']}) {t['color']} on {t['background']}: "
                f"{t['ratio']:.2f}" for t in texts if t["ratio"] < (LARGE if t["large"] else NORMAL)]
        page.close()
    assert low == []


COLUMNS_JS = """() => {
  const out = {};
  document.querySelectorAll('#matrix thead th.repro').forEach(th => {
    out[th.dataset.repro] = {shown: th.getClientRects().length > 0, verdicts: []};
  });
  document.querySelectorAll('#matrix tbody tr:not(.scope-off) td.cell[data-cell]').forEach(td => {
    out[td.dataset.repro].verdicts.push(td.dataset.v);
  });
  return out;
}"""
CUT_JS = """() => Array.from(document.querySelectorAll('#matrix thead th.repro a'))
  .filter(a => a.getClientRects().length)
  .filter(a => {
    const range = document.createRange();
    range.selectNodeContents(a);
    const text = range.getBoundingClientRect();
    return [a, a.closest('th')].some(box => {
      const b = box.getBoundingClientRect();
      return text.top < b.top - 1 || text.bottom > b.bottom + 1 || text.left < b.left - 1
             || text.right > b.right + 1;
    }) || a.scrollHeight > a.clientHeight + 1 || a.scrollWidth > a.clientWidth + 1
       || a.textContent !== a.closest('th').dataset.repro
       || !a.title.startsWith(a.closest('th').dataset.repro + ': ');
  }).map(a => a.textContent)"""
ROW_CELLS_JS = """() => Array.from(document.querySelector("#matrix td.cell a[tabindex='0']")
  .closest('tr').querySelectorAll('td.cell[data-cell] a')).map(a => a.closest('td').dataset.repro)"""
FOCUSED_JS = "() => { const td = document.activeElement.closest('td'); return td && td.dataset.repro; }"


@pytest.mark.browser
def test_the_grid_folds_what_no_stack_could_tell_and_cuts_no_name(browser, site: Path) -> None:
    """A column whose every cell in view cannot tell (their ``data-v``, rules.verdict) leaves
    the grid for one line naming the machine that would decide it; the arrow keys and the
    tab stop skip it; "show" brings it back (kept in the URL); every shown header's name is
    whole, none cut, with its full id in the title."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto((site / "index.html").resolve().as_uri())
    page.wait_for_load_state("load")
    columns = page.evaluate(COLUMNS_JS)
    undecided = {r for r, c in columns.items() if set(c["verdicts"]) == {"cannot tell"}}
    assert undecided and len(undecided) < len(columns)  # no GPU ran the published records
    assert {r for r, c in columns.items() if not c["shown"]} == undecided
    lines = {li.get_attribute("data-repro"): li.inner_text() for li in page.locator("#folds li").all()}
    assert set(lines) == undecided
    for repro, text in lines.items():
        n = len(columns[repro]["verdicts"])
        assert f"cannot tell on any of its {n} stacks here" in text and ": needs a CUDA GPU" in text
    assert page.evaluate(CUT_JS) == []

    stop = page.locator("#matrix td.cell a[tabindex='0']")
    assert stop.count() == 1 and stop.is_visible()
    stop.focus()
    seen = [page.evaluate(FOCUSED_JS)]
    for _ in range(len(columns)):
        page.keyboard.press("ArrowRight")
        seen.append(page.evaluate(FOCUSED_JS))
    assert not set(seen) & undecided
    row_cells = page.evaluate(ROW_CELLS_JS)  # a column with no record on this row has no stop
    assert set(seen) == {r for r in row_cells if r not in undecided}

    page.check("#f-unfold")
    assert all(c["shown"] for c in page.evaluate(COLUMNS_JS).values())
    assert "unfold=1" in page.url and page.evaluate(CUT_JS) == []
    page.uncheck("#f-unfold")
    assert {r for r, c in page.evaluate(COLUMNS_JS).items() if not c["shown"]} == undecided
    page.select_option("#f-repro", sorted(undecided)[0])  # picking a folded repro shows it
    assert page.locator(f'#matrix th.repro[data-repro="{sorted(undecided)[0]}"]').is_visible()
    assert not errors, errors
    page.close()


@pytest.mark.browser
def test_every_page_scrolls_vertically_only_at_400_px(browser, site: Path) -> None:
    """A phone: no page of the site (the index, each repro page with its timeline) is wider
    than the screen; the grid and wide tables scroll inside their own boxes."""
    page = browser.new_page(viewport={"width": 400, "height": 900})
    wide = []
    for path in sorted(site.glob("*.html")):
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 400:
            wide.append(f"{path.name}: {width} px")
    page.close()
    assert wide == []
