"""The GPU evidence scripts as a GPU machine gets them (docs/gpu-evidence.md, "GPU evidence
from any GPU machine"): scripts/gpu-wheelhouse.sh fills a wheelhouse here, where PyPI answers; then, in a
folder holding only scripts/ and that wheelhouse, with the network cut (``unshare -rn``),
scripts/gpu-evidence.sh installs the harness from it and runs every repro of the catalog on
a torch interpreter. Here the interpreter is a CPU torch (CI's torch 2.13.0), so every stage
that needs a GPU skips with its reason; the limits a lent GPU machine sets hold: the
wheelhouse at most 20 MB, the whole evidence run under 8 minutes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support import ROOT
from support.net import pypi_reachable

from repromatrix.config.catalog import load_catalog
from repromatrix.paths import repros_dir

SIZE_LIMIT = 20 * 1000 * 1000  # bytes of the wheelhouse
TIME_LIMIT = 8 * 60  # seconds of the whole evidence run
LEFT_TO_THE_MACHINE = ("torch", "torchvision", "triton", "nvidia", "numpy")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.pypi]


def script(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
           timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_gpu_evidence_from_the_wheelhouse_with_the_network_cut(tmp_path: Path) -> None:
    python = os.environ.get("REPROMATRIX_TEST_PY_T213")
    if not python:
        pytest.skip("REPROMATRIX_TEST_PY_T213 (a torch 2.13.0 interpreter) is not set")
    if not pypi_reachable():
        pytest.skip("pypi.org cannot be reached: the wheelhouse is filled from PyPI")
    if shutil.which("unshare") is None or script(["unshare", "-rn", "true"], tmp_path).returncode:
        pytest.skip("`unshare -rn` is not permitted here: the network cannot be cut")

    machine = tmp_path / "machine"  # what the GPU machine is given: the scripts, the wheelhouse
    shutil.copytree(ROOT / "scripts", machine / "scripts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    wheelhouse = machine / ".gpu-wheelhouse"
    made = script(["bash", str(ROOT / "scripts" / "gpu-wheelhouse.sh"), "--python", python,
                   str(wheelhouse)], ROOT)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    wheels = sorted(p.name for p in wheelhouse.glob("*.whl"))
    size = sum(p.stat().st_size for p in wheelhouse.iterdir())
    assert size <= SIZE_LIMIT and f"{size} bytes" in made.stdout, made.stdout
    assert [w for w in wheels if w.startswith("repromatrix-")], wheels
    assert not [w for w in wheels if w.lower().startswith(LEFT_TO_THE_MACHINE)], wheels

    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH") and not k.startswith("PIP_")}
    env["PATH"] = SYSTEM_PATH  # nothing of this checkout's environment (its repromatrix)
    began = time.monotonic()
    proc = script(["unshare", "-rn", "bash", "scripts/gpu-evidence.sh", "--python", python, str(out)],
                  machine, env, timeout=TIME_LIMIT + 60)
    took = time.monotonic() - began
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert took < TIME_LIMIT, f"the evidence run took {took:.0f} s"
    assert "Downloading" not in (out / "install.log").read_text(), "installed from the wheelhouse only"

    records = [json.loads(line) for p in sorted((out / "results").glob("*/*.jsonl"))
               for line in p.read_text(encoding="utf-8").splitlines()]
    needs = {r.id: r.requires for r in load_catalog(repros_dir()).values()}
    catalog = set(needs)
    assert {r["repro"] for r in records} == catalog and len(records) == len(catalog)
    stack = {r["stack"]["id"] for r in records}
    assert stack == {"cpu-torch" + records[0]["env"]["torch"]}, stack  # no GPU answered here
    for r in records:
        assert r["status"] not in ("broken", "error", "crash", "timeout"), (r["cell"], r["message"])
        skipped = [s for s in r["stages"] if s["status"] == "skip"]
        assert all(s["message"] for s in skipped), r["cell"]
        if "cuda" in needs[r["repro"]]:  # a GPU-decided bug: its GPU stages said why they skipped
            assert any("no CUDA device" in s["message"] for s in skipped), (r["cell"], skipped)
    facts = (out / "facts.txt").read_text(encoding="utf-8")
    for fact in ("python: 3.", f"torch: {records[0]['env']['torch']}", "cuda available: False",
                 "nvidia-smi", f"stack id: {stack.pop()}", "done: exit 0"):
        assert fact in facts, facts
    index = (out / "site" / "index.html").read_text(encoding="utf-8")
    assert all((out / "site" / f"repro-{rid}.html").is_file() and rid in index for rid in catalog)
