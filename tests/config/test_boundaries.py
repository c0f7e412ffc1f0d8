"""Boundaries derived from the source: META's commits, data/boundaries.json, the rules made.

The torch-tensorrt release rules and NGC rules of a bug that names its commits come from
the data file (``config.boundaries``); META may not type them, and META and the file must
name the same commits. The maintainer command is run on a real git repository made here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.config import boundaries
from repromatrix.config.catalog import load_catalog, read_meta, read_repro
from repromatrix.config.compat import load_table
from repromatrix.errors import ConfigError
from repromatrix.rules.versions import first_rule

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "derive-boundaries.py"
CATALOG = load_catalog(paths.repros_dir())
DATA = boundaries.load()
WITH_COMMITS = sorted(rid for rid in CATALOG
                      if set(boundaries.COMMIT_KEYS) & set(read_meta(Path(CATALOG[rid].path))))
MIXED = "dynamo_trace_mixed_static_dynamic_inputs"
PARTITIONER = "dynamo_global_partitioner_module_children"


def ngc_answer(rid: str, ngc: str) -> str | None:
    """The status the catalog's rules give NGC release ``ngc``, its versions from the
    compatibility table (as `check --ngc` reads them)."""
    row = load_table().ngc[ngc]
    versions = {"ngc": ngc, "torch": row.torch, "torch_tensorrt": row.torch_tensorrt}
    rule = first_rule(CATALOG[rid].expect, versions.get)
    return None if rule is None else str(rule["status"])


def test_the_file_lists_exactly_the_bugs_whose_meta_names_commits() -> None:
    assert WITH_COMMITS and sorted(DATA["bugs"]) == WITH_COMMITS
    for rid in WITH_COMMITS:
        meta = read_meta(Path(CATALOG[rid].path))
        for key in boundaries.COMMIT_KEYS:
            assert DATA["bugs"][rid].get(key, {}).get("commits") == meta.get(key, {}).get("commits")


@pytest.mark.parametrize("rid", WITH_COMMITS)
def test_a_bug_with_commits_has_derived_rules_only_on_its_releases(rid: str) -> None:
    rules = CATALOG[rid].expect
    derived = [r for r in rules if {"torch_tensorrt", "ngc"} & set(r["when"])]
    assert derived and all(r["note"].startswith("derived (boundaries.json)") for r in derived)
    assert {"fail", "pass"} <= {r["status"] for r in derived if "torch_tensorrt" in r["when"]}


def test_the_ngc_cells_the_source_decides() -> None:
    # the fix of the mixed-inputs bug (3a0b244b6e) is on release/ngc/24.09 and 24.10,
    # although they ship torch_tensorrt 2.5.0a0
    assert ngc_answer(MIXED, "24.09") == ngc_answer(MIXED, "24.10") == "pass"
    assert ngc_answer(MIXED, "24.08") == "fail"
    # release/ngc/24.02 to 24.04 have the partitioner's loop and torch 2.3.0a0
    assert {ngc_answer(PARTITIONER, n) for n in ("24.02", "24.03", "24.04")} == {"fail"}
    assert ngc_answer(PARTITIONER, "24.01") == "pass"  # torch 2.2: no plain child
    assert ngc_answer(PARTITIONER, "24.11") == "pass"
    # 23.12 and 24.01 lack both fixes
    for rid in ("ts_dla_memory_sizes_ignored", "dynamo_require_full_compilation_ignored"):
        assert ngc_answer(rid, "23.12") == ngc_answer(rid, "24.01") == "fail", rid


def test_a_branch_without_the_fix_after_one_with_it_gets_no_claim() -> None:
    bug = {"introduced_by": {"ngc": ["24.01", "24.02", "24.03"]},
           "fixed_by": {"ngc": ["24.02"]}}
    refs = ["23.12", "24.01", "24.02", "24.03"]
    assert boundaries.ref_status(refs, bug, "ngc") == ["pass", "fail", "pass", None]


def repro_with(tmp_path: Path, rid: str, meta: str) -> Path:
    path = tmp_path / f"{rid}.py"
    path.write_text(f"META = {{'id': '{rid}', {meta}}}\n")
    return path


def test_meta_typing_a_derived_rule_is_refused_naming_file_and_key(tmp_path: Path) -> None:
    fixed = DATA["bugs"][MIXED]["fixed_by"]["commits"]
    intro = DATA["bugs"][MIXED]["introduced_by"]["commits"]
    path = repro_with(tmp_path, MIXED, f"'introduced_by': {{'commits': {intro}}}, "
                      f"'fixed_by': {{'commits': {fixed}}}, "
                      "'expect': [{'when': {'torch_tensorrt': '>=2.5'}, 'status': 'pass'}]")
    with pytest.raises(ConfigError, match=r"derived from boundaries.json; remove it") as info:
        read_repro(path)
    assert info.value.file == str(path) and info.value.key == "META.expect[0].when"


def test_meta_and_the_file_disagreeing_is_an_error(tmp_path: Path) -> None:
    other = ["0" * 40]
    path = repro_with(tmp_path, MIXED, f"'fixed_by': {{'commits': {other}}}")
    with pytest.raises(ConfigError, match="derive-boundaries.py --clone DIR --write") as info:
        read_repro(path)
    assert info.value.key in ("META.introduced_by", "META.fixed_by")


@pytest.mark.parametrize("value, key", [
    ("'3a0b244b6e'", "META.fixed_by"),
    ("{'commits': ['3a0b244b6e']}", "META.fixed_by.commits"),
    ("{'commits': []}", "META.fixed_by.commits"),
    ("{'commits': ['" + "a" * 40 + "'], 'why': 'x'}", "META.fixed_by"),
])
def test_a_malformed_commit_key_names_file_and_key(tmp_path: Path, value: str, key: str) -> None:
    path = repro_with(tmp_path, "some_bug", f"'fixed_by': {value}")
    with pytest.raises(ConfigError) as info:
        read_repro(path)
    assert info.value.file == str(path) and info.value.key == key


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_maintainer_command_reads_tags_and_ngc_branches(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()

    def git(*args: str) -> str:
        env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
        return subprocess.run(["git", "-C", str(clone), *args], check=True, env=env, text=True,
                              capture_output=True).stdout.strip()

    git("init", "-q", "-b", "main")
    commits = []
    for n, (tag, branch) in enumerate([("v1.0.0", "23.12"), ("v2.0.0", "24.01"),
                                       ("v3.0.0", "24.02")]):
        git("commit", "-q", "--allow-empty", "-m", f"change {n}")
        commits.append(git("rev-parse", "HEAD"))
        git("tag", tag)
        git("branch", f"release/ngc/{branch}")
    repros = tmp_path / "repros"
    repros.mkdir()
    (repros / "one_bug.py").write_text(
        f"META = {{'id': 'one_bug', 'introduced_by': {{'commits': ['{commits[1]}']}}, "
        f"'fixed_by': {{'commits': ['{commits[2]}']}}}}\n")
    out = tmp_path / "boundaries.json"
    out.write_text(json.dumps({"first_release": {"kept": {"package": "torch"}}}))
    run = [sys.executable, str(SCRIPT), "--clone", str(clone), "--repros", str(repros),
           "--out", str(out)]
    subprocess.run([*run, "--write"], check=True, capture_output=True)
    data = json.loads(out.read_text())
    bug = data["bugs"]["one_bug"]
    assert bug["introduced_by"]["tags"] == ["v2.0.0", "v3.0.0"]
    assert bug["introduced_by"]["ngc"] == ["24.01", "24.02"]
    assert bug["fixed_by"] == {"commits": [commits[2]], "tags": ["v3.0.0"], "ngc": ["24.02"]}
    assert data["tags"] == ["v1.0.0", "v2.0.0", "v3.0.0"] and data["ngc"] == ["23.12", "24.01", "24.02"]
    assert data["first_release"] == {"kept": {"package": "torch"}}
    assert subprocess.run([*run, "--check"], capture_output=True).returncode == 0
    rules = boundaries.derived_rules("one_bug", bug, {}, path=out)
    assert [(r["when"], r["status"]) for r in rules] == [
        ({"ngc": "<24.01"}, "pass"), ({"ngc": "==24.01"}, "fail"), ({"ngc": ">=24.02"}, "pass"),
        ({"torch_tensorrt": "<2.0"}, "pass"), ({"torch_tensorrt": ">=2.0,<3.0"}, "fail"),
        ({"torch_tensorrt": ">=3.0"}, "pass")]
    git("commit", "-q", "--allow-empty", "-m", "later")
    git("tag", "v3.1.0")
    assert subprocess.run([*run, "--check"], capture_output=True).returncode == 1


def releases_of(package: str) -> list[str]:
    """The releases of torch, torchvision or onnxscript the compatibility table knows, oldest
    first."""
    from packaging.version import Version

    table = load_table()
    found = set(table.torch) if package == "torch" else set(table.onnx[package]) \
        if package in table.onnx else {tv for row in table.torch.values() for tv in row.torchvision}
    return sorted(found, key=Version)


FIRST = sorted(DATA["first_release"])


def test_every_bounded_torch_or_torchvision_bug_has_its_first_release_in_the_file() -> None:
    from repromatrix.rules.versions import key_package

    for rid, repro in CATALOG.items():
        package = key_package(repro.expect)
        statuses = {r["status"] for r in repro.expect if package in r.get("when", {})}
        if package != "torch_tensorrt" and {"fail", "pass"} <= statuses:
            assert rid in DATA["first_release"], rid
    assert set(FIRST) <= set(CATALOG)


@pytest.mark.parametrize("rid", FIRST)
def test_meta_s_rules_turn_at_the_first_release_the_file_gives(rid: str) -> None:
    """The rule at the release the file names gives its status, the rule at the release before
    it (in the compatibility table) the other one: META's typed boundary is the one read."""
    found = boundaries.first_release(rid)
    assert found and found["read"] and found["status"] in ("pass", "fail")
    package, version = found["package"], found["version"]
    known = releases_of(package)
    before = known[known.index(version) - 1]
    at = first_rule(CATALOG[rid].expect, {package: version}.get)
    below = first_rule(CATALOG[rid].expect, {package: before}.get)
    other = {"pass": "fail", "fail": "pass"}[found["status"]]
    assert at is not None and at["status"] == found["status"], (rid, version, at)
    assert below is not None and below["status"] == other, (rid, before, below)
