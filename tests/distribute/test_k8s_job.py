"""deploy/k8s/job.yaml: a valid Indexed Job whose pods map their index to `--shard K/N`."""

from __future__ import annotations

import subprocess

import yaml
from support.scale import ROOT

from repromatrix.distribute.shard import parse_shard

JOB = ROOT / "deploy" / "k8s" / "job.yaml"


def test_indexed_job_runs_one_shard_per_completion_on_one_gpu():
    [job] = list(yaml.safe_load_all(JOB.read_text()))
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["template"]["spec"]["restartPolicy"] == "Never"
    [pod] = spec["template"]["spec"]["containers"]
    assert pod["resources"]["limits"]["nvidia.com/gpu"] == 1
    env = {e["name"]: e["value"] for e in pod["env"]}
    assert int(env["SHARDS"]) == spec["completions"] == spec["parallelism"]
    mounts = {m["name"] for m in pod["volumeMounts"]}
    assert mounts <= {v["name"] for v in spec["template"]["spec"]["volumes"]}
    # the pod's shell turns each completion index into a valid, distinct --shard K/N
    script = pod["args"][0].replace("exec repromatrix", "echo")
    seen = set()
    for index in range(spec["completions"]):
        out = subprocess.run(["sh", "-c", script], env={"JOB_COMPLETION_INDEX": str(index), **env},
                             capture_output=True, text=True, check=True).stdout.split()
        spec_text = out[out.index("--shard") + 1]
        seen.add(parse_shard(spec_text))
        assert out[out.index("--results") + 1] == f"/results/shard-{index + 1}"
    assert {s.index for s in seen} == set(range(1, spec["completions"] + 1))
