"""`repromatrix export slurm` for real: a one-node cluster runs two repros of the CPU example
as a job array (one task per shard), then the dependent report job merges every shard's store."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.scale import ROOT, TWO_REPROS, cells_and_statuses, cli, local_cpu_matrix
from support.slurm import job_state

pytestmark = [pytest.mark.slurm, pytest.mark.torch, pytest.mark.slow]
SHARDS = 2
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}


def test_job_array_runs_the_shards_and_the_report_merges_them(slurm_cluster, tmp_path: Path):
    env = slurm_cluster
    matrix = local_cpu_matrix(tmp_path)
    one = cli("plan", "--matrix", str(matrix), "--all", *TWO_REPROS, "--format", "json").stdout
    every = set(re.findall(r'"cell": "([^"]+)"', one))
    node_cmd = shlex.join(["env", f"PYTHONPATH={ROOT / 'src'}", sys.executable, "-m", "repromatrix.cli"])
    results, site, jobs = tmp_path / "results", tmp_path / "site", tmp_path / "jobs"
    cli("export", "slurm", "--matrix", str(matrix), "--all", *TWO_REPROS, "--shards", str(SHARDS),
        "--backend", "local", "--dir", str(jobs), "--results", str(results), "--out", str(site),
        "--repromatrix", node_cmd,
        "--", "--timeout", "300")

    submit = subprocess.run(["sh", str(jobs / "submit.sh")], capture_output=True, text=True, env=env,
                            timeout=60)
    assert submit.returncode == 0, submit.stderr
    found = re.search(r"shards: job (\d+) .*report: job (\d+) \(afterany:\1\)", submit.stdout)
    assert found, submit.stdout
    array, report = found.groups()
    pending = subprocess.run(["scontrol", "-o", "show", "job", report], capture_output=True, text=True,
                             env=env).stdout
    assert f"Dependency=afterany:{array}" in pending  # the shards take far longer than this

    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and not set(job_state(env, report)) & DONE:
        time.sleep(2)
    logs = "\n".join(p.read_text(errors="replace")[-2000:]
                     for p in sorted((results / "slurm-logs").glob("*")))
    assert job_state(env, report) == ["COMPLETED"], logs
    assert job_state(env, array) == ["COMPLETED"] * SHARDS, logs

    stores = [results / f"shard-{k}" for k in range(1, SHARDS + 1)]
    merged = cells_and_statuses(*stores)
    assert set(merged) == every and len(every) == 4
    for store in stores:  # each task ran its own shard, nothing twice
        assert cells_and_statuses(store) and set(cells_and_statuses(store)) < every
    html = (site / "index.html").read_text()
    assert set(re.findall(r'data-cell="([^"]+)"', html)) == every
    assert "conflicting" not in (results / "slurm-logs" / "report.out").read_text()
