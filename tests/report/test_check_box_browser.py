"""The page's "Check your versions" box in a real browser against the real command: a site
rendered from the published records (one store, or two), each combination typed into the box in chromium
(file://), its answer compared with ``repromatrix check ... --from site/results.json.gz
--format json``: per bug, the smallest upgrade, what the box shows. Then every combination
the compatibility table allows and every NGC release, asked of ``repromatrix.check`` in
the page, against the function the command prints (``check.command.check_answer``); and a
combination the page does not know, for which the box names the command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import ROOT
from support.cli import repromatrix

from repromatrix.check.command import check_answer
from repromatrix.check.page import FIELDS, arguments, combinations, environment
from repromatrix.check.records import results_json_rows
from repromatrix.check.text import mark_of, notice_line
from repromatrix.cli.check import catalog
from repromatrix.config.catalog import load_catalog
from repromatrix.config.compat import load_table
from repromatrix.model import KINDS
from repromatrix.paths import repros_dir
from repromatrix.report.render import render_site

pytestmark = pytest.mark.browser

COMBINATIONS = [  # (the box's fields, the command's environment arguments)
    ({"torch": "2.4.1", "torchvision": "0.19.1", "torch-tensorrt": "2.4.0"},
     ["torch==2.4.1", "torchvision==0.19.1", "torch-tensorrt==2.4.0"]),
    ({"torch": "2.5.1", "torch-tensorrt": "2.5.0"}, ["torch==2.5.1", "torch-tensorrt==2.5.0"]),
    ({"torch": "2.14.1", "torch-tensorrt": "2.14.0"}, ["torch==2.14.1", "torch-tensorrt==2.14.0"]),
    ({"torch": "2.0.1", "torchvision": "0.15.2"}, ["torch==2.0.1", "torchvision==0.15.2"]),
    ({"torch": " v2.3.1+cu121", "torch-tensorrt": "2.3.0"},  # typed loosely; broken in the table
     ["torch==2.3.1", "torch-tensorrt==2.3.0"]),
    ({"ngc": "24.07"}, ["--ngc", "24.07"]),
]
WHERE = "results.json.gz"  # the page's answers name its own records so


def as_page_says(want: dict) -> dict:
    """The command's answer with its source named as the page names it (its results.json.gz)."""
    return {**want, "source": {**want["source"], "where": WHERE}}


@pytest.fixture(scope="module", params=["one store", "two stores"])
def published_site(request, tmp_path_factory) -> Path:
    """A site of the published records: from their store (the box's rows come through its
    index), or from the same records split into two stores (through results.json.gz)."""
    root = tmp_path_factory.mktemp("box")
    files = sorted((ROOT / "results" / "published" / "vm").glob("*.jsonl"))
    stores = [root / "a"] if request.param == "one store" else [root / "a", root / "b"]
    for n, path in enumerate(files):
        folder = stores[n % len(stores)] / "vm"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / path.name)
    render_site(stores, root / "site", load_catalog(repros_dir()))
    return root / "site"


def box_answer(page, fields: dict[str, str]) -> dict:
    """Type ``fields`` into the box, submit, and return the answer it worked out."""
    for name in ("torch", "torchvision", "torch-tensorrt", "ngc"):
        page.fill(f"#c-{name}", fields.get(name, ""))
    page.evaluate("document.getElementById('check').removeAttribute('data-state')")
    page.click("#check-form button[type=submit]")
    page.wait_for_selector("#check[data-state]")
    assert page.get_attribute("#check", "data-state") == "answered", page.inner_text("#check-answer")
    return page.evaluate("document.getElementById('check').repromatrixAnswer")


def test_the_box_answers_as_the_command_does(published_site, browser, artifacts):
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: m.type == "error" and problems.append(m.text))
    page.goto((published_site / "index.html").resolve().as_uri())
    results = str(published_site / "results.json.gz")
    for n, (fields, args) in enumerate(COMBINATIONS):
        proc = repromatrix("check", *args, "--from", results, "--format", "json")
        assert proc.returncode in (0, 1), proc.stderr
        want = json.loads(proc.stdout)
        got = box_answer(page, fields)
        label = " ".join(args)
        assert got == as_page_says(want), label
        assert got["records"] == want["records"] > 0, label
        assert got["bugs"] == want["bugs"], label
        assert got["upgrade"] == want["upgrade"], label
        assert (got["affected"], got["exit"]) == (want["affected"], want["exit"]) == \
            (want["affected"], proc.returncode), label
        for bug in want["bugs"]:  # what the box shows is that answer
            item = page.locator(f'#check-answer li[data-bug="{bug["id"]}"]')
            assert item.get_attribute("data-verdict") == bug["verdict"], label
            assert item.get_attribute("data-kind") == bug["kind"], label
            assert item.locator(".check-kind").inner_text() == f" ({KINDS[bug['kind']]})", label
            assert item.locator(".check-why").inner_text() == f"{bug['verdict']}: {bug['why']}", label
            assert item.locator(".check-mark").inner_text() == mark_of(want, bug), label
            if bug["id"] in want["notices"]:  # a breaking change: told, not counted
                assert item.locator(".check-fixed").inner_text() == notice_line(bug), label
            elif bug["verdict"] == "affected":
                fixed = bug["fixed_in"] or "no release known to fix it"
                assert item.locator(".check-fixed").inner_text() == f"fixed in: {fixed}", label
        upgrade = want["upgrade"]
        if upgrade and upgrade["found"]:
            assert page.inner_text("#check-upgrade .check-install") == upgrade["install"], label
        else:
            assert page.locator("#check-upgrade .check-up-none").count() == 1, label
        page.locator("#check").screenshot(path=str(artifacts / f"check-box-{n}.png"))
    assert not problems, problems
    page.close()


def test_every_combination_answers_as_the_command_does(published_site, browser):
    """``repromatrix.check`` in the page, for every pip combination the table allows and every
    NGC release, is the answer of the function ``check`` prints (tied to the command above)."""
    table = load_table()
    found = combinations(table)
    assert any(c[3] for c in found) and any(c[1] and c[2] for c in found)
    assert {c[3] for c in found if c[3]} == set(table.ngc_tags())
    page = browser.new_page()
    page.goto((published_site / "index.html").resolve().as_uri())
    asked = [dict(zip(FIELDS, c, strict=True)) for c in found]
    got = page.evaluate("async (all) => { const out = [];"
                        " for (const f of all) { out.push(await window.repromatrix.check(f)); }"
                        " return out; }", asked)
    page.close()
    bugs = catalog()
    rows, source = results_json_rows(str(published_site / "results.json.gz"))
    for combination, answer in zip(found, got, strict=True):
        want = check_answer(bugs, rows, source, environment(combination), table)
        assert answer == as_page_says(want), " ".join(arguments(combination))


def test_an_unknown_version_names_the_command(published_site, browser):
    page = browser.new_page()
    page.goto((published_site / "index.html").resolve().as_uri())
    results = str((published_site / "results.json.gz").resolve())
    for fields, command in (
            ({"torch": "1.13.1", "torchvision": "0.14.1", "torch-tensorrt": "1.3.0"},
             "repromatrix check torch==1.13.1 torchvision==0.14.1 torch-tensorrt==1.3.0"),
            ({"torch": "2.4.x"}, "repromatrix check torch==2.4.x"),
            ({"torch": "2.4.1", "torchvision": "0.20.1"},  # not paired with that torch
             "repromatrix check torch==2.4.1 torchvision==0.20.1"),
            ({"ngc": "25.13"}, "repromatrix check --ngc 25.13")):
        for name in ("torch", "torchvision", "torch-tensorrt", "ngc"):
            page.fill(f"#c-{name}", fields.get(name, ""))
        page.evaluate("document.getElementById('check').removeAttribute('data-state')")
        page.click("#check-form button[type=submit]")
        page.wait_for_selector("#check[data-state]")
        assert page.get_attribute("#check", "data-state") == "unknown"
        assert page.inner_text("#check-answer .check-command") == f"{command} --from {results}"
        assert "not among the combinations" in page.inner_text("#check-answer .check-unknown")
        said = page.evaluate("document.getElementById('check').repromatrixAnswer")
        assert said == {"known": False, "message": page.inner_text("#check-answer .check-unknown"),
                        "command": f"{command} --from {results}"}
        assert page.locator("#check-answer .check-bug").count() == 0
    asked = page.evaluate("window.repromatrix.check({torch: '9.9.9', torch_tensorrt: '9.9.0'})")
    assert asked["known"] is False
    assert asked["command"] == f"repromatrix check torch==9.9.9 torch-tensorrt==9.9.0 --from {results}"
    page.close()


def test_bad_input_is_said_in_the_box(published_site, browser):
    page = browser.new_page()
    page.goto((published_site / "index.html").resolve().as_uri())
    for fields, needle in (({"torchvision": "0.19.1"}, "give torch's version"),
                           ({"torch": "2.4.1", "ngc": "24.07"}, "give one environment")):
        for name in ("torch", "torchvision", "torch-tensorrt", "ngc"):
            page.fill(f"#c-{name}", fields.get(name, ""))
        page.evaluate("document.getElementById('check').removeAttribute('data-state')")
        page.click("#check-form button[type=submit]")
        page.wait_for_selector("#check[data-state=error]")
        assert needle in page.inner_text("#check-answer .check-error")
    page.close()
