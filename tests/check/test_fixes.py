"""check.fixes: where each bug is fixed, the one answer the page and `check` both name."""

from __future__ import annotations

import pytest

from repromatrix.check.candidates import releases
from repromatrix.check.command import check_answer
from repromatrix.check.environment import from_ngc, from_pins
from repromatrix.check.fixes import bug_fixes, fix_words, timeline
from repromatrix.check.records import snapshot_rows
from repromatrix.cli.check import catalog
from repromatrix.config.compat import load_table


@pytest.fixture(scope="module")
def fixes() -> dict[str, dict]:
    return bug_fixes(catalog(), snapshot_rows()[0], load_table())


def test_each_bug_is_fixed_in_a_release_of_its_own_package(fixes):
    assert fixes["tv_masks_to_boxes_empty"]["package"] == "torchvision"
    assert fixes["tv_masks_to_boxes_empty"]["fixed_in"] == "0.26.0"
    assert fixes["export_dynamic_shapes_var_kwargs"]["package"] == "torch"
    assert fixes["deform_conv2d_device"]["package"] == "torch_tensorrt"
    assert fixes["deform_conv2d_device"]["affected"] == [["2.4.0", "2.4.0"]]
    assert fix_words(fixes["deform_conv2d_device"]).startswith("fixed in torch-tensorrt 2.5.0; NGC: ")
    assert fixes["ts_device_gpu_id"]["fixed_in"] is None  # the newest release is affected
    assert fix_words(fixes["ts_device_gpu_id"]).startswith("no fix yet")


def test_a_release_that_cannot_tell_does_not_split_an_affected_run(fixes):
    runs = fixes["onnx_dynamic_axes_names_dropped"]["affected"]
    assert len(runs) == 1, runs


@pytest.mark.parametrize("pins", [
    ("torch==2.9.1", "torchvision==0.24.1"),
    ("torch==2.4.1", "torchvision==0.19.1", "torch-tensorrt==2.4.0"),
    ("torch==2.12.1", "torchvision==0.27.1"),
])
def test_check_names_the_fix_the_page_names(fixes, pins):
    """An affected environment is told the bug's own fix, in the words the page uses."""
    result = check_answer(catalog(), snapshot_rows()[0], {}, from_pins(pins), load_table())
    affected = [b for b in result["bugs"] if b["verdict"] == "affected"]
    assert affected
    for bug in affected:
        fix = fixes[bug["id"]]
        if fix["fixed_in"] is None:
            assert bug["fixed_in"] is None, bug["id"]
        else:
            assert bug["fixed_in"] == f"{fix['label']} {fix['fixed_in']}", bug["id"]
            assert f"fixed in {bug['fixed_in']}" in fix_words(fix)


def test_an_ngc_release_is_told_the_first_ngc_release_with_the_fix(fixes):
    result = check_answer(catalog(), snapshot_rows()[0], {}, from_ngc("24.07"), load_table())
    deform = next(b for b in result["bugs"] if b["id"] == "deform_conv2d_device")
    assert deform["verdict"] == "affected"
    assert deform["fixed_in"] == f"NGC {fixes['deform_conv2d_device']['ngc']['fixed_in']}"


def _expand(runs: list[list[str]], versions: list[str]) -> list[str]:
    return [v for a, b in runs for v in versions[versions.index(a):versions.index(b) + 1]]


def test_each_release_is_run_inferred_or_untold_as_the_records_and_rules_say(fixes):
    """Every release of a bug's package is in exactly one of ``run`` (a decided record on
    that release), ``inferred`` (none, and a rule decides) or ``untold``; the answer of
    ``check`` carries the same runs."""
    from repromatrix.check.candidates import releases
    from repromatrix.check.decide import decisive
    from repromatrix.rules.versions import normalize_version, when_holds

    rows, table = snapshot_rows()[0], load_table()
    known, bugs = releases(table), catalog()
    for bug_id, fix in fixes.items():
        versions, package = known[fix["package"]], fix["package"]
        found = {k: _expand(fix["evidence"][k], versions) for k in ("run", "inferred", "untold")}
        assert sorted(sum(found.values(), [])) == sorted(versions), bug_id
        recorded = {normalize_version(r["versions"][package]) for r in rows
                    if r["repro"] == bug_id and decisive(r) and r["versions"].get(package)}
        assert {v for v in versions if normalize_version(v) in recorded} == set(found["run"]), bug_id
        first = {v: next((r for r in bugs[bug_id]["expect"]
                          if when_holds(r.get("when") or {}, {package: v}.get)), None)
                 for v in versions}
        ruled = {v for v in versions if v not in found["run"] and first[v]
                 and first[v].get("status") in ("pass", "fail")}
        assert ruled == set(found["inferred"]), bug_id
    result = check_answer(bugs, rows, {}, from_pins(("torch==2.9.1",)), table)
    for bug in result["bugs"]:
        fix = fixes[bug["id"]]
        assert bug["releases"] == {"package": fix["package"], **fix["evidence"],
                                   "ngc": fix["ngc"]["evidence"]}


def test_evidence_runs_follow_the_release_order():
    from repromatrix.check.fixes import evidence, evidence_words

    record = {"record": {"cell": "c"}, "basis": "same versions", "verdict": "affected"}
    rule = {"record": None, "basis": "expect rules", "verdict": "not affected"}
    rule_untold = {"record": None, "basis": "expect rules", "verdict": "cannot tell"}
    nothing = {"record": None, "basis": "nothing", "verdict": "cannot tell"}
    said = [("1", nothing), ("2", record), ("3", record), ("4", rule), ("5", record),
            ("6", rule_untold)]
    found = evidence(said)
    assert found == {"run": [["2", "3"], ["5", "5"]], "inferred": [["4", "4"]],
                     "untold": [["1", "1"], ["6", "6"]]}
    assert evidence_words(found, "torch")[0] == "records on torch 2 to 3, 5"


def test_the_timeline_marks_every_release_of_the_package_in_order(fixes):
    """One mark per release of the bug's package the table knows, oldest first, each with the
    verdict its fix was worked out from; the fix marked once; the sentence says the runs."""
    known = releases(load_table())
    for bug_id, fix in fixes.items():
        line = timeline(fix)
        assert [m["version"] for m in line["marks"]] == known[fix["package"]], bug_id
        assert [m["fix"] for m in line["marks"]].count(True) == (fix["fixed_in"] is not None)
        affected = [m["version"] for m in line["marks"] if m["verdict"] == "affected"]
        assert bool(affected) == bool(fix["affected"]), bug_id
        if affected:
            assert fix["affected"][0][0] == affected[0] and fix["affected"][-1][1] == affected[-1]
        assert line["text"].startswith(fix["label"] + " ")
    deform = timeline(fixes["deform_conv2d_device"])
    assert "; fixed in 2.5.0" in deform["text"]
    assert next(m for m in deform["marks"] if m["fix"])["words"].startswith("not affected, the fix")


def test_the_timeline_sentence_says_runs_and_what_only_rules_say():
    line = timeline({"label": "torch", "fixed_in": "2.3.0", "releases": [
        ["2.0.0", "cannot tell", False], ["2.1.0", "affected", False],
        ["2.2.0", "affected", True], ["2.3.0", "not affected", True]]})
    assert line["text"] == ("torch 2.0.0 cannot tell; 2.1.0 to 2.2.0 affected; 2.3.0 not "
                            "affected; fixed in 2.3.0 (2 of 4 by the repro's rules alone: no record)")
    assert [m["words"] for m in line["marks"]][2:] == [
        "affected (by its rules: no record)", "not affected, the fix (by its rules: no record)"]
    assert timeline({"label": "torch", "fixed_in": None, "releases": []})["text"] == ""
