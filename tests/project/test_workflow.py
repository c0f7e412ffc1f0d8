"""The GitHub Actions workflow: actionlint passes, and its shell steps work for real.

actionlint comes with the test extra (a binary wheel from PyPI). Without it the lint
test is skipped with the reason, unless REPROMATRIX_REQUIRE_ACTIONLINT=1 (set by .ci/run).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.scale import ROOT, cli_env
from support.sites import site_records
from support.tools import actionlint

WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"
COMPAT_WORKFLOW = ROOT / ".github" / "workflows" / "compat.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))  # every one is linted


def test_actionlint_passes_and_would_catch_a_mistake(tmp_path):
    exe = actionlint()
    assert {WORKFLOW, COMPAT_WORKFLOW} <= set(WORKFLOWS)
    for path in WORKFLOWS:
        ok = subprocess.run([exe, "-no-color", str(path)], capture_output=True, text=True, timeout=120)
        assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = tmp_path / ".github" / "workflows" / "matrix.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(WORKFLOW.read_text().replace("needs.plan.outputs.matrix", "needs.plan.outputs.matrx"))
    bad = subprocess.run([exe, "-no-color", str(broken)], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "matrx" in bad.stdout


def workflow(path: Path = WORKFLOW) -> dict:
    return yaml.safe_load(path.read_text())


def test_plan_run_publish_shape():
    wf = workflow()
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads the key `on` as True
    assert "schedule" in on and "workflow_dispatch" in on
    jobs = wf["jobs"]
    assert jobs["run"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert jobs["run"]["runs-on"] == "${{ needs.plan.outputs.runner }}"  # GPU runners, else hosted
    assert "REPROMATRIX_GPU_RUNNER" in wf["env"]["GPU_RUNNER"]
    assert jobs["run"]["strategy"]["fail-fast"] is False
    assert any("upload-artifact" in s.get("uses", "") for s in jobs["run"]["steps"])
    publish = jobs["publish"]
    assert publish["needs"] == ["plan", "run"] and "!cancelled()" in publish["if"]
    assert publish["permissions"]["pages"] == "write"
    uses = [s.get("uses", "") for s in publish["steps"]]
    assert any("download-artifact" in u for u in uses) and any("deploy-pages" in u for u in uses)


def step_script(job: str, name: str, path: Path = WORKFLOW) -> str:
    return next(s["run"] for s in workflow(path)["jobs"][job]["steps"] if s.get("name", s.get("id")) == name)


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


def outputs(text: str) -> dict[str, str]:
    """A step's $GITHUB_OUTPUT as a runner reads it (a later line wins)."""
    return dict(line.partition("=")[::2] for line in text.strip().splitlines())


def test_plan_step_emits_the_shard_matrix(tmp_path):
    shutil.copy(ROOT / "matrix.yaml", tmp_path / "matrix.yaml")
    out = run_step(step_script("plan", "assign stacks to shards"), tmp_path, SHARDS="3", SELECT="",
                   GPU_RUNNER="gpu")
    said = outputs(out["GITHUB_OUTPUT"])
    assert json.loads(said["matrix"]) == {"shard": ["1/3", "2/3", "3/3"]}
    assert (said["runner"], said["cpu"]) == ("gpu", "false")
    assert "stacks on 3 shards" in out["GITHUB_STEP_SUMMARY"]
    # a selection with fewer stacks than shards: empty shards get no job
    out = run_step(step_script("plan", "assign stacks to shards"), tmp_path, SHARDS="5",
                   SELECT="ngc-24.05 or ngc-24.08", GPU_RUNNER="gpu")
    assert json.loads(outputs(out["GITHUB_OUTPUT"])["matrix"]) == {"shard": ["1/5", "2/5"]}


def test_without_gpu_runners_the_plan_takes_hosted_runners_and_the_cpu_decidable_cells(tmp_path):
    """No runner label (REPROMATRIX_GPU_RUNNER unset, no input): hosted runners, and the shards
    of the published stand-in matrix (every torch-tensorrt release on PyPI, the lane's repros),
    not of matrix.yaml's GPU and NGC stacks; the run step then runs that matrix on the lane."""
    shutil.copy(ROOT / "matrix.yaml", tmp_path / "matrix.yaml")
    cpu_matrix = workflow()["env"]["CPU_MATRIX"]
    (tmp_path / cpu_matrix).parent.mkdir(parents=True)
    shutil.copy(ROOT / cpu_matrix, tmp_path / cpu_matrix)
    out = run_step(step_script("plan", "assign stacks to shards"), tmp_path, SHARDS="2", SELECT="",
                   GPU_RUNNER="", CPU_MATRIX=cpu_matrix)
    said = outputs(out["GITHUB_OUTPUT"])
    assert (said["runner"], said["cpu"]) == ("ubuntu-latest", "true")
    assert json.loads(said["matrix"]) == {"shard": ["1/2", "2/2"]}
    assert "no GPU runner configured" in out["GITHUB_STEP_SUMMARY"]
    planned = json.loads((tmp_path / "shards.json").read_text())
    stacks = [s for shard in planned["shards"] for s in shard["stacks"]]
    # the 15 torch-tensorrt releases and the 4 onnxscript stacks (torch 2.9.1); no cu*/NGC stack
    assert len(stacks) == 19 and all("-pypi-" in s for s in stacks), stacks
    out = run_step(step_script("plan", "assign stacks to shards"), tmp_path, SHARDS="2",
                   SELECT="trt2.4.0", GPU_RUNNER="", CPU_MATRIX=cpu_matrix)  # -k narrows it
    assert json.loads(outputs(out["GITHUB_OUTPUT"])["matrix"]) == {"shard": ["1/2"]}
    script = step_script("run", "run shard ${{ matrix.shard }}")
    assert '--matrix "$CPU_MATRIX" --backend venv --standin tensorrt' in script


@pytest.mark.slow
def test_publish_merges_every_downloaded_store(tmp_path):
    work = checkout_with_remote(tmp_path)
    for i, name in enumerate(("every_status", "sparse")):  # as download-artifact lays them out
        shutil.copytree(ROOT / "tests" / "data" / "results" / name, work / "shards" / f"results-{i}"
                        / f"shard-{i + 1}")
    run_step(step_script("publish", "merge the shards"), work)
    run_step(step_script("publish", "render the page"), work)
    raw = site_records(work / "site")
    hosts = {r["host"] for r in raw["records"]}
    assert (work / "site" / "index.html").is_file() and len(raw["records"]) > 10 and hosts

RESULTS = ROOT / "tests" / "data" / "results"


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def checkout_with_remote(tmp_path: Path, name: str = "work") -> Path:
    """A clone of the project as a runner has it (the script committed), its origin a bare repo."""
    remote = tmp_path / "remote.git"
    if not remote.exists():
        git(tmp_path, "init", "-q", "--bare", str(remote))
    work = tmp_path / name
    (work / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "results-branch.sh", work / "scripts")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "scripts")
    git(work, "commit", "-q", "-m", "checkout")
    git(work, "remote", "add", "origin", str(remote))
    return work


def download(work: Path, *shards: Path) -> None:
    """Lay shard stores out as download-artifact does: shards/results-<i>/<host>/<run>.jsonl."""
    shutil.rmtree(work / "shards", ignore_errors=True)
    for i, files in enumerate(shards):
        dest = work / "shards" / f"results-{i}" / files.parent.name
        dest.mkdir(parents=True)
        shutil.copy(files, dest)


def publish_job(work: Path) -> dict:
    """The publish job's shell steps in order, as a fresh runner runs them."""
    for folder in ("store", "site"):
        shutil.rmtree(work / folder, ignore_errors=True)
    for step in ("restore the previous store", "merge the shards", "keep the store", "render the page"):
        run_step(step_script("publish", step), work)
    return site_records(work / "site")


def branch_records(work: Path) -> list[str]:
    git(work, "fetch", "-q", "origin", "results")
    files = git(work, "ls-tree", "-r", "--name-only", "FETCH_HEAD").split()
    return sorted(line for f in files if f.endswith(".jsonl")
                  for line in git(work, "show", f"FETCH_HEAD:{f}").splitlines())


@pytest.mark.slow
def test_publish_restores_merges_and_keeps_history_across_weeks(tmp_path):
    every = RESULTS / "every_status" / "gpu-box-1"
    week1 = checkout_with_remote(tmp_path, "week1")
    download(week1, every / "run-1.jsonl")
    raw = publish_job(week1)             # first run: no results branch yet
    assert {r["run_id"] for r in raw["records"]} == {"run-1"} and len(branch_records(week1)) == 6

    week2 = checkout_with_remote(tmp_path, "week2")     # a fresh runner, a week later
    download(week2, every / "run-2.jsonl", RESULTS / "sparse" / "gpu-box-2" / "run-1b.jsonl")
    raw = publish_job(week2)
    assert {r["run_id"] for r in raw["records"]} == {"run-1", "run-2", "run-1b"}
    assert len(raw["records"]) == 16 and len(branch_records(week2)) == 16
    feed = (week2 / "site" / "changes.atom").read_text()
    assert "ngc-24.05--dynamic_unet_shapes: pass → timeout" in feed   # week 1 -> week 2
    html = (week2 / "site" / "index.html").read_text()
    assert "pip-torch2.9.1--onnx_export_device" in html and "ngc-24.05--dynamic_unet_shapes" in html

    week3 = checkout_with_remote(tmp_path, "week3")     # every shard lost: the past stays
    download(week3)
    raw = publish_job(week3)
    assert len(raw["records"]) == 16 and len(branch_records(week3)) == 16
    run_step(step_script("publish", "keep the store"), week3)      # again: nothing doubled
    assert len(branch_records(week3)) == 16


@pytest.mark.slow
def test_publish_on_a_branch_that_moved_keeps_both_sides(tmp_path):
    every = RESULTS / "every_status" / "gpu-box-1"
    a, b = checkout_with_remote(tmp_path, "a"), checkout_with_remote(tmp_path, "b")
    download(a, every / "run-1.jsonl")
    publish_job(a)
    run_step(step_script("publish", "restore the previous store"), b)   # b restores run-1 ...
    download(a, every / "run-2.jsonl")
    publish_job(a)                                                   # ... a pushes run-2 meanwhile
    download(b, RESULTS / "sparse" / "gpu-box-2" / "run-1b.jsonl")
    run_step(step_script("publish", "merge the shards"), b)
    run_step(step_script("publish", "keep the store"), b)            # b's push must not drop run-2
    assert len(branch_records(b)) == 16


def test_no_shards_and_no_previous_store_fails_the_merge(tmp_path):
    work = checkout_with_remote(tmp_path)
    download(work)
    run_step(step_script("publish", "restore the previous store"), work)
    script = step_script("publish", "merge the shards")
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=work, capture_output=True,
                          text=True, timeout=60, env=cli_env())
    assert proc.returncode == 1 and "no previous store" in proc.stderr


def test_weekly_compat_check_says_whether_a_pull_request_is_due(tmp_path):
    """The check step on PyPI's recorded answers: behind today (torch 2.15.0's pairing, no 2.15
    stack), not behind once the rows and stanza are in; a failure other than "behind" fails."""
    wf = workflow(COMPAT_WORKFLOW)
    on = wf[True] if True in wf else wf["on"]
    assert "schedule" in on and wf["jobs"]["update"]["permissions"]["pull-requests"] == "write"
    script = step_script("update", "compare the table with PyPI", COMPAT_WORKFLOW)
    from support.compat_rows import BEFORE_2150, ROW_2150

    # the table and matrix as they were before torch 2.15 got its pairing and its stack
    matrix = re.sub(r'^  - \{kind: pip, torch: "2\.15"\}.*\n', "", (ROOT / "matrix.yaml").read_text(),
                    flags=re.M)
    (tmp_path / "matrix.yaml").write_text(matrix)
    table = tmp_path / "compat.yaml"
    table.write_text(ROW_2150.sub(BEFORE_2150, (ROOT / "src" / "repromatrix" / "data" / "compat.yaml")
                                  .read_text()))
    recorded = ROOT / "tests" / "data" / "pypi"

    def check(*extra: str) -> str:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        shim = bin_dir / "repromatrix"   # the step's command, on the recorded answers and the copy
        shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m repromatrix.cli "$@" --from {recorded} '
                        f'--table {table} {" ".join(extra)}\n')
        shim.chmod(0o755)
        out = tmp_path / "output"
        out.write_text("")
        proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=tmp_path,
                              env={**cli_env(), "GITHUB_OUTPUT": str(out),
                                   "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
                              capture_output=True, text=True, timeout=300)
        return f"rc={proc.returncode} {out.read_text().strip()} {proc.stdout}"

    assert check().startswith("rc=0 behind=true")
    assert "torch 2.15.0: missing pairing" in check()
    subprocess.run([sys.executable, "-m", "repromatrix.cli", "compat", "update", "--write", "--matrix",
                    str(tmp_path / "matrix.yaml"), "--from", str(recorded), "--table", str(table)],
                   env=cli_env(), check=True, capture_output=True, timeout=300)
    assert check().startswith("rc=0 behind=false")
    table.write_text("torch: [")                        # a broken table is not "behind": the step fails
    assert check().startswith("rc=2")


@pytest.mark.torch
@pytest.mark.slow
def test_a_second_week_reuses_the_unchanged_cells_it_restored(tmp_path):
    """The run job for real (its restore and run steps, torch on the CPU example as local
    stacks): week 2 starts from week 1's store on the results branch and reruns nothing."""
    from support.scale import QUICK_REPROS, local_cpu_matrix

    from repromatrix.config.matrix import load_matrix

    matrix = local_cpu_matrix(tmp_path / "m")
    stack = load_matrix(matrix).stacks[0].id
    # two repros are enough to see a week reuse what it restored
    env = {"SHARD": "1/1", "SELECT": f"{stack} and ({QUICK_REPROS})",
           "RUN_ARGS": f"--matrix {matrix} --backend local"}
    counts = []
    for week in ("week1", "week2"):
        work = checkout_with_remote(tmp_path, week)
        run_step(step_script("run", "restore the previous store"), work)
        run_step(step_script("run", "run shard ${{ matrix.shard }}"), work, **env)
        records = sorted((work / "results" / "store").rglob("*.jsonl"))
        counts.append(sum(len(p.read_text().splitlines()) for p in records))
        download(work, *records)                        # upload-artifact, then the publish job
        publish_job(work)
    assert counts[0] == 2 and counts[1] == 2            # week 2 ran no cell again
    assert len(branch_records(work)) == 2
    assert site_records(work / "site")["records"][0]["stack"]["id"] == stack


def test_the_check_example_workflow_passes_actionlint_and_is_the_readme_s():
    """examples/check-workflow.yml, docs/check.md's `check` step for a project's own CI."""
    exe = actionlint()
    example = ROOT / "examples" / "check-workflow.yml"
    ok = subprocess.run([exe, "-no-color", str(example)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    steps = workflow(example)["jobs"]["check"]["steps"]
    command = next(s["run"] for s in steps if "repromatrix check" in s.get("run", ""))
    assert command.strip() in (ROOT / "docs" / "check.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_gpu_week_s_record_outranks_a_later_cpu_week_s_standin_one_on_the_page(tmp_path):
    """Week 1 ran on GPU runners (a record from real TensorRT for a cell); week 2 had none, so
    hosted runners ran the stand-in lane and published a newer record of the same cell: the
    page keeps showing the GPU's, and the branch keeps both (store.reader.outranks)."""
    from support.records import make_record
    from support.sites import chunk_data

    published = ROOT / "results" / "published" / "vm" / "20261125T062427Z-c1dcac.jsonl"
    cell = "pip-torch2.4.1-trt2.4.0-pypi-py3.11--deform_conv2d_device"
    [lane_line] = [line for line in published.read_text().splitlines() if json.loads(line)["cell"] == cell]
    gpu = make_record(stack=cell.split("--")[0], repro="deform_conv2d_device", run_id="gpu-week",
                      host="gpu-box", stages=[{"name": "trt_compile", "role": "main", "status": "fail"}],
                      started_at="2026-11-18T04:00:00+00:00", finished_at="2026-11-18T04:01:00+00:00")
    weeks = {"gpu-week": json.dumps(gpu), json.loads(lane_line)["run_id"]: lane_line}
    shown = []
    for i, (run_id, line) in enumerate(weeks.items()):
        work = checkout_with_remote(tmp_path, f"week{i + 1}")
        host = "gpu-box" if run_id == "gpu-week" else "vm"   # as the run job uploads its store
        (tmp_path / "upload" / host).mkdir(parents=True, exist_ok=True)
        records = tmp_path / "upload" / host / f"{run_id}.jsonl"
        records.write_text(line + "\n")
        download(work, records)
        publish_job(work)
        shown.append(chunk_data(work / "site")["cells"][cell])
    assert shown[0]["run_id"] == "gpu-week" and not shown[0].get("standin")
    assert shown[1]["run_id"] == "gpu-week", "the newer stand-in record does not replace the GPU's"
    assert len(branch_records(work)) == 2, "both weeks are kept"
