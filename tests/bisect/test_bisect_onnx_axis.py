"""bisect --axis onnxscript: the compat table's onnxscript releases, each a stack with the
rest pinned by --base (torch required), the bug's other needs its packages."""

from __future__ import annotations

import pytest

from repromatrix.bisect import candidates as cands
from repromatrix.cli import main
from repromatrix.config.matrix import load_matrix
from repromatrix.engines.images import requirements
from repromatrix.errors import UsageError
from repromatrix.paths import repros_dir

REPRO = "onnx_fuse_batchnorm_bias_collision"


def base(*items: str) -> dict:
    matrix = load_matrix(repros_dir().parent / "matrix.yaml")
    found = cands.bug_base("onnxscript", matrix.repros[REPRO].requires, [],
                           cands.parse_base(items, "onnxscript"))
    return found, matrix


def test_the_axis_is_every_final_onnxscript_release_in_order():
    found = cands.axis_versions("onnxscript")
    assert found[:2] == ["0.1.0", "0.2.0"] and "0.5.5" not in found
    assert found.index("0.5.6") + 1 == found.index("0.5.7")
    assert cands.resolve_bound("onnxscript", "0.5", "--bad") == found[found.index("0.6.0") - 1]


def test_each_candidate_pins_its_onnxscript_on_the_fixed_rest():
    pins, matrix = base("torch=2.9.1", "index=pypi", "packages=onnx-ir==0.1.12")
    assert pins == {"torchvision": "none", "torch_tensorrt": "none", "torch": "2.9.1",
                    "index": "pypi", "packages": ["onnx", "onnx-ir==0.1.12"]}
    found = {c.version: c for c in cands.candidates("onnxscript", pins, matrix.settings,
                                                    matrix.repros, REPRO)}
    stack = found["0.5.6"].stack
    assert stack.id.startswith("pip-torch2.9.1-pypi-py3.11-osc0.5.6-notv-pkgs")
    assert requirements(stack, cands.probe_settings(matrix.settings, stack)) == [
        "torch==2.9.1", "onnxscript==0.5.6", "onnx", "onnx-ir==0.1.12"]
    assert found["0.5.7"].stack.onnxscript == "0.5.7"


def test_the_axis_needs_a_torch_and_refuses_itself_as_a_base():
    with pytest.raises(UsageError, match="give its torch, e.g. --base torch=2.9.1"):
        base("index=pypi")
    with pytest.raises(UsageError, match="--base onnxscript: not a pin of the onnxscript axis"):
        cands.parse_base(["onnxscript=0.5.6"], "onnxscript")


@pytest.mark.parametrize(("argv", "message"), [
    (["--good", "0.5.5", "--bad", "0.5.6", "--base", "torch=2.9.1"],
     '--good 0.5.5: not a onnxscript release on the onnxscript axis (did you mean "0.5.'),
    (["--good", "0.4.0", "--bad", "0.5.6"], "give its torch"),
])
def test_bad_bounds_exit_2(argv, message, tmp_path, capsys):
    assert main(["bisect", "--repro", REPRO, "--axis", "onnxscript", *argv, "--base", "index=pypi",
                 "--results", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
