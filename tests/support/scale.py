"""Helpers for the many-machine tests: the CPU example on the prebuilt torch interpreters.

``examples/cpu-only.yaml`` names two PyPI torch stacks (2.14.1 and 2.13.0). Building
their images or venvs costs gigabytes of downloads, so these tests run the same
stacks (same ids, so the same cells) as ``local`` stacks on the interpreters the
test setup already has (REPROMATRIX_TEST_PY_T214 / _T213, see conftest.py): the
real runner, the real repros, real torch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import ROOT

CPU_EXAMPLE = ROOT / "examples" / "cpu-only.yaml"
INTERPRETERS = {"2.14.1": "REPROMATRIX_TEST_PY_T214", "2.13.0": "REPROMATRIX_TEST_PY_T213"}


# The two quickest of the catalog's repros on a CPU (a few seconds each, probe included):
# where a test is about splitting, scheduling and merging cells, not about the repros.
QUICK_REPROS = "torchscript_device_mix or ts_device_gpu_id"
TWO_REPROS = ["-k", QUICK_REPROS]


def local_cpu_matrix(dest: Path) -> Path:
    """Write the CPU example with each stack as a local stack on the matching interpreter."""
    from repromatrix.config.matrix import load_matrix

    example = load_matrix(CPU_EXAMPLE)
    doc = yaml.safe_load(CPU_EXAMPLE.read_text())
    stacks = []
    for s in example.stacks:
        env = INTERPRETERS.get(s.torch or "")
        py = os.environ.get(env or "")
        if not env or not py or not Path(py).exists():
            pytest.skip(f"no torch {s.torch} interpreter for {s.id}: set {env}")
        stacks.append({"kind": "local", "id": s.id, "interpreter": py})
    doc["stacks"] = stacks
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "cpu-local.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def cli_env() -> dict[str, str]:
    """The environment for a `python -m repromatrix.cli` child: this tree's sources first."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run the real command line in a child process; fail the test with its output if it fails."""
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", *args], capture_output=True,
                          text=True, env=cli_env(), cwd=ROOT, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"repromatrix {' '.join(args)} exited {proc.returncode}:\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}", pytrace=False)
    return proc


def cells_and_statuses(*results: Path) -> dict[str, str]:
    """The latest status of every cell in the given stores, merged."""
    from repromatrix.store.results import latest_by_cell, load_records

    return {cid: r.status for cid, r in latest_by_cell(load_records(results).records).items()}
