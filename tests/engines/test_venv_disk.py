"""The venv engine's disk budget: LRU removal of finished environments, never one in use,
and a run that cannot fit refused before it builds anything.

Real uv environments holding one small pure-Python package each (from PyPI, through
the host's CA bundle), not torch; the refusal runs the real command line against a
small tmpfs in a mount namespace of its own (``unshare -m``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.net import pypi_reachable
from support.venvs import SMALL, engine

from repromatrix.engines.venv import VenvEngine
from repromatrix.engines.venv_disk import ESTIMATE_GB, GB, estimate_bytes, usage_bytes
from repromatrix.model import Stack

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv root with three finished small environments, used in the order a, b, c."""
    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    if not pypi_reachable():
        pytest.skip("PyPI is not reachable from here")
    root = tmp_path_factory.mktemp("venvs")
    eng = engine(root, budget_gb=100.0)
    for stack in SMALL.values():
        prepared = eng.prepare(stack, threading.Event())
        assert prepared.ok, prepared.log_tail
        eng.release(prepared)
        time.sleep(0.05)  # distinct use times
    return root


def env_of(eng: VenvEngine, name: str) -> Path:
    return eng.root / eng.fingerprint(SMALL[name]).removeprefix("venv:")


def copy_root(built: Path, tmp_path: Path) -> Path:
    """A copy of the built root (each test removes environments), use order kept."""
    root = tmp_path / "venvs"
    shutil.copytree(built, root, symlinks=True, copy_function=shutil.copy2)
    return root


def budget_for(eng: VenvEngine, *names: str) -> float:
    """A budget that holds exactly these environments (plus the root's small files)."""
    files = sum(f.stat().st_blocks * 512 for f in eng.root.iterdir() if f.is_file())
    return (sum(usage_bytes(env_of(eng, n)) for n in names) + files + 64 * 1024) / GB


def test_finished_environments_are_removed_least_recently_used_first(built, tmp_path) -> None:
    root = copy_root(built, tmp_path)
    said: list[str] = []
    probe = engine(root, 100.0)
    eng = engine(root, budget_for(probe, "b", "c"), said)
    assert usage_bytes(root) > eng.disk.budget
    eng.disk.make_room()
    assert not env_of(eng, "a").exists(), "the least recently used goes first"
    assert env_of(eng, "b").is_dir() and env_of(eng, "c").is_dir()
    assert usage_bytes(root) <= eng.disk.budget
    assert any("removed environment" in line and env_of(eng, "a").name in line for line in said)
    # what is left still works: a run reuses it without building
    prepared = eng.prepare(SMALL["b"], threading.Event())
    assert prepared.ok and prepared.cached
    out = subprocess.run([prepared.handle, "-c", "import idna; print(idna.__version__)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "3.7"


def test_environments_in_use_here_or_by_another_run_are_never_removed(built, tmp_path) -> None:
    root = copy_root(built, tmp_path)
    probe = engine(root, 100.0)
    # another run holds a: a real engine in another process that prepared it and waits
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests'}"})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        eng = engine(root, budget_for(probe, "a"), [])
        mine = eng.prepare(SMALL["c"], threading.Event())  # this run uses c
        assert mine.ok and mine.cached
        eng.disk.make_room()
        assert env_of(eng, "a").is_dir(), "held by another run"
        assert env_of(eng, "c").is_dir(), "in use by this run"
        assert not env_of(eng, "b").exists(), "the only one no run uses"
        eng.release(mine)  # c is free now: over budget, so it goes, a stays
        assert not env_of(eng, "c").exists() and env_of(eng, "a").is_dir()
    finally:
        holder.communicate("", timeout=30)


HOLDER = """
import sys, threading
from pathlib import Path
from support.venvs import SMALL, engine
eng = engine(Path(sys.argv[1]), 100.0)
prepared = eng.prepare(SMALL["a"], threading.Event())
assert prepared.ok and prepared.cached
print("holding", flush=True)
sys.stdin.read()
"""


def test_estimates_are_the_documented_per_stack_figures() -> None:
    cuda = Stack(id="x", kind="pip", torch="2.14.1", index="cu130")
    assert estimate_bytes(cuda) == ESTIMATE_GB["torch-cuda"] * GB
    assert estimate_bytes(Stack(id="y", kind="pip", torch="2.14.1", index="cpu")) == \
        ESTIMATE_GB["torch-cpu"] * GB
    trt = Stack(id="z", kind="pip", torch="2.14.1", index="cu130", torch_tensorrt="2.14.0")
    assert estimate_bytes(trt) == (ESTIMATE_GB["torch-cuda"] + ESTIMATE_GB["torch-tensorrt"]) * GB
    readme = (ROOT / "docs" / "running.md").read_text()
    for gb in ESTIMATE_GB.values():
        assert f"{gb:g} GB" in readme


def test_a_run_that_cannot_fit_is_refused_before_it_builds(tmp_path: Path) -> None:
    if not shutil.which("uv"):
        pytest.skip("uv is not on PATH (pip install uv)")
    if not shutil.which("unshare") or subprocess.run(
            ["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot make a mount namespace here (unshare -m needs root)")
    (tmp_path / "m.yaml").write_text(
        'stacks:\n  - {kind: pip, torch: "2.14.1", torchvision: none, torch_tensorrt: none, '
        'index: pypi}\n')
    small = tmp_path / "small"
    small.mkdir()
    script = (f"mount -t tmpfs -o size=64m tmpfs {small} && "
              f"{sys.executable} -m repromatrix.cli run --matrix m.yaml --all --backend venv")
    t0 = time.monotonic()
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src"),
                               "REPROMATRIX_VENV_DIR": str(small / "venvs")})
    elapsed = time.monotonic() - t0
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "not enough disk for the environments of this run: 1 to build, ~6.0 GB" in proc.stderr
    assert "documented per-stack estimates" in proc.stderr and "GB free under" in proc.stderr
    assert elapsed < 30
    assert not list(small.iterdir()), "nothing was built (and the tmpfs is gone with its namespace)"


def test_env_budget_reaches_the_engine_and_a_negative_one_is_refused(tmp_path: Path) -> None:
    from repromatrix.config.matrix import load_matrix
    from repromatrix.config.resolve import run_options
    from repromatrix.errors import UsageError

    matrix = load_matrix()
    assert run_options(matrix, {"env_budget": 2.5}).env_budget_gb == 2.5
    assert engine(tmp_path, 2.5).disk.budget == 2.5 * GB
    default = engine(tmp_path, None).disk.budget
    assert 0 < default <= shutil.disk_usage(tmp_path).free, "half of free disk + theirs"
    with pytest.raises(UsageError, match="--env-budget -1"):
        run_options(matrix, {"env_budget": -1.0})
