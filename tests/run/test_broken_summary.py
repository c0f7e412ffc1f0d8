"""A run where some stacks are `broken` (issue 19): it still exits 0 (something was
tested), and ends by saying why each broken stack is broken."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")
NO_TORCH = shutil.which("python3") and "/usr/bin/python3"
FIXTURES = Path(__file__).resolve().parents[1] / "data" / "hostile"

pytestmark = [pytest.mark.torch]


def test_a_run_with_some_broken_stacks_ends_saying_why(tmp_path):
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    probe = subprocess.run([NO_TORCH or "python3", "-c", "import torch"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("the system python3 has torch: no stack without it to break")
    shutil.copytree(FIXTURES, tmp_path / "repros")
    (tmp_path / "matrix.yaml").write_text(
        "repros: [hostile_after]\nstacks:\n"
        f"  - {{kind: local, id: here, interpreter: {PY}, tags: [default]}}\n"
        f"  - {{kind: local, id: notorch, interpreter: {NO_TORCH}, tags: [default]}}\n")
    proc = subprocess.run([sys.executable, "-m", "repromatrix.cli", "run", "--matrix",
                           str(tmp_path / "matrix.yaml"), "--results", str(tmp_path / "results"),
                           "--ca-bundle", "none"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("repromatrix: broken on 1 stack(s) (notorch): "), proc.stderr
    assert "torch" in last.split("(notorch): ")[1]
