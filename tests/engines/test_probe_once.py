"""Probe once: the local fingerprint is cheap and exact; the runner probes once per stack per run.

Real interpreters: a fresh venv (no torch; the fingerprint must not need it) and
a torch interpreter for a real run of two fixture repros.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.config.matrix import load_matrix
from repromatrix.config.options import RunOptions
from repromatrix.engines import EngineContext
from repromatrix.engines.local import LocalEngine
from repromatrix.model import Settings, Stack
from repromatrix.plan import make_plan
from repromatrix.run.cells import run_plan

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "repros"
PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")


def engine() -> LocalEngine:
    ctx = EngineContext(settings=Settings(), options=RunOptions(), harness_dir=paths.harness_dir(),
                        repros_dir=paths.repros_dir(), run_id="t", log=lambda _: None)
    return LocalEngine(ctx)


def test_local_fingerprint_follows_installed_metadata_without_importing_anything(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    meta = site / "fakepkg-1.0.dist-info" / "METADATA"
    meta.parent.mkdir(parents=True)
    meta.write_text("Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.0\n")
    # a package whose import would fail loudly: the fingerprint must never import it
    (site / "fakepkg.py").write_text("raise SystemExit('imported by the fingerprint')\n")
    stack = Stack(id="here", kind="local", interpreter=python)
    first = engine().fingerprint(stack)
    assert first == engine().fingerprint(stack) and python in first
    meta.write_text("Metadata-Version: 2.1\nName: fakepkg\nVersion: 1.1\n")  # an upgrade
    st = meta.stat()
    os.utime(meta, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert engine().fingerprint(stack) != first
    t0 = time.perf_counter()
    engine().fingerprint(stack)
    assert time.perf_counter() - t0 < 30  # a plain interpreter start, never a torch import


@pytest.mark.torch
def test_the_runner_probes_once_per_stack_per_run(tmp_path):
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    repros = tmp_path / "repros"
    repros.mkdir()
    for name in ("fx_pass.py", "fx_checked.py"):
        shutil.copy(FIXTURES / name, repros / name)
    (tmp_path / "matrix.yaml").write_text(  # the folder joins the built-in catalog: list ours
        f"repros: [fx_pass, fx_checked]\n"
        f"stacks:\n  - {{kind: local, id: here, interpreter: {PY}, tags: [default]}}\n")
    matrix = load_matrix(tmp_path / "matrix.yaml")
    lines: list[str] = []
    summary = run_plan(matrix, make_plan(matrix.stacks), RunOptions(results=tmp_path / "results"),
                       log=lambda line: lines.append(str(line)))
    assert summary.ran == 2
    out = tmp_path / "results" / ".work" / "out" / summary.run_id / "here"
    written = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert written == ["env.json", "fx_checked.json", "fx_checked.log", "fx_pass.json", "fx_pass.log",
                       "probe.log", "runner.log"]  # one probe for the stack, one log per repro
    assert sum("probing the environment" in line for line in lines) == 1
    assert {r.env.get("torch") for r in summary.results} != {None}
