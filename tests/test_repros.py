"""The five repros, run for real through the runner, and their signatures against real text.

Two real stacks: torch 2.14.1 + torchvision 0.29.1 (CUDA build, no GPU here) and
torch 2.13.0+cpu (no torchvision). CPU stages run and are asserted on; GPU and
TensorRT stages must come out `skip` with the right reason, never `pass`.
When a GPU is present the GPU assertions are not made (the cell may then pass).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPROS = ROOT / "repros"
sys.path.insert(0, str(REPROS))

import protocol  # noqa: E402

IDS = ["deform_conv2d_device", "dynamic_unet_shapes", "onnx_export_device", "torchscript_device_mix",
       "ts_device_gpu_id"]


def _python(var: str) -> str:
    py = os.environ.get(var)
    if not py or not Path(py).exists():
        pytest.skip(f"{var} is not set to a torch interpreter")
    return py


def _run_all(python: str, out: Path) -> dict:
    proc = subprocess.run([python, str(REPROS / "runner.py"), "--out", str(out), "--timeout", "300"],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {r: json.loads((out / f"{r}.json").read_text()) for r in IDS}
    results["env"] = json.loads((out / "env.json").read_text())
    return results


@pytest.fixture(scope="module")
def t214(tmp_path_factory):
    return _run_all(_python("REPROMATRIX_TEST_PY_T214"), tmp_path_factory.mktemp("t214"))


@pytest.fixture(scope="module")
def t213(tmp_path_factory):
    return _run_all(_python("REPROMATRIX_TEST_PY_T213"), tmp_path_factory.mktemp("t213"))


def stages(result: dict) -> dict[str, dict]:
    return {s["name"]: s for s in result["stages"]}


def assert_gpu_stages_skipped(result: dict, env: dict, names: list[str]) -> None:
    """Without a GPU these stages skip, naming the missing CUDA device; never a pass."""
    if env.get("cuda_available"):
        return
    st = stages(result)
    for name in names:
        assert st[name]["status"] == "skip", (name, st[name])
        assert "no CUDA device" in st[name]["message"] or "needs stage" in st[name]["message"]
    assert result["status"] != "pass"


# ---------------------------------------------------------- torch 2.14.1 + tv

@pytest.mark.torch
@pytest.mark.slow
def test_deform_conv2d_on_214(t214):
    res, st = t214["deform_conv2d_device"], stages(t214["deform_conv2d_device"])
    assert st["fake_export"]["status"] == "pass"
    assert st["fake_export"]["evidence"]["mask_device"] == "cuda:0"
    emu = st["emulated_trt240_decomposition"]
    assert emu["status"] == "fail" and emu["signature"] == "fake_device_mismatch"
    assert "cuda:0 and cpu" in emu["evidence"]["exception"]
    assert_gpu_stages_skipped(res, t214["env"], ["eager", "trt_compile", "trt_run", "workaround"])
    if not t214["env"].get("cuda_available"):
        assert res["status"] == "skip" and res["workaround"] == "skip"


@pytest.mark.torch
@pytest.mark.slow
def test_dynamic_unet_on_214(t214):
    res, st = t214["dynamic_unet_shapes"], stages(t214["dynamic_unet_shapes"])
    assert st["eager_opt_shape"]["signature"] == "eager_skip_size_mismatch"
    assert st["symbolic_export"]["status"] == "fail"
    assert st["symbolic_export"]["signature"] == "symbolic_size_mismatch"
    valid = st["symbolic_export_valid_range"]
    assert valid["status"] == "pass" and sum(c["numeric"] and c["ok"] for c in valid["checks"]) == 3
    assert res["status"] == "fail" and res["signature"] == "symbolic_size_mismatch"
    assert_gpu_stages_skipped(res, t214["env"], ["trt_dynamo_compile", "workaround", "ts_dynamic_compile"])


@pytest.mark.torch
@pytest.mark.slow
def test_onnx_export_on_214(t214):
    res, st = t214["onnx_export_device"], stages(t214["onnx_export_device"])
    fake = st["fake_dynamo_export"]
    assert fake["status"] == "fail" and fake["signature"] == "export_fake_mismatch"
    assert "step 1/3" in fake["evidence"]["exception"]
    conv = st["fake_export_conv_mixed"]
    assert conv["status"] == "fail" and conv["signature"] == "fake_conv_device_checked"
    assert_gpu_stages_skipped(res, t214["env"], ["legacy_export", "dynamo_export", "workaround_legacy",
                                                 "workaround_dynamo"])


@pytest.mark.torch
@pytest.mark.slow
def test_torchscript_device_mix_on_214(t214):
    res, st = t214["torchscript_device_mix"], stages(t214["torchscript_device_mix"])
    assert st["trace_cpu_inspect"]["status"] == "pass"
    assert st["trace_cpu_inspect"]["evidence"]["cpu_device_literals"] >= 2
    frozen = st["freeze_cpu_inspect"]
    assert frozen["status"] == "pass" and frozen["evidence"]["parameters_after_freeze"] == 0
    assert frozen["evidence"]["cpu_device_literals_after_freeze"] >= 1  # arange(size, device=cpu) survives
    assert st["frozen_dtype_standin"]["signature"] == "frozen_constants_do_not_move"
    assert_gpu_stages_skipped(res, t214["env"], ["trace_cpu_run_cuda", "trace_cuda_run_cuda",
                                                 "trace_cpu_freeze_run_cuda", "workaround",
                                                 "script_freeze_cpu_to_cuda"])


@pytest.mark.torch
@pytest.mark.slow
def test_ts_device_gpu_id_on_214(t214):
    res = t214["ts_device_gpu_id"]
    assert_gpu_stages_skipped(res, t214["env"], [s["name"] for s in res["stages"]])


# --------------------------------------------------------- torch 2.13.0+cpu

@pytest.mark.torch
@pytest.mark.slow
def test_all_repros_on_213_cpu_build(t213):
    env = t213["env"]
    assert env["torch"].startswith("2.13.0") and env["torch_cuda"] is None
    deform = stages(t213["deform_conv2d_device"])
    for name in ("fake_export", "emulated_trt240_decomposition"):
        assert deform[name]["status"] == "skip" and "CPU-only" in deform[name]["message"]
    assert deform["eager"]["status"] == "skip" and "CPU-only build" in deform["eager"]["message"]
    unet = t213["dynamic_unet_shapes"]
    assert unet["status"] == "fail" and unet["signature"] == "symbolic_size_mismatch"
    assert stages(unet)["symbolic_export_valid_range"]["status"] == "pass"
    onnx = stages(t213["onnx_export_device"])
    assert onnx["fake_export_conv_mixed"]["status"] == "skip"
    ts = stages(t213["torchscript_device_mix"])
    assert ts["trace_cpu_inspect"]["status"] == "pass"
    assert ts["frozen_dtype_standin"]["signature"] == "frozen_constants_do_not_move"
    for rid in IDS:
        if rid != "dynamic_unet_shapes":
            assert t213[rid]["status"] == "skip", (rid, t213[rid]["message"])


# ------------------------------------- signatures against recorded dossier text

def signatures(repro_id: str) -> list[protocol.Signature]:
    return importlib.import_module(repro_id).SIGNATURES  # repros import torch lazily


def match(repro_id: str, types: list[str], text: str, stage: str | None, torch: str) -> str | None:
    for sig in signatures(repro_id):
        if sig.matches_text(types, text, stage, {"torch": torch}):
            return sig.id
    return None


@pytest.mark.parametrize(("repro", "types", "text", "stage", "torch", "expected"), [
    # DOSSIER section 1, verification on torch 2.4.1 / 2.5.1 / 2.6.0 (and the reporter's issue text)
    ("deform_conv2d_device", ["RuntimeError"],
     "Unhandled FakeTensor Device Propagation for torchvision.deform_conv2d.default, found two "
     "different devices cuda:0, cpu", "trt_compile", "2.4.1", "fake_device_propagation"),
    # the same text is not claimed for torch >= 2.13, where the wording changed (pytorch PR #185412)
    ("deform_conv2d_device", ["RuntimeError"],
     "Unhandled FakeTensor Device Propagation for torchvision.deform_conv2d.default, found two "
     "different devices cuda:0, cpu", "trt_compile", "2.14.1", None),
    # DOSSIER section 5 table, torch 2.6 (dynamo exporter with fakes)
    ("onnx_export_device", ["TorchExportError", "RuntimeError"],
     "Failed to export the model with torch.export. This is step 1/3 of exporting the model to "
     "ONNX.\nUnhandled FakeTensor Device Propagation for aten.mm.default, found two different "
     "devices cpu, cuda:0", "dynamo_export", "2.6.0", "export_fake_propagation"),
    # DOSSIER section 5 table, torch 2.13
    ("onnx_export_device", ["TorchExportError", "FakeTensorDeviceMismatchError", "RuntimeError"],
     "Failed to export the model with torch.export. This is step 1/3\nExpected all tensors to be on "
     "the same device, but found at least two devices, cpu and cuda:0!", "dynamo_export", "2.13.0",
     "export_fake_mismatch"),
    # DOSSIER section 0, eager texts (pytorch #159133; conv form from libtorch 2.6/2.13)
    ("onnx_export_device", ["RuntimeError"],
     "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
     "cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)",
     "legacy_export", "2.8.0", "legacy_eager_device_mismatch"),
    ("onnx_export_device", ["RuntimeError"],
     "Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or "
     "input should be a MKLDNN tensor and weight is a dense tensor", "legacy_export", "2.6.0",
     "legacy_eager_device_mismatch"),
    # DOSSIER section 3: torch 2.6 wording of the shape refusal, and the dynamo text
    ("dynamic_unet_shapes", ["ValueError"],
     "... Eq(2*((s1//8)), (s1//4)) is inconsistent!", "symbolic_export",
     "2.6.0", "symbolic_inconsistent"),
    ("dynamic_unet_shapes", ["torch._dynamo.exc.TorchRuntimeError", "RuntimeError"],
     "Failed running call_function (...(FakeTensor(..., size=(1, 256, 2*((s0//8)), 2*((s1//8)))), "
     "FakeTensor(..., size=(1, 256, (s0//4), (s1//4))))...): The size of tensor a (2*((s1//8))) "
     "must match the size of tensor b ((s1//4)) at non-singleton dimension 3)", "trt_dynamo_compile",
     "2.2.0", "symbolic_size_mismatch"),
    # DOSSIER section 3, the TorchScript frontend's TensorRT error
    ("dynamic_unet_shapes", ["RuntimeError"],
     "Error Code 4: Shape Error (reshape dimension with more than one -1 wildcard. Reshaping "
     "[21,3,(# 2 (SHAPE input_0)),(# 3 (SHAPE input_0))] to [1,21,3,-1,-1].)", "ts_dynamic_compile",
     "2.2.0", "ts_reshape_wildcard"),
    # DOSSIER section 4 / mmseg #3805 write-up
    ("torchscript_device_mix", ["torch.jit.Error", "RuntimeError"],
     "The following operation failed in the TorchScript interpreter.\nTraceback of TorchScript "
     "(most recent call last):\nRuntimeError: Expected all tensors to be on the same device, but "
     "found at least two devices, cuda:0 and cpu!", "trace_cpu_run_cuda", "2.4.0",
     "torchscript_device_mismatch"),
    # DOSSIER section 2 (MONAI #8017 traceback)
    ("ts_device_gpu_id", ["AttributeError"], "'torch.device' object has no attribute 'gpu_id'",
     "embed_engine_torch_device", "2.4.0", "torch_device_gpu_id"),
    # look-alike that must not be taken for the gpu_id bug (TRT #3084)
    ("ts_device_gpu_id", ["AttributeError"], "module 'torch_tensorrt' has no attribute 'set_device'",
     "embed_engine_torch_device", "2.4.0", None),
])
def test_signature_against_recorded_text(repro, types, text, stage, torch, expected):
    assert match(repro, types, text, stage, torch) == expected


def test_ts_segfault_signature_against_recorded_output():
    """DOSSIER section 3: the wildcard error, then 'Caught signal 11' (rc -11)."""
    out = ("Error Code 4: Shape Error (reshape dimension with more than one -1 wildcard. Reshaping "
           "[21,3,(# 2 (SHAPE input_0)),(# 3 (SHAPE input_0))] to [1,21,3,-1,-1].)\n"
           "[Shuffle]: output shape can not be computed\nCaught signal 11 (Segmentation fault")
    sigs = signatures("dynamic_unet_shapes")
    found = protocol.match_signal(sigs, "SIGSEGV", out, "ts_dynamic_compile", {"torch": "2.2.0"})
    assert found is not None and found.id == "ts_wildcard_segfault"
    assert protocol.match_signal(sigs, "SIGSEGV", "plain crash", "ts_dynamic_compile", {}) is None


@pytest.mark.torch
def test_gpu_id_signature_against_real_torch_text():
    """The AttributeError text as the real torch.device raises it."""
    py = os.environ.get("REPROMATRIX_TEST_PY_T214") or os.environ.get("REPROMATRIX_TEST_PY_T213")
    if not py or not Path(py).exists():
        pytest.skip("no torch interpreter")
    code = "import torch\ntry:\n torch.device('cuda:0').gpu_id\nexcept AttributeError as e:\n print(e)"
    text = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=300).stdout.strip()
    assert match("ts_device_gpu_id", ["AttributeError"], text, "ts_compile_torch_device", "2.14.1") \
        == "torch_device_gpu_id"


def test_meta_is_a_literal_with_the_catalog_keys():
    import ast

    for rid in IDS:
        tree = ast.parse((REPROS / f"{rid}.py").read_text())
        meta = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                    and any(getattr(t, "id", None) == "META" for t in n.targets))
        assert meta["id"] == rid and meta["upstream"] and meta["expect"] and meta["requires"]
        for exp in meta["expect"]:
            for spec in exp["when"].values():
                protocol.version_matches("1.0", spec)  # parses
