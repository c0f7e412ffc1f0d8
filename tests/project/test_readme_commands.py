"""The documented commands of docs/restricted-networks.md (once the README's), taken from
that page itself and run as written.

A command changes here only when the page changes, so the page and what CI
walks cannot drift apart. The CPU example builds two real torch images (CUDA wheels
from PyPI, 6.0 and 5.3 GB) on the real docker daemon, once per session: measured on
a shared 2-core machine, 12 min 18 s cold (builds 173 s and 275 s, then the 10 cells),
242 s with both images present. The images are content-hash tagged, so a second run
of the command builds nothing (and, every cell being current, runs nothing).
Placeholders the page spells as such (``/path/to/python``) are the only words
replaced, by a real interpreter.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.docs import shell_commands

from repromatrix.config.matrix import load_matrix

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "restricted-networks.md"
CPU_EXAMPLE = "repromatrix matrix --matrix examples/cpu-only.yaml"
LOCAL_RUN = "repromatrix run --backend local --python /path/to/python"
LOCAL_ENV = "repromatrix env --python /path/to/python"
PLACEHOLDER_PYTHON = "/path/to/python"
VERDICTS = {"pass", "fail", "error", "crash", "timeout", "skip"}


def readme_command(prefix: str) -> list[str]:
    found = [a for a in shell_commands(PAGE.read_text()) if shlex.join(a).startswith(prefix)]
    assert len(found) == 1, f"{PAGE.relative_to(ROOT)} documents {prefix!r} {len(found)} times; " \
        "this test runs it"
    return found[0]


def run_as_written(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """``argv`` with ``repromatrix`` being this checkout's command line."""
    assert argv[0] == "repromatrix"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "repromatrix.cli", *argv[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def records(results: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted(results.glob("*/*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]


def test_readme_commands_are_found() -> None:
    argv = readme_command(CPU_EXAMPLE)
    assert argv[2:] == ["--matrix", "examples/cpu-only.yaml", "--all", "--base-image",
                        "python:3.11-slim=repromatrix-local/bookworm-python:3.11"]
    assert readme_command(LOCAL_RUN)[1:] == ["run", "--backend", "local", "--python",
                                             PLACEHOLDER_PYTHON]


@pytest.fixture(scope="module")
def cpu_example(local_base_image: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The documented CPU example, run as written in a fresh folder (twice)."""
    argv = readme_command(CPU_EXAMPLE)
    mapped = argv[argv.index("--base-image") + 1].split("=", 1)[1]
    assert mapped == local_base_image, "the page's local base image is the one the tests make"
    cwd = tmp_path_factory.mktemp("readme-cpu")
    (cwd / "examples").symlink_to(ROOT / "examples")
    t0 = time.monotonic()
    first = run_as_written(argv, cwd, timeout=3600)
    elapsed = time.monotonic() - t0
    print(f"README CPU example: {elapsed:.0f}s", flush=True)
    return {"argv": argv, "cwd": cwd, "first": first, "elapsed": elapsed}


@pytest.mark.docker
@pytest.mark.slow
def test_readme_cpu_example_gives_real_verdicts_on_docker(cpu_example: dict[str, Any]) -> None:
    proc, cwd = cpu_example["first"], cpu_example["cwd"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    matrix = load_matrix(ROOT / "examples" / "cpu-only.yaml")
    got = records(cwd / "results")
    expected = {f"{s.id}--{r}" for s in matrix.stacks for r in s.repros}
    assert {r["cell"] for r in got} == expected and len(got) == len(expected)
    pins = {s.id: s.torch for s in matrix.stacks}
    for r in got:
        assert r["status"] in VERDICTS, (r["cell"], r["status"], r["message"])
        assert r["backend"] == "docker" and r["image"]["tag"].startswith("repromatrix/")
        assert r["env"]["torch"].split("+")[0] == pins[r["stack"]["id"]], r["env"]
        assert r["stages"], r["cell"]
        if not r["env"].get("cuda_available"):  # a CPU machine: GPU stages skip and say why
            for stage in r["stages"]:
                if stage["role"] == "main" and stage["status"] == "skip":
                    assert stage["message"], stage
    for stack in matrix.stacks:  # the CPU-capable stages ran for real on every stack
        ran = [s for r in got if r["stack"]["id"] == stack.id for s in r["stages"]
               if s["status"] in ("pass", "fail")]
        assert ran, f"no stage ran on {stack.id}"
    page = (cwd / "site" / "index.html").read_text()
    for stack in matrix.stacks:
        assert stack.id in page


@pytest.mark.docker
@pytest.mark.slow
def test_readme_cpu_example_second_run_builds_and_runs_nothing(cpu_example: dict[str, Any]) -> None:
    assert cpu_example["first"].returncode == 0, "see the test above"
    cwd = cpu_example["cwd"]
    before = records(cwd / "results")
    again = run_as_written(cpu_example["argv"], cwd, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert records(cwd / "results") == before, "every cell is current: nothing re-ran"
    assert "building" not in again.stdout + again.stderr


@pytest.mark.torch
@pytest.mark.slow
def test_readme_local_commands_run_as_written(tmp_path: Path) -> None:
    python = os.environ.get("REPROMATRIX_TEST_PY_T213")
    if not python:
        pytest.skip("REPROMATRIX_TEST_PY_T213 (a torch 2.13.0 interpreter) is not set")
    env_argv = [python if w == PLACEHOLDER_PYTHON else w for w in readme_command(LOCAL_ENV)]
    probe = run_as_written(env_argv, tmp_path, timeout=300)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout)["torch"].startswith("2.13.0")
    run_argv = [python if w == PLACEHOLDER_PYTHON else w for w in readme_command(LOCAL_RUN)]
    proc = run_as_written(run_argv, tmp_path, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = records(tmp_path / "results")  # "records go to results/"
    assert got and {r["stack"]["id"] for r in got} == {"local"}
    assert all(r["status"] in VERDICTS and r["env"]["torch"].startswith("2.13.0") for r in got)
