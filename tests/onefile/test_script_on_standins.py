"""A plain script on the stand-in lane, container side: the generated repro runs the script
with TensorRT stood in (``onefile/_wrapper.py``), on a real torch interpreter and a
torch-tensorrt package whose native library links against TensorRT (tests/support/standins.py),
with the stand-ins compiled for real. The lane over real torch-tensorrt releases, bisected:
tests/engines/test_standin_lane.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.standins import fake_torch_tensorrt

from repromatrix.onefile.plain import NOT_LOADED, ScriptSpec, wrapper_body, write_wrapper
from repromatrix.paths import harness_dir
from repromatrix.rules.verdict import STANDIN, evidence_level

PY = os.environ.get("REPROMATRIX_TEST_PY_T213") or os.environ.get("REPROMATRIX_TEST_PY_T214")
CC = shutil.which("cc")

# like the real package: it imports tensorrt and loads its native library when imported
INIT = '''\
import ctypes
import os

import tensorrt  # noqa: F401

_lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "lib", "libtorchtrt.so"))
uses_tensorrt = _lib.uses_tensorrt
'''
# a user's script: the current CUDA device (stood in: 0) and torch-tensorrt's native code
SCRIPT = '''\
import sys

import torch
import torch_tensorrt

sys.exit(0 if torch.cuda.current_device() == 0 and torch_tensorrt.uses_tensorrt() == 1 else 1)
'''
# a script whose torch-tensorrt does not load: the stand-in tensorrt module is hidden from it
UNLOADABLE = '''\
import sys

sys.path[:] = [p for p in sys.path if "standins" not in p]
import torch_tensorrt  # noqa: E402, F401
'''


@pytest.fixture
def lane(tmp_path: Path) -> dict[str, str]:
    """The environment of a generated repro on the lane: the harness and the package on its
    path, the stand-ins made for that package (``_standin.py make``)."""
    if not PY or not Path(PY).exists():
        pytest.skip("no torch interpreter: set REPROMATRIX_TEST_PY_T213 or _T214")
    if CC is None:
        pytest.skip("needs a C compiler (cc)")
    pkg = fake_torch_tensorrt(tmp_path, CC)
    (pkg / "__init__.py").write_text(INIT)
    path = os.pathsep.join([str(harness_dir()), str(pkg.parent)])
    made = tmp_path / "standins"
    subprocess.run([PY, str(harness_dir() / "_standin.py"), "make", str(made), CC], check=True,
                   capture_output=True, env={**os.environ, "PYTHONPATH": path})
    return {**os.environ, "PYTHONPATH": path, "REPROMATRIX_STANDINS": str(made)}


def run_script(source: str, env: dict[str, str], folder: Path) -> dict:
    """The generated repro of ``source``, run as the runner runs it; its result."""
    (folder / "bug.py").write_text(source)
    repro = write_wrapper(ScriptSpec(folder / "bug.py"), folder / "scripts")
    result = folder / "result.json"
    subprocess.run([str(PY), str(repro), "--result", str(result)], env=env, check=True,
                   capture_output=True, timeout=300, cwd=folder)
    return json.loads(result.read_text())


@pytest.mark.torch
def test_a_plain_script_runs_with_the_standins_in_place_and_says_so(lane, tmp_path) -> None:
    ran = run_script(SCRIPT, lane, tmp_path)
    (stage,) = ran["stages"]
    assert ran["status"] == "pass", ran["traceback"]
    assert stage["standins"][:2] == ["tensorrt", "cuda-current-device-0"]
    assert evidence_level(ran["status"], ran["stages"]) == STANDIN  # the ◇ of the record
    plain = {k: v for k, v in lane.items() if k != "REPROMATRIX_STANDINS"}  # no lane: as before
    before = run_script(SCRIPT, plain, tmp_path)
    assert before["status"] == "fail" and before["stages"][0]["standins"] == []
    assert "No module named 'tensorrt'" in before["traceback"]


@pytest.mark.torch
def test_a_torch_tensorrt_that_does_not_load_on_the_standins_is_error_never_bad(lane, tmp_path) -> None:
    ran = run_script(UNLOADABLE, lane, tmp_path)
    (stage,) = ran["stages"]
    assert ran["status"] == "error" and stage["evidence"]["exit_code"] == 1
    assert "torch-tensorrt did not load on the TensorRT stand-ins" in ran["message"]
    assert stage["evidence"][NOT_LOADED] == "ModuleNotFoundError: No module named 'tensorrt'"
    frames = [line.strip() for line in ran["traceback"].splitlines() if line.strip().startswith("File ")]
    assert frames[0].endswith('bug.py", line 4, in <module>'), frames  # as python prints it: no launcher
    assert f'NOT_LOADED = "{NOT_LOADED}"' in wrapper_body()  # the host reads the wrapper's key
