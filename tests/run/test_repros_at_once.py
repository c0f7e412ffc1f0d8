"""A stack's repros run several at once where no GPU is shared: the rule, the runner's
``--parallel`` for real (two fixture repros that pass only when they meet), a run that
passes it on, and SIGTERM taking every running repro down.

The runner needs a torch interpreter for its probe (REPROMATRIX_TEST_PY_T213 or _T214).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from repromatrix import paths
from repromatrix.config.matrix import load_matrix
from repromatrix.config.options import RunOptions
from repromatrix.engines.standins import gpu_on_host
from repromatrix.plan import make_plan
from repromatrix.run.cells import run_plan
from repromatrix.run.schedule import MAX_REPROS_AT_ONCE, repros_at_once

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "repros"
PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")
MEET = ("fx_meet_a", "fx_meet_b")


def needs_torch() -> str:
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    return PY


def test_asked_wins_gpus_run_one_at_a_time_else_the_cores_are_shared():
    assert repros_at_once(3, jobs=1) == 3 and repros_at_once(3, jobs=1, gpus=True) == 3
    assert repros_at_once(None, jobs=1, gpus=True) == 1
    if gpu_on_host():
        assert repros_at_once(None, jobs=1) == 1
        return
    cores = len(os.sched_getaffinity(0))
    assert repros_at_once(None, jobs=1) == max(1, min(MAX_REPROS_AT_ONCE, cores))
    assert repros_at_once(None, jobs=cores) == 1  # as many stacks as cores: one repro each
    assert repros_at_once(None, jobs=cores * 8) == 1


def run_runner(python: str, repros: Path, out: Path, ids: tuple[str, ...], parallel: int,
               meet: Path, meet_s: float) -> dict[str, str]:
    env = {**os.environ, "REPROMATRIX_TEST_MEET": str(meet), "REPROMATRIX_TEST_MEET_S": str(meet_s)}
    subprocess.run([python, str(paths.harness_dir() / "runner.py"), "--out", str(out), "--dir",
                    str(repros), "--repros", ",".join(ids), "--parallel", str(parallel),
                    "--timeout", "120"], env=env, check=True, capture_output=True, timeout=300)
    return {r: json.loads((out / f"{r}.json").read_text())["status"] for r in ids}


def fixture_folder(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "repros"
    folder.mkdir()
    for name in names:
        shutil.copy(FIXTURES / f"{name}.py", folder / f"{name}.py")
    return folder


@pytest.mark.torch
def test_the_runner_runs_repros_at_once_when_asked_and_one_by_one_otherwise(tmp_path):
    python = needs_torch()
    repros = fixture_folder(tmp_path, *MEET)
    (tmp_path / "m1").mkdir()
    together = run_runner(python, repros, tmp_path / "two", MEET, 2, tmp_path / "m1", 60)
    assert together == {"fx_meet_a": "pass", "fx_meet_b": "pass"}
    (tmp_path / "m2").mkdir()  # one by one, the first waits for a second that never comes
    alone = run_runner(python, repros, tmp_path / "one", MEET, 1, tmp_path / "m2", 2)
    assert alone["fx_meet_a"] != "pass" and alone["fx_meet_b"] == "pass"


@pytest.mark.torch
def test_a_run_passes_repro_jobs_to_its_runner(tmp_path, monkeypatch):
    python = needs_torch()
    fixture_folder(tmp_path, *MEET)  # tmp_path/repros joins the catalog (beside the matrix)
    (tmp_path / "meet").mkdir()
    monkeypatch.setenv("REPROMATRIX_TEST_MEET", str(tmp_path / "meet"))
    (tmp_path / "matrix.yaml").write_text(
        f"repros: [fx_meet_a, fx_meet_b]\n"
        f"stacks:\n  - {{kind: local, id: here, interpreter: {python}, tags: [default]}}\n")
    matrix = load_matrix(tmp_path / "matrix.yaml")
    summary = run_plan(matrix, make_plan(matrix.stacks),
                       RunOptions(results=tmp_path / "results", repro_jobs=2), log=lambda _: None)
    assert {r.repro: r.status for r in summary.results} == {"fx_meet_a": "pass", "fx_meet_b": "pass"}


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state first), or None once gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        fields = _stat(int(entry.name)) if entry.name.isdigit() else None
        if fields and fields[1] == str(pid):  # ppid
            out.append(int(entry.name))
    return out


def _session(sid: int) -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir()
            if e.name.isdigit() and (f := _stat(int(e.name))) and f[3] == str(sid)]


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


@pytest.mark.torch
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_sigterm_takes_every_running_repro_and_its_children_down(tmp_path):
    python = needs_torch()
    repros = fixture_folder(tmp_path, "fx_hang")
    shutil.copy(repros / "fx_hang.py", repros / "fx_hang_too.py")
    runner = subprocess.Popen([python, str(paths.harness_dir() / "runner.py"), "--out",
                               str(tmp_path / "out"), "--dir", str(repros), "--repros",
                               "fx_hang,fx_hang_too", "--parallel", "2", "--timeout", "600"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        groups: list[int] = []
        while time.monotonic() < deadline:  # both repros started, each with its sleeping child
            groups = [p for p in _children(runner.pid) if len(_session(p)) >= 2]
            if len(groups) == 2:
                break
            time.sleep(0.2)
        assert len(groups) == 2, "two repros running at once, each with a child"
        members = [p for g in groups for p in _session(g)]
        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=60) == 128 + signal.SIGTERM
        end = time.monotonic() + 10
        while any(_alive(p) for p in members) and time.monotonic() < end:
            time.sleep(0.1)
        assert not [p for p in members if _alive(p)], "a repro or its child outlived the runner"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
