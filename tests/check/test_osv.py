"""`repromatrix export osv`: the catalog as OSV records, valid against OSV's own schema, each
bug's releases and fix those ``check.fixes`` names, and the zip osv-scanner's offline mode
reads (``<dir>/osv-scanner/PyPI/all.zip``, one JSON file per record).

osv-scanner itself is a Go program published neither on PyPI (its name there is a 0.0.1
placeholder) nor on npm, so it does not run here: the zip is read the way its offline
mode reads it, and its ranges matched by OSV's own rule (``matches`` below).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from packaging.version import Version
from support import DATA

from repromatrix.check import osv
from repromatrix.check.candidates import releases
from repromatrix.check.fixes import bug_fixes
from repromatrix.check.records import snapshot_rows
from repromatrix.cli import main
from repromatrix.cli.check import catalog
from repromatrix.config.compat import load_table
from repromatrix.rules.versions import LABELS

SCHEMA = json.loads((DATA / "osv" / "schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("osv")
    assert main(["export", "osv", str(folder)]) == 0
    return folder


@pytest.fixture(scope="module")
def fixes() -> dict:
    rows, _ = snapshot_rows()
    return bug_fixes(catalog(), rows, load_table())


def matches(record: dict, package: str, version: str) -> bool:
    """Whether a version of a PyPI package is affected, by OSV's evaluation rule: listed in
    ``versions``, or inside a range (introduced <= v, below fixed, at most last_affected)."""
    for entry in record["affected"]:
        if entry["package"] != {"ecosystem": "PyPI", "name": package}:
            continue
        if version in entry.get("versions", ()):
            return True
        for r in entry["ranges"]:
            inside = False
            for event in sorted(r["events"], key=lambda e: Version(next(iter(e.values())))):
                (kind, at), = event.items()
                v, at = Version(version), Version(at)
                if kind == "introduced" and v >= at:
                    inside = True
                elif (kind == "fixed" and v >= at) or (kind == "last_affected" and v > at):
                    inside = False
            if inside:
                return True
    return False


def test_every_record_is_valid_osv_and_the_files_are_the_catalog(exported: Path) -> None:
    validator = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
    files = sorted(exported.glob("*.json"))
    assert {p.stem for p in files} == {osv.osv_id(b) for b in catalog()}
    for path in files:
        record = json.loads(path.read_text(encoding="utf-8"))
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(record)]
        assert not errors, (path.name, errors)
        assert record["id"] == path.stem and record["modified"].endswith("Z")
        assert record["references"] and all(r["url"].startswith("https://") for r in record["references"])


def test_a_broken_record_is_refused_by_the_schema(exported: Path) -> None:
    record = json.loads(next(exported.glob("*.json")).read_text(encoding="utf-8"))
    validator = Draft202012Validator(SCHEMA)
    assert not list(validator.iter_errors(record))
    assert list(validator.iter_errors({**record, "id": "REPROMATRIX-x"}))   # not a known prefix
    broken = json.loads(json.dumps(record))
    broken["affected"][0]["ranges"][0]["events"] = [{"fixed": "2.5.0"}]      # no introduced
    assert list(validator.iter_errors(broken))


def test_ranges_are_check_s_affected_runs_and_fix(exported: Path, fixes: dict) -> None:
    known = releases(load_table())
    for bug_id, fix in fixes.items():
        record = json.loads((exported / f"{osv.osv_id(bug_id)}.json").read_text(encoding="utf-8"))
        package = LABELS[fix["package"]]
        assert record["database_specific"]["fixed_in"] == fix["fixed_in"]
        assert record["database_specific"]["ngc"]["affected"] == fix["ngc"]["affected"]
        assert record["database_specific"]["kind"] == catalog()[bug_id]["kind"]
        events = [e for a in record["affected"] for r in a["ranges"] for e in r["events"]]
        assert [e["fixed"] for e in events if "fixed" in e] == ([fix["fixed_in"]] if fix["fixed_in"] else [])
        order = known[fix["package"]]
        for first, last in fix["affected"]:
            for version in order[order.index(first):order.index(last) + 1]:
                assert matches(record, package, version), (bug_id, version)
        if fix["affected"]:
            before = order[:order.index(fix["affected"][0][0])]
            assert not any(matches(record, package, v) for v in before), bug_id
        if fix["fixed_in"]:
            after = order[order.index(fix["fixed_in"]):]
            assert not any(matches(record, package, v) for v in after), bug_id
        elif fix["affected"]:
            assert matches(record, package, "99.0.0"), f"{bug_id}: no fix yet, so newer releases too"


def test_osv_scanner_offline_layout_holds_the_pypi_records(exported: Path) -> None:
    archive = exported / "osv-scanner" / "PyPI" / "all.zip"
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        records = {n: json.loads(z.read(n)) for n in names}
    assert names and all(n.endswith(".json") and "/" not in n for n in names)
    assert {r["id"] for r in records.values()} == {Path(n).stem for n in names}
    assert all(a["package"]["ecosystem"] == "PyPI" for r in records.values() for a in r["affected"])
    # a stack with torch-tensorrt 2.4.0 has deform_conv2d_device; 2.5.0 fixes it
    deform = records["x_REPROMATRIX-deform_conv2d_device.json"]
    assert matches(deform, "torch-tensorrt", "2.4.0") and not matches(deform, "torch-tensorrt", "2.5.0")
    assert not matches(deform, "torch", "2.4.0")


def test_export_again_writes_the_same_bytes_and_drops_a_removed_bug(exported: Path, tmp_path: Path) -> None:
    stale = tmp_path / f"{osv.PREFIX}gone.json"
    stale.write_text("{}")
    assert main(["export", "osv", str(tmp_path)]) == 0
    assert not stale.exists()
    for path in sorted(exported.rglob("*")):
        if path.is_file():
            assert (tmp_path / path.relative_to(exported)).read_bytes() == path.read_bytes(), path.name


def test_one_range_per_run() -> None:
    fix = {"affected": [["1.0", "1.1"], ["1.3", "1.4"]], "fixed_in": "1.5"}
    assert [r["events"] for r in osv.ranges(fix)] == [[{"introduced": "1.0"}, {"last_affected": "1.1"}],
                                                      [{"introduced": "1.3"}, {"fixed": "1.5"}]]
    assert osv.ranges({**fix, "fixed_in": None})[-1]["events"] == [{"introduced": "1.3"}]
    assert osv.affected_versions(fix["affected"], ["0.9", "1.0", "1.1", "1.2", "1.3", "1.4", "1.5"]) == \
        ["1.0", "1.1", "1.3", "1.4"]
    assert osv.timestamp("2026-11-26T22:56:04+01:00") == "2026-11-26T21:56:04Z"
