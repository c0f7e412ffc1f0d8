"""repros/harness/runner.py: isolation and classification of segfaults, hangs, garbage, broken stacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "repros" / "harness" / "runner.py"
FIXTURES = ROOT / "tests" / "data" / "repros"


def torch_python(var: str = "REPROMATRIX_TEST_PY_T213") -> str:
    """A torch interpreter (any of the two), or skip."""
    for name in (var, "REPROMATRIX_TEST_PY_T214", "REPROMATRIX_TEST_PY_T213"):
        py = os.environ.get(name)
        if py and Path(py).exists():
            return py
    pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")


def run_runner(python: str, out: Path, repros: list[str], timeout: float = 30,
               env: dict[str, str] | None = None) -> dict[str, dict]:
    cmd = [python, str(RUNNER), "--out", str(out), "--dir", str(FIXTURES),
           "--repros", ",".join(repros), "--timeout", str(timeout)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {r: json.loads((out / f"{r}.json").read_text()) for r in repros}


@pytest.fixture(scope="module")
def fixture_results(tmp_path_factory):
    """The fixtures run by the runner: fx_hang under a short timeout it must overrun; the
    others, which import torch (slow on a busy machine), with room to finish."""
    out = tmp_path_factory.mktemp("runner")
    names = ["fx_segfault", "fx_garbage", "fx_checked", "fx_declared_crash", "fx_pass"]
    results = run_runner(torch_python(), out, names, timeout=300)
    hang = run_runner(torch_python(), tmp_path_factory.mktemp("hang"), ["fx_hang"], timeout=8)
    return results | hang, out


@pytest.fixture(scope="module")
def isolated(tmp_path_factory):
    """fx_isolated: six stages, each in a child interpreter that imports torch."""
    return run_runner(torch_python(), tmp_path_factory.mktemp("isolated"), ["fx_isolated"],
                      timeout=300)["fx_isolated"]


pytestmark = pytest.mark.torch


def test_segfault_is_a_crash_with_signal_and_stage(fixture_results):
    res = fixture_results[0]["fx_segfault"]
    assert res["status"] == "crash" and res["signal"] == "SIGSEGV"
    assert [(s["name"], s["status"]) for s in res["stages"]] == [("before", "pass"), ("explode", "crash")]
    assert "explode" in res["message"]


def test_declared_crash_is_a_fail(fixture_results):
    res = fixture_results[0]["fx_declared_crash"]
    assert res["status"] == "fail" and res["signature"] == "wildcard_segv"
    assert res["signal"] == "SIGSEGV"


def test_hang_is_a_timeout_and_its_children_are_killed(fixture_results):
    res = fixture_results[0]["fx_hang"]
    assert res["status"] == "timeout" and res["stages"][-1]["status"] == "timeout"
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "time.sleep(3600)" not in ps


def test_isolated_stage_death_is_recorded_on_that_stage_and_the_repro_goes_on(isolated):
    res = isolated
    st = {s["name"]: s for s in res["stages"]}
    assert [s["name"] for s in res["stages"]] == ["fake_cuda_abort", "declared", "make_value", "use_value",
                                                  "convert", "unrelated"]
    abort = st["fake_cuda_abort"]
    assert abort["status"] == "crash" and abort["evidence"]["signal"] == "SIGABRT"
    assert "CUDA driver version is insufficient" in abort["message"]
    assert "terminate called" in abort["evidence"]["log_tail"]
    assert st["declared"]["status"] == "fail" and st["declared"]["signature"] == "declared_segv"
    # the process itself ended normally: the verdict comes from the main stages
    assert res["signal"] is None and res["exit_code"] == 0


def test_isolated_stage_returns_its_value_and_its_log_feeds_signatures(isolated):
    res = isolated
    st = {s["name"]: s for s in res["stages"]}
    assert st["make_value"]["status"] == "pass" and st["make_value"]["evidence"]["n"] == 4
    assert st["use_value"]["status"] == "pass"  # the tensor came back from the child
    assert st["convert"]["status"] == "fail" and st["convert"]["signature"] == "logged_wildcard"
    assert "logged: " in st["convert"]["message"] and "-1 wildcard" in st["convert"]["message"]
    assert st["unrelated"]["status"] == "error"  # same exception, other log: not the bug
    assert (res["status"], res["signature"]) == ("fail", "logged_wildcard")


def test_garbage_result_is_an_error(fixture_results):
    res = fixture_results[0]["fx_garbage"]
    assert res["status"] == "error" and "could not be parsed" in res["message"]


def test_other_repros_still_report(fixture_results):
    results, out = fixture_results
    checked = results["fx_checked"]
    assert checked["status"] == "fail" and checked["signature"] == "known_bug"
    assert [s["status"] for s in checked["stages"]] == ["fail", "skip", "skip", "pass"]
    assert results["fx_pass"]["status"] == "pass" and results["fx_pass"]["workaround"] == "pass"
    env = json.loads((out / "env.json").read_text())
    assert env["torch"] and "error" not in env


def test_every_result_has_the_contract_keys(fixture_results):
    keys = {"repro", "status", "stages", "signature", "workaround", "message", "traceback",
            "duration_s", "exit_code", "signal"}
    for res in fixture_results[0].values():
        assert keys <= set(res)
        for st in res["stages"]:
            assert {"name", "status", "duration_s", "message", "evidence"} <= set(st)


def test_unimportable_torch_makes_every_repro_broken(tmp_path):
    broken_torch = tmp_path / "site" / "torch"
    broken_torch.mkdir(parents=True)
    (broken_torch / "__init__.py").write_text("raise ImportError('libtorch_cpu.so: cannot open')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    results = run_runner(sys.executable, tmp_path / "out", ["fx_checked", "fx_segfault"], env=env)
    assert {r["status"] for r in results.values()} == {"broken"}
    assert "libtorch_cpu.so" in results["fx_checked"]["message"]
    assert "error" in json.loads((tmp_path / "out" / "env.json").read_text())


def test_probe_only_prints_json():
    proc = subprocess.run([torch_python(), str(RUNNER), "--probe", "-"], capture_output=True,
                          text=True, timeout=300)
    env = json.loads(proc.stdout)
    assert env["torch"] and env["torch_git"] and isinstance(env["cuda_available"], bool)
    assert {"python", "torchvision", "torch_tensorrt", "tensorrt", "gpus", "driver", "ngc"} <= set(env)
