"""The README's main command, `nox -s matrix`, as a new user runs it on a machine like this
one: no GPU, no registry, no TensorRT, PyPI reachable.

It runs in a copy of the checkout (what `git clone` gives) with an empty per-user cache,
so no environment exists yet. It must end with exit 0 and a page: the stacks docker
cannot make here fall back to uv venvs (a CUDA index it cannot reach to PyPI's build of the
same releases), torch-tensorrt's cells are decided by its own code with TensorRT stood in,
and every cell this machine cannot decide says why, as does the closing summary.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNDECIDED = {"skip", "broken", "timeout"}


def main_command() -> list[str]:
    """The README's main command, from its quick start, as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start\n+```sh\n(.*?)```", text, re.S)
    assert block, "README.md has no quick start block"
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    [command] = [line for line in lines if line.startswith("nox ")]
    return command.split()


def checkout_copy(dest: Path) -> Path:
    """The tracked files of this checkout (a clone's worth, with the working tree's edits)."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


@pytest.mark.slow
@pytest.mark.torch
def test_nox_matrix_on_a_machine_without_gpu_gives_a_page_with_standin_verdicts(tmp_path):
    if not shutil.which("uv") or not shutil.which("nox"):
        pytest.skip("uv and nox are needed on PATH (the test extra installs both)")
    if not shutil.which("cc"):
        pytest.skip("the stand-in lane compiles its native stand-ins with cc")
    assert main_command() == ["nox", "-s", "matrix"]
    repo = checkout_copy(tmp_path / "repromatrix")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # a user's cache of its own (compiled templates, nox's uv); the environments come from the
    # suite's cache (REPROMATRIX_VENV_DIR, tests/conftest.py), shared with the lane's tests
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    try:
        check_main_command(repo, env)
    finally:
        shutil.rmtree(tmp_path / "cache", ignore_errors=True)
        shutil.rmtree(repo / ".nox", ignore_errors=True)


def check_main_command(repo: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(main_command(), cwd=repo, env=env, capture_output=True, text=True,
                          timeout=3000)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert (repo / "site" / "index.html").is_file()
    records = [json.loads(line) for p in (repo / "results").glob("*/*.jsonl")
               for line in p.read_text().splitlines()]  # this run's host folder, not published/
    assert records, out[-4000:]
    standin_verdicts = [r for r in records if r["backend"] == "venv" and any(
        s.get("standins") and s["role"] == "main" and s["status"] in ("fail", "pass")
        for s in r["stages"])]
    assert standin_verdicts, "at least one cell decided by torch-tensorrt's own code"
    for r in records:
        if r["status"] in UNDECIDED:
            assert r["message"], f"{r['cell']}: undecided without a reason"
        assert r["backend_reason"], f"{r['cell']}: the engine choice is recorded"
    # the default stack of the reported bug pins cu124, which this machine cannot reach: made
    # from PyPI's build of the same releases on the lane, said by each record, and decided
    on_pypi = {r["repro"]: r for r in records if r["stack"].get("pinned_index") == "cu124"}
    assert on_pypi, "the cu124 stack is made from PyPI's build, not skipped"
    assert all(r["backend"] == "venv" and "same releases" in r["backend_reason"]
               for r in on_pypi.values())
    assert on_pypi["deform_conv2d_device"]["status"] == "fail", on_pypi["deform_conv2d_device"]["message"]
    ngc = [r for r in records if r["stack"]["kind"] == "ngc"]
    assert ngc and all(r["status"] == "skip" and "cannot be made here" in r["message"] for r in ngc)
    assert "decided here:" in out and "a GPU machine" in out, out[-3000:]
    index = (repo / "site" / "index.html").read_text()
    assert "mark-standin" in index, "the page marks stand-in verdicts"
    warm = subprocess.run(main_command(), cwd=repo, env=env, capture_output=True, text=True,
                          timeout=600)
    assert warm.returncode == 0 and "0 cell(s) run" in warm.stdout, warm.stdout[-3000:]
