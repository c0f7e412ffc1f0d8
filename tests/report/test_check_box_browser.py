"""The page's "Check your versions" box in a real browser against the real command: a site
rendered from the published records (one store, or two), each combination typed into the box in chromium
(file://), its answer compared with ``repromatrix check ... --from site/results.json
--format json``: per bug, the smallest upgrade, what the box shows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import ROOT
from support.cli import repromatrix

from repromatrix.config.catalog import load_catalog
from repromatrix.paths import repros_dir
from repromatrix.report.render import render_site

pytestmark = pytest.mark.browser

COMBINATIONS = [  # (the box's fields, the command's environment arguments)
    ({"torch": "2.4.1", "torchvision": "0.19.1", "torch-tensorrt": "2.4.0"},
     ["torch==2.4.1", "torchvision==0.19.1", "torch-tensorrt==2.4.0"]),
    ({"torch": "2.5.1", "torch-tensorrt": "2.5.0"}, ["torch==2.5.1", "torch-tensorrt==2.5.0"]),
    ({"torch": "2.14.1", "torch-tensorrt": "2.14.0"}, ["torch==2.14.1", "torch-tensorrt==2.14.0"]),
    ({"torch": "1.13.1", "torchvision": "0.14.1", "torch-tensorrt": "1.3.0"},  # no record
     ["torch==1.13.1", "torchvision==0.14.1", "torch-tensorrt==1.3.0"]),
    ({"ngc": "24.07"}, ["--ngc", "24.07"]),
]
ENV_KEYS = ("kind", "versions", "complete")


@pytest.fixture(scope="module", params=["one store", "two stores"])
def published_site(request, tmp_path_factory) -> Path:
    """A site of the published records: from their store (the box's rows come through its
    index), or from the same records split into two stores (through results.json)."""
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
    results = str(published_site / "results.json")
    for n, (fields, args) in enumerate(COMBINATIONS):
        proc = repromatrix("check", *args, "--from", results, "--format", "json")
        assert proc.returncode in (0, 1), proc.stderr
        want = json.loads(proc.stdout)
        got = box_answer(page, fields)
        label = " ".join(args)
        assert {k: got["environment"][k] for k in ENV_KEYS} == \
            {k: want["environment"][k] for k in ENV_KEYS}, label
        assert got["records"] == want["records"] > 0, label
        assert got["bugs"] == want["bugs"], label
        assert got["upgrade"] == want["upgrade"], label
        assert (got["affected"], got["exit"]) == (want["affected"], want["exit"]) == \
            (want["affected"], proc.returncode), label
        for bug in want["bugs"]:  # what the box shows is that answer
            item = page.locator(f'#check-answer li[data-bug="{bug["id"]}"]')
            assert item.get_attribute("data-verdict") == bug["verdict"], label
            assert item.locator(".check-why").inner_text() == f"{bug['verdict']}: {bug['why']}", label
            if bug["verdict"] == "affected":
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


def test_bad_input_is_said_in_the_box(published_site, browser):
    page = browser.new_page()
    page.goto((published_site / "index.html").resolve().as_uri())
    for fields, needle in (({"torch": "2.4.x"}, "is not a version"),
                           ({"torchvision": "0.19.1"}, "give torch's version"),
                           ({"ngc": "25.13"}, "not a known NGC PyTorch release"),
                           ({"torch": "2.4.1", "ngc": "24.07"}, "give one environment")):
        for name in ("torch", "torchvision", "torch-tensorrt", "ngc"):
            page.fill(f"#c-{name}", fields.get(name, ""))
        page.evaluate("document.getElementById('check').removeAttribute('data-state')")
        page.click("#check-form button[type=submit]")
        page.wait_for_selector("#check[data-state=error]")
        assert needle in page.inner_text("#check-answer .check-error")
    page.close()
