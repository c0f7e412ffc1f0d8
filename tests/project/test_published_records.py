"""The committed records in results/published agree with the catalog's release boundaries.

Each repro's META ``expect`` says where its bug is (``fail``) and where it is not
(``pass``), per release. The published records were made on real environments of those
releases (docs/standin-lane.md, "Published evidence"); here every decisive one is held to the rule that
applies to its probed versions (a record of a release no rule covers is evidence beyond
what META claims, and is not held to anything), and every bug whose rules draw a boundary on
a package (not an NGC release) has a record on each side of it: a ``fail``, and a ``pass`` or a
stand-in ``skip`` that got past the bug's place. The bisect reports beside them name the
release each boundary cites.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.config.catalog import load_catalog
from repromatrix.report.expect import evaluate
from repromatrix.rules.verdict import BAD, GOOD, said
from repromatrix.rules.versions import when_holds
from repromatrix.store.record import Result
from repromatrix.store.results import latest_by_cell, load_records

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "results" / "published"
BISECTS = PUBLISHED / "bisect"
CATALOG = load_catalog(paths.repros_dir())


def bounded(rid: str) -> bool:
    """Whether META's rules draw a release boundary on a package: a fail and a pass rule."""
    rules = [r for r in CATALOG[rid].expect if "ngc" not in r.get("when", {})]
    return {"fail", "pass"} <= {r.get("status") for r in rules}


BOUNDED = sorted(r for r in CATALOG if bounded(r))


@pytest.fixture(scope="module")
def shown() -> dict[str, Result]:
    return latest_by_cell(load_records([PUBLISHED]).records)


def side(record: Result) -> str | None:
    """Which side of its bug's boundary a record is on (``rules.verdict``): fail, clear (pass,
    or a stand-in skip past the bug's place) or None when it cannot tell."""
    return {BAD: "fail", GOOD: "clear"}.get(said(record.status, record.evidence_level))


def test_every_decisive_record_agrees_with_its_repro_s_expect(shown: dict[str, Result]) -> None:
    checked = 0
    for cell, record in shown.items():
        if record.repro not in CATALOG or side(record) is None:
            continue
        expectation = evaluate(CATALOG[record.repro].expect, record)
        if expectation is None:  # a release META makes no claim about: evidence beyond it
            continue
        want = "fail" if expectation.status == "fail" else "clear"
        assert side(record) == want, (cell, record.status, record.message[:300], expectation)
        checked += 1
    assert checked >= 2 * len(BOUNDED)


@pytest.mark.parametrize("rid", BOUNDED)
def test_each_boundary_has_a_record_on_both_sides(rid: str, shown: dict[str, Result]) -> None:
    sides = {side(r) for r in shown.values() if r.repro == rid}
    assert {"fail", "clear"} <= sides, f"{rid}: published records on {sides - {None}} only"


def expected_for(rid: str, versions: dict[str, str]) -> str | None:
    """The status of META's first rule that holds for ``versions`` (None if none applies)."""
    for rule in CATALOG[rid].expect:
        when = rule.get("when", {})
        if "ngc" not in when and when_holds(when, versions.get):
            return str(rule.get("status"))
    return None


def probe_versions(line: str) -> dict[str, str]:
    """A report's probe line's versions: ``(python 3.11.7, torch 2.4.1+cu121, ...)``."""
    inside = line[line.rindex("(") + 1:line.rindex(")")]
    return dict(part.strip().split(" ", 1) for part in inside.split(","))


@pytest.mark.parametrize("rid", BOUNDED)
def test_each_boundary_has_a_bisect_report_naming_its_release(rid: str) -> None:
    """Every report names the first bad (or first good) release and the last one on the
    other side; META claims the bad one's probed versions bad and never claims the good one's
    bad (a release META has no rule for, read but not run, may be the good side): the bisect
    found the boundary the citation gives."""
    reports = sorted(BISECTS.glob(f"{rid}-*.txt"))
    assert reports, f"no bisect report for {rid} in {BISECTS}"
    for report in reports:
        text = report.read_text(encoding="utf-8")
        named = dict(re.findall(r"^- ((?:first|last) (?:bad|good)): (.*)$", text, re.M))
        bad = named.get("first bad") or named.get("last bad")
        good = named.get("last good") or named.get("first good")
        assert bad and good and len(named) == 2, (report.name, text[-1500:])
        assert expected_for(rid, probe_versions(bad)) == "fail", (report.name, bad)
        assert expected_for(rid, probe_versions(good)) in ("pass", None), (report.name, good)


def test_a_bisect_probe_of_torch_tensorrt_2_3_0_says_it_is_not_installable() -> None:
    """torch-tensorrt 2.3.0 ran with torch symbols stood in: its probe line says the verdict
    is about its code, not about a stack anyone can install."""
    texts = [report.read_text(encoding="utf-8") for report in sorted(BISECTS.glob("*.txt"))]
    probes = [line for text in texts if "torch_tensorrt axis" in text
              for line in text.splitlines() if line.startswith("- 2.3.0: ")]
    assert probes
    for line in probes:
        assert "not installable as published" in line, line


def test_the_page_names_each_boundary_that_the_records_draw(tmp_path: Path) -> None:
    """The published page answers "where was it fixed (or introduced)" for every bounded bug,
    a stand-in ``skip`` past the bug's place counting as clear, as ``check`` and bisect count
    it (ts_device_gpu_id's only clear record is one: torch-tensorrt 2.2.0)."""
    from repromatrix.report.markup import page_name
    from repromatrix.report.render import render_site

    render_site([PUBLISHED], tmp_path / "site", CATALOG, matrix=str(PUBLISHED / "matrix.yaml"))
    for rid in BOUNDED:
        page = (tmp_path / "site" / page_name(rid)).read_text(encoding="utf-8")
        kinds = re.findall(r'<dd class="axis" data-axis="[^"]+" data-kind="([^"]+)">', page)
        assert {"fixed", "introduced", "regressed"} & set(kinds), (rid, kinds)
    ts = (tmp_path / "site" / page_name("ts_device_gpu_id")).read_text(encoding="utf-8")
    assert "records: good on torch-tensorrt 2.2.0, bad on 2.3.0" in ts


def test_the_page_and_check_give_one_answer_for_every_combination(tmp_path: Path) -> None:
    """Rendered from the published records: for every combination the compatibility table
    allows and every NGC release it knows, each bug ``check`` finds affected has, on its repro
    page, the fix ``check`` names (the same package and release; for an NGC release the NGC
    release); and the box's data holds that same answer (``check.page``, what the browser test
    reads through the page)."""
    from repromatrix.check.command import catalog_bugs, check_answer
    from repromatrix.check.page import answers, environment
    from repromatrix.check.page import combinations as every
    from repromatrix.check.records import store_rows
    from repromatrix.config.compat import load_table
    from repromatrix.report.markup import page_name
    from repromatrix.report.render import render_site

    site = tmp_path / "site"
    render_site([PUBLISHED], site, CATALOG, matrix=str(PUBLISHED / "matrix.yaml"))
    fixes = {}
    for rid in CATALOG:
        found = re.search(r'<dd id="fix" data-package="([^"]+)">([^<]*)</dd>',
                          (site / page_name(rid)).read_text(encoding="utf-8"))
        fixes[rid] = (found.group(1), found.group(2)) if found else ("", "")
    assert fixes["tv_masks_to_boxes_empty"][0] == "torchvision"
    tv_page = (site / page_name("tv_masks_to_boxes_empty")).read_text(encoding="utf-8")
    assert 'data-axis="torchvision"' in tv_page
    bugs, table = catalog_bugs(CATALOG), load_table()
    rows, source = store_rows(PUBLISHED)
    boxed = answers(bugs, rows, source, table)
    checked = 0
    for combination, box in zip(every(table), boxed, strict=True):
        env = environment(combination)
        want = check_answer(bugs, rows, source, env, table)
        assert box == want, combination
        for bug in want["bugs"]:
            if bug["verdict"] != "affected" or not bug["fixed_in"]:
                continue
            package, words = fixes[bug["id"]]
            label, release = bug["fixed_in"].split(" ", 1)
            if label == "NGC":
                assert f"NGC: fixed from {release}" in words, (combination, bug["id"], words)
            else:
                assert label == {"torch_tensorrt": "torch-tensorrt"}.get(package, package)
                assert f"fixed in {label} {release}" in words, (combination, bug["id"], words)
            checked += 1
    assert checked > 100


def test_the_readme_table_is_the_records():
    """results/published/README.md's table is made from the records (scripts/published-table.py),
    never typed: a new record changes it, and the script says so until it is written."""
    import subprocess
    import sys

    script = ROOT / "scripts" / "published-table.py"
    check = subprocess.run([sys.executable, str(script), "--check"], capture_output=True,
                           text=True, timeout=300)
    assert check.returncode == 0, check.stderr
    text = (ROOT / "results" / "published" / "README.md").read_text(encoding="utf-8")
    made = text.split("<!-- table: made by", 1)[1].split("<!-- end of table -->", 1)[0]
    head, _, *rows = [line.strip(" |").split(" | ") for line in made.splitlines()[1:] if line]
    said = {row[0].strip(" `"): dict(zip(head[1:], (c.strip() for c in row[1:]), strict=True))
            for row in rows}
    # the catalog's first bug, fixed in 2.5.0, and the torchvision bug fixed in 0.26 (torch 2.11)
    assert said["deform_conv2d_device"]["2.4.0"] == "F" and said["deform_conv2d_device"]["2.5.0"] == "c"
    assert said["tv_masks_to_boxes_empty"]["2.10.0"] == "F"
    assert said["tv_masks_to_boxes_empty"]["2.11.0"] == "P"
